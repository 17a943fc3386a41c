"""Commit records taken as a group's offsets, without asking Kafka again (issue 14).

Each commit comes back to the bridge as a record of ``__consumer_offsets``. The records
only named the group, and the tick then asked Kafka (OffsetFetch) what its offsets were:
at 5,000 commits a second that asking was 58 % of the groups flow's time (``bench.fleet``
at CI size), and every commit waited for it. But a record *is* the commit, readable once
replicated (the high watermark passed it): for a group whose view only its offsets move
(``offsets_only``: kafka storage mode, no old consumers), the tick takes the record's
offset as it is.

Only a record newer than the read the view came from may be taken: one older than the
read, but read by the follower after it (the follower a little behind), would put the
node back. A read shows what the coordinator had applied when it answered, and the
coordinator applies a commit only once its record is below the partition's high
watermark. So after each read the high watermark of the group's partition is asked
(ListOffsets, after the read ended) and kept as the group's mark, never lowered: a record
at or past the mark was appended after the read; one before it has the group read again,
as every record did before. A mark that could not be asked is dropped (the group's
records are read again until a read is marked).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping

from kafka import KafkaAdminClient

from bridge.kafka.cluster import partition_counts
from bridge.kafka.offsets import log_ends
from zkpaths import TopicPartition
from zkpaths.javahash import coordinator_partition

log = logging.getLogger("bridge.flows.groups")

#: ``ends(partitions)``: each partition's high watermark, asked now
Ends = Callable[[list[int]], Mapping[int, int]]


class ReadMarks:
    """Per group, the high watermark of its partition of the followed topic after its
    last read; thread-safe for ``ask`` (a page is read on a thread of its own), the rest
    on the tick's thread."""

    def __init__(self, ends: Ends, partitions: Callable[[], int]) -> None:
        self._ends = ends
        self._partitions = partitions
        self._count: int | None = None
        self._marks: dict[str, int] = {}

    @classmethod
    def of_topic(cls, admin: KafkaAdminClient, topic: str) -> ReadMarks:
        """Marks in ``topic`` (the followed one), asked with ``admin``."""

        def ends(partitions: list[int]) -> dict[int, int]:
            got = log_ends(admin, [TopicPartition(topic, p) for p in partitions])
            return {tp.partition: end for tp, end in got.items()}

        return cls(ends, lambda: partition_counts(admin, [topic])[topic])

    def ask(self, groups: Iterable[str]) -> dict[str, int]:
        """Each group's mark as of now: call after its read ended. Empty when Kafka did
        not answer (said once at debug: the groups are then read at their next record)."""
        groups = list(groups)
        if not groups:
            return {}
        try:
            if self._count is None:
                self._count = self._partitions()
            part = {g: coordinator_partition(g, self._count) for g in groups}
            ends = self._ends(sorted(set(part.values())))
        except Exception as exc:  # noqa: BLE001 - Kafka away: the reads say so themselves
            log.debug("high watermarks not read: %s: %s", type(exc).__name__, exc)
            return {}
        return {g: ends[p] for g, p in part.items() if p in ends}

    def mark(self, groups: Iterable[str], marks: Mapping[str, int]) -> None:
        """``groups`` were read; ``marks`` what ``ask`` said after (a group it lacks is
        unmarked: its records are read again)."""
        for g in groups:
            mark = marks.get(g)
            if mark is None:
                self._marks.pop(g, None)
            elif mark > self._marks.get(g, -1):
                self._marks[g] = mark

    def past(self, group: str, at: int) -> bool:
        """Whether a record of ``group`` at offset ``at`` is newer than its last read."""
        mark = self._marks.get(group)
        return mark is not None and at >= mark

    def forget(self, groups: Iterable[str]) -> None:
        for g in groups:
            self._marks.pop(g, None)

    def __len__(self) -> int:
        return len(self._marks)
