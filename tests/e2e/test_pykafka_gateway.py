"""The real pykafka 2.8.0 ``BalancedConsumer`` on Kafka 4.x, through the legacy gateway.

pykafka asks ApiVersions and picks, per request, the newest version both sides know: with
the gateway's list that is Metadata v3, Fetch v2, ListOffsets v1, GroupCoordinator v0,
OffsetCommit v1 and OffsetFetch v2, all served. A group mixing pykafka with kafka-python
or Scala consumers is refused as on 3.9 (the same checks). Negative control: against the
same Kafka 4.x with the brokers' own endpoints in ``/brokers/ids`` (no gateway) it consumes
nothing, because Kafka 4 no longer serves Fetch v0-v3 (KIP-896).
"""

from __future__ import annotations

import time

import pytest

from bridge.devstack.pykafka_client import PykafkaConsumerProcess
from tests.conftest import wait_for
from tests.e2e.test_gateway import start_gateway_bridge
from tests.e2e.test_pykafka import (
    check_group,
    check_mixed_refused,
    topic_with_data,
)

pytestmark = pytest.mark.e2e

#: how long pykafka gets to consume something without the gateway (negative control)
NOTHING_WINDOW_S = 20


@pytest.fixture(scope="module")
def stack(stack4):
    """This module on the session's Kafka 4.x stack (conftest's ``stack4``)."""
    return stack4


def test_pykafka_consumes_through_the_gateway_on_kafka4(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    """The 3.9 test's checks on 4.x: a group of two, every message, ``describe``/``groups``,
    its offsets mirrored, the step to ``dual`` refused by its gate, a ``kill -9``."""
    topic = topic_name("pyk4")
    topic_with_data(stack, admin, topic)
    start_gateway_bridge(start_bridge, zk, admin)
    wait_for(lambda: zk.exists(f"/brokers/topics/{topic}"), 60, what="the registry mirror")
    check_group(stack, zk, admin, chroot, topic, tmp_path)
    admin.delete_topics([topic])


def test_pykafka_mixed_with_kafka_python_or_scala_consumers_is_refused_on_kafka4(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    """The 3.9 test's checks on 4.x: pykafka and the 0.10.2.2 Scala consumer through the
    gateway, the Kafka members read from Kafka 4."""
    topic = topic_name("mix4")
    topic_with_data(stack, admin, topic)
    bridges: list = []
    start_gateway_bridge(start_bridge, zk, admin, bridges)
    wait_for(lambda: zk.exists(f"/brokers/topics/{topic}"), 60, what="the registry mirror")
    check_mixed_refused(stack, zk, admin, bridges[0], chroot, topic, tmp_path)
    admin.delete_topics([topic])


def test_without_the_gateway_pykafka_gets_nothing_from_kafka4(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    """The negative control: the same consumer, the brokers' own endpoints advertised."""
    topic = topic_name("pyk4no")
    topic_with_data(stack, admin, topic)
    start_bridge()
    wait_for(lambda: zk.exists(f"/brokers/topics/{topic}"), 60, what="the registry mirror")
    consumer = PykafkaConsumerProcess(
        stack.zk_connect + chroot, "pykafka-nogw", topic, log=tmp_path / "pyk.log"
    )
    try:
        deadline = time.monotonic() + NOTHING_WINDOW_S
        while time.monotonic() < deadline and consumer.proc.poll() is None:
            time.sleep(0.5)
        assert consumer.messages == []
    finally:
        consumer.stop()
    admin.delete_topics([topic])
