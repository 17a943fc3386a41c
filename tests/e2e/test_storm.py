"""storm-kafka's KafkaSpout through the bridge: discovery, a leader move, and a hand-over.

The real spout (storm-kafka 1.2.4, hosted by ``harness/StormSpout.java``; one JVM for the
module) finds brokers and leaders only in the chroot the bridge writes. It consumes part of
a topic and stops; ``zk-bridge migrate`` takes its group ``zookeeper → dual → kafka``; a
kafka-python consumer of the Kafka group goes on from exactly where the spout stopped; the
rollback ``kafka → dual → zookeeper`` leaves the spout's own ``partition_<n>`` nodes at the
Kafka group's position, and a restarted spout resumes there. Every message is consumed
exactly once across the three.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import NotLeaderForPartitionError
from kafka.protocol.consumer import FetchRequest

from bridge.devstack.storm import StormSpoutProcess
from tests.conftest import ROOT, wait_for
from tests.integration.old_client import OldClient

pytestmark = pytest.mark.e2e

PARTITIONS = 3
PER_PARTITION = 20
SPOUT_ID = "spout-a"


def _cli(stack, chroot: str, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bridge.cli", *args, "--zookeeper", stack.zk_connect + chroot]
        + ["--bootstrap-server", stack.bootstrap_servers],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        env={**os.environ, **env},
    )


def _produce(stack, topic: str, start: int, count: int) -> list[str]:
    producer = KafkaProducer(bootstrap_servers=stack.bootstrap_servers.split(","))
    values = [f"m{i}" for i in range(start, start + count)]
    for i, value in enumerate(values, start):
        producer.send(topic, value.encode(), partition=i % PARTITIONS)
    producer.flush()
    producer.close()
    return values


def _leaders(admin, topic: str) -> dict[int, int]:
    return {
        p["partition_index"]: p["leader_id"]
        for t in admin.describe_topics([topic])
        for p in t["partitions"]
    }


def _mirrored_leaders(zk, topic: str) -> dict[int, int]:
    """The leaders the registry mirror published (what DynamicBrokersReader reads)."""
    base = f"/brokers/topics/{topic}/partitions"
    states = {p: zk.get(f"{base}/{p}/state")[0] for p in zk.get_children(base)}
    return {int(p): json.loads(data)["leader"] for p, data in states.items()}


def _move_leaders(admin, topic: str) -> dict[int, int]:
    """Every partition's leadership to its other replica (reassign, then elect the preferred
    one, as tests/integration/test_gateway.py does), applied by every broker; the new leader
    per partition."""
    from kafka.structs import TopicPartition as KTP

    replicas = {
        p["partition_index"]: p["replica_nodes"]
        for t in admin.describe_topics([topic])
        for p in t["partitions"]
    }
    old = _leaders(admin, topic)
    new = {p: next(r for r in rs if r != old[p]) for p, rs in replicas.items()}
    admin.alter_partition_reassignments({KTP(topic, p): [new[p], old[p]] for p in replicas})
    time.sleep(1)
    admin.elect_leaders(0, {topic: list(replicas)}, raise_errors=False)
    # one broker's answer is not every broker's: each applies the move on its own time
    wait_for(lambda: _refuse(admin, topic, old), 60, 0.2, what=f"old leaders {old} refusing")
    return new


def _refuse(admin, topic: str, leaders: dict[int, int]) -> bool:
    """Whether each of ``leaders`` refuses an old client's fetch of its partition. A broker
    that has not applied its demotion yet still serves one (seen 28 ms after the admin said
    moved, at load 7), and the spout looks for leaders only after a fetch failed: it then
    stayed on every old leader (a CI run)."""
    hosts = {b["broker_id"]: (b["host"], b["port"]) for b in admin.describe_cluster()["brokers"]}
    for partition, node in leaders.items():
        client = OldClient(hosts[node])
        try:
            answer = client.send(
                FetchRequest[3](
                    replica_id=-1,
                    max_wait_ms=0,
                    min_bytes=0,
                    max_bytes=1 << 16,
                    topics=[
                        FetchRequest.FetchTopic(
                            topic=topic,
                            partitions=[
                                FetchRequest.FetchTopic.FetchPartition(
                                    partition=partition, fetch_offset=0, partition_max_bytes=1 << 16
                                )
                            ],
                        )
                    ],
                )
            )
        finally:
            client.close()
        if answer.responses[0].partitions[0].error_code != NotLeaderForPartitionError.errno:
            return False
    return True


def _spout_nodes(zk, chroot: str) -> dict[int, dict]:
    base = "/storm/" + SPOUT_ID
    return {
        int(c.split("_")[1]): json.loads(zk.get(f"{base}/{c}")[0]) for c in zk.get_children(base)
    }


def _kafka_offsets(admin, group: str, topic: str) -> dict[int, int]:
    got = admin.list_group_offsets({group: None})[group]
    return {tp.partition: om.offset for tp, om in got.items() if tp.topic == topic}


def _consume_kafka(stack, group: str, topic: str, count: int, timeout: float = 60) -> list[str]:
    """A kafka-python member of ``group`` reads ``count`` messages, then listens 3 s more for
    any extra (a duplicate would show there), commits and leaves."""
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=stack.bootstrap_servers.split(","),
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    got: list[str] = []
    deadline = time.monotonic() + timeout
    quiet_until = None
    while time.monotonic() < deadline:
        for records in consumer.poll(500).values():
            got += [r.value.decode() for r in records]
        if len(got) >= count and quiet_until is None:
            quiet_until = time.monotonic() + 3
        if quiet_until is not None and time.monotonic() > quiet_until:
            break
    consumer.commit()
    consumer.close()
    return got


def test_storm_spout_hands_over_to_kafka_and_back(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    topic = topic_name("storm")
    group = f"{topic}-spout"
    admin.create_topics([NewTopic(topic, PARTITIONS, 2)])
    sent = _produce(stack, topic, 0, PARTITIONS * PER_PARTITION)
    spouts = [{"zk_root": "/storm", "spout_id": SPOUT_ID, "topic": topic, "group": group}]
    env = {"ZK_BRIDGE__STORM__SPOUTS": json.dumps(spouts)}
    start_bridge(env=env)
    wait_for(
        lambda: zk.exists(f"/brokers/topics/{topic}/partitions/{PARTITIONS - 1}/state"),
        60,
        what="topic mirrored",
    )
    spout = StormSpoutProcess(
        stack.zk_connect, chroot, chroot + "/storm", SPOUT_ID, topic, tmp_path / "spout.log"
    )
    try:
        # discovery and a leader move followed while the spout runs
        spout.start("topology-1")
        spout.take(10)
        hosts_before = dict(spout.partitions)
        new = _move_leaders(admin, topic)
        # the spout re-reads every partition's leader from the mirror when a fetch fails (or
        # once a minute): wait until the mirror shows the move, or a refresh racing the
        # bridge's next registry pass would leave the spout on an old leader
        wait_for(lambda: _mirrored_leaders(zk, topic) == new, 30, what=f"mirrored leaders {new}")
        ports = {b["broker_id"]: b["port"] for b in admin.describe_cluster()["brokers"]}
        spout.take(30)  # more than one partition holds: the spout fetches after the move
        assert {p: int(h.split(":")[1]) for p, h in spout.partitions.items()} == {
            p: ports[new[p]] for p in new
        }, spout.lines[-10:]
        assert hosts_before != spout.partitions  # negative control: the move was real
        spout.stop_spout()
        at_stop = {p: n["offset"] for p, n in _spout_nodes(zk, chroot).items()}
        assert sum(at_stop.values()) == 40, at_stop
        assert {n["topology"]["id"] for n in _spout_nodes(zk, chroot).values()} == {"topology-1"}

        hand_over_and_back(stack, zk, admin, chroot, env, spout, group, topic, sent)
    finally:
        spout.close()


def hand_over_and_back(
    stack, zk, admin, chroot: str, env: dict, spout, group: str, topic: str, sent: list[str]
) -> None:
    """From a stopped spout: ``groups``/``describe`` show it; ``migrate`` to ``kafka``; a
    kafka-python member of the group consumes the rest; ``migrate`` back to ``zookeeper``;
    a restarted spout resumes at the Kafka group's position. Each message once overall."""
    by_spout = [m.value for m in spout.messages]
    at_stop = {p: n["offset"] for p, n in _spout_nodes(zk, chroot).items()}
    # the bridge shows the spout as a group, with its offsets, once it has seen it (its
    # storm tick runs once per full interval: the spout may stop before it ran)
    wait_for(lambda: zk.exists(f"/kafka-zk-bridge/groups/{group}"), 30, what="spout seen")
    listed = _cli(stack, chroot, env, "groups", "--output", "json")
    rows = {r["group"]: r for r in json.loads(listed.stdout)}
    assert rows[group]["dialects"] == "storm-spout" and rows[group]["mode"] == "zookeeper"
    shown = _cli(stack, chroot, env, "describe", group, "--output", "json")
    described = json.loads(shown.stdout)
    assert {r["partition"]: r["zk_offset"] for r in described["partitions"]} == at_stop

    # negative control: a Kafka consumer without the spout's offsets starts elsewhere
    other = _consume_kafka(stack, f"{group}-other", topic, len(sent), timeout=30)
    assert set(other) & set(by_spout), "a fresh group should re-read what the spout read"

    for step in ("dual", "kafka"):
        r = _cli(stack, chroot, env, "migrate", group, "--to", step, "--lag-window", "1")
        assert r.returncode == 0, r.stdout + r.stderr
    assert _kafka_offsets(admin, group, topic) == at_stop

    by_kafka = _consume_kafka(stack, group, topic, len(sent) - len(by_spout))
    assert Counter(by_spout + by_kafka) == Counter(sent)  # no loss, no duplicate
    ends = {p: PER_PARTITION for p in range(PARTITIONS)}
    assert _kafka_offsets(admin, group, topic) == ends
    assert ends != at_stop  # the spout's own nodes alone would have it re-read messages
    # kafka mode: the bridge keeps the spout's nodes at the Kafka group's position
    wait_for(
        lambda: {p: n["offset"] for p, n in _spout_nodes(zk, chroot).items()} == ends,
        30,
        what="spout nodes at the Kafka group's offsets",
    )

    for step in ("dual", "zookeeper"):
        r = _cli(stack, chroot, env, "migrate", group, "--to", step, "--lag-window", "1")
        assert r.returncode == 0, r.stdout + r.stderr
    more = _produce(stack, topic, len(sent), 15)
    spout.start("topology-2")
    again = [m.value for m in spout.take(15)]
    spout.stop_spout()
    assert sorted(again) == sorted(more), again  # resumed at the Kafka group's position
    assert Counter(by_spout + by_kafka + again) == Counter(sent + more)
