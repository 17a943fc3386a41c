"""``KafkaRangeAssignor`` and ``zkpaths.kafka_range_assign`` against Kafka's own Java
``RangeAssignor`` (kafka-clients 3.9, run in one JVM per session) on generated groups.

The member order is the broker's JoinGroup order and varies: kafka-python's range assignor
goes wrong only for some orders (static members listed between dynamic ones), which is why
``KafkaRangeAssignor`` exists. Member and instance ids mix characters whose UTF-16 order
differs from their code point order, as Java sorts them by ``String.compareTo``.
Needs the jars and javac (``scripts/setup.sh``), not the servers.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.range import RangePartitionAssignor

import zkpaths
from bridge.decide.handover import JoinedGeneration, KafkaMember, range_mismatch
from bridge.kafka.range_assignor import KafkaRangeAssignor
from tests.integration.jvm_reference import JavaRange
from tests.unit.test_range_assignor import N1, N2, PROXY, T, assigned

pytestmark = pytest.mark.integration

TOPICS = ["t", "u", "v"]
# "\ufffd" sorts after a surrogate pair in Java and before it in Python
ID_CHARS = "ab-0\u00e9\ufffd\U0001f600"

members_st = st.lists(
    st.builds(
        KafkaMember,
        member_id=st.text(ID_CHARS, min_size=1, max_size=6),
        group_instance_id=st.one_of(st.none(), st.text(ID_CHARS, min_size=1, max_size=4)),
        topics=st.lists(st.sampled_from(TOPICS), max_size=3, unique=True).map(tuple),
    ),
    min_size=1,
    max_size=8,
    unique_by=(lambda m: m.member_id),
).filter(
    lambda ms: (
        len({m.group_instance_id for m in ms if m.group_instance_id})
        == sum(1 for m in ms if m.group_instance_id)
    )
)
partitions_st = st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 9), min_size=1)
PROPERTY = settings(max_examples=300, deadline=None)


@pytest.fixture(scope="module")
def java() -> JavaRange:
    ref = JavaRange()
    yield ref
    ref.close()


def kafkas(java: JavaRange, order: list[KafkaMember], partitions: dict[str, int]):
    return java.assign([(m.member_id, m.group_instance_id, m.topics) for m in order], partitions)


@PROPERTY
@given(members=members_st, partitions=partitions_st, data=st.data())
def test_kafka_range_assignor_is_javas_range_assignor(java, members, partitions, data):
    order = data.draw(st.permutations(members), label="broker order")
    expected = kafkas(java, order, partitions)
    assert assigned(KafkaRangeAssignor, order, partitions).assignment == expected


@PROPERTY
@given(members=members_st, partitions=partitions_st, data=st.data())
def test_zkpaths_kafka_range_assign_is_javas_range_assignor(java, members, partitions, data):
    order = data.draw(st.permutations(members), label="broker order")
    expected = kafkas(java, order, partitions)
    subs = {m.member_id: m.topics for m in order}
    instances = {m.member_id: m.group_instance_id for m in order}
    assert zkpaths.kafka_range_assign(subs, partitions, instances) == expected
    # and a leader running the Java client is never reported as assigning otherwise
    assert range_mismatch(JoinedGeneration(1, tuple(order), expected), partitions) == {}


def test_negative_control_kafka_pythons_range_assignor_is_not_javas(java):
    """The comparison can fail: kafka-python 3.0.12's own assignor, given a proxy listed
    between two dynamic members, gives the first one nothing; Java gives it 2-3."""
    order = [N1, PROXY, N2]
    expected = kafkas(java, order, {T: 6})
    stock = assigned(RangePartitionAssignor, order, {T: 6}).assignment
    assert stock != expected
    assert N1.member_id not in stock.values()
    assert sorted(tp.partition for tp, m in expected.items() if m == N1.member_id) == [2, 3]
