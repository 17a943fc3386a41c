"""Partition assignment as the old Scala consumer computes it, and Kafka's ``range`` assignor.

Legacy (``kafka.consumer.PartitionAssignor``, 0.10.2.2), given every thread's subscription
(from ``/consumers/<g>/ids``) and every topic's partitions (keys of ``/brokers/topics/<t>``):

* range: per topic, partitions in numeric order, the topic's threads in *string* order
  (``"c-10"`` before ``"c-2"``); thread at position ``pos`` of ``k`` takes
  ``n // k + (1 if pos < n % k else 0)`` partitions starting at
  ``(n // k) * pos + min(pos, n % k)``.
* roundrobin: all thread ids of the group in string order, cycled; partitions of the
  subscribed topics sorted by the signed Java ``hashCode`` of ``"[topic,partition]"``
  (``TopicAndPartition.toString``); each partition goes to the next thread in the cycle that
  subscribes to its topic, threads that do not being skipped (0.10.2 behaviour).

Kafka's ``RangeAssignor`` (kafka-clients 3.9, without rack awareness) sorts a topic's
members by ``group.instance.id`` (static members first) and then member id, and hands out
the same ranges. When the bridge names proxy members after legacy thread ids, the two
computations agree partition for partition; the tests prove it.

"String order" is Java's ``String.compareTo`` (UTF-16 code units), see :mod:`javahash`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from zkpaths.ids import parse_thread_id
from zkpaths.javahash import java_sort_key, java_string_hashcode


class TopicPartition(NamedTuple):
    """The one partition key of the code base (offsets, owners, assignments, log ends).

    Kafka-python's ``TopicPartition`` has the same fields, and a tuple of the same values
    is equal and hashes the same, but importing it loads kafka-python's clients: this package
    stays free of I/O imports, so the key is ours and the Kafka edge converts at its calls."""

    topic: str
    partition: int

    def __str__(self) -> str:
        """``TopicAndPartition.toString`` of the old consumer: ``[topic,partition]``."""
        return f"[{self.topic},{self.partition}]"


class GroupPartition(NamedTuple):
    """A partition's key in a group: the operator commands handle several groups at once."""

    group: str
    topic: str
    partition: int

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


Assignment = dict[TopicPartition, str]
Partitions = int | Iterable[int]


