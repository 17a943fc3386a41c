"""``zk-bridge groups`` and ``describe GROUP``: one view of every group across both worlds
(``migrate`` reads the same view: ``commands/migrate.py``)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from kafka import KafkaAdminClient
from kafka.errors import KafkaError
from kazoo.client import KazooClient

import zkpaths
from bridge.config import Settings, StormSpout
from bridge.decide.dialects import pykafka_refusal
from bridge.decide.groups import next_gen_refusal
from bridge.kafka.cluster import partition_counts
from bridge.kafka.groups import describe_groups, group_offsets, list_groups
from bridge.kafka.offsets import log_ends
from bridge.kafka.proxy import PROXY_CLIENT_ID
from bridge.kafka.views import GroupView
from bridge.zookeeper.reader import ConsumerTreeReader, NodeProblem, log_problem
from bridge.zookeeper.records import read_records
from zkpaths import TopicPartition
from zkpaths.dialects import Member, member_threads


@dataclass
class GroupState:
    """Everything both worlds say about one group."""

    group: str
    mode: str
    old_threads: dict[str, tuple[str, ...]]  # thread -> topics
    kafka_state: str
    proxies: set[str]  # old threads with a member in the Kafka group
    new_members: dict[str, str]  # member id -> client id
    mirrored: set[str]  # new member ids mirrored under /ids
    zk_offsets: dict[TopicPartition, int]
    kafka_offsets: dict[TopicPartition, int]
    zk_owners: dict[TopicPartition, str]
    kafka_owners: dict[TopicPartition, str]
    members: dict[str, Member] = field(default_factory=dict)  # ZooKeeper consumers
    #: partitions pykafka consumers own (owners/<t>/<leader>-<p>): partition -> consumer id
    pykafka_owners: dict[TopicPartition, str] = field(default_factory=dict)
    #: why the bridge does not carry this group (decide.dialects), or None
    note: str | None = None
    #: classic or consumer (KIP-848, ListGroups v5); "-" when Kafka has no such group
    group_type: str = "-"

    @property
    def dialects(self) -> str:
        """The dialects of the group's ZooKeeper consumers, e.g. ``kafka-node``, or ``-``."""
        return ",".join(sorted({m.dialect for m in self.members.values()})) or "-"

    def member_rows(self) -> list[dict]:
        """One row per ZooKeeper consumer: dialect, topics, the partitions it owns."""
        rows = []
        for cid, m in sorted(self.members.items()):
            ids = {t for ts in _threads(m).values() for t in ts}
            owned = sorted(
                f"{tp.topic}-{tp.partition}" for tp, o in self.zk_owners.items() if o in ids
            )
            owned += sorted(
                f"{tp.topic}-{tp.partition}" for tp, o in self.pykafka_owners.items() if o == cid
            )
            rows.append(
                {
                    "consumer_id": cid,
                    "dialect": m.dialect,
                    "topics": ",".join(m.topics),
                    "owns": ",".join(owned) or "-",
                }
            )
        return rows


def _threads(member: Member) -> dict[str, tuple[str, ...]]:
    try:
        return member_threads(member)
    except zkpaths.ZkLayoutError:
        return {}


def _zk_members(
    reader: ConsumerTreeReader, group: str
) -> tuple[dict[str, Member], set[str], dict[str, tuple[str, ...]]]:
    """The group's ZooKeeper consumers that are not the bridge's mirror (by id), the
    mirrored members' ids, and each old consumer thread's topics."""
    old: dict[str, tuple[str, ...]] = {}
    mirrored: set[str] = set()
    real: list[str] = []
    for cid in reader.consumer_ids([group])[group]:
        try:
            _kind, ident = zkpaths.parse_mirrored(group, cid)
            if cid.startswith(f"{group}_~~"):
                mirrored.add(ident)
                continue
        except zkpaths.ZkLayoutError:
            pass
        real.append(cid)
    members = reader.members(group, real)
    for cid, member in members.items():
        try:
            per_topic = member_threads(member)
        except zkpaths.ZkLayoutError as exc:
            log_problem(NodeProblem(zkpaths.consumer_id_path(group, cid), str(exc)))
            continue
        for topic, threads in per_topic.items():
            for t in threads:
                old[t] = (*old.get(t, ()), topic)
    return members, mirrored, old


