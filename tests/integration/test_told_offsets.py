"""A kafka-mode group's offset nodes taken from what the bridge knows, not listed
(``GroupStorageModes._told``).

After a cold start the bridge has written every group's nodes but listed none; each
group's first commit then listed its ``offsets`` dir and topic dirs in its tick (31 % of
the commits' tick at 10,000 groups). A kafka-mode group no one shares has its own nodes
as the bridge wrote them, and only the nodes of partitions Kafka has offsets for that the
bridge holds none of are read: another's node there is weighed as a listing would find
it (moved forward, never back: I2).
"""

from __future__ import annotations

import pytest
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTP
from kafka.structs import OffsetAndMetadata
from kazoo.client import KazooClient

import zkpaths
from bench import create_topic
from bridge.kafka.offsets_log import OffsetsLogFollower
from tests.conftest import wait_for
from tests.integration.test_offsets_trigger import following_flow

pytestmark = pytest.mark.integration


def _commit(consumer: KafkaConsumer, topic: str, offsets: dict[int, int]) -> None:
    """Commit, again while the coordinator does not know the topic just created yet."""
    wanted = {KafkaTP(topic, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()}

    def committed() -> bool:
        try:
            consumer.commit(wanted)
        except Exception:  # noqa: BLE001 - the topic not known yet: again
            return False
        return all(consumer.committed(tp) == om.offset for tp, om in wanted.items())

    wait_for(committed, 30, 0.2, f"{offsets} committed")


def _zk(zk: KazooClient, group: str, topic: str, partition: int) -> int | None:
    path = zkpaths.offset_path(group, topic, partition)
    return int(zk.get(path)[0]) if zk.exists(path) else None


@pytest.fixture
def world(stack, zk, admin, topic_name):
    """A topic of 3 partitions, a group committing to it (partition 0 only), and a flow
    with a follower that has mirrored it (kafka mode: its nodes are the bridge's)."""
    topic, group = topic_name("t"), topic_name("g")
    create_topic(admin, topic, 3)
    consumer = KafkaConsumer(bootstrap_servers=stack.bootstrap_servers, group_id=group)
    follower = OffsetsLogFollower(stack.bootstrap_servers, start="end")
    flow = following_flow(zk, admin, group, follower)
    try:
        _commit(consumer, topic, {0: 5})
        wait_for(lambda: flow.tick() >= 0 and _zk(zk, group, topic, 0) == 5, 30, 0.1, "5")
        yield flow, consumer, group, topic
    finally:
        consumer.close()
        follower.close()


@pytest.mark.parametrize("told", [True, False], ids=["told", "negative-control"])
def test_a_kafka_mode_groups_commit_lists_nothing(world, zk, monkeypatch, told):
    """Negative control: without ``_told`` the group's offsets dir is listed."""
    flow, consumer, group, topic = world
    if not told:
        monkeypatch.setattr(flow, "_told", lambda *args: {})
    listed: list[str] = []
    real = flow.reader.children

    def children(paths):
        listed.extend(paths)
        return real(paths)

    monkeypatch.setattr(flow.reader, "children", children)
    _commit(consumer, topic, {0: 9})
    wait_for(lambda: flow.tick() >= 0 and _zk(zk, group, topic, 0) == 9, 30, 0.1, "9")
    assert (zkpaths.offsets_path(group) in listed) is not told


@pytest.mark.parametrize("read", [True, False], ids=["read", "negative-control"])
def test_anothers_node_of_a_kafka_partition_is_weighed(world, zk, monkeypatch, read):
    """Someone else's nodes for partitions 1 (3, behind Kafka's 50) and 2 (100, ahead of
    it): 1 is moved forward to 50, 2 never back. Negative control: with those nodes not
    read, the bridge never weighs them and partition 1 stays behind."""
    flow, consumer, group, topic = world
    if not read:
        monkeypatch.setattr(flow, "_read_others", lambda paths: {})
    zk.create(zkpaths.offset_path(group, topic, 1), b"3", makepath=True)
    zk.create(zkpaths.offset_path(group, topic, 2), b"100", makepath=True)
    _commit(consumer, topic, {0: 9, 1: 50, 2: 50})
    wait_for(lambda: flow.tick() >= 0 and _zk(zk, group, topic, 0) == 9, 30, 0.1, "9")
    for _ in range(5):  # more ticks: nothing else moves
        flow.tick()
    assert _zk(zk, group, topic, 1) == (50 if read else 3)
    assert _zk(zk, group, topic, 2) == 100
