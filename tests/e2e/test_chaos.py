"""Chaos (I1, I2, I3): a mixed old/new group under steady production while faults happen.

Three real bridges serve one group of real 0.10.2.2 Scala consumers and kafka-python
consumers while a producer writes throughout: one active and two standbys (``single``), or
all three active on the shares Kafka deals them (``shares``, issue 14), the faults then
aimed at the holder of the group's share, which moves with each. Faults are drawn
from a seeded schedule and injected for real:

* ``kill -9`` of the active bridge (a fresh standby is started in its place);
* ``SIGSTOP`` of the active bridge past its ZooKeeper session, then ``SIGCONT``: the zombie
  must find its writes fenced and step down (release its shares) while another leads;
* ZooKeeper stopped for 5-10 s and started again;
* a Kafka broker stopped and restarted (group coordinators and partition leaders move);
* ``zk-bridge migrate`` killed part-way through a step.

After every fault the test waits until the group has settled on both sides. At the end it
prints and asserts: messages lost 0, offset regressions 0 in either store, partitions fetched
by two members at overlapping times 0, and the takeover time p50/p99 (a standby leading,
or the share held again), each within the session timeout + 2 s.

Size: ``KZB_CHAOS_FAULTS`` (default 10, what CI runs; 50 or more by hand) and
``KZB_CHAOS_SEED``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from kafka.admin import NewTopic

from tests.conftest import ROOT, wait_for
from tests.e2e.bridges import Bridges
from tests.e2e.fleet import COMMIT_MS, Fleet
from tests.e2e.test_coexistence import RATE, Producer, log_ends, overlaps, ownership_segments
from tests.e2e.test_migration import OffsetWatcher

pytestmark = pytest.mark.e2e

PARTITIONS = 6
FAULTS = int(os.environ.get("KZB_CHAOS_FAULTS", "10"))
SEED = int(os.environ.get("KZB_CHAOS_SEED", "20261122"))
#: the old consumers' ZooKeeper session: longer than the longest outage (10 s) with room for
#: the restarted server's first answers. With the migration settings' 6 s, one old consumer
#: whose reconnect the restarted server left unanswered for 6 s (seen at load ~10, fault 45
#: of 50) lost its session and owner nodes while it kept fetching, and the other old
#: consumer took its partition: two legacy consumers on one partition and a stale commit,
#: the ZooKeeper consumer's own split brain, which no bridge can prevent or see
OLD_SESSION = ("--prop", "zookeeper.session.timeout.ms=15000")
KINDS = ("kill-9 bridge", "SIGSTOP bridge", "stop ZooKeeper", "restart broker", "cut migrate")


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))] if s else float("nan")


@pytest.mark.parametrize("mode", ["single", "shares"])
def test_nothing_lost_or_double_owned_under_injected_faults(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path, mode
):
    rng = random.Random(SEED)
    topic = topic_name("chaos")
    group = f"{topic}-g"
    admin.create_topics([NewTopic(topic, PARTITIONS, 2)])
    bridges = Bridges(start_bridge, zk, shares_of=group if mode == "shares" else None)
    for _ in range(3):
        bridges.add()
    wait_for(lambda: zk.exists(f"/brokers/topics/{topic}"), 60, what="topic mirrored")
    zk.ensure_path(f"/consumers/{group}/offsets/{topic}")
    watcher = OffsetWatcher(zk, stack.bootstrap_servers, group, topic)
    producer = Producer(stack.bootstrap_servers, topic, partitions=PARTITIONS)
    fleet = Fleet(stack, chroot, zk, admin, group, topic, PARTITIONS, tmp_path)
    schedule = [KINDS[i % len(KINDS)] for i in range(FAULTS)]
    rng.shuffle(schedule)
    log: list[tuple[str, str, float]] = []
    mode_targets = ["dual", "zookeeper"]

    def settle(label: str) -> float:
        t0 = time.monotonic()
        name = bridges.active()
        try:
            wait_for(fleet.settled, 180, 0.2, f"group settled after '{label}'")
        except AssertionError:
            bridges.procs[name].proc.send_signal(signal.SIGUSR1)  # its threads, to its log
            time.sleep(1)
            raise AssertionError(f"not settled after '{label}': {fleet.describe()}") from None
        return time.monotonic() - t0

    def kill_active() -> str:
        name, took = bridges.kill_active()
        return f"{name} killed; takeover {took:.1f}s"

    def stop_active() -> str:
        name = bridges.active()
        zombie = bridges.procs[name]
        seen = len(zombie.text())
        before, t0 = bridges.epoch()[0], time.monotonic()
        zombie.proc.send_signal(signal.SIGSTOP)
        try:
            took = bridges.wait_takeover(before, t0)
            time.sleep(rng.uniform(0, 2))
        finally:
            zombie.proc.send_signal(signal.SIGCONT)
        # I3: the resumed zombie finds its session gone or its epoch taken, and steps down
        # (with shares: its shares were revoked and it releases them before rejoining)
        wait_for(lambda: bridges.let_go(zombie.text()[seen:]), 30, 0.1, f"{name} lets go")
        assert zombie.proc.poll() is None, f"{name} should stay up as a standby"
        return f"{name} paused; takeover {took:.1f}s; resumed and stepped down"

    def stop_zookeeper() -> str:
        down = rng.uniform(5, 10)
        stack.stop("zookeeper")
        time.sleep(down)
        stack.start("zookeeper")
        stack.wait_healthy()
        return f"ZooKeeper down {down:.1f}s"

    def restart_broker() -> str:
        node = rng.choice([1, 2, 3])
        stack.stop(f"kafka-{node}")
        time.sleep(rng.uniform(1, 5))
        stack.start(f"kafka-{node}")
        stack.wait_brokers({1, 2, 3})
        return f"broker {node} restarted"

    def cut_migrate() -> str:
        to = mode_targets[0]
        argv = [
            sys.executable,
            "-m",
            "bridge.cli",
            "migrate",
            group,
            "--to",
            to,
            "--lag-window",
            "2",
            "--zookeeper",
            stack.zk_connect + chroot,
            "--bootstrap-server",
            stack.bootstrap_servers,
        ]
        p = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        after = rng.uniform(0.5, 4)
        try:
            p.wait(after)
            outcome = f"finished rc={p.returncode}"
            if p.returncode == 0:
                mode_targets.reverse()
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            outcome = f"killed after {after:.1f}s"
        return f"migrate --to {to} {outcome}"

    inject = {
        "kill-9 bridge": kill_active,
        "SIGSTOP bridge": stop_active,
        "stop ZooKeeper": stop_zookeeper,
        "restart broker": restart_broker,
        "cut migrate": cut_migrate,
    }
    try:
        fleet.change("old A (2 threads)", lambda: fleet.old("oldA", streams=2, extra=OLD_SESSION))
        fleet.change("new N1", lambda: fleet.new("newN1"))
        fleet.change("old B", lambda: fleet.old("oldB", extra=OLD_SESSION))
        fleet.change("new N2", lambda: fleet.new("newN2"))
        time.sleep(3)
        for i, kind in enumerate(schedule, 1):
            at = int(time.time() * 1000)
            what = f"[{at}] " + inject[kind]()
            settled = settle(kind)
            log.append((kind, what, settled))
            print(f"fault {i}/{len(schedule)}: {what}; settled in {settled:.1f}s", flush=True)
            time.sleep(rng.uniform(1, 3))  # steady consumption between faults
        producer.stop()
        ends = log_ends(admin, topic, PARTITIONS)
        wait_for(lambda: fleet.consumed_everything(ends), 180, 0.5, "every message consumed")
    finally:
        producer.stop()
        fleet.stop_all()
        watcher.stop()
        for b in bridges.procs.values():
            if b.proc.poll() is None:
                b.proc.send_signal(signal.SIGCONT)

    dump = tmp_path / "consumed.json"  # for reading a failure: who fetched what, when
    dump.write_text(
        json.dumps(
            {
                "faults": log,
                "messages": {
                    name: [(m.partition, m.offset, m.wall_ms) for m in c.messages]
                    for name, c in fleet.consumers.items()
                },
            }
        )
    )
    counts = fleet.counts()
    seen = set(counts)
    lost = [(p, o) for p, e in ends.items() for o in range(e) if (p, o) not in seen]
    duplicates = sum(n - 1 for n in counts.values())
    regressions = watcher.regressions()
    watcher.timeline(tmp_path / "timeline.txt", fleet.consumers)  # for reading a failure
    double = overlaps(ownership_segments(fleet.consumers))
    kinds = Counter(k for k, _, _ in log)
    print(f"\nfaults injected: {len(log)} {dict(kinds)} (seed {SEED})")
    print(
        f"produced {sum(ends.values())}, distinct consumed {len(seen)}, lost {len(lost)}, "
        f"duplicates {duplicates}, offset regressions {len(regressions)}, "
        f"double-ownership intervals {len(double)}"
    )
    t = bridges.takeovers
    print(
        f"takeover ({mode}) over {len(t)} failures of the active bridge: p50 {pct(t, 50):.1f}s "
        f"p99 {pct(t, 99):.1f}s max {max(t, default=float('nan')):.1f}s "
        f"(session timeout {bridges.session_s:.0f}s)"
    )
    assert len(log) == FAULTS
    assert lost == [], f"{len(lost)} messages never consumed, e.g. {lost[:10]}"
    assert regressions == [], regressions[:10]
    assert double == [], f"partitions fetched by two members at once: {double[:5]}"
    # the design's bound: a standby leads (the share is held again) within the session
    # timeout plus 2 s
    assert all(x <= bridges.session_s + 2 for x in t), f"takeovers {t}"
    # at-least-once: each fault may replay a commit interval plus a rebalance's worth
    window = len(log) * RATE * (COMMIT_MS / 1000 + 2.0)
    assert duplicates <= window, f"{duplicates} duplicates exceed the window of {window:.0f}"
    record = zk.get(f"/kafka-zk-bridge/groups/{group}")[0]
    assert json.loads(record)["mode"] in {"zookeeper", "dual"}  # an interrupted step is whole
    assert "Traceback" not in bridges.logs()
