"""The offsets this bridge commits into Kafka, until ``__consumer_offsets`` shows them.

Each copy of an old consumer's offset into Kafka comes back as a record of
``__consumer_offsets``. Without this, the follower named the group as changed, and the
next tick described it and fetched its offsets again (DescribeGroups + OffsetFetch per
copied group: 7 % of the main thread in ``bench.fleet``'s old-consumer phase, py-spy), only to
learn what the bridge had just written. A record that carries exactly an offset the
bridge sent for that group and partition is its echo: the picture takes the offset from
it, and the group is not read again for it.

Why nothing is missed: only an exact (group, partition, offset) match is an echo, and each
expectation is used once. A record from anyone else with the same offset says the same
thing about Kafka's offset (the picture is right either way); a member's joining or
leaving comes as a group metadata record, never an echo; any other record of the group
makes it changed, and a group changed in the same poll is read again as before.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from zkpaths import TopicPartition

#: expectations kept at most: a commit refused after it was sent leaves one behind until
#: the same partition is copied again; past this many they are all dropped (the groups
#: are then read again, as without this)
MAX_EXPECTED = 200_000


class OwnCommits:
    """(group, partition) -> the offset last sent; thread-safe (the copier sends, the
    tick's follower takes)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sent: dict[tuple[str, TopicPartition], int] = {}

    def expect(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        """About to commit ``offsets`` of ``group``: their records will be echoes."""
        with self._lock:
            if len(self._sent) + len(offsets) > MAX_EXPECTED:
                self._sent.clear()
            for tp, offset in offsets.items():
                self._sent[(group, tp)] = offset

    def take(self, group: str, tp: TopicPartition, offset: int) -> bool:
        """Whether a record of ``offset`` is the echo of the bridge's own commit (used up)."""
        key = (group, tp)
        with self._lock:
            if self._sent.get(key) != offset:
                return False
            del self._sent[key]
            return True

    def __len__(self) -> int:
        return len(self._sent)
