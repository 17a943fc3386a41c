"""Paths of the legacy layout: builders, validation, and parse_path as their inverse."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zkpaths
from zkpaths import (
    BrokerIdPath,
    ConsumerGroupPath,
    ConsumerIdPath,
    ConsumerIdsPath,
    OffsetPath,
    OffsetsPath,
    OwnerPath,
    OwnersPath,
    PartitionPath,
    PartitionsPath,
    PartitionStatePath,
    TopicOffsetsPath,
    TopicOwnersPath,
    TopicPath,
    ZkPathError,
    parse_path,
)

topics = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
    min_size=1,
    max_size=249,
).filter(lambda t: t not in (".", ".."))
# anything ZooKeeper takes in a node name, '/' excluded
node_names = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs",),
        blacklist_characters="/",
        min_codepoint=0x20,
        max_codepoint=0xD7FF,
    ).filter(lambda c: not 0x7F <= ord(c) <= 0x9F),
    min_size=1,
    max_size=40,
).filter(lambda n: n not in (".", ".."))
ids = st.integers(0, 2**31 - 1)

layout_paths = st.one_of(
    st.builds(BrokerIdPath, ids),
    st.builds(TopicPath, topics),
    st.builds(PartitionsPath, topics),
    st.builds(PartitionPath, topics, ids),
    st.builds(PartitionStatePath, topics, ids),
    st.builds(ConsumerGroupPath, node_names),
    st.builds(ConsumerIdsPath, node_names),
    st.builds(ConsumerIdPath, node_names, node_names),
    st.builds(OwnersPath, node_names),
    st.builds(TopicOwnersPath, node_names, topics),
    st.builds(OwnerPath, node_names, topics, ids),
    st.builds(OffsetsPath, node_names),
    st.builds(TopicOffsetsPath, node_names, topics),
    st.builds(OffsetPath, node_names, topics, ids),
)


@settings(max_examples=400)
@given(layout_paths)
def test_parse_inverts_build(described: zkpaths.ZkPath) -> None:
    assert parse_path(described.path) == described


@settings(max_examples=300)
@given(st.text(max_size=60))
def test_parse_never_raises_anything_but_zkpatherror(text: str) -> None:
    try:
        described = parse_path(text)
    except ZkPathError as exc:
        assert exc.path == text
    else:
        assert described.path == text


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/brokers/ids/0", BrokerIdPath(0)),
        ("/brokers/topics/my.topic_1-x", TopicPath("my.topic_1-x")),
        ("/brokers/topics/t/partitions", PartitionsPath("t")),
        ("/brokers/topics/t/partitions/7", PartitionPath("t", 7)),
        ("/brokers/topics/t/partitions/7/state", PartitionStatePath("t", 7)),
        ("/consumers/g", ConsumerGroupPath("g")),
        ("/consumers/g/ids", ConsumerIdsPath("g")),
        (
            "/consumers/g/ids/g_host-1500000000000-1a2b3c4d",
            ConsumerIdPath("g", "g_host-1500000000000-1a2b3c4d"),
        ),
        ("/consumers/g/owners", OwnersPath("g")),
        ("/consumers/g/owners/t", TopicOwnersPath("g", "t")),
        ("/consumers/g/owners/t/3", OwnerPath("g", "t", 3)),
        ("/consumers/g/offsets", OffsetsPath("g")),
        ("/consumers/g/offsets/t", TopicOffsetsPath("g", "t")),
        ("/consumers/g/offsets/t/3", OffsetPath("g", "t", 3)),
        (
            "/consumers/group with spaces:and_colons",
            ConsumerGroupPath("group with spaces:and_colons"),
        ),
    ],
)
def test_parse_examples(path: str, expected: zkpaths.ZkPath) -> None:
    assert parse_path(path) == expected
    assert expected.path == path


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/brokers", zkpaths.BrokersPath),
        ("/brokers/ids", zkpaths.BrokerIdsPath),
        ("/brokers/topics", zkpaths.TopicsPath),
        ("/brokers/seqid", zkpaths.BrokerSeqIdPath),
        ("/controller", zkpaths.ControllerPath),
        ("/controller_epoch", zkpaths.ControllerEpochPath),
        ("/cluster", zkpaths.ClusterPath),
        ("/cluster/id", zkpaths.ClusterIdPath),
        ("/consumers", zkpaths.ConsumersPath),
    ],
)
def test_fixed_paths(path: str, kind: type) -> None:
    described = parse_path(path)
    assert isinstance(described, kind)
    assert described.path == path


def test_constants() -> None:
    assert zkpaths.BROKER_IDS == "/brokers/ids"
    assert zkpaths.BROKER_TOPICS == "/brokers/topics"
    assert zkpaths.BROKER_SEQID == "/brokers/seqid"
    assert zkpaths.CONTROLLER == "/controller"
    assert zkpaths.CONTROLLER_EPOCH == "/controller_epoch"
    assert zkpaths.CLUSTER_ID == "/cluster/id"
    assert zkpaths.CONSUMERS == "/consumers"


def test_builders() -> None:
    assert zkpaths.broker_path(3) == "/brokers/ids/3"
    assert zkpaths.topic_path("t") == "/brokers/topics/t"
    assert zkpaths.partitions_path("t") == "/brokers/topics/t/partitions"
    assert zkpaths.partition_path("t", 0) == "/brokers/topics/t/partitions/0"
    assert zkpaths.partition_state_path("t", 0) == "/brokers/topics/t/partitions/0/state"
    assert zkpaths.consumer_group_path("g") == "/consumers/g"
    assert zkpaths.consumer_ids_path("g") == "/consumers/g/ids"
    assert zkpaths.consumer_id_path("g", "g_c") == "/consumers/g/ids/g_c"
    assert zkpaths.owners_path("g") == "/consumers/g/owners"
    assert zkpaths.topic_owners_path("g", "t") == "/consumers/g/owners/t"
    assert zkpaths.owner_path("g", "t", 1) == "/consumers/g/owners/t/1"
    assert zkpaths.offsets_path("g") == "/consumers/g/offsets"
    assert zkpaths.topic_offsets_path("g", "t") == "/consumers/g/offsets/t"
    assert zkpaths.offset_path("g", "t", 1) == "/consumers/g/offsets/t/1"


@pytest.mark.parametrize(
    ("build", "needle"),
    [
        (lambda: zkpaths.topic_path("a/b"), "'a/b'"),
        (lambda: zkpaths.topic_path("has space"), "character other than"),
        (lambda: zkpaths.topic_path(""), "empty"),
        (lambda: zkpaths.topic_path(".."), "not allowed"),
        (lambda: zkpaths.topic_path("x" * 250), "250 characters"),
        (lambda: zkpaths.broker_path(-1), "broker id -1"),
        (lambda: zkpaths.broker_path(True), "must be an int"),  # bool is not an id
        (lambda: zkpaths.broker_path(2**31), "outside"),
        (lambda: zkpaths.partition_path("t", -2), "partition -2"),
        (lambda: zkpaths.offset_path("g/h", "t", 0), "group 'g/h' contains '/'"),
        (lambda: zkpaths.consumer_group_path(""), "group is empty"),
        (lambda: zkpaths.consumer_group_path("."), "relative"),
        (lambda: zkpaths.consumer_group_path("a\x00b"), "ZooKeeper refuses"),
        (lambda: zkpaths.consumer_group_path("emoji\U0001f600"), "ZooKeeper refuses"),
        (lambda: zkpaths.consumer_id_path("g", "x/y"), "consumer id 'x/y'"),
    ],
)
def test_builders_reject_bad_names(build, needle: str) -> None:
    with pytest.raises(ZkPathError) as info:
        build()
    assert needle in str(info.value)
    assert "invalid ZooKeeper path" in str(info.value)


@pytest.mark.parametrize(
    "path",
    [
        "",
        "brokers/ids/1",
        "/brokers/ids/",
        "/brokers/ids/01",
        "/brokers/ids/+1",
        "/brokers/ids/-1",
        "/brokers/ids/2147483648",
        "/brokers/ids/1/extra",
        "/brokers/topics/bad topic",
        "/brokers/topics/t/partitions/x",
        "/brokers/topics/t/partitions/1/other",
        "/brokers/topics/t/other",
        "/brokers/other/1",
        "/consumers/g/ids/a/b",
        "/consumers/g/other",
        "/consumers/g/owners/t/p",
        "/consumers/g/offsets/t/1/x",
        "/consumers//ids",
        "/admin/delete_topics",
        "/zookeeper",
    ],
)
def test_parse_rejects(path: str) -> None:
    with pytest.raises(ZkPathError) as info:
        parse_path(path)
    assert info.value.path == path
    assert repr(path) in str(info.value)


def test_parse_rejects_non_strings() -> None:
    with pytest.raises(ZkPathError):
        parse_path(b"/brokers")  # type: ignore[arg-type]


def test_topic_at_max_length_is_fine() -> None:
    topic = "t" * 249
    assert parse_path(zkpaths.topic_path(topic)) == TopicPath(topic)


def _each(group: str, keys: list[tuple[str, object]]) -> dict | str:
    """The reference: offset_path node by node (or the first error's text)."""
    try:
        return {k: zkpaths.offset_path(group, k[0], k[1]) for k in keys}  # type: ignore[arg-type]
    except ZkPathError as exc:
        return str(exc)


@given(
    st.one_of(node_names, st.sampled_from(["", ".", "..", "ok"])),
    st.lists(
        st.tuples(
            st.one_of(topics, st.sampled_from(["", "bad topic", "t"])),
            st.one_of(ids, st.integers(-5, -1), st.just(2**31), st.just(True)),
        ),
        max_size=30,
    ),
)
@settings(max_examples=300)
def test_offset_paths_are_offset_path_of_each_partition(group: str, keys) -> None:
    """The batch builder checks the group and each topic once; what it builds, and the
    error it raises for a bad name or partition, are offset_path's for each node."""
    try:
        got: dict | str = zkpaths.offset_paths(group, keys)
    except ZkPathError as exc:
        got = str(exc)
    assert got == _each(group, keys)
