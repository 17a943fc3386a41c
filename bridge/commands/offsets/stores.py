"""Both offset stores for the offsets commands: read, compare and write them.

ZooKeeper is read through the one reader of ``/consumers`` and written through the
writer's operator mode (one conditional transaction); Kafka through ``bridge.kafka``
(group offsets, the group's describe of either type, the transactional ``OffsetCommitter``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bridge.commands.offsets.clients import Clients, Failure, Key
from bridge.config import Settings
from zkpaths import GroupPartition, TopicPartition

if TYPE_CHECKING:  # kafka-python takes ~0.1 s to import: not for every ``zk-bridge --help``
    from kafka import KafkaAdminClient
    from kazoo.client import KazooClient

    from bridge.zookeeper.writer import OperatorWriter

#: one id for every offsets tool run, so two concurrent runs fence each other in Kafka
TRANSACTIONAL_ID = "kafka-zk-bridge-offsets"
KAFKA_VISIBLE_S = 30.0
#: one transaction's bound, longer than a reachability check (``COMMAND_WAIT_S``): the first
#: transaction of a cluster creates ``__transaction_state`` (50 partitions) before it is
#: answered, which took over 5 s on a loaded three-broker cluster; the servers already
#: answered by then, so a longer wait here is not a wait on an unreachable one
TRANSACTION_S = 30.0


@dataclass(frozen=True)
class ZkOffset:
    """An offset node as read: its version (for the write's check) and its value if usable."""

    version: int
    offset: int | None
    problem: str | None = None


def read_zk_groups(
    zk: KazooClient, groups: Iterable[str] | None
) -> tuple[dict[Key, ZkOffset], list[str]]:
    """Every usable offset node of ``groups`` (all groups when None), and the bad nodes
    (left out) as ``path: reason`` lines."""
    from bridge.zookeeper.reader import ConsumerTreeReader

    problems: list[str] = []
    reader = ConsumerTreeReader(zk, report=lambda p: problems.append(str(p)))
    names = sorted(groups) if groups is not None else reader.groups()
    nodes = reader.offsets(dict.fromkeys(names))
    out = {
        GroupPartition(g, *tp): ZkOffset(n.version, None if n.offset < 0 else n.offset)
        for g, per_group in nodes.items()
        for tp, n in per_group.items()
    }
    return out, problems


def read_zk_keys(zk: KazooClient, keys: Iterable[Key]) -> dict[Key, ZkOffset]:
    """The offset nodes of exactly these partitions, read before writing them: an absent
    node is left out, a bad one is kept (its row shows ``bad``; the write replaces it)."""
    from bridge.zookeeper.reader import ConsumerTreeReader

    reader = ConsumerTreeReader(zk, report=lambda _problem: None)  # shown in the plan
    nodes = reader.offsets_at(keys)
    return {
        k: ZkOffset(n.version, None if n.offset < 0 else n.offset, n.problem)
        for k, n in nodes.items()
    }


def write_zk(
    writer: OperatorWriter, targets: Mapping[Key, int], current: Mapping[Key, ZkOffset]
) -> None:
    """All targets in one transaction; fails as a whole if any node changed since ``current``
    was read (set with its version, or created where it was absent)."""
    from bridge.decide.plan import Create, SetData
    from bridge.zookeeper.writer import BatchRejected, Check, TooLarge

    paths = {k: f"/consumers/{k.group}/offsets/{k.topic}/{k.partition}" for k in targets}
    ops: list = writer.missing_parents(paths[k] for k in targets if k not in current)
    for key in sorted(targets):
        data = str(targets[key]).encode("ascii")
        node = current.get(key)
        if node is None:
            ops.append(Create(paths[key], data))
        elif node.offset == targets[key]:
            ops.append(Check(paths[key], node.version))  # unchanged, but still as read
        else:
            ops.append(SetData(paths[key], data, node.version))
    try:
        writer.apply(ops)
    except TooLarge as exc:
        raise Failure(f"{exc}: split the file by group") from None
    except BatchRejected as exc:
        verb = {"Create": "create", "SetData": "set", "Check": "check"}[type(exc.op).__name__]
        raise Failure(
            f"ZooKeeper transaction refused at '{verb} {exc.op.path}' "
            f"({type(exc.error).__name__}): the node changed since it was read (a concurrent "
            "writer?); nothing was written, run again"
        ) from None


def zk_live_ids(zk: KazooClient, group: str) -> list[str]:
    """Old consumers registered for ``group`` (ephemeral ``/consumers/<g>/ids`` children),
    without the bridge's mirror of the Kafka members (``<g>_~~<member>``): those are
    reported as Kafka members, not as old consumers."""
    from bridge.zookeeper.reader import ConsumerTreeReader

    ids = ConsumerTreeReader(zk).consumer_ids([group])[group]
    return [i for i in ids if not i.startswith(f"{group}_~~")]


def kafka_live(admin: KafkaAdminClient, group: str) -> str | None:
    """Why the Kafka group counts as live (type, state and members), or None when it is
    Empty or Dead. A group of either type is read with its own API (``describe_groups``):
    DescribeGroups answers a next-generation group with GROUP_ID_NOT_FOUND, which would
    read as "cannot describe" for an empty one and hide a live one's members."""
    from bridge.kafka.groups import describe_groups

    view = describe_groups(admin, [group])[group]
    if view.error:
        return f"Kafka cannot describe it ({view.error})"
    state = view.state or "Unknown"
    if state in ("Empty", "Dead") and not view.members:
        return None
    ids = ", ".join(sorted(m.client_id or m.member_id for m in view.members))
    return (
        f"Kafka {view.group_type} group is {state} with {len(view.members)} member(s)"
        f"{': ' + ids if ids else ''}"
    )


def write_kafka(settings: Settings, admin: KafkaAdminClient, targets: Mapping[Key, int]) -> None:
    """One transactional offset commit for every group (``bridge.kafka.commit``, as the
    bridge commits), then wait until OffsetFetch shows exactly these offsets."""
    from bridge.kafka.commit import OffsetCommitter

    per_group: dict[str, dict[TopicPartition, int]] = {}
    for key, o in targets.items():
        per_group.setdefault(key.group, {})[key.tp] = o
    committer = OffsetCommitter(
        admin,
        settings.kafka.client_options(),
        TRANSACTIONAL_ID,
        KAFKA_VISIBLE_S,
        transaction_s=TRANSACTION_S,
    )
    try:
        late = committer.commit_groups(per_group, "command", exact=True)
    finally:
        committer.close()
    if late:
        raise Failure(
            f"Kafka accepted the commit but OffsetFetch of {', '.join(late)} "
            f"did not show it within {KAFKA_VISIBLE_S:.0f}s"
        )


def current(
    clients: Clients, keys: Iterable[Key], stores: Iterable[str]
) -> tuple[dict[Key, ZkOffset], dict[Key, int]]:
    """What each store now holds for ``keys``."""
    keys = sorted(set(keys))
    zk_now: dict[Key, ZkOffset] = {}
    kafka_now: dict[Key, int] = {}
    if "zookeeper" in stores:
        zk_now = read_zk_keys(clients.zk, keys)
    if "kafka" in stores:
        from bridge.kafka.groups import group_offsets

        for group in sorted({k.group for k in keys}):
            for tp, o in group_offsets(clients.admin, group).items():
                kafka_now[GroupPartition(group, *tp)] = o
    return zk_now, kafka_now


def apply(
    clients: Clients,
    stores: list[str],
    targets: Mapping[Key, int],
    zk_now: Mapping[Key, ZkOffset],
) -> None:
    """ZooKeeper first (atomic), then Kafka; a Kafka failure says that ZooKeeper was written."""
    from kafka.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError

    if "zookeeper" in stores:
        write_zk(clients.zk_writer, targets, zk_now)
    if "kafka" in stores:
        try:
            write_kafka(clients.settings, clients.admin, targets)
        except (Failure, KafkaError) as exc:
            done = "ZooKeeper was written; " if "zookeeper" in stores else ""
            lost = isinstance(exc, (KafkaConnectionError, KafkaTimeoutError))
            raise Failure(f"{done}the Kafka commit failed: {exc}", 3 if lost else 1) from None


def live_warning(clients: Clients, group: str, check_zk: bool) -> str | None:
    why = []
    if check_zk:
        ids = zk_live_ids(clients.zk, group)
        if ids:
            why.append(
                f"{len(ids)} old consumer(s) registered under /consumers/{group}/ids: "
                + ", ".join(ids[:5])
                + (", ..." if len(ids) > 5 else "")
            )
    live = kafka_live(clients.admin, group)
    if live:
        why.append(live)
    return "; ".join(why) or None
