"""``legacy_range_assign`` / ``legacy_roundrobin_assign`` against the old Scala consumer's own
assignors (kafka_2.11-0.10.2.2, one JVM per session over an embedded ZooKeeper).

The registrations are written with our ``encode_consumer_registration`` and read by Kafka's
``TopicCount``; every consumer then assigns in its own ``AssignmentContext``, as old
consumers do in a rebalance, and what each claims for itself must be what our functions
give over ``registration_thread_ids``. Needs the jars and javac (``scripts/setup.sh``).
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.integration.jvm_reference import LegacyAssignors
from zkpaths import (
    BLACK_LIST,
    STATIC,
    WHITE_LIST,
    ConsumerRegistration,
    consumers_per_topic,
    encode_consumer_registration,
    java_string_hashcode,
    legacy_range_assign,
    legacy_roundrobin_assign,
    registration_thread_ids,
)

pytestmark = pytest.mark.integration

#: "v" is subscribed to but never created; __consumer_offsets is internal (excluded)
TOPICS = ["t", "u", "orders1", "__consumer_offsets"]
# ZooKeeper refuses surrogates in node names, so consumer ids stay in the BMP
ID_CHARS = "ab-_0Z9\u00e9\uf900"

statics = st.dictionaries(st.sampled_from([*TOPICS, "v"]), st.integers(1, 3), min_size=1)
wildcards = st.tuples(
    st.sampled_from([WHITE_LIST, BLACK_LIST]),
    st.sampled_from([".*", "t|u", "t,u", "o.*", "[tu]", "u", "__.*"]),
    st.integers(1, 3),
).map(lambda w: ConsumerRegistration({w[1]: w[2]}, w[0]))
registrations_st = st.dictionaries(
    st.text(ID_CHARS, min_size=1, max_size=6),
    st.one_of(statics.map(lambda s: ConsumerRegistration(s, STATIC)), wildcards),
    min_size=1,
    max_size=5,
)
partitions_st = st.dictionaries(st.sampled_from(TOPICS), st.integers(1, 9), min_size=1)
PROPERTY = settings(max_examples=150, deadline=None)


@pytest.fixture(scope="module")
def legacy() -> LegacyAssignors:
    ref = LegacyAssignors()
    yield ref
    ref.close()


def consumers_for_topic(registrations, partitions) -> dict[str, list[str]]:
    thread_topics: dict[str, set[str]] = {}
    for consumer, reg in registrations.items():
        for topic, threads in registration_thread_ids(consumer, reg, list(partitions)).items():
            for thread in threads:
                thread_topics.setdefault(thread, set()).add(topic)
    return consumers_per_topic(thread_topics)


def written(registrations) -> dict[str, bytes]:
    return {c: encode_consumer_registration(reg) for c, reg in registrations.items()}


@PROPERTY
@given(registrations=registrations_st, partitions=partitions_st)
def test_legacy_range_is_the_0_10_2_2_range_assignor(legacy, registrations, partitions):
    expected = legacy.assign("range", written(registrations), partitions)
    group = consumers_for_topic(registrations, partitions)
    assert legacy_range_assign(group, partitions) == expected


@PROPERTY
@given(registrations=registrations_st, partitions=partitions_st)
def test_legacy_roundrobin_is_the_0_10_2_2_roundrobin_assignor(legacy, registrations, partitions):
    # partitions of two topics with one hashCode are dealt in a Scala hash map's order,
    # which zkpaths does not model (see roundrobin_order)
    hashes = {java_string_hashcode(f"[{t},{p}]") for t, n in partitions.items() for p in range(n)}
    assume(len(hashes) == sum(partitions.values()))
    expected = legacy.assign("roundrobin", written(registrations), partitions)
    group = consumers_for_topic(registrations, partitions)
    assert legacy_roundrobin_assign(group, partitions) == expected
