"""I1 end to end: real old Scala consumers and kafka-python consumers in one group.

A producer writes sequence-numbered messages to a 12-partition topic throughout a scripted
run of membership changes (old and new members added and removed, one ``kill -9`` of each
kind). Every consumer logs (partition, offset, wall time). From those logs alone the test
asserts: every message consumed, no partition fetched by two members at overlapping times,
and duplicates only within the at-least-once window of a hand-over.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections import defaultdict

import pytest
from kafka import KafkaAdminClient, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import KafkaError

from bridge.devstack.legacy import (
    MIGRATION_SETTINGS,
    ConsumerProcess,
    LegacyConsumerProcess,
    NewConsumerProcess,
)
from bridge.jars import ensure_classpath
from tests.conftest import wait_for
from tests.e2e.fleet import COMMIT_MS, Fleet

pytestmark = pytest.mark.e2e

PARTITIONS = 12
RATE = 120  # messages/s over all partitions
#: a gap this long in one consumer's stream of a partition ends one ownership segment
SEGMENT_GAP_MS = 1000


class Producer:
    def __init__(self, bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
        self.topic = topic
        self.partitions = partitions
        self.sent = 0
        self._stop = threading.Event()
        self._producer = KafkaProducer(bootstrap_servers=bootstrap.split(","), linger_ms=5)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            p = self.sent % self.partitions
            self._producer.send(self.topic, f"{p}:{self.sent}".encode(), partition=p)
            self.sent += 1
            time.sleep(1 / RATE)

    def stop(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(10)
        self._producer.flush()
        self._producer.close()


def ownership_segments(consumers: dict[str, ConsumerProcess]):
    """(partition) -> [(start_ms, end_ms, consumer)] from the consumers' own logs."""
    per: dict[tuple[int, str], list[int]] = defaultdict(list)
    for name, c in consumers.items():
        for m in c.messages:
            per[(m.partition, name)].append(m.wall_ms)
    segments: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
    for (p, name), times in per.items():
        times.sort()
        start = prev = times[0]
        for t in times[1:]:
            if t - prev > SEGMENT_GAP_MS:
                segments[p].append((start, prev, name))
                start = t
            prev = t
        segments[p].append((start, prev, name))
    return segments


def overlaps(segments) -> list[tuple[int, tuple, tuple]]:
    out = []
    for p, segs in segments.items():
        segs = sorted(segs)
        for i, a in enumerate(segs):
            for b in segs[i + 1 :]:
                if b[0] > a[1]:
                    break
                if a[2] != b[2]:
                    out.append((p, a, b))
    return out


