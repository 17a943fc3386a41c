"""``zk-bridge groups``, ``describe GROUP`` and ``migrate``: one view of every group across
both worlds, and the gated steps between storage modes."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from kafka import KafkaAdminClient
from kafka.errors import KafkaError
from kazoo.client import KazooClient
from tqdm import tqdm

import zkpaths
from bridge.config import Settings, StormSpout
from bridge.decide.dialects import pykafka_refusal, pykafka_step_problem
from bridge.decide.groups import next_gen_refusal
from bridge.decide.kafka_node import kafka_node_step_problem
from bridge.decide.migration import (
    GateResult,
    GroupRecord,
    GroupSnapshot,
    Offsets,
    StepRefused,
    StorageMode,
    check_step,
    gates,
)
from bridge.kafka.cluster import partition_counts
from bridge.kafka.groups import describe_groups, group_offsets, list_groups
from bridge.kafka.offsets import log_ends
from bridge.kafka.proxy import PROXY_CLIENT_ID
from bridge.kafka.views import GroupView
from bridge.zookeeper import sync
from bridge.zookeeper.reader import ConsumerTreeReader, NodeProblem, log_problem
from bridge.zookeeper.records import read_records, write_step
from bridge.zookeeper.writer import BatchRejected, OperatorWriter
from zkpaths import TopicPartition
from zkpaths.dialects import KAFKA_NODE, PYKAFKA, Member, member_threads


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


def _open(args):
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
    settings, zk, admin = _open(args)
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
    settings, zk, admin = _open(args)
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


# ---- migrate -------------------------------------------------------------------------------


def evaluate(
    zk, admin, root: str, group: str, mode: str, args, spout: StormSpout | None = None
) -> tuple[list, GroupState]:
    report = sync.request_sync(zk, root, group, args.sync_timeout)
    state = read_state(zk, admin, group, mode, spout)
    ends = log_ends(admin, set(state.zk_offsets) | set(state.kafka_offsets))
    lag_start = total_lag(state, ends)
    time.sleep(args.lag_window)
    later = read_state(zk, admin, group, mode, spout)
    lag_end = total_lag(later, log_ends(admin, set(ends)))
    synced = {
        tp: Offsets(None if z < 0 else z, None if k < 0 else k)
        for tp, (z, k) in (report.offsets if report is not None else {}).items()
    }
    snapshot = GroupSnapshot(
        offsets=synced,
        zk_owners=later.zk_owners if later.old_threads else {},
        kafka_owners=later.kafka_owners if later.old_threads else {},
        old_threads=frozenset(later.old_threads),
        proxied_threads=frozenset(later.proxies),
        new_members=frozenset(later.new_members),
        mirrored_members=frozenset(later.mirrored),
        lag_start=lag_start,
        lag_end=lag_end,
    )
    results = gates(snapshot, expected_members=args.expect_members)
    if spout is not None:
        results.append(_spout_gate(zk, spout))
    if any(m.dialect in (PYKAFKA, KAFKA_NODE) for m in later.members.values()):
        problems = [
            p
            for p in (
                pykafka_step_problem(later.members, later.note, args.to),
                kafka_node_step_problem(later.members, args.to),
            )
            if p
        ]
        results.append(GateResult("consumers use the target store", not problems, tuple(problems)))
    if report is None:
        results[0] = type(results[0])(
            "stores equal", False, (f"no answer from an active bridge within {args.sync_timeout}s",)
        )
    return results, later


def _spout_gate(zk: KazooClient, spout: StormSpout) -> GateResult:
    """A storm spout's nodes must all be readable: the bridge leaves a bad one alone, so
    a step over it would hand a partition to Kafka (or back) without its offset."""
    problems: list[NodeProblem] = []
    ConsumerTreeReader(zk, report=problems.append).spout_offsets(
        spout.zk_root, spout.spout_id, spout.topic
    )
    return GateResult("spout offsets readable", not problems, tuple(map(str, problems)))


def _migrate_one(
    settings: Settings,
    zk: KazooClient,
    admin: KafkaAdminClient,
    records: Mapping[str, tuple[GroupRecord, int]],
    g: str,
    target: StorageMode,
    args: argparse.Namespace,
) -> dict:
    """One group's step to ``target``: refused, only evaluated (dry run), or written with
    its gates behind the record's version."""
    root = settings.bridge.root
    if g not in records:
        return {
            "group": g,
            "ok": False,
            "from": None,
            "to": target.value,
            "why": "the bridge has not seen this group (is it running?)",
        }
    record, version = records[g]
    try:
        check_step(record.mode, target)
    except StepRefused as exc:
        return {
            "group": g,
            "ok": False,
            "from": record.mode.value,
            "to": target.value,
            "why": str(exc),
        }
    spout = spout_of(settings, g)
    results, _ = evaluate(zk, admin, root, g, record.mode.value, args, spout)
    row = {
        "group": g,
        "from": record.mode.value,
        "to": target.value,
        "gates": [asdict(r) for r in results],
    }
    if args.dry_run:
        row.update(ok=all(r.ok for r in results), why="dry run: nothing changed")
        return row
    try:
        record.step(target, args.by, int(time.time() * 1000), results)
        write_step(OperatorWriter(zk), root, g, record, version)
        row.update(ok=True, why="done")
    except StepRefused as exc:
        row.update(ok=False, why=f"refused: {exc}")
    except BatchRejected:
        row.update(ok=False, why="the record changed meanwhile; run the step again")
    return row


