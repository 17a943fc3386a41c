"""Offset storage modes of a group and the gated steps between them (I2).

Pure. A group is in one of three modes; the bridge reconciles its two offset stores by the
mode, and an operator moves it ``zookeeper → dual → kafka`` (migrate) or back (roll back),
one step at a time, each step allowed only when its gates pass.

| mode | consumers commit to | the bridge |
|---|---|---|
| zookeeper | ZooKeeper | copies ZooKeeper → Kafka, so Kafka is warm |
| dual | both | makes both hold max(zk, kafka) per partition |
| kafka | Kafka | copies Kafka → ZooKeeper, so rollback is instant |

Whatever the mode, an offset only ever moves forward here; the one backward move is an
explicit, backed-up ``zk-bridge offsets reset``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import NamedTuple

import zkpaths
from bridge.kafka.views import GroupView
from zkpaths import TopicPartition


class StorageMode(StrEnum):
    ZOOKEEPER = "zookeeper"
    DUAL = "dual"
    KAFKA = "kafka"


#: the steps an operator may take: one at a time, always through dual
STEPS = {
    (StorageMode.ZOOKEEPER, StorageMode.DUAL),
    (StorageMode.DUAL, StorageMode.KAFKA),
    (StorageMode.KAFKA, StorageMode.DUAL),
    (StorageMode.DUAL, StorageMode.ZOOKEEPER),
}


class StepRefused(ValueError):
    """A transition that is not one step, or whose gates failed."""


def infer_mode(old_consumers: bool, zk_offsets: bool, kafka_group: bool) -> StorageMode:
    """The mode of a group the bridge sees for the first time, from where its offsets are."""
    if old_consumers or (zk_offsets and not kafka_group):
        return StorageMode.ZOOKEEPER
    return StorageMode.KAFKA


def check_step(current: StorageMode, target: StorageMode) -> None:
    if current == target:
        raise StepRefused(f"the group is already in {target} mode")
    if (current, target) not in STEPS:
        via = "dual"
        raise StepRefused(
            f"{current} → {target} is not one step; go through {via} "
            f"({current} → {via} → {target}), checking each step"
        )


class Offsets(NamedTuple):
    """One partition's committed offsets in both stores (None: no commit there; a named
    tuple: one is made per partition reconciled)."""

    zk: int | None
    kafka: int | None


@dataclass
class Reconcile:
    to_zk: dict[TopicPartition, int] = field(default_factory=dict)
    to_kafka: dict[TopicPartition, int] = field(default_factory=dict)


def reconcile(mode: StorageMode, offsets: Mapping[TopicPartition, Offsets]) -> Reconcile:
    """The writes that bring both stores to what ``mode`` says, never moving one backward."""
    out = Reconcile()
    for tp, o in offsets.items():
        zk, kafka = (-1 if o.zk is None else o.zk), (-1 if o.kafka is None else o.kafka)
        if mode is StorageMode.ZOOKEEPER and zk > kafka:
            out.to_kafka[tp] = zk
        elif mode is StorageMode.KAFKA and kafka > zk:
            out.to_zk[tp] = kafka
        elif mode is StorageMode.DUAL:
            best = max(zk, kafka)
            if best > zk:
                out.to_zk[tp] = best
            if best > kafka:
                out.to_kafka[tp] = best
    return out


# ---- gates -------------------------------------------------------------------------------


@dataclass(frozen=True)
class GateResult:
    name: str
    ok: bool
    details: tuple[str, ...] = ()


@dataclass(frozen=True)
class GroupSnapshot:
    """Everything the gates look at, taken after a forced sync."""

    offsets: dict[TopicPartition, Offsets]
    #: partition -> owner as ZooKeeper says (old thread or mirrored new member)
    zk_owners: dict[TopicPartition, str] = field(default_factory=dict)
    #: partition -> owner as Kafka's assignment says, in the same spelling
    kafka_owners: dict[TopicPartition, str] = field(default_factory=dict)
    #: old threads registered in ZooKeeper, and the ones with a proxy in the Kafka group
    old_threads: frozenset[str] = frozenset()
    proxied_threads: frozenset[str] = frozenset()
    #: new members in Kafka, and the ones mirrored under /ids
    new_members: frozenset[str] = frozenset()
    mirrored_members: frozenset[str] = frozenset()
    #: total lag at the start and the end of the observation window
    lag_start: int = 0
    lag_end: int = 0


def gates(
    snapshot: GroupSnapshot,
    *,
    expected_members: int | None = None,
    lag_tolerance: float = 0.10,
    lag_slack: int = 100,
) -> list[GateResult]:
    """Every check a step must pass; each failure names the partition or member at fault."""
    s = snapshot
    unequal = [
        f"{tp.topic}-{tp.partition}: zookeeper {o.zk}, kafka {o.kafka}"
        for tp, o in sorted(s.offsets.items())
        if o.zk != o.kafka
    ]
    conflicts = [
        f"{tp.topic}-{tp.partition}: zookeeper says {s.zk_owners.get(tp)}, "
        f"kafka says {s.kafka_owners.get(tp)}"
        for tp in sorted(set(s.zk_owners) | set(s.kafka_owners))
        if s.zk_owners and s.kafka_owners and s.zk_owners.get(tp) != s.kafka_owners.get(tp)
    ]
    missing = [
        f"old thread {t} has no member in the Kafka group"
        for t in sorted(s.old_threads - s.proxied_threads)
    ]
    missing += [
        f"new member {m} is not mirrored under /ids"
        for m in sorted(s.new_members - s.mirrored_members)
    ]
    members = len(s.old_threads) + len(s.new_members)
    if expected_members is not None and members != expected_members:
        missing.append(f"{members} members present, {expected_members} expected")
    limit = s.lag_start * (1 + lag_tolerance) + lag_slack
    # a group with no member at all (the old application stopped, the new one not yet
    # started) consumes nothing: its lag grows with the producers and says nothing of health
    stopped = not (s.old_threads or s.new_members)
    growing = (
        []
        if stopped or s.lag_end <= limit
        else [f"lag grew from {s.lag_start} to {s.lag_end} (allowed up to {limit:.0f})"]
    )
    return [
        GateResult("stores equal", not unequal, tuple(unequal)),
        GateResult("no owner conflicts", not conflicts, tuple(conflicts)),
        GateResult("members present", not missing, tuple(missing)),
        GateResult("lag not growing", not growing, tuple(growing)),
    ]


# ---- the record kept per group -----------------------------------------------------------


@dataclass
class Transition:
    at_ms: int
    by: str
    source: str
    target: str
    gates: list[dict] = field(default_factory=list)


@dataclass
class GroupRecord:
    """What the bridge keeps at ``<root>/groups/<g>``: the mode and how it got there."""

    mode: StorageMode
    history: list[Transition] = field(default_factory=list)

    def step(self, target: StorageMode, by: str, at_ms: int, results: list[GateResult]) -> None:
        check_step(self.mode, target)
        failed = [r for r in results if not r.ok]
        if failed:
            raise StepRefused("; ".join(f"{r.name}: {', '.join(r.details[:5])}" for r in failed))
        self.history.append(
            Transition(at_ms, by, self.mode.value, target.value, [asdict(r) for r in results])
        )
        self.mode = target

    def encode(self) -> bytes:
        return json.dumps(
            {"version": 1, "mode": self.mode.value, "history": [asdict(t) for t in self.history]},
            separators=(",", ":"),
        ).encode()

    @classmethod
    def decode(cls, data: bytes) -> GroupRecord:
        try:
            doc = json.loads(data)
            return cls(
                StorageMode(doc["mode"]),
                [Transition(**t) for t in doc.get("history", [])],
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"bad group record: {exc}") from None


# ---- offset nodes by mode ------------------------------------------------------------------


@dataclass
class OffsetPlan:
    """A group's offset znodes as the mode wants them, and the commits Kafka needs."""

    desired: dict = field(default_factory=dict)  # path -> plan.Desired
    to_kafka: dict[TopicPartition, int] = field(default_factory=dict)
    written_zk: dict[TopicPartition, int] = field(default_factory=dict)


