"""How long a membership change in a mixed group takes to converge on both sides.

    python -m bench.coexist [--changes 8] [--zookeeper H:P --bootstrap-server H:P]
        [--zookeeper4 H:P --bootstrap-server4 H:P | --no-next-gen]

Baseline, in the same run: the old consumers' own rebalance, with no new members and the
bridge's coexistence switched off (the bridge still keeps the registry they need). For each
change the clock starts when the change becomes visible — an old consumer's registration
node is created (its ZooKeeper ctime), or a new consumer process is started — and stops
when ZooKeeper's owners match the legacy range over ``/ids`` for all partitions and, with
coexistence, Kafka's group is Stable with the same owner for every partition.

Then, on Kafka 4.x through the legacy gateway (bench.coexist_next_gen, issue 15): old
consumers alone again, and a next-generation mixed group (Java 4.x ``group.protocol=consumer``
members), judged MET/MISSED against "next-gen mixed p50 <= old alone on 4.x p50 + 1 s".
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import KafkaError
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from bench import bridge_command, stack_unless_given
from bench.registry import summary
from bridge.devstack.legacy import (
    MIGRATION_SETTINGS,
    ConsumerProcess,
    LegacyConsumerProcess,
    NewConsumerProcess,
)
from zkpaths import legacy_range_assign
from zkpaths.mirror_ids import parse_mirrored

PARTITIONS = 12
OLD = MIGRATION_SETTINGS


#: how long the devstack's old consumers retry a rebalance: 30 retries x 1,000 ms
RETRY_WINDOW_MS = 30_000


def old_settings(args: argparse.Namespace) -> list[str]:
    """The old consumers' settings, the same in every case of the run (like with like);
    ``--rebalance-backoff-ms`` replaces the devstack's 1,000 ms wait after a failed claim,
    with as many more retries as keep the same window (docs/coexistence.md)."""
    backoff = getattr(args, "rebalance_backoff_ms", None)
    if backoff is None:
        return list(OLD)
    retries = -(-RETRY_WINDOW_MS // backoff)
    return [
        *OLD,
        "--prop",
        f"rebalance.backoff.ms={backoff}",
        "--prop",
        f"rebalance.max.retries={retries}",
    ]


def legacy_view(zk: KazooClient, group: str, topic: str) -> tuple[dict, dict] | None:
    """(expected owners from the legacy range over /ids, actual owner nodes)."""
    base = f"/consumers/{group}"
    try:
        threads = []
        for cid in zk.get_children(f"{base}/ids"):
            reg = json.loads(zk.get(f"{base}/ids/{cid}")[0])
            threads += [f"{cid}-{n}" for n in range(reg["subscription"].get(topic, 0))]
        owners = {
            int(p): zk.get(f"{base}/owners/{topic}/{p}")[0].decode()
            for p in zk.get_children(f"{base}/owners/{topic}")
        }
    except (NoNodeError, ValueError):
        return None
    if not threads:
        return None
    expected = legacy_range_assign({topic: threads}, {topic: PARTITIONS})
    return {tp.partition: t for tp, t in expected.items()}, owners


def kafka_agrees(admin: KafkaAdminClient, group: str, owners: dict[int, str]) -> bool:
    try:
        d = admin.describe_groups([group])[group]
    except KafkaError as e:
        if getattr(e, "retriable", False):  # e.g. the coordinator is still loading
            return False
        raise
    if d["group_state"] != "Stable":
        return False
    kafka: dict[int, str] = {}
    for m in d["members"]:
        thread = m["group_instance_id"] or f"{group}_~~?"
        for a in (m["member_assignment"] or {"assigned_partitions": []})["assigned_partitions"]:
            for p in a["partitions"]:
                kafka[p] = thread if m["group_instance_id"] else m["member_id"]
    for p, thread in owners.items():
        want = kafka.get(p)
        if want is None:
            return False
        if thread.startswith(f"{group}_~~"):  # a mirrored new member
            if parse_mirrored(group, thread.rsplit("-", 1)[0]) != ("member", want):
                return False
        elif thread != want:
            return False
    return len(kafka) == PARTITIONS


def converge(zk, admin, group, topic, t0: float, with_kafka: bool, timeout=90.0) -> float:
    deadline = time.time() + timeout
    while time.time() < deadline:
        view = legacy_view(zk, group, topic)
        if view and view[0] == view[1] and len(view[1]) == PARTITIONS:
            if not with_kafka or kafka_agrees(admin, group, view[1]):
                return time.time() - t0
        time.sleep(0.05)
    raise SystemExit(f"{group}: no convergence within {timeout}s")


def registered_at(g: Group, before: set[str]) -> float:
    """ZooKeeper ctime of the old consumer id that appeared since ``before``."""
    deadline = time.time() + 60
    while time.time() < deadline:
        real = [c for c in g.ids() - before if not c.startswith(f"{g.group}_~~")]
        if real:
            stat = g.zk.exists(f"/consumers/{g.group}/ids/{real[0]}")
            if stat is not None:
                return stat.ctime / 1000
        time.sleep(0.02)
    raise SystemExit("old consumer never registered")


class Group:
    """One group in its own chroot, with the consumers the run adds and removes."""

    def __init__(self, args, topic: str, tag: str, coexist: bool, procs: list, logdir: Path):
        self.args, self.topic, self.procs, self.logdir = args, topic, procs, logdir
        self.chroot = f"/bench-coexist-{tag}-{int(coexist)}"
        self.group = f"g-{tag}-{int(coexist)}"
        self.olds: list[ConsumerProcess] = []
        self.news: list[ConsumerProcess] = []
        root = KazooClient(args.zookeeper)
        root.start()
        root.ensure_path(self.chroot)
        root.stop()
        self.zk = KazooClient(args.zookeeper + self.chroot)
        self.zk.start()

    def ids(self) -> set[str]:
        try:
            return set(self.zk.get_children(f"/consumers/{self.group}/ids"))
        except NoNodeError:
            return set()

    def add_old(self) -> float:
        before = self.ids()
        c = LegacyConsumerProcess(
            self.args.zookeeper + self.chroot,
            self.group,
            [self.topic],
            extra=old_settings(self.args),
            log=self.logdir / f"old-{len(self.procs)}.log",
        )
        self.procs.append(c)
        self.olds.append(c)
        return registered_at(self, before)

    def add_new(self) -> float:
        t0 = time.time()
        c = NewConsumerProcess(
            self.args.bootstrap_server,
            self.group,
            [self.topic],
            client_id=f"new{len(self.procs)}",
            log=self.logdir / f"new-{len(self.procs)}.log",
        )
        self.procs.append(c)
        self.news.append(c)
        return t0

    def stop_new(self) -> float:
        t0 = time.time()
        self.news.pop().stop()
        return t0

    def stop_old(self) -> float:
        t0 = time.time()
        self.olds.pop().stop()
        return t0


def run_mode(args, topic: str, tag: str, admin, coexist: bool, procs: list, logdir: Path):
    g = Group(args, topic, tag, coexist, procs, logdir)
    env = {**os.environ, "ZK_BRIDGE__COEXISTENCE__ENABLED": str(coexist).lower()}
    bridge = subprocess.Popen(
        bridge_command(args.zookeeper + g.chroot, args.bootstrap_server),
        env=env,
        stdout=(logdir / f"bridge-{int(coexist)}.log").open("w"),
        stderr=subprocess.STDOUT,
    )
    procs.append(bridge)
    deadline = time.time() + 60
    while not g.zk.exists(f"/brokers/topics/{topic}"):
        if time.time() > deadline:
            raise SystemExit("bridge did not mirror the topic")
        time.sleep(0.1)
    converge(g.zk, admin, g.group, topic, g.add_old(), coexist)
    cycle = [g.add_new, g.add_old, g.stop_new, g.stop_old] if coexist else [g.add_old, g.stop_old]
    times = []
    for i in range(args.changes):
        t0 = cycle[i % len(cycle)]()
        times.append(converge(g.zk, admin, g.group, topic, t0, coexist))
        time.sleep(0.3)
    for c in g.olds + g.news:
        c.stop()
    bridge.terminate()
    bridge.wait(20)
    g.zk.stop()
    return times


def kill_all(procs: list) -> None:
    """Whatever a case started and did not stop (an error mid-case)."""
    for p in procs:
        if isinstance(p, ConsumerProcess):
            if p.proc.poll() is None:
                p.kill()
        elif p.poll() is None:
            p.kill()


def next_gen_only(args: argparse.Namespace) -> int:
    """The two 4.x cases alone, with their verdict (issue 15's target compares them only)."""
    from bench import coexist_next_gen

    procs: list[subprocess.Popen | ConsumerProcess] = []
    logdir = Path(tempfile.mkdtemp(prefix="bench-coexist-"))
    try:
        results = coexist_next_gen.run(args, procs, logdir)
        print(f"\nmembership change -> converged on both sides, {PARTITIONS} partitions")
        for mode, times in results.items():
            print(summary(mode, times))
        print(coexist_next_gen.verdict(results, logdir))
        return 0
    finally:
        kill_all(procs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--changes", type=int, default=8)
    ap.add_argument("--zookeeper")
    ap.add_argument("--bootstrap-server")
    ap.add_argument("--zookeeper4", help="a Kafka 4.x stack's (else a private one)")
    ap.add_argument("--bootstrap-server4")
    ap.add_argument("--no-next-gen", action="store_true", help="the 3.9 cases only")
    ap.add_argument(
        "--rebalance-backoff-ms",
        type=int,
        help="every case's old consumers' rebalance.backoff.ms (default: the devstack's 1000)",
    )
    ap.add_argument(
        "--next-gen-only", action="store_true", help="the 4.x cases only (an A/B of issue 15's)"
    )
    args = ap.parse_args(argv)
    if args.next_gen_only:
        return next_gen_only(args)
    stack = stack_unless_given(args)
    tag = uuid.uuid4().hex[:6]
    topic = f"bench-coexist-{tag}"
    admin = KafkaAdminClient(bootstrap_servers=args.bootstrap_server.split(","))
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    procs: list[subprocess.Popen | ConsumerProcess] = []
    logdir = Path(tempfile.mkdtemp(prefix="bench-coexist-"))
    results: dict[str, list[float]] = {}
    try:
        for mode in ("old consumers alone", "mixed group via the bridge"):
            results[mode] = run_mode(
                args, topic, tag, admin, mode.startswith("mixed"), procs, logdir
            )
        admin.delete_topics([topic])
        if stack is not None:  # one stack at a time: the 4.x one comes up next
            stack.discard()
            stack = None
        if not args.no_next_gen:
            from bench import coexist_next_gen

            results.update(coexist_next_gen.run(args, procs, logdir))
        print(f"\nmembership change -> converged on both sides, {PARTITIONS} partitions")
        for mode, times in results.items():
            print(summary(mode, times))
        base, mixed = results["old consumers alone"], results["mixed group via the bridge"]
        print(
            f"{'median mixed / median old alone':<34} "
            f"{sorted(mixed)[len(mixed) // 2] / sorted(base)[len(base) // 2]:.1f}x"
        )
        if not args.no_next_gen:
            print(coexist_next_gen.verdict(results, logdir))
        return 0
    finally:
        kill_all(procs)
        admin.close()
        if stack is not None:
            stack.discard()


if __name__ == "__main__":
    sys.exit(main())
