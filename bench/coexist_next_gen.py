"""bench.coexist's cases on Kafka 4.x, everything through the legacy gateway (issue 15).

Two cases on one 4.x stack, in the same run as the 3.9 cases: old 0.10.2.2 consumers alone
(the bridge's coexistence off, so the 4.x baseline pays the gateway too), and a
next-generation mixed group: old consumers through the gateway plus Kafka's Java consumer
4.x with ``group.protocol=consumer`` and ``group.remote.assignor=range``. The mixed group
starts with one old consumer and one next-generation member (the broker's online upgrade
makes it ``consumer``-type), then every change keeps one of each, so each one timed is a
change inside a ``consumer``-type group.

The clock starts as in bench.coexist: an old consumer's registration node's ZooKeeper
ctime, a stop when it is asked for; a next-generation join when the broker first lists the
member (the JVM's start is not the group's business, as an old consumer's is not either).
It stops when the group is Stable with every member's assignment its target, as many
members as live threads, and ZooKeeper's owners naming, for every partition, the member
Kafka gives it to (a proxy by its thread id, a next-generation member by its mirrored id).
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import subprocess
import time
import uuid
from pathlib import Path

from kafka import KafkaAdminClient
from kafka.errors import KafkaError

from bench import bridge_command, create_topic
from bench.coexist import PARTITIONS, Group, converge
from bridge.devstack.next_gen import NextGenConsumerProcess
from bridge.devstack.servers import NEXT_GEN_GROUPS
from bridge.kafka import coordinators
from bridge.kafka.groups import describe_groups
from bridge.kafka.views import CONSUMER, GroupView
from zkpaths.mirror_ids import parse_mirrored

#: what operators set on a mixed group's next-generation consumers (docs/coexistence.md)
NEXT_GEN_PROPS = {"group.remote.assignor": "range"}
OLD_ALONE = "old consumers alone, 4.x gateway"
NEXT_GEN = "next-gen mixed via the gateway"
#: the bridge's log lines that say where a next-generation change's time goes
EVENTS = re.compile(r"proxy (started|joined|left)|final offsets|fence|releas|rejoin", re.I)
#: each timed change of the next-generation case: (what, start, converged), wall clock
WINDOWS: list[tuple[str, float, float]] = []


def describe(admin: KafkaAdminClient, group: str) -> GroupView | None:
    try:
        return describe_groups(admin, [group], {group: CONSUMER}).get(group)
    except KafkaError:  # a coordinator moving: ask again
        coordinators.forget(admin, [group])
        return None


def kafka_owners(view: GroupView, group: str) -> dict[int, str] | None:
    """partition -> the ZooKeeper thread id Kafka's owner stands for, once every member owns
    its target; None before."""
    owners: dict[int, str] = {}
    for m in view.members:
        if m.assignment is None or m.assignment != m.target_assignment:
            return None
        for p in [p for ps in m.assignment.values() for p in ps]:
            owners[p] = m.group_instance_id or m.member_id
    return owners


def agrees(zk_owners: dict[int, str], kafka: dict[int, str], group: str) -> bool:
    if len(kafka) != PARTITIONS or set(zk_owners) != set(kafka):
        return False
    for p, thread in zk_owners.items():
        if thread.startswith(f"{group}_~~"):  # a mirrored next-generation member
            if parse_mirrored(group, thread.rsplit("-", 1)[0]) != ("member", kafka[p]):
                return False
        elif thread != kafka[p]:
            return False
    return True


class NextGenGroup(Group):
    """bench.coexist's group with Java 4.x next-generation consumers as its new members."""

    admin: KafkaAdminClient

    def add_new(self) -> float:
        name = f"ng{len(self.procs)}"
        c = NextGenConsumerProcess(
            self.args.bootstrap_server,
            self.group,
            [self.topic],
            client_id=name,
            props=NEXT_GEN_PROPS,
            log=self.logdir / f"{name}.log",
        )
        self.procs.append(c)
        self.news.append(c)
        deadline = time.time() + 90
        while time.time() < deadline:
            view = describe(self.admin, self.group)
            if view is not None and any(m.client_id == name for m in view.members):
                return time.time()
            time.sleep(0.05)
        raise SystemExit(f"{name} never joined {self.group}")

    def converged(self) -> bool:
        view = describe(self.admin, self.group)
        if view is None or view.error or view.state != "Stable":
            return False
        if view.group_type != CONSUMER or len(view.members) != len(self.olds) + len(self.news):
            return False
        kafka = kafka_owners(view, self.group)
        if kafka is None:
            return False
        base = f"/consumers/{self.group}/owners/{self.topic}"
        try:
            zk_owners = {
                int(p): self.zk.get(f"{base}/{p}")[0].decode() for p in self.zk.get_children(base)
            }
        except Exception:  # noqa: BLE001 - an owner node going between the two reads
            return False
        return agrees(zk_owners, kafka, self.group)

    def wait(self, t0: float, timeout: float = 90.0) -> float:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.converged():
                return time.time() - t0
            time.sleep(0.05)
        raise SystemExit(f"{self.group}: no convergence within {timeout}s")


