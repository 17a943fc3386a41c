"""Flows F2/F3's decision: how a Kafka consumer group looks as a group of old consumers.

Pure. Each member becomes a single-stream legacy consumer whose id sorts like its member
id (``zkpaths.mirror_ids``), so a legacy range computation over ``/ids`` gives Kafka's
``range`` assignment. Each assigned partition gets an owner node holding the member's
mirrored thread id; each committed offset an offset node.

Groups the bridge must not write are *frozen*: their bridge-owned nodes are desired exactly
as they are, so the planner neither changes nor deletes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from enum import StrEnum

import zkpaths
from bridge.decide.plan import Desired, Node
from bridge.kafka.views import CONSUMER, GroupView
from zkpaths import TopicPartition
from zkpaths.mirror_ids import mirrored_consumer_id, mirrored_thread_id
from zkpaths.names import topic_problem

SCOPE = (zkpaths.CONSUMERS,)

#: group states whose member list and assignment mean what they say; during a rebalance
#: DescribeGroups has members without metadata or assignment, so the mirror waits
STABLE_STATES = ("Stable", "Empty")


def settled(group: GroupView) -> bool:
    """Whether the group's members and assignments can be mirrored as they are.

    A classic group only when Stable or Empty. A next-generation (``consumer``) group in
    every state (Assigning, Reconciling too): each member's *current* assignment is what
    it owns now, and the broker puts a partition in a member's current assignment only
    after its previous owner revoked it, so no partition is in two of them. A partition
    being revoked stays in its previous owner's current assignment until that member
    acknowledges (Kafka 4.4.0's ConsumerGroupMember.asConsumerGroupDescribeMember adds
    partitionsPendingRevocation; pre-4.0 trunk left it in nobody's)."""
    if group.group_type == CONSUMER:
        return group.state not in ("Dead", "Unknown", "")
    return group.state in STABLE_STATES


class OnGroupDeleted(StrEnum):
    """What becomes of a group's mirrored offsets once the group is deleted in Kafka."""

    KEEP_OFFSETS = "keep-offsets"  # like ZooKeeper storage: offsets stay until removed
    DELETE = "delete"  # the mirror follows Kafka: the group's nodes go away


@dataclass
class GroupDecision:
    group_id: str
    desired: dict[str, Desired] = field(default_factory=dict)
    #: why the group is not mirrored at all (counted by reason)
    skipped: str | None = None
    #: the group is mid-rebalance: kept as it was, nothing to report
    waiting: bool = False
    #: what could only be mirrored partially (member metadata, deleted topics, ...)
    problems: list[str] = field(default_factory=list)
    #: the group's committed offsets to mirror, as data: the storage mode decides which of
    #: them become offset nodes (``decide.migration.offset_nodes``)
    offsets: dict[TopicPartition, int] = field(default_factory=dict)


def next_gen_refusal(view: GroupView | None, legacy_ids: list[str]) -> str | None:
    """Why a bridge without coexistence (``[coexistence] enabled = false``) stands aside
    from a group, if old consumers are registered in a next-generation (``consumer``-type)
    group with members: without proxies they cannot share it (docs/coexistence.md). An
    empty consumer-type group is not refused:
    a classic member (a proxy) joining it makes it a classic group again
    (GroupMetadataManager.classicGroupJoin)."""
    if not legacy_ids or view is None or view.group_type != CONSUMER or not view.members:
        return None
    return (
        "old ZooKeeper consumers are registered in a next-generation (consumer-type) group "
        "with live members and coexistence is off in this bridge (docs/coexistence.md): it "
        "joins no proxy for them and writes nothing under its ids and owners"
    )


def group_paths(group: str, paths: AbstractSet[str]) -> set[str]:
    root = zkpaths.consumer_group_path(group)
    return {p for p in paths if p == root or p.startswith(root + "/")}


def frozen(group: str, current: Mapping[str, Node], owned: AbstractSet[str]) -> dict[str, Desired]:
    """Keep every bridge-owned node of ``group`` exactly as it is."""
    return {
        p: Desired(current[p].data, ephemeral=bool(current[p].ephemeral_owner))
        for p in group_paths(group, owned)
        if p in current
    }


def legacy_members(group: str, ids: list[str], owned: AbstractSet[str]) -> list[str]:
    """Consumer ids under ``/ids`` that the bridge did not write: real old consumers."""
    return [c for c in ids if zkpaths.consumer_id_path(group, c) not in owned]


def structural(group: str) -> dict[str, Desired]:
    """The nodes every mirrored group has: /consumers, the group and its three directories."""
    return {
        p: Desired(structural=True)
        for p in (
            zkpaths.CONSUMERS,
            zkpaths.consumer_group_path(group),
            zkpaths.consumer_ids_path(group),
            zkpaths.owners_path(group),
            zkpaths.offsets_path(group),
        )
    }


def registration_data(topics: tuple[str, ...], current: Node | None, now_ms: int) -> bytes:
    """Keep the registration's timestamp while its subscription is unchanged."""
    reg = zkpaths.ConsumerRegistration({t: 1 for t in sorted(topics)}, timestamp_ms=now_ms)
    if current is not None:
        try:
            old = zkpaths.decode_consumer_registration(current.data)
            if old.subscription == reg.subscription and old.pattern == reg.pattern:
                reg = replace(reg, timestamp_ms=old.timestamp_ms)
        except zkpaths.CodecError:
            pass
    return zkpaths.encode_consumer_registration(reg)


def _members(
    decision: GroupDecision,
    group: GroupView,
    current: Mapping[str, Node],
    partitions: Mapping[str, int],
    now_ms: int,
) -> dict[TopicPartition, str]:
    """Each member's registration under ``/ids`` into ``decision``; the owner thread of
    each assigned partition (a partition assigned twice or gone is a problem, not owned)."""
    g, d = group.group_id, decision.desired
    owners: dict[TopicPartition, str] = {}
    for m in group.members:
        if m.topics is None:
            decision.problems.append(f"member {m.member_id}: subscription metadata undecodable")
            continue
        topics = tuple(t for t in m.topics if topic_problem(t) is None)
        cid = mirrored_consumer_id(g, m.member_id, m.group_instance_id)
        path = zkpaths.consumer_id_path(g, cid)
        d[path] = Desired(registration_data(topics, current.get(path), now_ms), ephemeral=True)
        if m.assignment is None:
            decision.problems.append(f"member {m.member_id}: assignment undecodable")
            continue
        thread = mirrored_thread_id(g, m.member_id, m.group_instance_id)
        for topic, parts in m.assignment.items():
            if topic not in partitions:
                decision.problems.append(f"member {m.member_id}: topic {topic} no longer exists")
                continue
            for p in parts:
                if not 0 <= p < partitions[topic]:
                    decision.problems.append(f"member {m.member_id}: {topic}-{p} does not exist")
                elif TopicPartition(topic, p) in owners:
                    decision.problems.append(f"{topic}-{p} assigned to two members")
                else:
                    owners[TopicPartition(topic, p)] = thread
    return owners


def _offsets(decision: GroupDecision, group: GroupView, partitions: Mapping[str, int]) -> None:
    """The group's committed offsets as data, with the directories they and lag tools need."""
    g, d = group.group_id, decision.desired
    seen: set[str] = set()  # the topics' directories, made once per topic, not partition
    for tp, offset in group.offsets.items():
        topic = tp.topic
        if topic not in partitions:
            decision.problems.append(f"offset for deleted topic {topic} not mirrored")
            continue
        decision.offsets[tp] = offset
        if topic in seen:
            continue
        seen.add(topic)
        d[zkpaths.topic_offsets_path(g, topic)] = Desired(structural=True)
        # old consumers left owners/<t> behind when they stopped, and lag tools list a
        # group's topics from there: an idle group keeps it while it has offsets for t
        d[zkpaths.topic_owners_path(g, topic)] = Desired(structural=True)


def _set_aside(decision: GroupDecision, group: GroupView, legacy_ids: list[str]) -> None:
    """Why the group is not mirrored as it is now (``skipped``), or that it is settling."""
    if group.error:
        decision.skipped = f"could not read the group from Kafka ({group.error})"
    elif group.protocol_type not in ("consumer", ""):
        decision.skipped = f"protocol type {group.protocol_type!r} is not 'consumer'"
    elif legacy_ids:
        decision.skipped = (
            f"old ZooKeeper consumers are registered ({', '.join(sorted(legacy_ids)[:3])}"
            f"{'...' if len(legacy_ids) > 3 else ''}); the group is left to coexistence"
        )
    elif not settled(group):
        decision.waiting = True


def decide_group(
    group: GroupView,
    current: Mapping[str, Node],
    owned: AbstractSet[str],
    legacy_ids: list[str],
    partitions: Mapping[str, int],
    now_ms: int,
) -> GroupDecision:
    """The ``/consumers/<g>`` tree for ``group``.

    ``legacy_ids`` are the consumer ids currently under ``/ids`` that the bridge did not
    write; ``partitions`` maps each existing topic to its partition count.
    """
    g = group.group_id
    decision = GroupDecision(g)
    _set_aside(decision, group, legacy_ids)
    if legacy_ids and not group.error:
        # stand aside without breaking the old consumers: our member and owner nodes would
        # block their claims, so they go; mirrored offsets stay
        decision.desired = keep_offsets(g, current, owned)
        return decision
    if decision.skipped or decision.waiting:
        decision.desired = frozen(g, current, owned)
        return decision
    try:
        zkpaths.consumer_group_path(g)
    except zkpaths.ZkPathError as exc:
        decision.skipped = f"group id cannot be a znode name: {exc}"
        return decision
    d = decision.desired
    d.update(structural(g))
    owners = _members(decision, group, current, partitions, now_ms)
    for (topic, p), thread in owners.items():
        d[zkpaths.topic_owners_path(g, topic)] = Desired(structural=True)
        d[zkpaths.owner_path(g, topic, p)] = Desired(zkpaths.encode_owner(thread), ephemeral=True)
    _offsets(decision, group, partitions)
    return decision


def keep_offsets(
    group: str, current: Mapping[str, Node], owned: AbstractSet[str]
) -> dict[str, Desired]:
    """The group's bridge-owned offset nodes (and the group node), kept as they are, with
    ``owners`` and the empty ``owners/<t>`` of each topic that keeps offsets (as the old
    layout left them when a group stopped)."""
    offsets_root = zkpaths.offsets_path(group)
    kept = {
        p: want
        for p, want in frozen(group, current, owned).items()
        if p.startswith(offsets_root) or p == zkpaths.consumer_group_path(group)
    }
    topics = {p.split("/")[4] for p in kept if p.count("/") == 5}
    owners = {zkpaths.owners_path(group)} | {zkpaths.topic_owners_path(group, t) for t in topics}
    kept.update({p: Desired(structural=True) for p in owners if p in group_paths(group, owned)})
    return kept


def decide_deleted_group(
    group: str, current: Mapping[str, Node], owned: AbstractSet[str], policy: OnGroupDeleted
) -> dict[str, Desired]:
    """Desired nodes of a group Kafka no longer has (members and owners always go)."""
    if policy is OnGroupDeleted.DELETE:
        return {}
    return keep_offsets(group, current, owned)
