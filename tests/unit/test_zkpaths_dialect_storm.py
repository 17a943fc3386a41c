"""storm-kafka's KafkaSpout offset nodes (``zkpaths.dialects.storm``) and the storage-mode
plan over them (``bridge.decide.storm``): properties against an independent reference (the
standard library's JSON, a node built as a dict), bytes a real spout wrote, bad nodes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge.decide.migration import StorageMode
from bridge.decide.storm import BRIDGE_TOPOLOGY, spout_plan
from zkpaths import TopicPartition
from zkpaths.dialects.storm import (
    SpoutOffset,
    decode_spout_offset,
    encode_spout_offset,
    parse_partition_name,
    partition_path,
)
from zkpaths.errors import CodecError, ZkPathError

#: what the real KafkaSpout (storm-kafka 1.2.4, tests/e2e/test_storm.py's harness) wrote
REAL = (
    b'{"topology":{"id":"harness-1795549431410","name":"kzb-storm-test"},"offset":10,'
    b'"partition":2,"broker":{"host":"127.0.0.1","port":26945},"topic":"storm-try-1795549399"}'
)

topics = st.from_regex(r"[A-Za-z0-9._-]{1,40}", fullmatch=True).filter(
    lambda t: t not in (".", "..")
)
texts = st.text(max_size=30).filter(lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s))
nodes = st.builds(
    SpoutOffset,
    offset=st.integers(0, 2**63 - 1),
    partition=st.integers(0, 2**31 - 1),
    topic=topics,
    topology_id=texts,
    topology_name=st.none() | texts,
    broker_host=st.none() | texts,
    broker_port=st.none() | st.integers(-1, 65535),
)


def reference(node: SpoutOffset) -> dict:
    """The node as PartitionManager.commit builds its map."""
    return {
        "topology": {"id": node.topology_id, "name": node.topology_name},
        "offset": node.offset,
        "partition": node.partition,
        "broker": {"host": node.broker_host, "port": node.broker_port},
        "topic": node.topic,
    }


@given(nodes)
def test_encoded_is_the_spouts_json(node):
    raw = encode_spout_offset(node)
    assert json.loads(raw) == reference(node)
    assert list(json.loads(raw)) == ["topology", "offset", "partition", "broker", "topic"]
    assert decode_spout_offset(raw) == node


@given(nodes, st.booleans())
def test_decodes_any_spelling_of_the_same_json(node, ascii_only):
    raw = json.dumps(reference(node), indent=1, ensure_ascii=ascii_only, sort_keys=True)
    assert decode_spout_offset(raw.encode()) == node


def test_bytes_a_real_spout_wrote_round_trip():
    node = decode_spout_offset(REAL)
    assert (node.offset, node.partition, node.topology_id) == (10, 2, "harness-1795549431410")
    assert encode_spout_offset(node) == REAL


def test_json_simple_escapes_slash_and_control_characters():
    node = SpoutOffset(1, 0, "t", "a/b", 'x\u2028\x01"', "h", 1)
    raw = encode_spout_offset(node)
    assert b'"a\\/b"' in raw and b'\\u2028\\u0001\\"' in raw


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (REAL[:60], "not valid JSON"),  # half-written
        (b"", "data is empty"),
        (b"[]", "expected a JSON object"),
        (REAL.replace(b'"offset":10', b'"offset":10.0'), "offset must be an integer"),
        (REAL.replace(b'"offset":10', b'"offset":-1'), "outside 0.."),
        (REAL.replace(b'"offset":10', b'"offset":true'), "offset must be an integer"),
        (REAL.replace(b'"offset":10,', b""), "missing 'offset'"),
        (REAL.replace(b'"id":"harness-1795549431410"', b'"id":7'), "topology.id must be"),
        (REAL.replace(b'"topic":"storm-try-1795549399"', b'"topic":"a b"'), "topic"),
    ],
)
def test_bad_nodes_are_codec_errors_naming_the_path(data, reason):
    with pytest.raises(CodecError, match=reason) as info:
        decode_spout_offset(data, path="/storm/s/partition_2")
    assert info.value.path == "/storm/s/partition_2"


@given(st.integers(0, 2**31 - 1))
def test_partition_names(p):
    path = partition_path("/storm", "spout", p)
    assert path == f"/storm/spout/partition_{p}"
    assert parse_partition_name(path.rsplit("/", 1)[1]) == p


@pytest.mark.parametrize("name", ["partition_", "partition_01", "partition_-1", "p_1", "x"])
def test_other_children_are_not_partitions(name):
    assert parse_partition_name(name) is None


@pytest.mark.parametrize(("root", "spout"), [("storm", "s"), ("/storm/", "s"), ("/s", "a/b")])
def test_bad_roots_and_ids(root, spout):
    with pytest.raises(ZkPathError):
        partition_path(root, spout, 0)


# ---- the plan ----------------------------------------------------------------------------

T = "clicks"
AT = ("/storm", "s")


def tp(p: int) -> TopicPartition:
    return TopicPartition(T, p)


def node(p: int, offset: int, topology: str = "topo-1") -> tuple[SpoutOffset, int]:
    return SpoutOffset(offset, p, T, topology, "name", "h", 1), 3


def test_zookeeper_mode_copies_the_spout_forward_into_kafka():
    plan = spout_plan(StorageMode.ZOOKEEPER, AT, {tp(0): node(0, 10)}, {tp(0): 4}, set(), {})
    assert plan.to_kafka == {tp(0): 10} and not plan.writes
    assert plan.after == {tp(0): (10, 10)}


def test_kafka_mode_writes_the_spouts_json_at_the_version_read():
    leaders = {tp(0): ("b2", 9093)}
    nodes_ = {tp(0): node(0, 10)}
    plan = spout_plan(StorageMode.KAFKA, AT, nodes_, {tp(0): 25, tp(1): 7}, set(), leaders)
    by_path = {w.path: w for w in plan.writes}
    existing = by_path["/storm/s/partition_0"]
    assert existing.version == 3
    assert decode_spout_offset(existing.data) == SpoutOffset(25, 0, T, "topo-1", "name", "b2", 9093)
    created = by_path["/storm/s/partition_1"]
    assert created.version is None  # the spout never committed partition 1: created
    assert decode_spout_offset(created.data).topology_id == "topo-1"  # the spout's topology
    assert not plan.to_kafka


def test_a_spout_that_never_committed_gets_nodes_named_after_the_bridge():
    plan = spout_plan(StorageMode.KAFKA, AT, {}, {tp(0): 5}, set(), {})
    assert decode_spout_offset(plan.writes[0].data).topology_id == BRIDGE_TOPOLOGY


@given(
    st.sampled_from(list(StorageMode)),
    st.dictionaries(st.integers(0, 5), st.integers(0, 1000)),
    st.dictionaries(st.integers(0, 5), st.integers(0, 1000)),
)
def test_never_backward_and_never_over_a_live_member(mode, zk, kafka):
    """I2 against a reference: every write only raises a store, by the mode's rule."""
    writers = {tp(0)}
    nodes_ = {tp(p): node(p, o) for p, o in zk.items()}
    plan = spout_plan(mode, AT, nodes_, {tp(p): o for p, o in kafka.items()}, writers, {})
    for w in plan.writes:
        p = parse_partition_name(w.path.rsplit("/", 1)[1])
        new = decode_spout_offset(w.data).offset
        assert mode is not StorageMode.ZOOKEEPER
        assert new == kafka[p] and new > zk.get(p, -1)
    for t, o in plan.to_kafka.items():
        assert t != tp(0) and mode is not StorageMode.KAFKA
        assert o == zk[t.partition] and o > kafka.get(t.partition, -1)


def test_a_bad_node_is_left_alone_and_fails_the_gate():
    bad = {tp(1)}
    plan = spout_plan(
        StorageMode.KAFKA, AT, {tp(0): node(0, 1)}, {tp(0): 2, tp(1): 9}, set(), {}, bad
    )
    assert [w.path for w in plan.writes] == ["/storm/s/partition_0"]
    assert plan.after[tp(1)] == (-1, 9)  # unequal: the migrate gate names the partition
