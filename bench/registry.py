"""How long a Kafka metadata change takes to reach ZooKeeper through the bridge.

    python -m bench.registry [--changes 20] [--zookeeper H:P --bootstrap-server H:P]

Without addresses it starts a private local stack. Each change (a topic created, or its
partition count raised) is made with the admin API; a ZooKeeper watch records when the
legacy tree shows it. Printed in the same run, for scale on a noisy machine: the raw
ZooKeeper write round trip and how long Kafka's own metadata takes to show the change.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

from kafka import KafkaAdminClient
from kafka.admin import NewPartitions, NewTopic
from kazoo.client import KazooClient

from bench import bridge_command, stack_unless_given


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q / 100 * (len(xs) - 1))))]


def summary(name: str, xs: list[float]) -> str:
    ms = [x * 1000 for x in xs]
    return (
        f"{name:<34} n={len(ms):<4} p50={pct(ms, 50):8.1f} ms  p99={pct(ms, 99):8.1f} ms  "
        f"max={max(ms):8.1f} ms"
    )


def raw_zk_writes(zk: KazooClient, n: int) -> list[float]:
    zk.ensure_path("/bench-raw")
    out = []
    for i in range(n):
        t = time.perf_counter()
        zk.set("/bench-raw", str(i).encode())
        out.append(time.perf_counter() - t)
    zk.delete("/bench-raw")
    return out


class _TopicWatch:
    """When each topic's node in ZooKeeper first shows a partition count (a data watch)."""

    def __init__(self, zk: KazooClient) -> None:
        self.zk = zk
        self.seen: dict[str, tuple[int, float]] = {}
        self.cond = threading.Condition()

    def watch(self, topic: str) -> None:
        def on_data(data, stat):
            if data:
                n = len(json.loads(data)["partitions"])
                with self.cond:
                    self.seen[topic] = (n, time.perf_counter())
                    self.cond.notify_all()

        self.zk.DataWatch(f"/brokers/topics/{topic}", on_data)

    def wait(self, topic: str, partitions: int, timeout: float = 30) -> float | None:
        """The moment ``topic`` showed ``partitions`` partitions, or None after ``timeout``."""
        with self.cond:
            ok = self.cond.wait_for(
                lambda: self.seen.get(topic, (0, 0))[0] == partitions, timeout=timeout
            )
        return self.seen[topic][1] if ok else None


def _kafka_sees(admin: KafkaAdminClient, topic: str, partitions: int) -> None:
    """Until Kafka's own metadata has ``partitions`` partitions of ``topic``, all led."""
    while True:
        desc = admin.describe_topics([topic])[0]
        if len(desc["partitions"]) == partitions and all(
            p["leader_id"] >= 0 for p in desc["partitions"]
        ):
            return
        time.sleep(0.005)


def _measure(
    zk: KazooClient, admin: KafkaAdminClient, changes: int, topics: list[str]
) -> tuple[list[float], list[float]]:
    """Alternately create a topic and add it a partition; per change, the time until the
    bridge's ZooKeeper node shows it and until Kafka's metadata does."""
    watch = _TopicWatch(zk)
    bridge_lag, kafka_lag = [], []
    for i in range(changes):
        if i % 2 == 0:
            topic = f"bench-{uuid.uuid4().hex[:8]}"
            topics.append(topic)
            watch.watch(topic)
            t0 = time.perf_counter()
            admin.create_topics([NewTopic(topic, 1, 3)])
            want = 1
        else:
            topic, want = topics[-1], 2
            t0 = time.perf_counter()
            admin.create_partitions({topic: NewPartitions(total_count=2)})
        _kafka_sees(admin, topic, want)  # Kafka's own view, for scale
        kafka_lag.append(time.perf_counter() - t0)
        at = watch.wait(topic, want)
        if at is None:
            raise SystemExit(f"change {i} ({topic} -> {want} partitions) never reached ZK")
        bridge_lag.append(at - t0)
    return bridge_lag, kafka_lag


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--changes", type=int, default=20)
    ap.add_argument("--zookeeper")
    ap.add_argument("--bootstrap-server")
    args = ap.parse_args(argv)

    stack = stack_unless_given(args)
    chroot = f"/bench-{uuid.uuid4().hex[:8]}"
    boot = KazooClient(args.zookeeper)
    boot.start()
    boot.ensure_path(chroot)
    boot.stop()
    zk = KazooClient(args.zookeeper + chroot)
    zk.start()
    admin = KafkaAdminClient(bootstrap_servers=args.bootstrap_server.split(","))
    log = open(tempfile.mktemp(prefix="bench-bridge-", suffix=".log"), "w")
    bridge = subprocess.Popen(
        bridge_command(args.zookeeper + chroot, args.bootstrap_server),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    topics: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while not zk.exists("/brokers/ids") or not zk.get_children("/brokers/ids"):
            if time.monotonic() > deadline:
                raise SystemExit("bridge did not register brokers; see " + log.name)
            time.sleep(0.1)
        bridge_lag, kafka_lag = _measure(zk, admin, args.changes, topics)
        raw = raw_zk_writes(zk, 200)
        print(f"\nregistry mirror latency, {args.changes} metadata changes (poll interval 0.5 s)")
        print(summary("raw ZooKeeper set_data round trip", raw))
        print(summary("Kafka admin call -> Kafka metadata", kafka_lag))
        print(summary("Kafka admin call -> ZooKeeper", bridge_lag))
        print(
            f"{'mean bridge lag / raw ZK write':<34} "
            f"{statistics.mean(bridge_lag) / statistics.mean(raw):.0f}x"
        )
        return 0
    finally:
        bridge.terminate()
        bridge.wait(20)
        if topics:
            admin.delete_topics(topics)
        admin.close()
        zk.stop()
        if stack is not None:
            stack.discard()


if __name__ == "__main__":
    sys.exit(main())
