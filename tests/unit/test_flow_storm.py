"""The storm spout part of the groups flow (``bridge.flows.storm``) with its edges faked: when
a spout is reconciled, what it writes, and that a write the spout raced answers no sync."""

from __future__ import annotations

import pytest

from bridge.config import StormSpout
from bridge.decide.migration import GroupRecord, StorageMode
from bridge.decide.plan import Create, SetData
from bridge.flows import storm as flow
from bridge.kafka.views import GroupView
from bridge.zookeeper.reader import SpoutNode
from bridge.zookeeper.writer import BatchRejected
from zkpaths import TopicPartition
from zkpaths.dialects.storm import SpoutOffset, decode_spout_offset

SPOUT = StormSpout(zk_root="/storm", spout_id="s", topic="t", group="g")


class Reader:
    def __init__(self, nodes):
        self.nodes = nodes

    def spout_offsets(self, zk_root, spout_id, topic):
        return self.nodes


class Writer:
    client = None

    def __init__(self, refuse: bool = False):
        self.refuse, self.applied = refuse, []

    def apply_own(self, ops):
        if self.refuse:
            raise BatchRejected(ops[0], RuntimeError("BadVersion"))
        self.applied.append(list(ops))


@pytest.fixture
def kafka(monkeypatch):
    """Kafka's side: the group ``g`` Empty with offset 9 on partitions 0 and 1."""
    offsets = {TopicPartition("t", 0): 9, TopicPartition("t", 1): 9}
    calls = []

    def read_groups(admin, groups):
        calls.append(list(groups))
        return {g: GroupView(g, "Empty", "consumer", None, (), dict(offsets)) for g in groups}

    monkeypatch.setattr(flow, "read_groups", read_groups)
    monkeypatch.setattr(flow, "partition_leaders", lambda admin, topics: {})
    monkeypatch.setattr(flow, "missing_parents", lambda client, paths: [])
    return calls


def spouts(nodes, writer, interval_s=1.0):
    return flow.StormSpouts(
        [SPOUT], Reader(nodes), None, writer, None, "/root", lambda *a: None, interval_s
    )


def node(p: int, offset: int) -> SpoutNode:
    return SpoutNode(SpoutOffset(offset, p, "t", "topo"), 4, f"/storm/s/partition_{p}")


def test_kafka_mode_sets_the_spouts_node_and_creates_the_missing_one(kafka):
    writer = Writer()
    records = {"g": (GroupRecord(StorageMode.KAFKA), 0)}
    after = spouts({TopicPartition("t", 0): node(0, 5)}, writer).tick(records)
    [ops] = writer.applied
    by_path = {op.path: op for op in ops}
    assert isinstance(by_path["/storm/s/partition_0"], SetData)
    assert by_path["/storm/s/partition_0"].version == 4
    assert isinstance(by_path["/storm/s/partition_1"], Create)
    assert decode_spout_offset(by_path["/storm/s/partition_1"].data).offset == 9
    assert after == {"g": {TopicPartition("t", 0): (9, 9), TopicPartition("t", 1): (9, 9)}}


def test_once_per_interval_unless_a_sync_asks(kafka):
    s = spouts({}, Writer(), interval_s=3600)
    records = {"g": (GroupRecord(StorageMode.ZOOKEEPER), 0)}
    assert "g" in s.tick(records)
    assert s.tick(records) == {}  # not due
    assert "g" in s.tick(records, asked={"g"})
    assert kafka == [["g"], ["g"]]


def test_a_write_the_spout_raced_answers_no_sync(kafka):
    records = {"g": (GroupRecord(StorageMode.KAFKA), 0)}
    nodes = {TopicPartition("t", 0): node(0, 5)}
    assert spouts(nodes, Writer(refuse=True)).tick(records) == {"g": None}


def test_a_bad_node_is_not_written(kafka):
    writer = Writer()
    records = {"g": (GroupRecord(StorageMode.KAFKA), 0)}
    bad = SpoutNode(None, 2, "/storm/s/partition_1", "not valid JSON")
    nodes = {TopicPartition("t", 0): node(0, 9), TopicPartition("t", 1): bad}
    after = spouts(nodes, writer).tick(records)
    assert writer.applied == []
    assert after["g"][TopicPartition("t", 1)] == (-1, 9)
