"""Topic assignments (/brokers/topics/<t>) and partition states (.../partitions/<p>/state)."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkpaths import (
    CodecError,
    PartitionState,
    TopicAssignment,
    UnknownVersionError,
    decode_partition_state,
    decode_topic,
    encode_partition_state,
    encode_topic,
    is_topic_id,
)

TOPIC_ID = "ooEOTJNkQzq_OfLeXvvHEQ"

# 0.8-2.3 writers (ZkUtils.replicaAssignmentZkData)
T_V1 = b'{"version":1,"partitions":{"0":[1,2],"1":[2,0],"10":[0,1]}}'
# 2.4-2.7, a reassignment adding broker 3 to partition 0
T_V2 = (
    b'{"version":2,"partitions":{"0":[1,2,3]},"adding_replicas":{"0":[3]},"removing_replicas":{}}'
)
# 2.8+ as a Scala 2.12 build writes it (hash-map key order)
T_V3 = (
    b'{"removing_replicas":{},"partitions":{"2":[1],"1":[0],"0":[2]},'
    b'"topic_id":"ooEOTJNkQzq_OfLeXvvHEQ","adding_replicas":{},"version":3}'
)


def test_topic_v1() -> None:
    assert decode_topic(T_V1) == TopicAssignment(
        partitions={0: (1, 2), 1: (2, 0), 10: (0, 1)}, version=1
    )


def test_topic_v2() -> None:
    got = decode_topic(T_V2)
    assert got.version == 2
    assert got.partitions == {0: (1, 2, 3)}
    assert got.adding_replicas == {0: (3,)}
    assert got.removing_replicas == {}
    assert got.topic_id is None


def test_topic_v3() -> None:
    got = decode_topic(T_V3)
    assert got == TopicAssignment({0: (2,), 1: (0,), 2: (1,)}, topic_id=TOPIC_ID, version=3)


def test_topic_encoder_writes_v3_like_kafka() -> None:
    # kafka_2.13-3.9.1 TopicZNode.encode writes the same keys in the same order
    data = encode_topic(TopicAssignment({1: [2, 0], 0: (1, 2)}, topic_id=TOPIC_ID))
    assert data == (
        b'{"partitions":{"0":[1,2],"1":[2,0]},"topic_id":"ooEOTJNkQzq_OfLeXvvHEQ",'
        b'"adding_replicas":{},"removing_replicas":{},"version":3}'
    )
    without_id = json.loads(encode_topic(TopicAssignment({0: (1,)})))
    assert without_id["version"] == 3 and "topic_id" not in without_id


def test_topic_encoder_at_v1_is_the_0_10_form() -> None:
    data = encode_topic(TopicAssignment({0: (1, 2)}, version=1))
    assert data == b'{"version":1,"partitions":{"0":[1,2]}}'


def test_topic_missing_partitions_is_an_empty_topic() -> None:
    assert decode_topic(b'{"version":1}').partitions == {}


def test_topic_empty_reassignment_lists_are_dropped() -> None:
    got = decode_topic(b'{"version":2,"partitions":{"0":[1]},"adding_replicas":{"0":[]}}')
    assert got.adding_replicas == {}


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b'{"version":4,"partitions":{}}', "unknown version 4"),
        (b'{"version":1,"partitions":[]}', "partitions must be an object"),
        (b'{"version":1,"partitions":{"x":[1]}}', "key 'x' is not a partition number"),
        (b'{"version":1,"partitions":{"-1":[1]}}', "not a partition number"),
        (b'{"version":1,"partitions":{"0":[1],"00":[2]}}', "lists partition 0 twice"),
        (b'{"version":1,"partitions":{"0":"1,2"}}', "must be an array"),
        (b'{"version":1,"partitions":{"0":[true]}}', "must be an integer, got boolean"),
        (b'{"version":1,"partitions":{"0":[1.5]}}', "must be an integer, got number"),
        (b'{"version":2,"partitions":{"0":[1]},"adding_replicas":{"1":[2]}}', "[1]"),
        (b'{"version":3,"partitions":{},"topic_id":"short"}', "not a base64 uuid"),
        (b'{"version":3,"partitions":{},"topic_id":7}', "topic_id must be a string"),
    ],
)
def test_topic_rejects(data: bytes, needle: str) -> None:
    with pytest.raises(CodecError) as info:
        decode_topic(data, path="/brokers/topics/t")
    assert needle in str(info.value)
    assert "topic assignment at /brokers/topics/t" in str(info.value)


def test_topic_encoder_rejects() -> None:
    with pytest.raises(ValueError, match="v1-v3"):
        encode_topic(TopicAssignment({}, version=4))
    with pytest.raises(ValueError, match="base64 uuid"):
        encode_topic(TopicAssignment({}, topic_id="nope"))
    with pytest.raises(ValueError, match="lacks"):
        encode_topic(TopicAssignment({0: (1,)}, adding_replicas={1: (2,)}))
    with pytest.raises(ValueError, match="not an int"):
        encode_topic(TopicAssignment({0: (True,)}))
    with pytest.raises(ValueError, match="outside"):
        encode_topic(TopicAssignment({-1: (1,)}))


def test_is_topic_id() -> None:
    assert is_topic_id(TOPIC_ID)
    assert is_topic_id("AAAAAAAAAAAAAAAAAAAAAA")
    assert is_topic_id(TOPIC_ID + "==")
    assert not is_topic_id(TOPIC_ID[:-1])
    assert not is_topic_id(TOPIC_ID.replace("_", "/"))
    assert not is_topic_id(None)


replicas = st.lists(st.integers(0, 2**31 - 1), max_size=4).map(tuple)
partition_maps = st.dictionaries(st.integers(0, 2**31 - 1), replicas, max_size=6)
topic_ids = st.binary(min_size=16, max_size=16).map(
    lambda b: base64.urlsafe_b64encode(b).decode()[:22]
)


@st.composite
def assignments(draw: st.DrawFn) -> TopicAssignment:
    partitions = draw(partition_maps)
    version = draw(st.sampled_from([1, 2, 3]))
    moving = st.sampled_from(sorted(partitions)) if partitions else st.nothing()
    adding = draw(st.dictionaries(moving, replicas.filter(bool), max_size=2)) if partitions else {}
    removing = (
        draw(st.dictionaries(moving, replicas.filter(bool), max_size=2)) if partitions else {}
    )
    return TopicAssignment(partitions, adding, removing, draw(st.none() | topic_ids), version)


@settings(max_examples=300)
@given(assignments())
def test_topic_round_trip(assignment: TopicAssignment) -> None:
    assert decode_topic(encode_topic(assignment)) == assignment


# -- partition state -------------------------------------------------------------------------

STATE = b'{"controller_epoch":4,"leader":1,"version":1,"leader_epoch":1,"isr":[1,0]}'


def test_state_golden_vector_both_ways() -> None:
    # byte for byte what kafka_2.13-3.9.1 TopicPartitionStateZNode.encode writes
    state = decode_partition_state(STATE)
    assert state == PartitionState(leader=1, leader_epoch=1, isr=(1, 0), controller_epoch=4)
    assert state.leader_recovery_state is None
    assert encode_partition_state(state) == STATE


def test_state_recovering() -> None:
    state = PartitionState(1, 1, [1, 0], 4, leader_recovery_state=1)
    data = encode_partition_state(state)
    assert data == (  # as kafka_2.13-3.9.1 writes a RECOVERING partition
        b'{"controller_epoch":4,"leader":1,"version":1,"leader_recovery_state":1,'
        b'"leader_epoch":1,"isr":[1,0]}'
    )
    assert decode_partition_state(data) == state


def test_state_without_leader() -> None:
    state = decode_partition_state(STATE.replace(b'"leader":1', b'"leader":-1'))
    assert state.leader == -1


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (STATE.replace(b'"version":1', b'"version":2'), "unknown version 2"),
        (STATE.replace(b'"isr":[1,0]', b'"isr":"1,0"'), "isr must be an array"),
        (STATE.replace(b'"leader":1,', b""), "missing 'leader'"),
        (STATE.replace(b'"leader":1', b'"leader":"1"'), "leader must be an integer"),
        (STATE[:-1] + b',"leader_recovery_state":7}', "not 0 (RECOVERED) or 1"),
        (STATE.replace(b'"controller_epoch":4', b'"controller_epoch":false'), "boolean"),
    ],
)
def test_state_rejects(data: bytes, needle: str) -> None:
    with pytest.raises(CodecError, match="partition state") as info:
        decode_partition_state(data)
    assert needle in str(info.value)


def test_state_unknown_version_type() -> None:
    with pytest.raises(UnknownVersionError):
        decode_partition_state(STATE.replace(b'"version":1', b'"version":0'))


def test_state_encoder_rejects() -> None:
    with pytest.raises(ValueError, match="leader_epoch"):
        encode_partition_state(PartitionState(1, 2**31, (1,), 0))
    with pytest.raises(ValueError, match="leader_recovery_state"):
        encode_partition_state(PartitionState(1, 0, (1,), 0, leader_recovery_state=2))
    with pytest.raises(ValueError, match="v1"):
        encode_partition_state(PartitionState(1, 0, (1,), 0, version=2))


int32 = st.integers(-(2**31), 2**31 - 1)


@settings(max_examples=300)
@given(
    st.builds(
        PartitionState,
        leader=int32,
        leader_epoch=int32,
        isr=st.lists(int32, max_size=5).map(tuple),
        controller_epoch=int32,
        leader_recovery_state=st.sampled_from([None, 0, 1]),
    )
)
def test_state_round_trip(state: PartitionState) -> None:
    assert decode_partition_state(encode_partition_state(state)) == state
