"""Per-group verdicts: may this group be migrated, finalized or rolled back now? Pure.

The two stores are compared partition by partition, over every partition either store holds
an offset for (a Kafka offset whose last record is a tombstone counts as absent). The rules,
in the order a verdict is chosen:

**ready to finalize** (stop keeping ZooKeeper): for every partition both stores hold the same
offset, no old consumer is still registered under ``/consumers/<g>/ids``.

**ready to migrate** (move the group to Kafka's coordinator, taking ZooKeeper's offsets): for
every partition ZooKeeper holds an offset and Kafka holds none or one that is not ahead of it
(``kafka <= zk``), so the migrated group resumes where its old consumers stopped.

**ready to roll back** (back to ZooKeeper, taking Kafka's offsets): for every partition Kafka
holds an offset and ZooKeeper holds none or one that is not ahead of it (``kafka >= zk``), and
this snapshot's identity may write the group's offset nodes.

**blocked**: none of these holds; ``reasons`` says, per operation, which partitions stand in
the way. Whatever the offsets, a group is blocked when any of its ZooKeeper nodes is bad
(unreadable offset, registration or owner: someone writes what legacy readers cannot read),
when neither store holds any offset, when the last Kafka record of a partition cannot be
decoded, or - for the operation concerned - when an offset points past the partition's
log end (the consumer would reset, skipping or re-reading data).

Offsets for partitions the cluster no longer has (a deleted topic) are left out of the rules
and listed in ``notes``: they can neither be migrated nor rolled back, and stale offsets of
long-gone topics are common in old ZooKeeper trees.

ZooKeeper's ``-1`` (the old consumer's "owned but nothing fetched yet") is an offset like any
other here; it is below every real offset, as in the dual-commit fetch rule ``max(zk, kafka)``.

The group's type (classic, or next-generation ``consumer``, KIP-848) changes nothing but a
note: the bridge keeps a mixed group of either type, and its offsets in both stores, the
same way (docs/coexistence.md), and the live gates of ``zk-bridge migrate`` judge both alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

READY_TO_MIGRATE = "ready to migrate"
READY_TO_FINALIZE = "ready to finalize"
READY_TO_ROLL_BACK = "ready to roll back"
BLOCKED = "blocked"
VERDICTS = (READY_TO_FINALIZE, READY_TO_MIGRATE, READY_TO_ROLL_BACK, BLOCKED)

#: the group type of next-generation groups (KIP-848)
CONSUMER = "consumer"

#: how many partitions a reason names before summarising the rest
SHOW = 5


@dataclass(frozen=True, slots=True)
class PartitionState:
    topic: str
    partition: int
    #: ZooKeeper's offset; None when there is no node or the node is bad
    zk_offset: int | None = None
    #: why the offset node is bad (it exists but cannot be read)
    zk_error: str | None = None
    #: Kafka's committed offset; None when never committed or deleted (tombstone)
    kafka_offset: int | None = None
    #: the last Kafka record for the partition is a tombstone
    kafka_deleted: bool = False
    #: the last Kafka record could not be decoded (why)
    kafka_error: str | None = None
    #: the partition's log-end offset; None when the cluster has no such partition
    log_end: int | None = None

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class GroupFacts:
    group: str
    partitions: tuple[PartitionState, ...] = ()
    #: reasons of every bad ZooKeeper node of the group (offsets, ids, owners, bad paths)
    zk_bad_nodes: tuple[str, ...] = ()
    #: may the snapshot's identity write the group's offsets (None: no group in ZooKeeper)
    zk_writable: bool | None = None
    zk_not_writable: str | None = None
    #: old consumers registered under /consumers/<g>/ids
    zk_consumers: int = 0
    #: members in the group's last metadata record in Kafka (classic), or members whose
    #: member metadata record is not removed (next-generation)
    kafka_members: int = 0
    #: "classic" or "consumer" (KIP-848) as the group's last records say; None: no group
    kafka_group_type: str | None = None
    #: False when no log-end offsets were available: end checks are then skipped
    log_ends_known: bool = True
    #: partitions with offsets that the cluster does not have (set by :func:`decide`)
    orphaned: tuple[PartitionState, ...] = ()
    #: partitions whose last Kafka record is a tombstone (set by :func:`decide`)
    deleted: tuple[PartitionState, ...] = ()


@dataclass(frozen=True, slots=True)
class Verdict:
    group: str
    verdict: str
    reasons: tuple[str, ...]
    notes: tuple[str, ...] = ()
    can_migrate: bool = False
    can_finalize: bool = False
    can_roll_back: bool = False
    #: per operation, what stands in the way (empty when it may go ahead)
    blockers: dict[str, tuple[str, ...]] = field(default_factory=dict, hash=False)


def _listing(items: Sequence[str]) -> str:
    shown = ", ".join(items[:SHOW])
    return shown + (f" and {len(items) - SHOW} more" if len(items) > SHOW else "")


def _past_end(p: PartitionState, offset: int | None, store: str, known: bool) -> str | None:
    if not known or offset is None or p.log_end is None:
        return None
    if offset > p.log_end:
        return f"{p.name}: {store} offset {offset} is past the log end {p.log_end}"
    return None


def _common(f: GroupFacts) -> list[str]:
    out = []
    if f.zk_bad_nodes:
        out.append(f"{len(f.zk_bad_nodes)} bad ZooKeeper node(s): {_listing(f.zk_bad_nodes)}")
    if not any(p.zk_offset is not None or p.kafka_offset is not None for p in f.partitions):
        if not any(p.zk_error or p.kafka_error for p in f.partitions):
            gone = " for partitions the cluster has" if f.orphaned else ""
            out.append(f"no committed offsets in either store{gone}")
    undecodable = [f"{p.name} ({p.kafka_error})" for p in f.partitions if p.kafka_error]
    if undecodable:
        out.append(f"undecodable last Kafka record: {_listing(undecodable)}")
    return out


_STORE = {"zk": "ZooKeeper", "kafka": "Kafka"}


def _one_way_blockers(f: GroupFacts, source: str) -> tuple[list[str], list[str]]:
    """What blocks moving every offset out of ``source`` ("zk" to migrate, "kafka" to roll
    back): a partition without a source offset, the other store ahead of it, and (second
    list) a source offset past the log end."""
    other = "kafka" if source == "zk" else "zk"
    missing, ahead, ends = [], [], []
    for p in f.partitions:
        src, dst = getattr(p, f"{source}_offset"), getattr(p, f"{other}_offset")
        if src is None:
            if getattr(p, f"{source}_error") is None:
                has = f" ({_STORE[other]} has {dst})" if dst is not None else ""
                missing.append(p.name + has)
        elif dst is not None and dst > src:
            ahead.append(f"{p.name} ({dst} > {src})")
        end = _past_end(p, src, _STORE[source], f.log_ends_known)
        if end:
            ends.append(end)
    out = []
    if missing:
        out.append(f"no {_STORE[source]} offset for {_listing(missing)}")
    if ahead:
        out.append(f"{_STORE[other]} ahead of {_STORE[source]} on {_listing(ahead)}")
    return out, ends


def _migrate_blockers(f: GroupFacts) -> list[str]:
    out, ends = _one_way_blockers(f, "zk")
    return out + ends


def _finalize_blockers(f: GroupFacts) -> list[str]:
    differ, missing, ends = [], [], []
    for p in f.partitions:
        if p.zk_offset is None or p.kafka_offset is None:
            if p.zk_error is None and p.kafka_error is None:
                where = "ZooKeeper" if p.zk_offset is None else "Kafka"
                missing.append(f"{p.name} (no {where} offset)")
        elif p.zk_offset != p.kafka_offset:
            differ.append(f"{p.name} (ZooKeeper {p.zk_offset}, Kafka {p.kafka_offset})")
        for store, off in (("ZooKeeper", p.zk_offset), ("Kafka", p.kafka_offset)):
            end = _past_end(p, off, store, f.log_ends_known)
            if end:
                ends.append(end)
    out = []
    if missing:
        out.append(f"only one store has an offset for {_listing(missing)}")
    if differ:
        out.append(f"stores differ on {_listing(differ)}")
    if f.zk_consumers:
        out.append(f"{f.zk_consumers} old consumer(s) still registered in ZooKeeper")
    return out + ends


def _roll_back_blockers(f: GroupFacts) -> list[str]:
    out, ends = _one_way_blockers(f, "kafka")
    if f.zk_writable is False:
        out.append(f"ZooKeeper offsets not writable: {f.zk_not_writable or 'ACL'}")
    return out + ends


def _notes(f: GroupFacts) -> tuple[str, ...]:
    notes = []
    deleted = [p.name for p in f.deleted]
    if deleted:
        notes.append(f"Kafka offsets deleted or expired (tombstone) for {_listing(deleted)}")
    if f.zk_writable is None:
        notes.append("not in ZooKeeper: a roll back creates /consumers/<group> (ACL not checked)")
    if f.zk_consumers:
        notes.append(f"{f.zk_consumers} old consumer(s) registered in ZooKeeper")
    if f.kafka_members:
        kind = " (next-generation)" if f.kafka_group_type == CONSUMER else ""
        notes.append(f"{f.kafka_members} member(s) in the Kafka group{kind}")
    if not f.log_ends_known:
        notes.append("log-end offsets unknown: end checks skipped, no lag")
    if f.orphaned:
        gone = [p.name for p in f.orphaned]
        notes.append(f"offsets for partitions the cluster does not have: {_listing(gone)}")
    return tuple(notes)


def decide(f: GroupFacts) -> Verdict:
    """The group's verdict, with the reasons for it (or for every operation it blocks)."""
    deleted = tuple(p for p in f.partitions if p.kafka_deleted)
    # a partition whose only trace is a Kafka tombstone is no longer the group's
    held = tuple(
        p
        for p in f.partitions
        if p.zk_offset is not None or p.zk_error or p.kafka_offset is not None or p.kafka_error
    )
    f = replace(f, partitions=held, deleted=deleted)
    if f.log_ends_known:
        live = tuple(p for p in f.partitions if p.log_end is not None)
        gone = tuple(p for p in f.partitions if p.log_end is None)
        f = replace(f, partitions=live, orphaned=f.orphaned + gone)
    common = _common(f)
    blockers = {
        READY_TO_FINALIZE: tuple(common + _finalize_blockers(f)),
        READY_TO_MIGRATE: tuple(common + _migrate_blockers(f)),
        READY_TO_ROLL_BACK: tuple(common + _roll_back_blockers(f)),
    }
    can = {op: not b for op, b in blockers.items()}
    n = len(f.partitions)
    if can[READY_TO_FINALIZE]:
        verdict, reasons = READY_TO_FINALIZE, (f"both stores equal on all {n} partition(s)",)
    elif can[READY_TO_MIGRATE]:
        behind = sum(p.kafka_offset is None or p.kafka_offset < p.zk_offset for p in f.partitions)
        verdict = READY_TO_MIGRATE
        reasons = (
            f"ZooKeeper holds offsets for all {n} partition(s); Kafka has none or is behind "
            f"on {behind}, equal on {n - behind}",
        )
    elif can[READY_TO_ROLL_BACK]:
        ahead = sum(p.zk_offset is None or p.kafka_offset > p.zk_offset for p in f.partitions)
        verdict = READY_TO_ROLL_BACK
        reasons = (
            f"Kafka holds offsets for all {n} partition(s); ZooKeeper has none or is behind "
            f"on {ahead}, equal on {n - ahead}; ZooKeeper writable",
        )
    else:
        verdict = BLOCKED
        reasons = tuple(common) + tuple(
            f"cannot {label}: {'; '.join(b for b in blockers[op] if b not in common)}"
            for op, label in (
                (READY_TO_MIGRATE, "migrate"),
                (READY_TO_ROLL_BACK, "roll back"),
            )
            if any(b not in common for b in blockers[op])
        )
    return Verdict(
        f.group,
        verdict,
        reasons,
        _notes(f),
        can[READY_TO_MIGRATE],
        can[READY_TO_FINALIZE],
        can[READY_TO_ROLL_BACK],
        {op: b for op, b in blockers.items() if b},
    )
