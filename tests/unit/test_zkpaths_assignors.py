"""Legacy range/roundrobin and Kafka's range assignor.

The golden vectors were produced by the real code: kafka_2.11-0.10.2.2's RangeAssignor and
RoundRobinAssignor (driven through AssignmentContext over a fake ZkUtils, reading the
registrations this package encodes) and kafka-clients 3.9.1's RangeAssignor.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkpaths import (
    STATIC,
    WHITE_LIST,
    ConsumerRegistration,
    TopicPartition,
    assignment_by_consumer,
    assignment_by_owner,
    consumers_per_topic,
    kafka_range_assign,
    legacy_range_assign,
    legacy_roundrobin_assign,
    registration_thread_ids,
    roundrobin_order,
)


def _flat(assignment: dict[TopicPartition, str]) -> dict[str, str]:
    return {f"{tp.topic}/{tp.partition}": owner for tp, owner in assignment.items()}


def _parse_golden(text: str) -> dict[str, str]:
    return dict(item.split("=") for item in text.strip(";").split(";"))


def _group(
    topics: dict[str, int], registrations: dict[str, ConsumerRegistration]
) -> dict[str, list[str]]:
    thread_topics: dict[str, set[str]] = {}
    for consumer_id, reg in registrations.items():
        for topic, threads in registration_thread_ids(consumer_id, reg, list(topics)).items():
            for thread in threads:
                thread_topics.setdefault(thread, set()).add(topic)
    return consumers_per_topic(thread_topics)


GOLDEN = [
    (
        {"t0": 5, "orders1": 3},
        {
            "g_a-1-00000001": ConsumerRegistration({"t0": 2, "orders1": 1}),
            "g_b-1-00000002": ConsumerRegistration({"t0": 1}),
        },
        "orders1/0=g_a-1-00000001-0;orders1/1=g_a-1-00000001-0;orders1/2=g_a-1-00000001-0;"
        "t0/0=g_a-1-00000001-0;t0/1=g_a-1-00000001-0;t0/2=g_a-1-00000001-1;"
        "t0/3=g_a-1-00000001-1;t0/4=g_b-1-00000002-0",
        "orders1/0=g_a-1-00000001-0;orders1/1=g_a-1-00000001-0;orders1/2=g_a-1-00000001-0;"
        "t0/0=g_a-1-00000001-0;t0/1=g_a-1-00000001-1;t0/2=g_b-1-00000002-0;"
        "t0/3=g_a-1-00000001-0;t0/4=g_a-1-00000001-1",
    ),
    (
        {"t": 12},
        {"g_c": ConsumerRegistration({"t": 11}), "g_d": ConsumerRegistration({"t": 1})},
        "t/0=g_c-0;t/1=g_c-1;t/10=g_c-9;t/11=g_d-0;t/2=g_c-10;t/3=g_c-2;t/4=g_c-3;"
        "t/5=g_c-4;t/6=g_c-5;t/7=g_c-6;t/8=g_c-7;t/9=g_c-8",
        "t/0=g_c-10;t/1=g_c-2;t/10=g_c-0;t/11=g_c-1;t/2=g_c-3;t/3=g_c-4;t/4=g_c-5;"
        "t/5=g_c-6;t/6=g_c-7;t/7=g_c-8;t/8=g_c-9;t/9=g_d-0",
    ),
    (
        {"x": 3, "y": 3, "__consumer_offsets": 2},
        {
            "g_w": ConsumerRegistration({".*": 2}, WHITE_LIST),
            "g_s": ConsumerRegistration({"y": 1}, STATIC),
        },
        "x/0=g_w-0;x/1=g_w-0;x/2=g_w-1;y/0=g_s-0;y/1=g_w-0;y/2=g_w-1",
        "x/0=g_w-0;x/1=g_w-1;x/2=g_w-0;y/0=g_w-1;y/1=g_s-0;y/2=g_w-0",
    ),
]


@pytest.mark.parametrize(("topics", "registrations", "range_", "roundrobin"), GOLDEN)
def test_golden_vectors_from_0_10_2_2(topics, registrations, range_, roundrobin) -> None:
    group = _group(topics, registrations)
    assert _flat(legacy_range_assign(group, topics)) == _parse_golden(range_)
    assert _flat(legacy_roundrobin_assign(group, topics)) == _parse_golden(roundrobin)


def test_scaladoc_example() -> None:
    # PartitionAssignor.scala: C1, C2 with two streams each, five partitions
    group = {"t": ["C1-0", "C1-1", "C2-0", "C2-1"]}
    assert _flat(legacy_range_assign(group, {"t": 5})) == {
        "t/0": "C1-0",
        "t/1": "C1-0",
        "t/2": "C1-1",
        "t/3": "C2-0",
        "t/4": "C2-1",
    }


def test_threads_sort_as_strings() -> None:
    threads = [f"c-{n}" for n in range(11)]
    got = legacy_range_assign({"t": threads}, {"t": 11})
    assert got[TopicPartition("t", 1)] == "c-1"
    assert got[TopicPartition("t", 2)] == "c-10"  # "c-10" sorts before "c-2"
    assert got[TopicPartition("t", 3)] == "c-2"


def test_non_contiguous_partitions_and_missing_topics() -> None:
    got = legacy_range_assign({"t": ["a-0", "b-0"], "gone": ["a-0"]}, {"t": [7, 3, 5]})
    assert _flat(got) == {"t/3": "a-0", "t/5": "a-0", "t/7": "b-0"}


def test_more_threads_than_partitions() -> None:
    got = legacy_range_assign({"t": ["a-0", "a-1", "b-0"]}, {"t": 2})
    assert _flat(got) == {"t/0": "a-0", "t/1": "a-1"}


def test_roundrobin_skips_threads_not_subscribed() -> None:
    group = {"x": ["a-0", "b-0"], "y": ["b-0"]}
    got = legacy_roundrobin_assign(group, {"x": 4, "y": 2})
    assert {got[TopicPartition("y", 0)], got[TopicPartition("y", 1)]} == {"b-0"}
    assert sorted(Counter(got.values()).values()) == [2, 4]


def test_roundrobin_order_is_signed_java_hash_of_bracketed_name() -> None:
    assert str(TopicPartition("t", 3)) == "[t,3]"
    order = roundrobin_order([TopicPartition("t", p) for p in range(12)])
    assert [tp.partition for tp in order] == [10, 11, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]


def test_assignment_by_owner_and_consumer() -> None:
    got = legacy_range_assign({"t": ["g_a-0", "g_a-1", "g_b-0"]}, {"t": 4})
    by_owner = assignment_by_owner(got, owners=["g_c-0"])
    assert by_owner == {
        "g_c-0": [],
        "g_a-0": [TopicPartition("t", 0), TopicPartition("t", 1)],
        "g_a-1": [TopicPartition("t", 2)],
        "g_b-0": [TopicPartition("t", 3)],
    }
    by_consumer = assignment_by_consumer(got)
    assert set(by_consumer) == {"g_a", "g_b"}
    assert by_consumer["g_a"][TopicPartition("t", 2)] == "g_a-1"


def test_kafka_range_static_members_first() -> None:
    subs = {"m-b": ["t"], "m-a": ["t"], "m-z": ["t"]}
    plain = kafka_range_assign(subs, {"t": 3})
    assert [plain[TopicPartition("t", p)] for p in range(3)] == ["m-a", "m-b", "m-z"]
    static = kafka_range_assign(subs, {"t": 3}, group_instance_ids={"m-z": "i-1", "m-b": "i-0"})
    assert [static[TopicPartition("t", p)] for p in range(3)] == ["m-b", "m-z", "m-a"]


def test_kafka_range_vectors_from_clients_3_9_1() -> None:
    subs = {"c-7": ["t0", "t1"], "A-3": ["t1"], "c-10": ["t0", "missing"]}
    got = kafka_range_assign(subs, {"t0": 5, "t1": 3})
    assert _flat(got) == {
        "t0/0": "c-10",
        "t0/1": "c-10",
        "t0/2": "c-10",
        "t0/3": "c-7",
        "t0/4": "c-7",
        "t1/0": "A-3",
        "t1/1": "A-3",
        "t1/2": "c-7",
    }


# -- properties ----------------------------------------------------------------------------------

consumer_ids = st.sampled_from(["g_a", "g_b", "g_host-1", "g_c.d", "g_Z"])
topic_names = st.sampled_from(["t", "orders", "a.b", "X_y", "t-2"])


@st.composite
def groups(draw: st.DrawFn) -> tuple[dict[str, list[str]], dict[str, int]]:
    topics = draw(st.dictionaries(topic_names, st.integers(0, 20), min_size=1, max_size=4))
    registrations = draw(
        st.dictionaries(
            consumer_ids,
            st.dictionaries(st.sampled_from(sorted(topics)), st.integers(1, 12), min_size=1).map(
                ConsumerRegistration
            ),
            min_size=1,
            max_size=4,
        )
    )
    return _group(topics, registrations), topics


ASSIGNORS = [legacy_range_assign, legacy_roundrobin_assign]


@pytest.mark.parametrize("assign", ASSIGNORS)
@settings(max_examples=200)
@given(groups())
def test_every_partition_assigned_once_to_a_subscriber(assign, group) -> None:
    consumers, topics = group
    got = assign(consumers, topics)
    expected = {TopicPartition(t, p) for t in consumers for p in range(topics.get(t, 0))}
    assert set(got) == expected
    for tp, thread in got.items():
        assert thread in consumers[tp.topic]


@settings(max_examples=200)
@given(groups())
def test_range_sizes_differ_by_at_most_one(group) -> None:
    consumers, topics = group
    got = legacy_range_assign(consumers, topics)
    for topic, threads in consumers.items():
        counts = Counter(owner for tp, owner in got.items() if tp.topic == topic)
        sizes = [counts.get(thread, 0) for thread in threads]
        assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("assign", ASSIGNORS)
@settings(max_examples=200)
@given(groups(), st.randoms(use_true_random=False))
def test_input_order_does_not_matter(assign, group, rnd) -> None:
    consumers, topics = group
    shuffled_topics = list(consumers.items())
    rnd.shuffle(shuffled_topics)
    shuffled = {}
    for topic, threads in shuffled_topics:
        threads = list(threads)
        rnd.shuffle(threads)
        shuffled[topic] = threads
    assert assign(shuffled, topics) == assign(consumers, topics)


@settings(max_examples=300)
@given(groups())
def test_kafka_range_agrees_with_legacy_range_when_members_are_thread_ids(group) -> None:
    consumers, topics = group
    members: dict[str, list[str]] = {}
    for topic, threads in consumers.items():
        for thread in threads:
            members.setdefault(thread, []).append(topic)
    assert kafka_range_assign(members, topics) == legacy_range_assign(consumers, topics)
