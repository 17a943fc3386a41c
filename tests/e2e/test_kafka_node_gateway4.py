"""kafka-node 3.0.1 HighLevelConsumers on Kafka 4.x through the legacy gateway (issue 16,
part 4): Kafka 4 removed every request version kafka-node sends (KIP-896); with the gateway
advertised, a port per broker id, the group consumes every message and its OffsetCommit v0
lands in ZooKeeper, copied into Kafka by the bridge. Without the gateway the same consumer
gets nothing (the negative control). Runs on the session's 4.x stack (conftest ``stack4``)."""

from __future__ import annotations

import time
import uuid

import pytest

from bridge.devstack.kafka_node import KafkaNodeConsumerProcess
from tests.conftest import wait_for
from tests.e2e.test_gateway import kafka_offsets, zk_offsets
from tests.e2e.test_kafka_node import (
    GATEWAY,
    _consumed,
    _ends,
    _hlc,
    _produce,
    _topic,
    _wait_brokers,
)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(stack4):
    return stack4


def test_high_level_consumers_consume_and_commit_through_the_gateway_on_kafka_4(
    stack, zk, admin, start_bridge, chroot, topic_name, tmp_path
) -> None:
    start_bridge("--gateway-listen", "127.0.0.1:0", env=GATEWAY)
    _wait_brokers(zk, stack)
    topic = _topic(admin, topic_name("kn4"))
    group = f"kn4-{uuid.uuid4().hex[:6]}"
    sent = _produce(stack, topic, 0, 60)
    a = _hlc(stack, chroot, group, topic, tmp_path, "a")
    b = _hlc(stack, chroot, group, topic, tmp_path, "b")
    try:
        wait_for(lambda: set(_consumed(a, b)) >= set(sent), 90, 0.2, "every message consumed")
        assert {k: v for k, v in _consumed(a, b).items() if k in sent} == sent
        ends = {(topic, p): o for p, o in _ends(sent).items()}
        wait_for(lambda: zk_offsets(zk, group, [topic]) == ends, 60, 0.5, "offsets in ZooKeeper")
        wait_for(lambda: kafka_offsets(admin, group) == ends, 90, 0.5, "offsets in Kafka")
    finally:
        a.stop()
        b.stop()


def test_without_the_gateway_kafka_4_gives_a_high_level_consumer_nothing(
    stack, zk, admin, start_bridge, chroot, topic_name, tmp_path
) -> None:
    start_bridge()
    _wait_brokers(zk, stack)
    topic = _topic(admin, topic_name("kn4"))
    group = f"kn4-{uuid.uuid4().hex[:6]}"
    _produce(stack, topic, 0, 30)
    c = KafkaNodeConsumerProcess(
        stack.zk_connect + chroot, group, [topic], log=tmp_path / "c.log"
    )  # it registers and claims its partitions in ZooKeeper, then talks to Kafka 4 itself
    try:
        wait_for(lambda: zk.exists(f"/consumers/{group}/owners/{topic}/2"), 60, 0.2, "claimed")
        time.sleep(15)
        assert c.messages == []
        assert zk_offsets(zk, group, [topic]) == {}
        assert any(x.startswith("ERROR Broker not available") for x in c.lines), c.lines[-5:]
    finally:
        c.stop()
