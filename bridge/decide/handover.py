"""Coexistence decisions: old ZooKeeper consumers and new Kafka members in one group (I1).

Pure. The bridge runs a *proxy* member in the Kafka group for every old consumer thread,
as a static member whose ``group.instance.id`` is the thread id. Kafka's ``range`` puts
static members first (by instance id) and dynamic ones after (by member id); mirrored ids
of new members sort after every old thread (``zkpaths.mirror_ids``). So the legacy range
computed by old consumers over ``/ids`` and Kafka's range are the same computation.

What keeps a partition from being fetched by an old and a new member at once:

* **gate** (leader proxy, before SyncGroup): a partition moving to a new member must have
  been released in ZooKeeper by its old owner (owner node gone) and then *fenced* by the
  bridge (an owner node holding the new member's mirrored thread id, which no old consumer
  can take); the old owner's final ZooKeeper offset must be committed in Kafka;
* **release**: a fence goes only when the latest generation whose join phase completed no
  longer gives the partition to a new member (an eager rejoin revoked it), after the new
  member's last Kafka offset has been copied into ZooKeeper if it is ahead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import zkpaths
from bridge.decide.groups import registration_data, structural
from bridge.decide.plan import Desired, Node
from bridge.kafka.views import JoinedGeneration, KafkaMember
from zkpaths import TopicPartition
from zkpaths.mirror_ids import mirrored_consumer_id, mirrored_thread_id


class OwnerNode(NamedTuple):
    """An owner node of a mixed group (a named tuple: one is made per claim per tick)."""

    thread: str
    ours: bool  # a bridge fence (in the ledger), not a real old consumer's claim


@dataclass(frozen=True)
class ZkGroupState:
    """What ZooKeeper says of a mixed group right now."""

    old_threads: frozenset[str]
    owners: dict[TopicPartition, OwnerNode] = field(default_factory=dict)
    offsets: dict[TopicPartition, int] = field(default_factory=dict)


@dataclass
class Gate:
    """Whether the leader may send SyncGroup, and what stands in the way."""

    #: released partitions the bridge must fence for their new owner (thread id)
    fences: dict[TopicPartition, str] = field(default_factory=dict)
    #: partitions an old consumer still owns (owner thread) although they move away
    waiting: dict[TopicPartition, str] = field(default_factory=dict)
    #: final ZooKeeper offsets of moving partitions that Kafka does not have yet
    offsets_to_kafka: dict[TopicPartition, int] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return not (self.fences or self.waiting or self.offsets_to_kafka)


def is_proxy(member: KafkaMember, old_threads: frozenset[str]) -> bool:
    return member.group_instance_id is not None and member.group_instance_id in old_threads


def range_assignment(
    members: tuple[KafkaMember, ...], partitions: Mapping[str, int]
) -> dict[TopicPartition, str]:
    """Kafka's range over the members (static first), for topics that exist."""
    subs = {m.member_id: [t for t in m.topics if t in partitions] for m in members}
    instances = {m.member_id: m.group_instance_id for m in members}
    return dict(zkpaths.kafka_range_assign(subs, partitions, group_instance_ids=instances))


def range_mismatch(
    gen: JoinedGeneration, partitions: Mapping[str, int]
) -> dict[TopicPartition, tuple[str | None, str | None]]:
    """Partitions the group's leader gave other than Kafka's range: tp -> (given to, range's).

    Old consumers compute Kafka's range over ``/ids``; a leader that assigns otherwise (a
    kafka-python 3.0.x leader in a group with proxies, see ``bridge.kafka.range_assignor``)
    leaves such partitions fetched by nobody, or by an old and a new consumer at once.
    """
    given = {tp: m for tp, m in gen.assignment.items() if tp.topic in partitions}
    # compared over the partitions the leader knew of: a topic grown since is assigned at
    # the leader's next metadata refresh, which is Kafka's behaviour, not a mismatch
    known: dict[str, int] = {}
    for tp in given:
        known[tp.topic] = min(partitions[tp.topic], max(known.get(tp.topic, 0), tp.partition + 1))
    expected = range_assignment(gen.members, known)
    return {
        tp: (given.get(tp), expected.get(tp))
        for tp in sorted(set(expected) | set(given), key=lambda tp: (tp.topic, tp.partition))
        if given.get(tp) != expected.get(tp)
    }


