"""A group read behind its own records: the coordinator serves a commit a moment after its
record is readable, so a read of the group APIs can miss the commit that named it.

The follower of ``__consumer_offsets`` sees a commit's record once the partition's high
watermark moves; the coordinator updates what OffsetFetch answers when the append
completes, a moment later (under load, milliseconds). A group read in that moment gets the
offset before the commit, and no later record names it again: its ZooKeeper node stayed
behind until the next reconcile (seen once in CI's burst: 20 partitions, 40 s). So each
group keeps what its records said since it was last read in agreement with them, and stays
to be read again (``LATE_RETRY_S`` apart) while a read disagrees, for at most ``LATE_FOR_S``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping

from bridge.metrics import METRICS
from zkpaths import TopicPartition

#: the groups flow's logger: a group left behind is the flow's line
log = logging.getLogger("bridge.flows.groups")

#: a read that disagrees with the records is made again this soon (not at the next poll)
LATE_RETRY_S = 0.02
#: after this long the group is written as Kafka answers, with a warning (a record the
#: coordinator never serves: the next reconcile reads the group again anyway)
LATE_FOR_S = 10.0

Said = Mapping[TopicPartition, int | None]


class LogAhead:
    """Per group, the offsets its records said (``add``) that no read has shown yet."""

    def __init__(self) -> None:
        self.said: dict[str, dict[TopicPartition, int | None]] = {}
        #: groups read behind their records: since when (monotonic)
        self.late_since: dict[str, float] = {}
        #: groups given up on (LATE_FOR_S passed), for tests and the log
        self.given_up: int = 0

    def add(self, said: Mapping[str, Said]) -> None:
        """The records polled since the last call, per group: the last offset of each."""
        for group, offsets in said.items():
            self.said.setdefault(group, {}).update(offsets)

    def behind(self, group: str, offsets: Mapping[TopicPartition, int], dead: bool) -> bool:
        """Whether a read of ``group`` that answered ``offsets`` is behind its records (to
        be read again). A read in agreement, or a dead group, forgets what they said."""
        said = self.said.get(group)
        if not said or dead:
            self._forget(group)
            return False
        late = {tp: off for tp, off in said.items() if offsets.get(tp) != _served(off)}
        if not late:
            self._forget(group)
            return False
        self.said[group] = late
        now = time.monotonic()
        since = self.late_since.setdefault(group, now)
        if now - since < LATE_FOR_S:
            return True
        tp, off = next(iter(late.items()))
        log.warning(
            "Kafka still answers offset %s for %s-%d where __consumer_offsets said %s, "
            "after %.0f s: written as Kafka answers; the next reconcile reads it again",
            *(offsets.get(tp), tp.topic, tp.partition, off, now - since),
            extra={"group": group},
        )
        METRICS.node_problems.labels(flow="groups", kind="read_behind_log").inc()
        self.given_up += 1
        self._forget(group)
        return False

    def keep_only(self, groups: Iterable[str]) -> None:
        """Forget the groups not to be read again (filtered out, or their records were
        only the bridge's own commits, taken from the records themselves)."""
        keep = set(groups)
        self.said = {g: s for g, s in self.said.items() if g in keep}
        self.late_since = {g: t for g, t in self.late_since.items() if g in keep}

    def waiting(self) -> bool:
        """Some group was read behind its records: read it again soon."""
        return bool(self.late_since)

    def _forget(self, group: str) -> None:
        self.said.pop(group, None)
        self.late_since.pop(group, None)


def _served(offset: int | None) -> int | None:
    """What a read shows for a record's offset: a removed or negative one, no offset."""
    return offset if offset is not None and offset >= 0 else None
