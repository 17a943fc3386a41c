"""Which topics of a Metadata answer are real: flow F1's guard against lagging brokers.

Pure. Every broker answers Metadata from its own copy of the cluster's metadata, and a
broker can apply a change a second or more after the others (a loaded machine, a broker
busy stopping the deleted partitions). So one answer can miss a topic created a moment
ago, and a later one can still show a topic the registry already deleted. Mirrored as
they come, old consumers would see a new topic vanish, or a deleted one come back (both
seen on a loaded machine: CI found a deleted topic back in ``/brokers/topics``).

- a topic missing from an answer is kept (unsettled) until every live broker says it does
  not know it (``listed``: the names some broker still lists, asked by the flow), or,
  when that cannot be learnt, until it stayed missing for ``max_missing_s``;
- once deleted, its topic id is remembered for ``tombstone_s``: an answer that still shows
  that id is a lagging broker's, and the topic is left out of the view. A topic created
  again under the same name has a new id and is mirrored at once.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field, replace

from bridge.kafka.views import ClusterView

#: how long a missing topic is kept while some broker cannot be asked whether it is gone
MAX_MISSING_S = 30.0
#: how long a deleted topic's id is refused (Kafka's metadata.max.age.ms is 5 minutes)
TOMBSTONE_S = 300.0


@dataclass
class TopicPresence:
    """Remembers the topics seen, since when each missing one is missing, and the ids of
    the ones taken as deleted."""

    max_missing_s: float = MAX_MISSING_S
    tombstone_s: float = TOMBSTONE_S
    _ids: dict[str, str | None] = field(default_factory=dict)
    _missing_since: dict[str, float] = field(default_factory=dict)
    _deleted: dict[str, float] = field(default_factory=dict)  # topic id -> when

    def missing(self, view: ClusterView) -> set[str]:
        """Topics seen before that ``view`` does not have (nor answers with an error): the
        ones to ask every broker about."""
        return set(self._ids) - set(view.topics) - view.unsettled

    def settle(
        self, view: ClusterView, now: float, listed: Set[str]
    ) -> tuple[ClusterView, frozenset[str]]:
        """``view`` as the registry may mirror it, and the names left out as stale.
        ``listed``: which of ``missing(view)`` some live broker still lists."""
        self._deleted = {i: t for i, t in self._deleted.items() if now - t < self.tombstone_s}
        stale = frozenset(n for n, t in view.topics.items() if t.topic_id in self._deleted)
        topics = {n: t for n, t in view.topics.items() if n not in stale}
        for name in set(topics) | view.unsettled:
            self._missing_since.pop(name, None)
        self._ids.update({n: t.topic_id for n, t in topics.items()})
        keep: set[str] = set()
        for name in set(self._ids) - set(topics) - view.unsettled:
            since = self._missing_since.setdefault(name, now)
            if name in listed and now - since < self.max_missing_s:
                keep.add(name)
                continue
            self._missing_since.pop(name)
            topic_id = self._ids.pop(name)
            if topic_id is not None:  # a broker too old to give ids: nothing to remember
                self._deleted[topic_id] = now
        settled = replace(view, topics=topics, unsettled=(view.unsettled | keep) - stale)
        return settled, stale
