"""Which topics of a Metadata answer are real: flow F1's guard against lagging brokers.

Pure. Every broker answers Metadata from its own copy of the cluster's metadata, and a
broker can apply a change a second or more after the others (a loaded machine, a broker
busy stopping the deleted partitions). So one answer can miss a topic created a moment
ago, and a later one can still show a topic the registry already deleted. Mirrored as
they come, old consumers would see a new topic vanish, or a deleted one come back.

- a topic missing from an answer is kept (unsettled) until it stayed missing for
  ``grace_s``; only then is it deleted;
- once deleted, its topic id is remembered for ``tombstone_s``: an answer that still shows
  that id is a lagging broker's, and the topic is left out of the view. A topic created
  again under the same name has a new id and is mirrored at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from bridge.kafka.views import ClusterView

#: how long a topic must be missing from Kafka's metadata before its nodes are deleted
DELETE_GRACE_S = 1.0
#: how long a deleted topic's id is refused (Kafka's metadata.max.age.ms is 5 minutes)
TOMBSTONE_S = 300.0


@dataclass
class TopicPresence:
    """Remembers the topics seen, since when each missing one is missing, and the ids of
    the ones taken as deleted."""

    grace_s: float = DELETE_GRACE_S
    tombstone_s: float = TOMBSTONE_S
    _ids: dict[str, str | None] = field(default_factory=dict)
    _missing_since: dict[str, float] = field(default_factory=dict)
    _deleted: dict[str, float] = field(default_factory=dict)  # topic id -> when

    def settle(self, view: ClusterView, now: float) -> tuple[ClusterView, frozenset[str]]:
        """``view`` as the registry may mirror it, and the names left out as stale."""
        self._deleted = {i: t for i, t in self._deleted.items() if now - t < self.tombstone_s}
        stale = frozenset(n for n, t in view.topics.items() if t.topic_id in self._deleted)
        topics = {n: t for n, t in view.topics.items() if n not in stale}
        for name, t in topics.items():
            self._missing_since.pop(name, None)
            self._ids[name] = t.topic_id
        for name in view.unsettled:  # answered for, with an error: there, not ready
            self._missing_since.pop(name, None)
        for name in set(self._ids) - set(topics) - view.unsettled:
            self._missing_since.setdefault(name, now)
        keep = {n for n, t in self._missing_since.items() if now - t < self.grace_s}
        for name in set(self._missing_since) - keep:  # missing long enough: deleted
            topic_id = self._ids.pop(name, None)
            if topic_id is not None:  # a broker too old to give ids: nothing to remember
                self._deleted[topic_id] = now
        self._missing_since = {n: t for n, t in self._missing_since.items() if n in keep}
        settled = replace(view, topics=topics, unsettled=(view.unsettled | keep) - stale)
        return settled, stale
