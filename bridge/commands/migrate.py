"""``zk-bridge migrate``: the gated steps between storage modes, evaluated over the same
view of a group as ``groups`` and ``describe`` show (``commands/groups.py``)."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict

from kafka import KafkaAdminClient
from kazoo.client import KazooClient
from tqdm import tqdm

from bridge.commands.groups import GroupState, open_both, read_state, spout_of, total_lag
from bridge.config import Settings, StormSpout
from bridge.decide.dialects import pykafka_step_problem
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
from bridge.kafka.offsets import log_ends
from bridge.zookeeper import sync
from bridge.zookeeper.reader import ConsumerTreeReader, NodeProblem
from bridge.zookeeper.records import read_records, write_step
from bridge.zookeeper.writer import BatchRejected, OperatorWriter
from zkpaths.dialects import KAFKA_NODE, PYKAFKA


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
    settings, zk, admin = open_both(args)
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
    """Add ``migrate`` to the ``zk-bridge`` parser."""
    out = {"choices": ["table", "json"], "default": "table"}
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
