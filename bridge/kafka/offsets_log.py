"""Reads ``__consumer_offsets``: follows which groups changed, as they change (issue 14),
and reads it once from the beginning to the end (the audit's dump); the one place that
consumes the topic's partitions.

Every offset commit and every group metadata change is a record of that compacted topic,
so reading it says *which* groups changed without asking the group APIs about every group
on every tick. Mostly it triggers: what the bridge writes comes from the group APIs
(``groups.read_groups``), re-read for the groups the records name; only a commit record
newer than its group's last read, of a group whose view only its offsets move, is taken
as it is (``direct``, ``bridge.flows.read_marks``).

The follower is a plain consumer without a group: it assigns itself every partition of the
topic and keeps its positions in memory (``positions()``, to save and start from again).
It reads committed data only (``read_committed``: an aborted transactional commit never
took effect). Compaction keeps the latest record of every key and moves no record past
it, so a follower that starts from the beginning, or from positions it returned earlier,
sees the latest record of every key it has not seen yet; a position the log no longer has
(a truncated replica) starts that partition over from the beginning. Leader moves are the
client's business (it refreshes metadata on NOT_LEADER and goes on from its position).

Records are decoded with the audit's decoders (:mod:`bridge.audit.records`). A record of a
version this code does not read, or bytes that do not decode, is reported once (one log
line naming the partition and offset where it was first seen, and counted) and skipped
(I5); when its key still names a group, that group is reported as changed, so the group
APIs are asked about it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTP

from bridge.audit.fast_records import commit_key_fields, commit_value_fields
from bridge.audit.next_gen import ConsumerGroupKey
from bridge.audit.records import (
    GroupMetadataKey,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownKey,
    UnknownValue,
    decode_key,
    decode_value,
)
from bridge.audit.wire import RecordError
from bridge.kafka.calls import bounded
from bridge.kafka.own_commits import OwnCommits
from bridge.metrics import METRICS
from zkpaths import TopicPartition

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"

#: key versions of share groups (KIP-932): the bridge mirrors no share group
SHARE_GROUP_KEY_VERSIONS = (9, 10, 11)


@dataclass(frozen=True, slots=True)
class OffsetCommitted:
    """A committed offset of one partition of a group; ``offset`` None: the commit was
    removed (expired, deleted, or its group deleted). ``at``: the record's offset in its
    partition of the followed topic (-1 when not read from it)."""

    group: str
    partition: TopicPartition
    offset: int | None
    at: int = field(default=-1, compare=False)


@dataclass(frozen=True, slots=True)
class GroupChanged:
    """A group's metadata (members, generation, assignment) changed; ``deleted`` when the
    record is the group's tombstone."""

    group: str
    deleted: bool = False


Event = OffsetCommitted | GroupChanged
Start = Literal["beginning", "end"]
Report = Callable[[str, str], None]
#: ``direct(group, at)``: whether the group's commit records from ``at`` on may be taken
#: as its offsets without asking Kafka (``bridge.flows.read_marks``)
Direct = Callable[[str, int], bool]


class OffsetsLogError(RuntimeError):
    """The topic cannot be read to its end; the message says why (no such topic, stuck)."""


def _consumer(servers: str | list[str], **options: Any) -> KafkaConsumer:
    """A consumer without a group that reads committed data only (``read_committed``: an
    aborted transactional offset commit never took effect, so it must not count)."""
    return KafkaConsumer(
        bootstrap_servers=servers.split(",") if isinstance(servers, str) else servers,
        group_id=None,
        enable_auto_commit=False,
        isolation_level="read_committed",
        exclude_internal_topics=False,
        **options,
    )


def _partitions_for(consumer: KafkaConsumer, topic: str, timeout_s: float) -> set[int]:
    """``consumer.partitions_for_topic``, bounded: kafka-python 3.0 fetches the metadata it
    lacks with no time limit (``KafkaCallTimeout`` after ``timeout_s``)."""
    return bounded("Metadata", consumer.partitions_for_topic, topic, timeout_s=timeout_s) or set()


