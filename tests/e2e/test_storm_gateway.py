"""storm-kafka's KafkaSpout on Kafka 4.x through the legacy gateway.

Its ``SimpleConsumer`` (Kafka 0.8.2.1) sends Metadata v0, ListOffsets v0 and Fetch v0, which
4.x brokers refuse (KIP-896); with ``registry.advertise = "gateway"`` every broker id in
``/brokers/ids`` is the gateway, and the spout consumes and commits through it.
"""

from __future__ import annotations

from collections import Counter

import pytest
from kafka.admin import NewTopic

from bridge.devstack.storm import StormSpoutProcess
from tests.e2e.test_gateway import start_gateway_bridge, wait_topics
from tests.e2e.test_storm import PARTITIONS, SPOUT_ID, _produce, _spout_nodes

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(stack4):
    """This module on the session's Kafka 4.x stack (conftest's ``stack4``)."""
    return stack4


def test_storm_spout_consumes_and_commits_through_the_gateway(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    topic = topic_name("stormgw")
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    sent = _produce(stack, topic, 0, 30)
    endpoints = start_gateway_bridge(start_bridge, zk, admin)
    wait_topics(zk, [topic])
    gateway = {f"{h}:{p}" for h, p in endpoints.values()}
    spout = StormSpoutProcess(
        stack.zk_connect, chroot, chroot + "/storm", SPOUT_ID, topic, tmp_path / "spout.log"
    )
    try:
        spout.start("topology-gw")
        got = [m.value for m in spout.take(len(sent))]
        assert spout.partitions and set(spout.partitions.values()) <= gateway  # only the gateway
        spout.stop_spout()
    finally:
        spout.close()
    assert Counter(got) == Counter(sent)
    nodes = _spout_nodes(zk, chroot)
    assert {p: n["offset"] for p, n in nodes.items()} == {p: 10 for p in range(PARTITIONS)}
    assert {f"{n['broker']['host']}:{n['broker']['port']}" for n in nodes.values()} <= gateway