def consumers_per_topic(thread_topics: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """Invert thread id -> subscribed topics into topic -> thread ids in string order.

    This is ``ZkUtils.getConsumersPerTopic``, the input both legacy assignors use.
    """
    per_topic: dict[str, set[str]] = {}
    for thread, topics in thread_topics.items():
        for topic in topics:
            per_topic.setdefault(topic, set()).add(thread)
    return {topic: _string_order(threads) for topic, threads in per_topic.items()}


def _string_order(names: Iterable[str]) -> list[str]:
    return sorted(set(names), key=java_sort_key)


def _partition_list(partitions: Partitions) -> list[int]:
    """A partition count means partitions 0..n-1; otherwise the given ids, numerically."""
    if isinstance(partitions, int) and not isinstance(partitions, bool):
        if partitions < 0:
            raise ValueError(f"partition count must not be negative, got {partitions}")
        return list(range(partitions))
    result = sorted(set(partitions))
    if any(isinstance(p, bool) or not isinstance(p, int) or p < 0 for p in result):
        raise ValueError(f"partitions must be non-negative ints, got {result!r}")
    return result


def legacy_range_assign(
    consumers_for_topic: Mapping[str, Iterable[str]],
    partitions_for_topic: Mapping[str, Partitions],
) -> Assignment:
    """The old consumer's range assignment: partition -> owning thread id.

    ``consumers_for_topic`` maps a topic to the thread ids subscribed to it (any order);
    ``partitions_for_topic`` a topic to its partition count or partition ids. A topic
    missing from the latter has no partitions, as a missing ``/brokers/topics/<t>`` does.
    """
    assignment: Assignment = {}
    for topic in sorted(consumers_for_topic, key=java_sort_key):
        threads = _string_order(consumers_for_topic[topic])
        partitions = _partition_list(partitions_for_topic.get(topic, 0))
        if not threads:
            continue
        per_thread, extra = divmod(len(partitions), len(threads))
        for pos, thread in enumerate(threads):
            start = per_thread * pos + min(pos, extra)
            count = per_thread + (1 if pos < extra else 0)
            for partition in partitions[start : start + count]:
                assignment[TopicPartition(topic, partition)] = thread
    return assignment


def roundrobin_order(partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
    """The order roundrobin deals partitions in: signed ``hashCode`` of ``"[topic,partition]"``.

    Scala's sort is stable, so equal hashes keep their input order: ascending partition
    within a topic. Between topics that input order is a Scala hash map's, which cannot be
    reproduced from outside; ties across topics (a full 32-bit hash collision, rare) are
    broken by topic name in string order instead.
    """
    base = sorted(partitions, key=lambda tp: (java_sort_key(tp.topic), tp.partition))
    return sorted(base, key=lambda tp: java_string_hashcode(str(tp)))


def legacy_roundrobin_assign(
    consumers_for_topic: Mapping[str, Iterable[str]],
    partitions_for_topic: Mapping[str, Partitions],
) -> Assignment:
    """The old consumer's roundrobin assignment (0.10.2.2): partition -> owning thread id.

    Arguments as for :func:`legacy_range_assign`. Only topics with at least one subscribed
    thread are dealt out, as only those are read from ZooKeeper.
    """
    subscribed = {t: set(threads) for t, threads in consumers_for_topic.items() if threads}
    all_threads = _string_order(th for threads in subscribed.values() for th in threads)
    dealt = roundrobin_order(
        TopicPartition(topic, p)
        for topic in subscribed
        for p in _partition_list(partitions_for_topic.get(topic, 0))
    )
    assignment: Assignment = {}
    cursor = 0
    for tp in dealt:
        wanted = subscribed[tp.topic]
        while all_threads[cursor % len(all_threads)] not in wanted:
            cursor += 1
        assignment[tp] = all_threads[cursor % len(all_threads)]
        cursor += 1
    return assignment


def kafka_range_assign(
    member_subscriptions: Mapping[str, Iterable[str]],
    partitions_per_topic: Mapping[str, int],
    group_instance_ids: Mapping[str, str | None] | None = None,
) -> Assignment:
    """Kafka's ``range`` assignor (clients 3.9, no rack awareness): partition -> member id.

    Per topic, the subscribed members are ordered static-first by ``group.instance.id``,
    then by member id (``MemberInfo.compareTo``); members are then served in that order, each
    taking up to ``n // k`` partitions plus one while members owed an extra one remain.
    """
    instance_ids = group_instance_ids or {}

    def member_key(member: str) -> tuple[int, bytes, bytes]:
        instance = instance_ids.get(member)
        if instance is not None:
            return (0, java_sort_key(instance), java_sort_key(member))
        return (1, java_sort_key(member), b"")

    members_per_topic: dict[str, set[str]] = {}
    for member, topics in member_subscriptions.items():
        for topic in topics:
            members_per_topic.setdefault(topic, set()).add(member)

    assignment: Assignment = {}
    for topic in sorted(partitions_per_topic, key=java_sort_key):
        members = sorted(members_per_topic.get(topic, ()), key=member_key)
        unassigned = _partition_list(partitions_per_topic[topic])
        if not members or not unassigned:
            continue
        per_member, owed_extra = divmod(len(unassigned), len(members))
        for member in members:
            if not unassigned:
                break
            take = per_member + (1 if owed_extra > 0 else 0)
            if take > per_member:
                owed_extra -= 1
            for partition in unassigned[:take]:
                assignment[TopicPartition(topic, partition)] = member
            del unassigned[:take]
    return assignment


def assignment_by_owner(
    assignment: Mapping[TopicPartition, str], owners: Iterable[str] = ()
) -> dict[str, list[TopicPartition]]:
    """Owner (thread or member) -> its partitions, sorted; ``owners`` get an entry even if empty."""
    result: dict[str, list[TopicPartition]] = {owner: [] for owner in owners}
    for tp, owner in assignment.items():
        result.setdefault(owner, []).append(tp)
    for partitions in result.values():
        partitions.sort(key=lambda tp: (java_sort_key(tp.topic), tp.partition))
    return result


def assignment_by_consumer(
    assignment: Mapping[TopicPartition, str],
) -> dict[str, dict[TopicPartition, str]]:
    """Consumer id -> {partition: thread id}: what each old consumer claims in ``/owners``."""
    result: dict[str, dict[TopicPartition, str]] = {}
    for tp, thread in assignment.items():
        result.setdefault(parse_thread_id(thread).consumer_id, {})[tp] = thread
    return result
