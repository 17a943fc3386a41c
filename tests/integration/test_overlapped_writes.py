"""A tick's ZooKeeper writes landing while the next tick reads Kafka
(``GroupMirrorFlow.overlap_writes``, as the service runs the groups flow).

The write is sent at the end of a tick and its answers taken by the next one before it
reads or plans anything of the groups written; in between the nodes are in ZooKeeper
already. Control: without the overlap the tick waits for the answers itself.
"""

from __future__ import annotations

import pytest
from kafka import KafkaConsumer

from bench import create_topic
from bridge.kafka.offsets_log import OffsetsLogFollower
from tests.conftest import wait_for
from tests.integration.test_offsets_trigger import _commit, _zk_offset, following_flow

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("overlap", [True, False], ids=["overlapped", "negative-control"])
def test_a_ticks_write_lands_in_the_next_tick(stack, zk, admin, topic_name, overlap):
    topic, group = topic_name("t"), topic_name("g")
    create_topic(admin, topic, 1)
    consumer = KafkaConsumer(bootstrap_servers=stack.bootstrap_servers, group_id=group)
    follower = OffsetsLogFollower(stack.bootstrap_servers, start="end")
    flow = following_flow(zk, admin, group, follower)
    flow.overlap_writes = overlap
    path = f"/consumers/{group}/offsets/{topic}/0"
    try:
        _commit(consumer, topic, 5)
        wait_for(lambda: flow.tick() >= 0 and _zk_offset(zk, group, topic) == 5, 30, 0.1, "5")
        flow.tick()  # the last write landed
        _commit(consumer, topic, 9)
        wait_for(lambda: flow.tick() > 0, 30, 0.05, "a tick that writes 9")
        in_flight = flow.tree._landing is not None
        assert in_flight is overlap
        wait_for(lambda: _zk_offset(zk, group, topic) == 9, 10, 0.02, "9 in ZooKeeper")
        flow.tick()  # takes the answers: known agrees with ZooKeeper, nothing in flight
        assert flow.tree._landing is None
        data, stat = zk.get(path)
        assert (flow.known[path].data, flow.known[path].version) == (data, stat.version)
        assert path in flow.writer.ledger.owned
    finally:
        consumer.close()
        follower.close()