def _kafka_members(
    view: GroupView, old: Mapping[str, tuple[str, ...]]
) -> tuple[set[str], dict[str, str], dict[TopicPartition, str]]:
    """The Kafka members that are proxies of old threads, the new ones (member id ->
    client id), and who owns each partition, spelled as the legacy layout shows it."""
    proxies: set[str] = set()
    new: dict[str, str] = {}
    kafka_owners: dict[TopicPartition, str] = {}
    for m in view.members:
        iid = m.group_instance_id
        if iid and iid in old:
            proxies.add(iid)
            spelled = iid
        else:
            new[m.member_id] = m.client_id
            spelled = zkpaths.mirrored_thread_id(view.group_id, m.member_id, iid)
        # a consumer-type group's current assignment: what each member owns now
        for topic, parts in (m.assignment or {}).items():
            for p in parts:
                kafka_owners[TopicPartition(topic, p)] = spelled
    return proxies, new, kafka_owners


def read_state(
    zk: KazooClient,
    admin: KafkaAdminClient,
    group: str,
    mode: str,
    spout: StormSpout | None = None,
    group_type: str | None = None,
) -> GroupState:
    """Both worlds' view of ``group``; for a storm spout's group (``spout``), its
    ZooKeeper store is the spout's own partition nodes and it has no old threads.
    ``group_type``: ListGroups' type of the group, if known (a group of the other type is
    described again with the other API either way)."""
    reader = ConsumerTreeReader(zk)
    if spout is not None:
        return _spout_state(reader, admin, group, mode, spout)
    members, mirrored, old = _zk_members(reader, group)
    every_topic: dict[str, None] = {group: None}
    zk_offsets = {tp: n.offset for tp, n in reader.offsets(every_topic)[group].items()}
    zk_owners = reader.owners(every_topic)[group]
    pyk_owners = {}
    if any(m.registration is None for m in members.values()):
        counts = partition_counts(admin)
        pyk_owners = {tp: o.consumer_id for tp, o in reader.pykafka_owners(group, counts).items()}
    view = describe_groups(admin, [group], {group: group_type} if group_type else None)[group]
    proxies, new, kafka_owners = _kafka_members(view, old)
    try:
        kafka_offsets = group_offsets(admin, group)
    except KafkaError:  # a group unknown to Kafka has no offsets there
        kafka_offsets = {}
    clients = {m.member_id: m.client_id for m in view.members if m.client_id != PROXY_CLIENT_ID}
    described = not view.error and view.state not in ("", "Dead")
    return GroupState(
        group,
        mode,
        old,
        (view.state or "-") if not view.error else "-",
        proxies,
        new,
        mirrored,
        zk_offsets,
        kafka_offsets,
        zk_owners,
        kafka_owners,
        members,
        pyk_owners,
        pykafka_refusal(group, members, clients) or next_gen_refusal(view, list(old)),
        view.group_type if described else "-",
    )


def _spout_state(
    reader: ConsumerTreeReader, admin: KafkaAdminClient, group: str, mode: str, spout: StormSpout
) -> GroupState:
    nodes = reader.spout_offsets(spout.zk_root, spout.spout_id, spout.topic)
    view = describe_groups(admin, [group])[group]  # a spout's group may be of either type
    new = {m.member_id: m.client_id for m in view.members}
    kafka_owners = {
        TopicPartition(t, p): m.member_id
        for m in view.members
        for t, ps in (m.assignment or {}).items()
        for p in ps
    }
    try:
        kafka_offsets = group_offsets(admin, group)
    except KafkaError:
        kafka_offsets = {}
    zk_offsets = {tp: n.data.offset for tp, n in nodes.items() if n.data is not None}
    state = (view.state or "-") if not view.error else "-"
    # new members count as mirrored: a spout's group has no /ids to mirror them into
    return GroupState(
        group, mode, {}, state, set(), new, set(new), zk_offsets, kafka_offsets, {}, kafka_owners
    )


def spout_of(settings: Settings, group: str) -> StormSpout | None:
    """The storm spout the config names ``group`` for, if any."""
    return next((s for s in settings.storm.spouts if s.group == group), None)


def total_lag(state: GroupState, ends: dict[TopicPartition, int]) -> int:
    lag = 0
    for tp, end in ends.items():
        committed = max(state.zk_offsets.get(tp, -1), state.kafka_offsets.get(tp, -1))
        lag += max(0, end - max(committed, 0))
    return lag


def _print_table(rows: list[dict], columns: list[str]) -> None:
    widths = {
        c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) if rows else len(c) for c in columns
    }
    print("  ".join(c.upper().ljust(widths[c]) for c in columns))
    for r in rows:
        print("  ".join(str(r.get(c, "")).ljust(widths[c]) for c in columns))


