"""The registry flow run by the service reads Kafka off the flows' thread
(``RegistryFlow._read``): a tick starts the read, and the tick its answer wakes writes.

Control: without ``wake`` (the CLI, tests) the tick reads and writes at once.
"""

from __future__ import annotations

import threading

import pytest

import zkpaths
from bench import create_topic
from bridge.flows.registry import RegistryFlow
from bridge.zookeeper.fence import claim_epoch
from bridge.zookeeper.writer import FencedWriter, Ledger
from tests.conftest import wait_for
from tests.integration.old_client import known_everywhere

pytestmark = pytest.mark.integration

ROOT = "/kzb-registry"


@pytest.mark.parametrize("woken", [True, False], ids=["off-the-thread", "negative-control"])
def test_the_read_is_taken_by_the_tick_it_wakes(stack, zk, admin, topic_name, woken):
    writer = FencedWriter(zk, claim_epoch(zk, f"{ROOT}/epoch", "t"), Ledger(ROOT))
    flow = RegistryFlow(zk, admin, writer)
    flow.resync()
    answered = threading.Event()
    if woken:
        flow.wake = answered.set
    try:
        assert flow.tick() > 0  # the first tick of a term reads at once: the registry first
        ids = sorted(int(b) for b in zk.get_children(zkpaths.BROKER_IDS))
        assert ids == sorted(b["broker_id"] for b in admin.describe_cluster()["brokers"])
        topic = topic_name("t")
        create_topic(admin, topic, 1)  # a change the next read brings
        wait_for(lambda: known_everywhere(admin, topic, 1), 30, 0.1, f"{topic} everywhere")
        path = f"{zkpaths.BROKER_TOPICS}/{topic}"
        written = flow.tick()
        assert (written == 0) is woken  # woken: that tick only started the read
        assert bool(zk.exists(path)) is not woken
        if woken:
            assert answered.wait(30), "the read's answer woke nothing"
            assert flow.tick() > 0
        assert zk.exists(path)
    finally:
        flow.close()