def kafka_describe(stack, group: str) -> str:
    """Kafka's own kafka-consumer-groups --describe --members --verbose output."""
    out = subprocess.run(
        [
            "java",
            "-cp",
            ensure_classpath("kafka"),
            "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
            "--bootstrap-server",
            stack.bootstrap_servers,
            "--describe",
            "--group",
            group,
            "--members",
            "--verbose",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return out.stdout + out.stderr


def test_old_and_new_consumers_share_a_group_without_double_ownership(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    topic = topic_name("mix")
    group = f"{topic}-g"
    admin.create_topics([NewTopic(topic, PARTITIONS, 2)])
    bridge = start_bridge()
    wait_for(lambda: zk.exists(f"/brokers/topics/{topic}"), 30, what="topic mirrored")
    producer = Producer(stack.bootstrap_servers, topic)
    fleet = Fleet(stack, chroot, zk, admin, group, topic, PARTITIONS, tmp_path)
    # the group starts from the ZooKeeper side: the first old consumer's proxy leads
    script = [
        ("start old A (2 threads)", lambda: fleet.old("oldA", streams=2)),
        ("start new N1", lambda: fleet.new("newN1")),
        ("start old B", lambda: fleet.old("oldB")),
        ("start new N2", lambda: fleet.new("newN2")),
        ("stop new N1", lambda: fleet.stop("newN1")),
        ("kill -9 old B", lambda: fleet.kill("oldB")),
        ("start new N3", lambda: fleet.new("newN3")),
        ("start old C", lambda: fleet.old("oldC")),
        ("kill -9 new N2", lambda: fleet.kill("newN2")),
        ("stop old C", lambda: fleet.stop("oldC")),
        ("start new N4", lambda: fleet.new("newN4")),
        ("stop new N3", lambda: fleet.stop("newN3")),
    ]
    timeline = []
    try:
        for label, action in script:
            timeline.append((label, round(fleet.change(label, action), 1)))
            time.sleep(3)  # steady consumption between changes

        # one group, two views: Kafka's own tool lists the old threads as members
        described = kafka_describe(stack, group)
        assert "zk-bridge-proxy" in described, described

        producer.stop()
        ends = log_ends(admin, topic, PARTITIONS)
        wait_for(lambda: fleet.consumed_everything(ends), 120, 0.5, "every message consumed")
    finally:
        producer.stop()
        fleet.stop_all()

    counts = fleet.counts()
    total = sum(ends.values())
    duplicates = sum(n - 1 for n in counts.values())
    double = overlaps(ownership_segments(fleet.consumers))
    print(f"\nmembership changes: {len(script)}; settle times (s): {timeline}")
    print(
        f"produced {total}, consumed {sum(counts.values())}, distinct {len(counts)}, "
        f"duplicates {duplicates}, double-ownership intervals {len(double)}"
    )
    assert fleet.consumed_everything(ends)
    assert double == [], f"partitions fetched by two members at once: {double[:5]}"
    # at-least-once window: each hand-over may replay what was consumed since the last
    # commit (commit interval plus a rebalance's worth of in-flight messages)
    window = len(script) * RATE * (COMMIT_MS / 1000 + 1.0)
    assert duplicates <= window, f"{duplicates} duplicates exceed the window of {window:.0f}"
    assert "Traceback" not in bridge.text()


def log_ends(admin, topic: str, partitions: int) -> dict[int, int]:
    """Each partition's log end offset (retried: right after a broker restart the client's
    metadata may still name a leader it cannot reach; after a few failures a fresh admin
    client asks, with fresh connections, as an operator re-running a command would)."""
    errors: list[str] = []
    want = {TopicPartition(topic, p): -1 for p in range(partitions)}

    def ask() -> dict[int, int] | None:
        fresh = len(errors) >= 3
        client = (
            KafkaAdminClient(
                bootstrap_servers=admin.config["bootstrap_servers"], reconnect_backoff_max_ms=1000
            )
            if fresh
            else admin
        )
        try:
            got = client.list_partition_offsets(want)
        except KafkaError as e:
            errors.append(f"{'fresh client: ' if fresh else ''}{type(e).__name__}: {e}")
            return None
        finally:
            if fresh:
                client.close()
        return {tp.partition: off.offset for tp, off in got.items()}

    try:
        return wait_for(ask, 60, 0.5, f"log end offsets of {topic}")
    except AssertionError:
        raise AssertionError(f"no log end offsets of {topic}; last errors: {errors[-3:]}") from None


def test_the_i1_check_sees_double_ownership_without_coexistence(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    """Negative control: with coexistence off, old and new members balance separately and
    the same log analysis must find partitions fetched by both at once."""
    topic = topic_name("ctl")
    group = f"{topic}-g"
    admin.create_topics([NewTopic(topic, PARTITIONS, 2)])
    start_bridge(env={"ZK_BRIDGE__COEXISTENCE__ENABLED": "false"})
    wait_for(lambda: zk.exists(f"/brokers/topics/{topic}"), 30, what="topic mirrored")
    producer = Producer(stack.bootstrap_servers, topic)
    consumers: dict[str, ConsumerProcess] = {
        "oldA": LegacyConsumerProcess(
            stack.zk_connect + chroot,
            group,
            [topic],
            extra=MIGRATION_SETTINGS,
            log=tmp_path / "oldA.log",
        ),
        "newN1": NewConsumerProcess(
            stack.bootstrap_servers, group, [topic], client_id="newN1", log=tmp_path / "newN1.log"
        ),
    }
    assert doubles_seen(producer, consumers, 50, 2.0), "the I1 check must be able to fail"


def doubles_seen(producer, consumers: dict[str, ConsumerProcess], at_least: int, settle_s: float):
    """A negative control's run: every consumer reads ``at_least`` messages, then all stop;
    the intervals in which two of them owned one partition, from their own logs."""
    try:
        try:
            wait_for(lambda: all(len(c.messages) > at_least for c in consumers.values()), 150, 0.5)
        except AssertionError:
            state = {n: (len(c.messages), c.lines[-3:]) for n, c in consumers.items()}
            raise AssertionError(f"both consumers should consume: {state}") from None
        time.sleep(settle_s)
    finally:
        producer.stop()
        for c in consumers.values():
            c.stop()
    return overlaps(ownership_segments(consumers))