def kafka_writers(view: GroupView, proxy_client_id: str) -> set[TopicPartition] | None:
    """The partitions the group's Kafka members (not the bridge's proxies, whose client id
    is ``proxy_client_id``) own and commit themselves; None while the group is not settled
    (mid-rebalance: unknown). A Dead group without members is a stopped group, not in Kafka."""
    settled = view.state in ("Stable", "Empty") or (view.state == "Dead" and not view.members)
    if not settled:
        return None
    return {
        TopicPartition(t, p)
        for m in view.members
        if m.client_id != proxy_client_id
        for t, ps in (m.assignment or {}).items()
        for p in ps
    }


def offsets_after(
    zk: Mapping[TopicPartition, int],
    kafka: Mapping[TopicPartition, int] | None,
    plan: OffsetPlan,
) -> dict[TopicPartition, tuple[int, int]]:
    """Per partition, the (ZooKeeper, Kafka) offsets as ``plan`` leaves them (-1: none),
    for the answer to a forced sync."""
    kafka = kafka or {}
    return {
        tp: (
            max(zk.get(tp, -1), plan.written_zk.get(tp, -1)),
            max(kafka.get(tp, -1), plan.to_kafka.get(tp, -1)),
        )
        for tp in set(zk) | set(kafka)
    }


