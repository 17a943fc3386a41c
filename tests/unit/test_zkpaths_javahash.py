"""Java string hashing and ordering, the coordinator partition, JVM hash-map orders."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkpaths import coordinator_partition, java_sort_key, java_string_hashcode, kafka_abs
from zkpaths.jvmorder import (
    java_hashmap_order,
    scala_immutable_hashmap_order,
    scala_mutable_hashmap_order,
)


@pytest.mark.parametrize(
    ("text", "hashcode"),
    [
        ("", 0),
        ("foo", 101574),
        ("polygenelubricants", -(2**31)),
        ("Aa", 2112),
        ("BB", 2112),
        ("my-group", -1906497762),
        ("\U0001f600", 1772899),  # two surrogates: 0xD83D * 31 + 0xDE00
        ("caf\u00e9", 3045921),
    ],
)
def test_hashcode_vectors(text: str, hashcode: int) -> None:
    assert java_string_hashcode(text) == hashcode


def test_kafka_abs() -> None:
    assert kafka_abs(-(2**31)) == 0
    assert kafka_abs(-5) == 5
    assert kafka_abs(7) == 7


@pytest.mark.parametrize(
    ("group", "partitions", "expected"),
    [("my-group", 50, 12), ("foo", 50, 24), ("polygenelubricants", 50, 0), ("x", 1, 0)],
)
def test_coordinator_partition(group: str, partitions: int, expected: int) -> None:
    assert coordinator_partition(group, partitions) == expected


def test_coordinator_partition_is_not_a_mask() -> None:
    # a negative hash: Math.abs, not & 0x7fffffff, decides the partition
    h = java_string_hashcode("my-group")
    assert h < 0
    assert coordinator_partition("my-group") != (h & 0x7FFFFFFF) % 50


def test_coordinator_partition_rejects_bad_counts() -> None:
    with pytest.raises(ValueError):
        coordinator_partition("g", 0)
    with pytest.raises(TypeError):
        coordinator_partition("g", True)


@settings(max_examples=500)
@given(st.text(), st.integers(1, 1000))
def test_coordinator_partition_in_range(group: str, partitions: int) -> None:
    assert 0 <= coordinator_partition(group, partitions) < partitions


@settings(max_examples=300)
@given(st.text())
def test_hashcode_is_int32(text: str) -> None:
    assert -(2**31) <= java_string_hashcode(text) < 2**31


def test_java_order_differs_from_python_order_beyond_the_bmp() -> None:
    high_bmp, astral = "\uffff", "\U0001f600"
    assert high_bmp < astral  # Python compares code points
    assert java_sort_key(astral) < java_sort_key(high_bmp)  # Java compares UTF-16 units
    assert java_sort_key("c-10") < java_sort_key("c-2")
    assert java_sort_key("a") < java_sort_key("a!")


@settings(max_examples=300)
@given(st.lists(st.text(st.characters(max_codepoint=0xD7FF), max_size=6), max_size=8))
def test_java_order_equals_python_order_within_low_bmp(items: list[str]) -> None:
    assert sorted(items, key=java_sort_key) == sorted(items)


# Orders observed on OpenJDK 17 / scala-library 2.13.15 for these insertion orders.
def test_java_hashmap_order() -> None:
    assert java_hashmap_order(["x2", "roundrobin"]) == ["x2", "roundrobin"]  # same bucket
    assert java_hashmap_order(["roundrobin", "x2"]) == ["roundrobin", "x2"]
    assert java_hashmap_order(["range", "roundrobin"]) == ["range", "roundrobin"]
    assert java_hashmap_order(["roundrobin", "range"]) == ["range", "roundrobin"]


def test_scala_orders_are_insertion_independent_without_collisions() -> None:
    keys = [f"p{i}" for i in range(40)]
    assert scala_immutable_hashmap_order(keys) == scala_immutable_hashmap_order(keys[::-1])
    assert scala_mutable_hashmap_order(keys) == scala_mutable_hashmap_order(keys[::-1])
    # "Aa" and "BB" collide fully: insertion order decides
    assert scala_immutable_hashmap_order(["Aa", "BB"]) == ["Aa", "BB"]
    assert scala_immutable_hashmap_order(["BB", "Aa"]) == ["BB", "Aa"]


def test_scala_immutable_order_of_partition_state_keys() -> None:
    # Kafka's partition-state JSON key order is this map's order
    keys = ["version", "leader", "leader_epoch", "controller_epoch", "isr"]
    assert scala_immutable_hashmap_order(keys) == [
        "controller_epoch",
        "leader",
        "version",
        "leader_epoch",
        "isr",
    ]


@settings(max_examples=200)
@given(st.lists(st.text(max_size=6), max_size=30))
def test_orders_are_permutations(keys: list[str]) -> None:
    unique = list(dict.fromkeys(keys))
    for order in (java_hashmap_order, scala_immutable_hashmap_order, scala_mutable_hashmap_order):
        assert sorted(order(keys)) == sorted(unique)
