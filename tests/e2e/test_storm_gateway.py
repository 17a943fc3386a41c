"""storm-kafka's KafkaSpout on Kafka 4.x through the legacy gateway.

Its ``SimpleConsumer`` (Kafka 0.8.2.1) sends Metadata v0, ListOffsets v0 and Fetch v0, which
4.x brokers refuse (KIP-896); with ``registry.advertise = "gateway"`` every broker id in
``/brokers/ids`` is the gateway, and the spout consumes and commits through it; its group
then migrates to a Kafka consumer and back to a restarted spout as on 3.9.
"""

from __future__ import annotations

import json

import pytest
from kafka.admin import NewTopic

from bridge.devstack.storm import StormSpoutProcess
from tests.e2e.test_gateway import start_gateway_bridge, wait_topics
from tests.e2e.test_storm import (
    PARTITIONS,
    PER_PARTITION,
    SPOUT_ID,
    _produce,
    _spout_nodes,
    hand_over_and_back,
)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(stack4):
    """This module on the session's Kafka 4.x stack (conftest's ``stack4``)."""
    return stack4


def test_storm_spout_consumes_and_commits_through_the_gateway(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    """The spout consumes part of the topic through the gateway and stops; then the same
    hand-over to a Kafka consumer and back as on 3.9 (``hand_over_and_back``)."""
    topic = topic_name("stormgw")
    group = f"{topic}-spout"
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    sent = _produce(stack, topic, 0, PARTITIONS * PER_PARTITION)
    spouts = [{"zk_root": "/storm", "spout_id": SPOUT_ID, "topic": topic, "group": group}]
    env = {"ZK_BRIDGE__STORM__SPOUTS": json.dumps(spouts)}
    endpoints = start_gateway_bridge(start_bridge, zk, admin, extra_env=env)
    wait_topics(zk, [topic])
    gateway = {f"{h}:{p}" for h, p in endpoints.values()}
    spout = StormSpoutProcess(
        stack.zk_connect, chroot, chroot + "/storm", SPOUT_ID, topic, tmp_path / "spout.log"
    )
    try:
        spout.start("topology-1")
        got = [m.value for m in spout.take(len(sent) // 2)]
        assert spout.partitions and set(spout.partitions.values()) <= gateway  # only the gateway
        spout.stop_spout()
        assert len(set(got)) == len(got) and set(got) <= set(sent)
        nodes = _spout_nodes(zk, chroot)
        assert sum(n["offset"] for n in nodes.values()) == len(got)
        assert {f"{n['broker']['host']}:{n['broker']['port']}" for n in nodes.values()} <= gateway
        hand_over_and_back(stack, zk, admin, chroot, env, spout, group, topic, sent)
    finally:
        spout.close()
