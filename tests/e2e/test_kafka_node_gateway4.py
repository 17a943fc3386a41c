"""kafka-node 3.0.1 HighLevelConsumers on Kafka 4.x through the legacy gateway (issue 16,
part 4): Kafka 4 removed every request version kafka-node sends (KIP-896); with the gateway
advertised, a port per broker id, the 3.9 module's checks run unchanged: every message
consumed, OffsetCommit v0 kept in ZooKeeper and copied into Kafka, ``groups``/``describe``,
zookeeper -> dual -> zookeeper (-> kafka refused), a ``kill -9`` hand-over, and the mixed
groups (kafka-python, a 0.10.2.2 Scala consumer) refused in one line. Without the gateway
the same consumer gets nothing (the negative control). Runs on the session's 4.x stack
(conftest ``stack4``)."""

from __future__ import annotations

import time
import uuid

import pytest

from bridge.devstack.kafka_node import KafkaNodeConsumerProcess
from tests.conftest import wait_for
from tests.e2e.test_gateway import zk_offsets
from tests.e2e.test_kafka_node import (
    GATEWAY,
    _produce,
    _topic,
    _wait_brokers,
    check_group_through_the_gateway,
    check_mixed_with_a_scala_consumer,
    check_mixed_with_kafka_python,
)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(stack4):
    return stack4


def test_high_level_consumers_consume_and_commit_through_the_gateway_on_kafka_4(
    stack, zk, admin, start_bridge, chroot, topic_name, tmp_path
) -> None:
    bridge = start_bridge("--gateway-listen", "127.0.0.1:0", env=GATEWAY)
    _wait_brokers(zk, stack)
    topic = _topic(admin, topic_name("kn4"))
    check_group_through_the_gateway(stack, zk, admin, bridge, chroot, topic, tmp_path)


def test_mixed_with_kafka_python_or_a_scala_consumer_is_refused_on_kafka_4(
    stack, zk, admin, start_bridge, chroot, topic_name, tmp_path
) -> None:
    """The 3.9 test's checks on 4.x: the Kafka members' side is read from Kafka 4, and the
    0.10.2.2 Scala consumer registers through the same gateway."""
    bridge = start_bridge("--gateway-listen", "127.0.0.1:0", env=GATEWAY)
    _wait_brokers(zk, stack)
    topic = _topic(admin, topic_name("kn4"))
    check_mixed_with_kafka_python(stack, zk, admin, bridge, chroot, topic, tmp_path)
    check_mixed_with_a_scala_consumer(bridge, stack, zk, chroot, topic, tmp_path)


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
