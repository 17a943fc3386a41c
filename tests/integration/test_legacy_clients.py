"""The legacy client harnesses on Kafka 3.9, which still speaks their request versions: the
0.8.2.2 and 0.10.2.2 Scala consumers (ZooKeeper mode, through the bridge's registry) and
the 0.10.2.2 Java producer. What they report is checked against what kafka-python wrote and
reads, so the same harnesses can be trusted where Kafka 4.x needs the gateway."""

from __future__ import annotations

import json
import uuid

import pytest
from kafka.admin import NewTopic

from bridge.devstack.legacy import LegacyConsumerProcess
from bridge.devstack.legacy_producer import message, produce_legacy
from tests.conftest import wait_for
from tests.e2e.legacy_io import (
    KEEP_OLD_TIMESTAMPS,
    TS_BASE,
    check_consumed,
    produce_python,
    read_python,
)

pytestmark = pytest.mark.integration

PARTITIONS = 3


def _offsets_in_zookeeper(zk, group: str, topic: str) -> dict[int, int]:
    path = f"/consumers/{group}/offsets/{topic}"
    if not zk.exists(path):
        return {}
    return {int(p): int(zk.get(f"{path}/{p}")[0]) for p in zk.get_children(path)}


def test_old_consumers_report_key_value_and_timestamp(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    topic = topic_name("old")
    admin.create_topics([NewTopic(topic, PARTITIONS, 2, topic_configs=KEEP_OLD_TIMESTAMPS)])
    sent = produce_python(stack.bootstrap_servers, topic, PARTITIONS, 150, compression="gzip")
    start_bridge()
    wait_for(
        lambda: zk.exists(f"/brokers/topics/{topic}/partitions/{PARTITIONS - 1}/state"),
        30,
        what="bridge mirroring the topic",
    )
    # group ids of their own: Kafka's groups outlive the test's chroot (the bridge copies a
    # stopped group's ZooKeeper offsets into Kafka), and another run must not meet them
    groups = {jars: f"g-{jars}-{uuid.uuid4().hex[:6]}" for jars in ("legacy", "legacy082")}
    consumers = {
        jars: LegacyConsumerProcess(
            stack.zk_connect + chroot,
            groups[jars],
            [topic],
            streams=2,
            extra=["--auto-offset-reset", "smallest", "--details", "true"],
            log=tmp_path / f"{jars}.log",
            jars=jars,
        )
        for jars in ("legacy", "legacy082")
    }
    try:
        for c in consumers.values():
            c.wait_ready()
            c.wait_consumed(len(sent), timeout=90)
    finally:
        for c in consumers.values():
            assert c.stop() in (0, 143)
    # 0.10.2.2 fetches message format v1 (Kafka 3.9 down-converts): the producer's timestamps
    check_consumed(consumers["legacy"].messages, sent, timestamps="CreateTime")
    # 0.8.2.2 knows no timestamps (magic 0)
    check_consumed(consumers["legacy082"].messages, sent, timestamps=None)
    ends = {p: max(s.offset for s in sent if s.partition == p) + 1 for p in range(PARTITIONS)}
    for jars, group in groups.items():
        assert _offsets_in_zookeeper(zk, group, topic) == ends, jars
    admin.delete_topics([topic])


@pytest.mark.parametrize("compression", ["none", "lz4"])
def test_old_producer_writes_what_kafka_python_reads(
    stack, admin, topic_name, tmp_path, compression
):
    topic = topic_name(compression)
    admin.create_topics([NewTopic(topic, PARTITIONS, 2, topic_configs=KEEP_OLD_TIMESTAMPS)])
    run = produce_legacy(
        stack.bootstrap_servers,
        topic,
        120,
        prefix="old",
        compression=compression,
        timestamp_base=TS_BASE,
        log=tmp_path / "producer.log",
    )
    assert run.returncode == 0 and not run.errors, run.lines[-5:]
    assert sorted(a.index for a in run.acked) == list(range(120))
    records = read_python(stack.bootstrap_servers, topic, 120)
    by_place = {(r.partition, r.offset): r for r in records}
    assert len(by_place) == len(records) == 120
    for a in run.acked:
        r = by_place[(a.partition, a.offset)]  # the offset acknowledged is the real one
        assert (r.key, r.value) == message("old", a.index)
        assert r.timestamp == a.timestamp == TS_BASE + a.index
    admin.delete_topics([topic])


def test_old_consumer_through_the_gateway_on_kafka_3_9(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    """The runbook's first step (docs/gateway.md): on 3.9, before the upgrade, old consumers
    are moved onto the gateway; the 3.9 brokers are then asked only today's versions."""
    topic = topic_name("gw")
    admin.create_topics([NewTopic(topic, PARTITIONS, 2, topic_configs=KEEP_OLD_TIMESTAMPS)])
    sent = produce_python(stack.bootstrap_servers, topic, PARTITIONS, 90, compression="lz4")
    start_bridge(
        "--gateway-listen",
        "127.0.0.1:0",
        env={"ZK_BRIDGE__REGISTRY__ADVERTISE": "gateway", "ZK_BRIDGE__GROUPS__EXCLUDE": '["g-.*"]'},
    )
    brokers = {(b["host"], b["port"]) for b in admin.describe_cluster()["brokers"]}

    def gateway_published() -> bool:
        ids = zk.get_children("/brokers/ids") if zk.exists("/brokers/ids") else []
        regs = [json.loads(zk.get(f"/brokers/ids/{i}")[0]) for i in ids]
        return len(regs) == len(brokers) and not {(r["host"], r["port"]) for r in regs} & brokers

    wait_for(gateway_published, 60, what="gateway endpoints in /brokers/ids")
    wait_for(lambda: zk.exists(f"/brokers/topics/{topic}/partitions/2/state"), 30)
    group = f"g-gw-{uuid.uuid4().hex[:6]}"
    consumer = LegacyConsumerProcess(
        stack.zk_connect + chroot,
        group,
        [topic],
        extra=["--auto-offset-reset", "smallest", "--details", "true"],
        log=tmp_path / "old.log",
    )
    try:
        consumer.wait_ready()
        consumer.wait_consumed(len(sent), timeout=90)
    finally:
        assert consumer.stop() in (0, 143)
    check_consumed(consumer.messages, sent, timestamps="CreateTime")
    admin.delete_topics([topic])