# ---- groups / describe ---------------------------------------------------------------------


def open_both(args):
    """Settings, a ZooKeeper session and a Kafka admin client, as a command opens them:
    either server unreachable ends the command with one line (``bridge.connect``)."""
    from bridge.commands import settings_from_args
    from bridge.connect import command_kafka, command_zookeeper

    settings = settings_from_args(args)
    zk = command_zookeeper(settings.zookeeper)
    try:
        return settings, zk, command_kafka(settings.kafka)
    except BaseException:
        zk.stop()
        zk.close()
        raise


def cmd_groups(args: argparse.Namespace) -> int:
    settings, zk, admin = open_both(args)
    try:
        records = read_records(zk, settings.bridge.root)
        listed = list_groups(admin)
        names = set(records) | set(listed) | set(ConsumerTreeReader(zk).groups())
        names |= {s.group for s in settings.storm.spouts}
        rows = []
        for g in sorted(names):
            mode = records[g][0].mode.value if g in records else "(not seen yet)"
            spout = spout_of(settings, g)
            s = read_state(zk, admin, g, mode, spout, listed[g].group_type if g in listed else None)
            rows.append(
                {
                    "group": g,
                    "type": s.group_type,
                    "mode": mode,
                    "old_threads": len(s.old_threads),
                    "new_members": len(s.new_members),
                    "kafka_state": s.kafka_state,
                    "dialects": "storm-spout" if spout else s.dialects,
                }
            )
    finally:
        zk.stop()
        admin.close()
    if args.output == "json":
        print(json.dumps(rows, indent=2))
    else:
        columns = ["group", "type", "mode", "old_threads", "new_members", "kafka_state"]
        columns.append("dialects")
        _print_table(rows, columns)
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    settings, zk, admin = open_both(args)
    try:
        records = read_records(zk, settings.bridge.root)
        mode = records[args.group][0].mode.value if args.group in records else "(not seen yet)"
        spout = spout_of(settings, args.group)
        s = read_state(zk, admin, args.group, mode, spout)
        tps = set(s.zk_offsets) | set(s.kafka_offsets) | set(s.zk_owners) | set(s.kafka_owners)
        tps |= set(s.pykafka_owners)
        ends = log_ends(admin, tps)
    finally:
        zk.stop()
        admin.close()
    rows = []
    for tp in sorted(tps):
        committed = max(s.zk_offsets.get(tp, -1), s.kafka_offsets.get(tp, -1))
        end = ends.get(tp)
        rows.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "zk_offset": s.zk_offsets.get(tp, "-"),
                "kafka_offset": s.kafka_offsets.get(tp, "-"),
                "log_end": "-" if end is None else end,
                "lag": "-" if end is None or committed < 0 else end - committed,
                "owner": s.zk_owners.get(tp)
                or s.pykafka_owners.get(tp)
                or s.kafka_owners.get(tp)
                or "-",
            }
        )
    consumers = s.member_rows()
    if args.output == "json":
        dialect = {"storm_spout": spout.model_dump()} if spout else {}
        doc = {"group": args.group, "type": s.group_type, "mode": mode, **dialect}
        doc["consumers"] = consumers
        doc["partitions"] = rows
        print(json.dumps(doc | {"note": s.note}, indent=2))
    else:
        if spout is not None:
            print(f"storm spout {spout.spout_id}: offsets at {spout.zk_root}/{spout.spout_id}")
        print(
            f"group {args.group}: type {s.group_type}, mode {mode}, Kafka state {s.kafka_state}, "
            f"{len(s.old_threads)} old threads, {len(s.new_members)} new members"
        )
        if s.note:
            print(f"note: {s.note}")
        if consumers:
            _print_table(consumers, ["consumer_id", "dialect", "topics", "owns"])
            print()
        _print_table(
            rows, ["topic", "partition", "zk_offset", "kafka_offset", "log_end", "lag", "owner"]
        )
    return 0


def register(sub, connection_options) -> None:
    """Add ``groups`` and ``describe`` to the ``zk-bridge`` parser."""
    out = {"choices": ["table", "json"], "default": "table"}

    p = sub.add_parser("groups", help="every group in either world: mode, members, state")
    connection_options(p)
    p.add_argument("--output", **out)
    p.set_defaults(func=cmd_groups)

    p = sub.add_parser("describe", help="per partition: both stores, log end, lag, owner")
    connection_options(p)
    p.add_argument("group")
    p.add_argument("--output", **out)
    p.set_defaults(func=cmd_describe)