def new_member_threads(group: str, gen: JoinedGeneration, old: frozenset[str]) -> dict[str, str]:
    """member id -> mirrored thread id, for every member that is not a proxy."""
    return {
        m.member_id: mirrored_thread_id(group, m.member_id, m.group_instance_id)
        for m in gen.members
        if not is_proxy(m, old)
    }


def sync_gate(
    group: str,
    gen: JoinedGeneration,
    zk: ZkGroupState,
    kafka_offsets: Mapping[TopicPartition, int],
) -> Gate:
    """What must happen before the leader may hand ``gen.assignment`` to the members."""
    gate = Gate()
    threads = new_member_threads(group, gen, zk.old_threads)
    for tp, member in gen.assignment.items():
        thread = threads.get(member)
        if thread is None:
            continue  # stays with an old thread: the old consumers handle it
        owner = zk.owners.get(tp)
        if owner is not None and not owner.ours:
            gate.waiting[tp] = owner.thread
            continue
        if owner is None or owner.thread != thread:
            gate.fences[tp] = thread
        zk_offset = zk.offsets.get(tp, -1)
        if zk_offset > kafka_offsets.get(tp, -1):
            gate.offsets_to_kafka[tp] = zk_offset
    return gate


def withheld(gen: JoinedGeneration, gate: Gate) -> dict[TopicPartition, str]:
    """The assignment with every partition still waiting for its old owner held back."""
    return {tp: m for tp, m in gen.assignment.items() if tp not in gate.waiting}


# ---- the held SyncGroup, as a state machine: pending -> released | withheld -> retried ----


@dataclass
class PendingSync:
    """A leader proxy holding its SyncGroup (pending) since ``since`` (monotonic seconds),
    until ``decided`` is set: the assignment it then sends (released, or withheld)."""

    generation_id: int
    members: tuple[KafkaMember, ...]
    since: float
    decided: dict[TopicPartition, str] | None = None


@dataclass(frozen=True)
class HeldStep:
    """One pass over a pending SyncGroup. The flow commits ``gate.offsets_to_kafka`` first
    (the old owners' final offsets), then sets ``release`` as the decision if it is not None;
    ``timed_out``: released at the deadline with ``gate.waiting`` withheld, so the group is
    to be retried (``retry_withheld``) once those partitions are free."""

    gen: JoinedGeneration
    gate: Gate
    release: dict[TopicPartition, str] | None
    timed_out: bool = False


def step_held_sync(
    group: str,
    pending: PendingSync,
    zk: ZkGroupState,
    kafka_offsets: Mapping[TopicPartition, int],
    partitions: Mapping[str, int],
    now: float,
    max_hold_s: float,
) -> HeldStep:
    """Keep holding, release the range assignment (the hand-over is safe), or, past
    ``max_hold_s`` (Kafka allows the leader only the rebalance timeout), release it without
    the partitions whose old owners still hold them."""
    gen = JoinedGeneration(
        pending.generation_id, pending.members, range_assignment(pending.members, partitions)
    )
    gate = sync_gate(group, gen, zk, kafka_offsets)
    if gate.ready:
        return HeldStep(gen, gate, gen.assignment)
    if now - pending.since > max_hold_s:
        return HeldStep(gen, gate, withheld(gen, gate), timed_out=True)
    return HeldStep(gen, gate, None)


def retry_withheld(
    group: str,
    gen: JoinedGeneration,
    zk: ZkGroupState,
    kafka_offsets: Mapping[TopicPartition, int],
) -> bool:
    """A group whose assignment was withheld rebalances again (its leader proxy rejoins)
    once no partition of the running generation waits for an old owner any more."""
    return not sync_gate(group, gen, zk, kafka_offsets).waiting


#: how long a forward offset stands in ZooKeeper before the fence over its partition goes
#: (``release_fences``): an old consumer's rebalance attempt reads its offsets a few
#: ZooKeeper round trips before it claims; 500 ms leaves a stalled attempt room
FORWARD_SETTLE_MS = 500