def offset_nodes(
    group: str,
    mode: StorageMode,
    zk_offsets: Mapping[TopicPartition, int],
    owned_offsets: AbstractSet[TopicPartition],
    kafka_offsets: Mapping[TopicPartition, int] | None,
    suggested: Mapping[TopicPartition, int],
    topics: AbstractSet[str],
    kafka_writers: AbstractSet[TopicPartition] | None = frozenset(),
) -> OffsetPlan:
    """Reconcile one group's stores by ``mode``; forward only.

    ``zk_offsets`` are the offset nodes that exist (the bridge's or the consumers'),
    ``owned_offsets`` those the bridge created, ``kafka_offsets`` None when Kafka could not
    be read (then nothing goes to Kafka), ``suggested`` forward moves other decisions
    asked for (a hand-over copying a new member's offset back). ``kafka_writers`` are the
    partitions a Kafka member owns and commits itself (None: unknown, mid-rebalance): a
    commit into Kafka is a blind write, so the bridge never races an owner's own commits
    (ZooKeeper writes are version-checked and need no such care).
    """
    from bridge.decide.plan import Desired

    kafka = dict(kafka_offsets or {})
    tps = {tp for tp in set(zk_offsets) | set(kafka) if tp.topic in topics}
    rec = reconcile(mode, {tp: Offsets(zk_offsets.get(tp), kafka.get(tp)) for tp in tps})
    to_zk = dict(rec.to_zk)
    for tp, value in suggested.items():
        if value > max(zk_offsets.get(tp, -1), to_zk.get(tp, -1)):
            to_zk[tp] = value
    to_kafka = {}
    if kafka_offsets is not None and kafka_writers is not None:
        to_kafka = {tp: o for tp, o in rec.to_kafka.items() if tp not in kafka_writers}
    out = OffsetPlan(to_kafka=to_kafka, written_zk=to_zk)
    values = {
        tp: value
        for tp in set(owned_offsets) | set(to_zk)
        if (value := max(zk_offsets.get(tp, -1), to_zk.get(tp, -1))) >= 0
    }
    if not values:
        return out
    paths = zkpaths.offset_paths(group, values)
    structural = Desired(structural=True)  # one for every parent: they only need to exist
    parents = [zkpaths.CONSUMERS, zkpaths.consumer_group_path(group), zkpaths.offsets_path(group)]
    parents += {path.rsplit("/", 1)[0] for path in paths.values()}
    out.desired.update(dict.fromkeys(parents, structural))
    for tp, value in values.items():
        foreign = tp in zk_offsets and tp not in owned_offsets
        out.desired[paths[tp]] = Desired(zkpaths.encode_offset(value), adopt=foreign)
    return out