def read_to_end(
    bootstrap_servers: str,
    *,
    topic: str = OFFSETS_TOPIC,
    timeout_s: float = 60.0,
    **client_options: Any,
) -> Iterator[tuple[int, int, int, bytes, bytes | None]]:
    """Every record of ``topic`` up to the end offsets seen at the start, as ``(partition,
    offset, timestamp, key, value)``. Raises :class:`OffsetsLogError` when the topic does
    not exist or the end is not reached within ``timeout_s`` of no progress."""
    consumer = _consumer(
        bootstrap_servers, max_partition_fetch_bytes=4 * 1024 * 1024, **client_options
    )
    try:
        parts = _partitions_for(consumer, topic, timeout_s)
        if not parts:
            raise OffsetsLogError(
                f"topic {topic} does not exist on {bootstrap_servers}: "
                "no group has committed offsets to this cluster yet"
            )
        tps = [KafkaTP(topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        pending = {tp for tp in tps if consumer.position(tp) < end[tp]}
        last_progress = time.monotonic()
        while pending:
            batch = consumer.poll(timeout_ms=500, max_records=10_000)
            for tp, records in batch.items():
                for rec in records:
                    if rec.offset < end[tp]:
                        yield tp.partition, rec.offset, rec.timestamp, rec.key, rec.value
            if batch:
                last_progress = time.monotonic()
            # positions also move past control records (transaction markers), not only data
            pending = {tp for tp in pending if consumer.position(tp) < end[tp]}
            if pending and time.monotonic() - last_progress > timeout_s:
                raise OffsetsLogError(
                    f"reading {topic} made no progress for {timeout_s:.0f}s; "
                    f"{len(pending)} partitions short of their end offsets"
                )
    finally:
        consumer.close()


def _log_report(subject: str, message: str) -> None:
    METRICS.node_problems.labels(flow="offsets_log", kind="record").inc()
    log.warning("%s: %s", subject, message)


class OffsetsLogFollower:
    """A read-only consumer of ``topic`` (``__consumer_offsets``; tests follow a copy)
    turning its records into :data:`Event`s.

    ``start``: "beginning" (every latest record per key), "end" (only what comes next;
    for a caller that reads the present state some other way right after) or positions
    per partition as :meth:`positions` returned them (partitions missing start at the
    beginning). ``report(subject, message)`` hears of each skipped kind of record once.
    With ``partitions`` (the topic's partition count) it starts at once; else with ``wait``
    it waits (at most ``timeout_s``) for the topic; else it follows nothing until
    :meth:`assign` (a bridge learns the count from its own bounded metadata reads: the
    client's own lookup blocks without a bound).
    """

    def __init__(
        self,
        bootstrap_servers: str | list[str],
        *,
        topic: str = OFFSETS_TOPIC,
        start: Start | Mapping[int, int] = "end",
        client_options: Mapping[str, Any] | None = None,
        timeout_s: float = 30.0,
        report: Report = _log_report,
        partitions: int | None = None,
        wait: bool = True,
    ) -> None:
        servers = bootstrap_servers
        self.topic = topic
        self.report = report
        self.timeout_s = timeout_s
        self._new_state()
        self.consumer = _consumer(
            servers, auto_offset_reset="earliest", **dict(client_options or {})
        )
        self._start = start
        self.assigned = False
        try:
            if partitions is not None:
                self.assign(partitions)
            elif wait:
                self.assign(len(self._partitions()))
        except BaseException:
            self.consumer.close()
            raise

    def _new_state(self) -> None:
        """What the follower keeps while it reads (subclasses start with it too)."""
        self._reported: set[str] = set()
        self._positions: dict[int, int] = {}
        self._ends: dict[int, int] = {}
        self._reshaped: set[str] = set()
        #: the bridge's own commits, whose records are echoes (set by the groups flow)
        self.own: OwnCommits | None = None
        self._echoes: dict[str, dict[TopicPartition, int]] = {}
        #: set by the groups flow: which groups' commit records are their offsets
        self.direct: Direct | None = None
        self._direct: dict[str, dict[TopicPartition, int]] = {}
        #: per group, the offset the last record of each partition said (None: removed)
        self._said: dict[str, dict[TopicPartition, int | None]] = {}
        #: the consumer's polls run here, one at a time, the caller waiting (see ``poll``)
        self._poller = ThreadPoolExecutor(1, thread_name_prefix="offsets-poll")

    def assign(self, partitions: int) -> None:
        """Start following the topic's ``partitions`` partitions, positioned as ``start``
        said (the topic exists once some group has asked for its coordinator)."""
        tps = [KafkaTP(self.topic, p) for p in range(partitions)]
        start = self._start
        self.consumer.assign(tps)
        timeout_ms = int(self.timeout_s * 1000)
        ends = self.consumer.end_offsets(tps, timeout_ms=timeout_ms)
        self._ends = {tp.partition: off for tp, off in ends.items()}
        if start == "end":
            for tp in tps:  # explicit: the positions are fixed before the caller reads
                self.consumer.seek(tp, self._ends[tp.partition])
                self._positions[tp.partition] = self._ends[tp.partition]
            self.assigned = True
            return
        saved = {} if start == "beginning" else dict(start)
        fresh = [tp for tp in tps if tp.partition not in saved]
        if fresh:
            self.consumer.seek_to_beginning(*fresh)
        for tp in tps:
            if tp.partition in saved:
                self.consumer.seek(tp, saved[tp.partition])
                self._positions[tp.partition] = saved[tp.partition]
        self.assigned = True

    def _partitions(self) -> list[int]:
        """The topic's partitions, waiting (bounded) for the client's first metadata."""

        deadline = time.monotonic() + self.timeout_s
        while True:
            parts = _partitions_for(
                self.consumer, self.topic, max(1.0, deadline - time.monotonic())
            )
            if parts:
                return sorted(parts)
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {self.topic} not found within {self.timeout_s:g}s")
            time.sleep(0.2)

    # -- reading ---------------------------------------------------------------------------

    def poll(self, timeout_ms: int = 0, max_records: int = 100_000) -> list[Event]:
        """The events of the records fetched by now (waiting at most ``timeout_ms`` for
        the first), in log order per partition."""
        if not self.assigned:
            return []
        # On a thread of its own: a poll that finds nothing new leaves kafka-python 3.0 a
        # reference cycle (its timed-out wait's error, whose traceback holds every frame of
        # the stack it ran on) that lives until the next full collection, and past it when
        # that collection froze it (``bridge.heap``). On the tick's stack it kept each
        # tick's Kafka picture and decisions: about 1 MB/s of growth at 10,000 groups.
        fetched = self._poller.submit(
            self.consumer.poll, timeout_ms=timeout_ms, max_records=max_records
        ).result()
        events: list[Event] = []
        for tp, records in fetched.items():
            for rec in records:
                event = self._event(tp.partition, rec.offset, rec.key, rec.value)
                if event is not None:
                    events.append(event)
                self._positions[tp.partition] = rec.offset + 1
        return events

    def changed_groups(self, timeout_ms: int = 0) -> set[str]:
        """The groups that the records fetched by now name (see :meth:`poll`); those whose
        records were not all offset commits are also kept for :meth:`take_reshaped`. A
        group whose records were all echoes of the bridge's own commits (``own``) is not
        named: its offsets are kept for :meth:`take_echoes`; nor one whose commit records
        ``direct`` takes as its offsets (kept for :meth:`take_direct`)."""
        events = self.poll(timeout_ms)
        self._reshaped.update(
            e.group for e in events if not isinstance(e, OffsetCommitted) or e.offset is None
        )
        changed: set[str] = set()
        echoes: dict[str, dict[TopicPartition, int]] = {}
        commits: dict[str, dict[TopicPartition, int]] = {}
        first_at: dict[str, int] = {}
        for e in events:
            if isinstance(e, OffsetCommitted):
                self._said.setdefault(e.group, {})[e.partition] = e.offset
            elif e.deleted:
                self._said.pop(e.group, None)
            if not isinstance(e, OffsetCommitted) or e.offset is None:
                changed.add(e.group)
            elif self.own is not None and self.own.take(e.group, e.partition, e.offset):
                echoes.setdefault(e.group, {})[e.partition] = e.offset
            elif self.direct is not None and e.offset >= 0 and e.at >= 0:
                commits.setdefault(e.group, {})[e.partition] = e.offset
                first_at.setdefault(e.group, e.at)
            else:
                changed.add(e.group)
        if echoes:
            METRICS.own_commit_records.inc(sum(len(o) for o in echoes.values()))
        # echoes and taken commits of one group: their order is not kept, so it is read
        changed |= (echoes.keys() | self._echoes.keys()) & (commits.keys() | self._direct.keys())
        for group, offsets in commits.items():
            if group in changed or self.direct is None or not self.direct(group, first_at[group]):
                changed.add(group)
            else:
                self._direct.setdefault(group, {}).update(offsets)
                METRICS.commit_records_taken.inc(len(offsets))
        for group, offsets in echoes.items():
            if group not in changed:
                self._echoes.setdefault(group, {}).update(offsets)
        for group in changed:
            self._echoes.pop(group, None)  # read again: the group APIs say it all
            self._direct.pop(group, None)
        return changed

    def take_echoes(self) -> dict[str, dict[TopicPartition, int]]:
        """Since the last call, per group named by nothing else: the offsets its records
        showed that were the bridge's own commits (:mod:`bridge.kafka.own_commits`)."""
        echoes, self._echoes = self._echoes, {}
        return echoes

    def direct_groups(self) -> set[str]:
        """The groups whose taken commits wait for :meth:`take_direct`."""
        return set(self._direct)

    def take_direct(self) -> dict[str, dict[TopicPartition, int]]:
        """Since the last call, per group named by nothing else: the offsets its commit
        records said, taken as they are (``direct``)."""
        taken, self._direct = self._direct, {}
        return taken

    def take_said(self) -> dict[str, dict[TopicPartition, int | None]]:
        """Since the last call, per group and partition, the offset its last record said
        (None: the commit was removed), echoes included: in log order, what the group APIs
        should answer once the coordinator serves those commits (``kafka_groups``)."""
        said, self._said = self._said, {}
        return said

    def take_reshaped(self) -> set[str]:
        """The groups named since the last call by a record other than an offset commit
        (group metadata: members, generation, assignment; a removed commit): their members
        or offsets' set may have changed, where an offset commit changes one offset."""
        reshaped, self._reshaped = self._reshaped, set()
        return reshaped

    def positions(self) -> dict[int, int]:
        """Per partition, the offset after the last record read (or where it started): a
        follower started from these misses nothing this one has not seen."""
        return dict(self._positions)

    def caught_up(self) -> bool:
        """Every partition read up to where its log ended when the follower started."""
        for p, end in self._ends.items():
            tp = KafkaTP(self.topic, p)
            if self._positions.get(p, -1) < end and self.consumer.position(tp) < end:
                return False
        return True

    def close(self) -> None:
        self.consumer.close(autocommit=False)
        self._poller.shutdown(wait=False)

    # -- decoding --------------------------------------------------------------------------

    def _event(self, partition: int, offset: int, key: bytes | None, value: bytes | None):
        """One record's event, or None; a skipped kind of record is reported once."""
        event, skipped = record_event(key, value, offset)
        if skipped is not None and skipped.kind not in self._reported:
            self._reported.add(skipped.kind)
            self.report(f"{self.topic}-{partition} offset {offset}", skipped.message)
        return event


@dataclass(frozen=True, slots=True)
class Skipped:
    """Why (part of) a record was not read: ``kind`` is what reports are deduplicated on."""

    kind: str
    message: str


def record_event(
    key: bytes | None, value: bytes | None, at: int = -1
) -> tuple[Event | None, Skipped | None]:
    """The event of one record of the topic (``at``: its offset there), and what of it was
    skipped (pure).

    A value this code cannot read under a key naming a group still yields
    ``GroupChanged``: the group APIs then say what it is."""
    if key is None:
        return None, Skipped("no key", "a record without a key: skipped")
    fast = commit_key_fields(key)  # the common case in one pass (see fast_records)
    if fast is not None and value is not None and (v := commit_value_fields(value)):
        return OffsetCommitted(fast[0], TopicPartition(fast[1], fast[2]), v[0], at), None
    try:
        k = decode_key(key)
    except RecordError as exc:
        return None, Skipped(f"key: {exc}", f"undecodable key, skipped: {exc}")
    if isinstance(k, ConsumerGroupKey):
        return GroupChanged(k.group), None  # a next-generation group's record, value unread
    if isinstance(k, UnknownKey):
        return _other_key(k)
    try:
        v = decode_value(k, value)
    except RecordError as exc:
        return GroupChanged(k.group), Skipped(
            str(exc), f"undecodable value ({exc}): skipped, the group is read again"
        )
    if isinstance(v, UnknownValue):
        kind = "offset commit" if isinstance(k, OffsetCommitKey) else "group metadata"
        return GroupChanged(k.group), Skipped(
            f"{kind} value v{v.version}",
            f"{kind} value v{v.version} is newer than this bridge reads: skipped, the group "
            "is read again",
        )
    if isinstance(k, GroupMetadataKey):
        return GroupChanged(k.group, deleted=v is None), None
    assert isinstance(k, OffsetCommitKey)
    offset = v.offset if isinstance(v, OffsetCommitValue) else None
    return OffsetCommitted(k.group, TopicPartition(k.topic, k.partition), offset, at), None


def _other_key(k: UnknownKey) -> tuple[Event | None, Skipped | None]:
    """Share groups' records are not mirrored; records of other keys are skipped."""
    if k.version in SHARE_GROUP_KEY_VERSIONS:
        return None, None  # share groups are not mirrored: nothing to report
    return None, Skipped(
        f"key v{k.version}",
        f"record with key v{k.version} is newer than this bridge reads: skipped",
    )