def release_fences(
    candidates: Iterable[TopicPartition],
    zk: ZkGroupState,
    kafka_offsets: Mapping[TopicPartition, int],
    forwarded: Mapping[TopicPartition, int],
    now_ms: int,
) -> tuple[list[TopicPartition], dict[TopicPartition, int]]:
    """Of the bridge's fences no longer wanted (``candidates``, partitions going back to
    old threads), the ones to release now, and the offsets to move forward first.

    An old consumer reads its partitions' offsets *before* it claims them (0.10's
    ZookeeperConsumerConnector.rebalance: fetchOffsets, then
    reflectPartitionOwnershipDecision). A fence released in the same write as the forward
    offset let an attempt that had read just before it claim the partition and fetch from
    the stale offset (CI: 240 messages consumed twice). So a fence whose partition's Kafka
    offset is ahead stays while the offset is moved forward, and goes once the forward
    has stood ``FORWARD_SETTLE_MS`` (``forwarded``: partition -> when it was decided): an
    attempt that read before it has made its claims, and failed on the fence, by then."""
    released: list[TopicPartition] = []
    forward: dict[TopicPartition, int] = {}
    for tp in candidates:
        k = kafka_offsets.get(tp, -1)
        if k > zk.offsets.get(tp, -1):
            forward[tp] = k
        elif now_ms - forwarded.get(tp, now_ms - FORWARD_SETTLE_MS) >= FORWARD_SETTLE_MS:
            released.append(tp)
    return released, forward


@dataclass
class MixedDecision:
    desired: dict[str, Desired] = field(default_factory=dict)
    #: fences released by this decision (their offsets copied to ZooKeeper first)
    released: list[TopicPartition] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: offsets to move forward in ZooKeeper (a released partition's Kafka offset), as data
    offsets: dict[TopicPartition, int] = field(default_factory=dict)


def decide_mixed_group(
    group: str,
    gen: JoinedGeneration,
    zk: ZkGroupState,
    kafka_offsets: Mapping[TopicPartition, int],
    current: Mapping[str, Node],
    now_ms: int,
    forwarded: Mapping[TopicPartition, int] | None = None,
) -> MixedDecision:
    """The bridge's part of a mixed group's tree for the latest joined generation.

    New members appear under ``/ids``; their partitions are fenced once released; fences of
    partitions that went back to old threads are released once the new member's Kafka
    offset has been moved forward into ZooKeeper (I2: never backward) and has stood there
    (``release_fences``; ``forwarded``: partition -> when its forward was decided).
    """
    out = MixedDecision()
    d = out.desired
    d.update(structural(group))
    threads = new_member_threads(group, gen, zk.old_threads)
    for m in gen.members:
        for t in m.topics:
            if zkpaths.topic_problem(t) is None:
                d[zkpaths.topic_owners_path(group, t)] = Desired(structural=True)
                d[zkpaths.topic_offsets_path(group, t)] = Desired(structural=True)
        if m.member_id not in threads:
            continue
        if m.group_instance_id is not None:
            out.problems.append(
                f"new member {m.member_id} is static (group.instance.id "
                f"{m.group_instance_id}); mixed groups need dynamic new members for the "
                "legacy order to match Kafka's"
            )
        path = zkpaths.consumer_id_path(
            group, mirrored_consumer_id(group, m.member_id, m.group_instance_id)
        )
        # persistent, not ephemeral: a fence or mirrored id must outlive the active bridge's
        # session, or every old consumer would rebalance onto the new members' partitions
        # in the moment between its expiry and the standby taking over (I1)
        d[path] = Desired(registration_data(m.topics, current.get(path), now_ms))

    for tp, member in gen.assignment.items():
        thread = threads.get(member)
        owner = zk.owners.get(tp)
        if thread is not None and (owner is None or owner.ours):
            d[zkpaths.owner_path(group, tp.topic, tp.partition)] = Desired(
                zkpaths.encode_owner(thread)
            )
    candidates = [
        tp
        for tp, owner in zk.owners.items()
        if owner.ours and threads.get(gen.assignment.get(tp, "")) is None
    ]
    # a released fence is not desired any more: the planner deletes it; the others stay
    out.released, out.offsets = release_fences(
        candidates, zk, kafka_offsets, forwarded or {}, now_ms
    )
    for tp in set(candidates) - set(out.released):
        d[zkpaths.owner_path(group, tp.topic, tp.partition)] = Desired(
            zkpaths.encode_owner(zk.owners[tp].thread)
        )
    return out
