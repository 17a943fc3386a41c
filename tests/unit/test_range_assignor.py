"""A mixed group's leader must assign by Kafka's range, or old consumers disagree with it.

kafka-python 3.0.12's own range assignor drops dynamic members when the JoinGroup
response lists a static member (a bridge proxy) between them; it was caught in the
migration test's rollback as a partition nobody owned. ``KafkaRangeAssignor`` is the
replacement the demo and test consumers use, and ``range_mismatch`` is how the bridge
tells an operator that some leader in the group assigns otherwise. Both are checked against
Kafka's own Java ``RangeAssignor`` on generated groups in
``tests/integration/test_range_assignor_java.py``; the cases here are worked by hand.
"""

from __future__ import annotations

from types import SimpleNamespace

from kafka.coordinator.assignors.range import RangePartitionAssignor

from bridge.decide.handover import (
    JoinedGeneration,
    KafkaMember,
    range_assignment,
    range_mismatch,
)
from bridge.kafka.range_assignor import KafkaRangeAssignor
from zkpaths import TopicPartition

T = "t"
PROXY = KafkaMember("g_vm-1795334211278-775179e0-0-5b1f", "g_vm-1795334211278-775179e0-0", (T,))
N1 = KafkaMember("kafka-python-3.0.12-0a7c", None, (T,))
N2 = KafkaMember("kafka-python-3.0.12-55bd", None, (T,))


class Cluster:
    def __init__(self, partitions: dict[str, int]) -> None:
        self.partitions = partitions

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        n = self.partitions.get(topic)
        return None if n is None else set(range(n))


def join_members(members: list[KafkaMember]) -> list[SimpleNamespace]:
    """Members as kafka-python hands them to an assignor (JoinGroup response order)."""
    return [
        SimpleNamespace(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            metadata=SimpleNamespace(topics=list(m.topics)),
        )
        for m in members
    ]


def assigned(assignor, members: list[KafkaMember], partitions: dict[str, int]) -> JoinedGeneration:
    """The generation a leader running ``assignor`` would hand out."""
    out = assignor.assign(Cluster(partitions), join_members(members))
    assignment = {
        TopicPartition(topic, p): member
        for member, a in out.items()
        for topic, ps in a.assigned_partitions
        for p in ps
    }
    return JoinedGeneration(1, tuple(members), assignment)


def test_kafka_python_range_loses_a_member_listed_before_a_proxy():
    """The failure seen in CI: proxy 0-2, one new member 3-5, the other nothing; old
    consumer C then owned 0-1 by range over /ids and partition 2 went unconsumed."""
    stock = assigned(RangePartitionAssignor, [N1, PROXY, N2], {T: 6})
    mismatch = range_mismatch(stock, {T: 6})
    assert TopicPartition(T, 2) in mismatch
    assert mismatch[TopicPartition(T, 2)] == (PROXY.member_id, N1.member_id)


def test_kafka_range_assignor_gives_the_legacy_order_in_that_case():
    gen = assigned(KafkaRangeAssignor, [N1, PROXY, N2], {T: 6})
    assert range_mismatch(gen, {T: 6}) == {}
    by_member = {
        m: sorted(tp.partition for tp, x in gen.assignment.items() if x == m)
        for m in (PROXY.member_id, N1.member_id, N2.member_id)
    }
    assert by_member == {PROXY.member_id: [0, 1], N1.member_id: [2, 3], N2.member_id: [4, 5]}


def test_a_member_given_nothing_is_named_with_what_range_gives_it():
    both_to_proxy = {TopicPartition(T, 0): PROXY.member_id, TopicPartition(T, 1): PROXY.member_id}
    gen = JoinedGeneration(1, (PROXY, N1), both_to_proxy)
    assert range_mismatch(gen, {T: 2}) == {TopicPartition(T, 1): (PROXY.member_id, N1.member_id)}


def test_partitions_added_since_the_leader_assigned_are_not_a_mismatch():
    """Kafka assigns a grown topic's new partitions at the leader's next metadata refresh."""
    gen = JoinedGeneration(1, (PROXY, N1), range_assignment((PROXY, N1), {T: 2}))
    assert range_mismatch(gen, {T: 6}) == {}