def _print_outcome(outcome: list[dict], output: str) -> None:
    if output == "json":
        print(json.dumps(outcome, indent=2))
        return
    for row in outcome:
        status = "OK" if row["ok"] else "REFUSED"
        print(f"{row['group']}: {row.get('from')} -> {row['to']}: {status} ({row['why']})")
        for gate in row.get("gates", []):
            mark = "pass" if gate["ok"] else "FAIL"
            print(f"  [{mark}] {gate['name']}")
            for detail in gate["details"][:20]:
                print(f"         {detail}")


def cmd_migrate(args: argparse.Namespace) -> int:
    settings, zk, admin = _open(args)
    target = StorageMode(args.to)
    outcome: list[dict] = []
    try:
        records = read_records(zk, settings.bridge.root)
        if args.all or args.pattern:
            rx = re.compile(args.pattern or ".*")
            groups = sorted(g for g in records if rx.fullmatch(g))
        else:
            groups = [args.group]
        bar = tqdm(
            groups,
            desc=f"migrate to {target}",
            unit="group",
            disable=len(groups) < 2,
            file=sys.stderr,
        )
        for g in bar:
            outcome.append(_migrate_one(settings, zk, admin, records, g, target, args))
    finally:
        zk.stop()
        admin.close()
    _print_outcome(outcome, args.output)
    return 0 if all(r["ok"] for r in outcome) else 1


def register(sub, connection_options) -> None:
    """Add ``groups``, ``describe`` and ``migrate`` to the ``zk-bridge`` parser."""
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

    p = sub.add_parser(
        "migrate",
        help="move a group one storage-mode step (zookeeper <-> dual <-> kafka), gated",
        description="Each step passes only if, after a forced sync, both stores are equal on "
        "every partition, no partition has two owners, every member is present on both "
        "sides, and lag is not growing over --lag-window. A failed gate changes nothing.",
    )
    connection_options(p)
    p.add_argument("group", nargs="?")
    p.add_argument("--to", required=True, choices=[m.value for m in StorageMode])
    p.add_argument("--all", action="store_true", help="every group the bridge knows")
    p.add_argument("--pattern", help="groups whose id fully matches this regex")
    p.add_argument("--dry-run", action="store_true", help="print the gate results only")
    p.add_argument("--lag-window", type=float, default=5.0, metavar="SECONDS")
    p.add_argument("--sync-timeout", type=float, default=15.0, metavar="SECONDS")
    p.add_argument("--expect-members", type=int, help="members both worlds must show")
    p.add_argument("--by", default="operator", help="who takes the step (kept in history)")
    p.add_argument("--output", **out)
    p.set_defaults(func=cmd_migrate)
