"""A group read behind its own records: the coordinator serves a commit a moment after its
record is readable, so a read of the group APIs can miss the commit that named it.

The follower of ``__consumer_offsets`` sees a commit's record once the partition's high
watermark moves; the coordinator updates what OffsetFetch answers when the append
completes, a moment later (under load, milliseconds). A group read in that moment gets the
offset before the commit, and no later record names it again: its ZooKeeper node stayed
behind until the next reconcile (seen once in CI's burst: 20 partitions, 40 s). So each
group keeps what its records said since it was last read in agreement with them, and stays
to be read again (``LATE_RETRY_S`` apart) while a read disagrees, for at most ``LATE_FOR_S``.

A classic group's rebalance has the same gap: the coordinator appends the generation's
GroupMetadata record on the leader's SyncGroup and turns the group Stable when the append
completes. A group read in between is CompletingRebalance (kept as it was: its assignment
is not final) and no later record names it; a mixed group's fences stayed up and its old
consumer gave up rebalancing (seen once in CI). So a read in CompletingRebalance is behind
its record too, and made again the same way.
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

    def behind(
        self,
        group: str,
        offsets: Mapping[TopicPartition, int],
        dead: bool,
        completing: bool = False,
    ) -> bool:
        """Whether a read of ``group`` that answered ``offsets`` (and, ``completing``, the
        state CompletingRebalance) is behind its records: to be read again. A read in
        agreement, or a dead group, forgets what they said."""
        said = {} if dead else self.said.get(group, {})
        late = {tp: off for tp, off in said.items() if offsets.get(tp) != _served(off)}
        if not late and (dead or not completing):
            self._forget(group)
            return False
        if late:
            self.said[group] = late
        else:
            self.said.pop(group, None)
        now = time.monotonic()
        since = self.late_since.setdefault(group, now)
        if now - since < LATE_FOR_S:
            return True
        self._give_up(group, offsets, late, now - since)
        return False

    def _give_up(
        self, group: str, offsets: Mapping[TopicPartition, int], late: Said, waited_s: float
    ) -> None:
        """Written as Kafka answers, said once: the next record or reconcile reads it."""
        if late:
            tp, off = next(iter(late.items()))
            log.warning(
                "Kafka still answers offset %s for %s-%d where __consumer_offsets said %s, "
                "after %.0f s: written as Kafka answers; the next reconcile reads it again",
                *(offsets.get(tp), tp.topic, tp.partition, off, waited_s),
                extra={"group": group},
            )
            METRICS.node_problems.labels(flow="groups", kind="read_behind_log").inc()
        else:  # a leader that has not sent its SyncGroup: its record names the group then
            log.info(
                "still CompletingRebalance after %.0f s (its leader has not synced): "
                "read again at its next record or reconcile",
                waited_s,
                extra={"group": group},
            )
        self.given_up += 1
        self._forget(group)

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