def start_bridge(
    a: argparse.Namespace, chroot: str, coexist: bool, log: Path, procs: list
) -> subprocess.Popen:
    """The bridge with the legacy gateway on and advertised: old consumers reach 4.x only
    through it."""
    env = {
        **os.environ,
        "ZK_BRIDGE__COEXISTENCE__ENABLED": str(coexist).lower(),
        "ZK_BRIDGE__REGISTRY__ADVERTISE": "gateway",
    }
    cmd = bridge_command(
        a.zookeeper + chroot, a.bootstrap_server, "--gateway-listen", "127.0.0.1:0"
    )
    bridge = subprocess.Popen(cmd, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    procs.append(bridge)
    return bridge


def run_case(a, topic, tag, admin, coexist: bool, changes: int, procs, logdir) -> list[float]:
    g = NextGenGroup(a, topic, tag, coexist, procs, logdir)
    g.admin = admin
    bridge = start_bridge(a, g.chroot, coexist, logdir / f"bridge4-{int(coexist)}.log", procs)
    deadline = time.time() + 60
    while not g.zk.exists(f"/brokers/topics/{topic}"):
        if time.time() > deadline:
            raise SystemExit("bridge did not mirror the topic")
        time.sleep(0.1)
    if coexist:
        g.add_old()
        g.wait(g.add_new())  # one of each: the group is consumer-type from here on
        cycle = [g.add_new, g.add_old, g.stop_new, g.stop_old]
    else:
        converge(g.zk, admin, g.group, topic, g.add_old(), False)
        cycle = [g.add_old, g.stop_old]
    times = []
    for i in range(changes):
        t0 = cycle[i % len(cycle)]()
        if coexist:
            times.append(g.wait(t0))
            WINDOWS.append((cycle[i % len(cycle)].__name__, t0, t0 + times[-1]))
        else:
            times.append(converge(g.zk, admin, g.group, topic, t0, False))
        time.sleep(0.3)
    for c in g.olds + g.news:
        c.stop()
    bridge.terminate()
    bridge.wait(20)
    g.zk.stop()
    return times


def run(args: argparse.Namespace, procs: list, logdir: Path) -> dict[str, list[float]]:
    """Both 4.x cases, on ``--zookeeper4``/``--bootstrap-server4`` or a private 4.x stack."""
    from bridge.devstack.stack import private_stack

    stack = None
    a = argparse.Namespace(
        zookeeper=args.zookeeper4,
        bootstrap_server=args.bootstrap_server4,
        rebalance_backoff_ms=getattr(args, "rebalance_backoff_ms", None),
    )
    if not a.zookeeper:
        print("starting a local 4.x stack ...", flush=True)
        stack = private_stack("kzb-bench4-", kafka_version="4")
        a.zookeeper, a.bootstrap_server = stack.zk_connect, stack.bootstrap_servers
    tag = uuid.uuid4().hex[:6]
    topic = f"bench-coexist4-{tag}"
    admin = KafkaAdminClient(bootstrap_servers=a.bootstrap_server.split(","))
    try:
        create_topic(admin, topic, PARTITIONS)
        return {
            OLD_ALONE: run_case(a, topic, tag, admin, False, args.changes, procs, logdir),
            NEXT_GEN: run_case(a, topic, tag, admin, True, args.changes, procs, logdir),
        }
    finally:
        admin.close()
        if stack is not None:
            stack.discard()


def verdict(results: dict[str, list[float]], logdir: Path) -> str:
    """MET when the next-generation mixed group's median is within old alone's + 1 s."""
    base, ng = sorted(results[OLD_ALONE]), sorted(results[NEXT_GEN])
    b50, n50 = base[len(base) // 2], ng[len(ng) // 2]
    ok = n50 <= b50 + 1.0
    line = (
        f"target next-gen mixed p50 <= old alone (4.x) p50 + 1 s: {n50:.2f} s vs "
        f"{b50 + 1.0:.2f} s ({n50 / b50:.1f}x old alone; max {ng[-1]:.2f} s vs "
        f"{base[-1]:.2f} s) {'MET' if ok else 'MISSED'}"
    )
    line += "\n  per change (s): " + by_change()
    if not ok:
        hb = NEXT_GEN_GROUPS["group.consumer.heartbeat.interval.ms"]
        line += (
            f"\n  where the time goes (the broker's group.consumer.heartbeat.interval.ms "
            f"{hb} ms; the bridge's log {logdir}/bridge4-1.log, seconds from each change):"
        )
        line += "".join(trace(logdir / "bridge4-1.log"))
    return line


def by_change() -> str:
    """Each kind of timed change's convergence times, in run order: which kind costs."""
    kinds: dict[str, list[float]] = {}
    for name, t0, t1 in WINDOWS:
        kinds.setdefault(name, []).append(t1 - t0)
    return "; ".join(f"{k} {' '.join(f'{t:.2f}' for t in ts)}" for k, ts in kinds.items())


def trace(log: Path) -> list[str]:
    """Per timed change, the bridge's proxy and hand-over log lines inside its window."""
    events = []
    for raw in log.read_text(errors="replace").splitlines():
        if EVENTS.search(raw) and len(raw) > 23:
            try:
                at = datetime.datetime.strptime(raw[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
            except ValueError:
                continue
            what = raw[23:].split(":", 1)[-1].strip()
            events.append((at, re.sub(r"thread_id=\S+?-(\w{8})-\d+", r"thread=..\1", what)))
    out = []
    for name, t0, t1 in WINDOWS:
        out.append(f"\n    {name} converged at {t1 - t0:.2f} s:")
        out += [f"\n      +{at - t0:5.2f} {e[:110]}" for at, e in events if t0 - 0.5 <= at <= t1]
    return out
