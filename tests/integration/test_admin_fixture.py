"""The tests' own admin client follows a group's coordinator when it moves.

KRaft moves partition leaders back to their preferred replicas every five minutes
(``leader.imbalance.check.interval.seconds``); when that moves the ``__consumer_offsets``
partition of a group a test is waiting on, kafka-python's admin client (which caches every
group's coordinator for good) asked the old one until the test timed out - a clean-clone CI
failure of ``test_kafka_node``. Here the coordinator is moved on purpose, and the fixture's
next retry after NOT_COORDINATOR reads the group's offsets from the new one.
"""

from __future__ import annotations

import time

import pytest
from kafka import KafkaAdminClient
from kafka.errors import KafkaError, NoError
from kafka.structs import OffsetAndMetadata
from kafka.structs import TopicPartition as KTP

from bench import create_topic
from tests.conftest import wait_for
from zkpaths.javahash import coordinator_partition

pytestmark = pytest.mark.integration

OFFSETS = "__consumer_offsets"


def _leader(admin, topic: str, partition: int) -> tuple[int, list[int]]:
    (t,) = admin.describe_topics([topic])
    p = next(p for p in t["partitions"] if p["partition_index"] == partition)
    return p["leader_id"], p["replica_nodes"]


def _offsets(admin, group: str):
    try:
        return admin.list_group_offsets({group: None})[group]
    except KafkaError as exc:
        if exc.retriable:
            return None
        raise


def test_the_admin_fixture_follows_a_moved_coordinator(stack, admin, topic_name) -> None:
    topic = topic_name("t")
    create_topic(admin, topic, 1)
    group = topic_name("g")
    tp = KTP(topic, 0)
    wait_for(
        lambda: all(
            e is NoError
            for e in admin.alter_group_offsets(group, {tp: OffsetAndMetadata(7, "", -1)}).values()
        ),
        30,
        0.2,
        "committed",
    )
    assert {k.partition: v.offset for k, v in _offsets(admin, group).items()} == {0: 7}
    # a plain kafka-python admin that asked before the move keeps asking the old coordinator
    plain = KafkaAdminClient(bootstrap_servers=stack.bootstrap_servers.split(","))
    try:
        assert _offsets(plain, group) is not None
        _move_coordinator(admin, group)
        got = wait_for(lambda: _offsets(admin, group), 30, 0.2, "offsets from the new coordinator")
        assert {k.partition: v.offset for k, v in got.items()} == {0: 7}
        # the negative control. The old broker applies the move on its own time (it still
        # answered as the coordinator for a moment in a loaded CI run): once it has said
        # NOT_COORDINATOR, a client that does not follow moves never gets an answer again
        wait_for(lambda: _offsets(plain, group) is None, 30, 0.2, "the old coordinator resigning")
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            assert _offsets(plain, group) is None, "kafka-python followed the move by itself"
            time.sleep(0.3)
    finally:
        plain.close()


def _move_coordinator(admin, group: str) -> None:
    """The group's ``__consumer_offsets`` partition led by another broker: a follower made
    the preferred leader and elected (data kept), or, with one replica, moved."""
    (t,) = admin.describe_topics([OFFSETS])
    partition = coordinator_partition(group, len(t["partitions"]))
    old, replicas = _leader(admin, OFFSETS, partition)
    brokers = sorted(b["broker_id"] for b in admin.describe_cluster()["brokers"])
    if len(replicas) > 1:
        new = next(r for r in replicas if r != old)
        order = [new] + [r for r in replicas if r != new]
    else:
        new = next(b for b in brokers if b != old)
        order = [new]
    admin.alter_partition_reassignments({KTP(OFFSETS, partition): order})

    def elected() -> bool:  # the preferred leader is elected once the reassignment is in
        admin.elect_leaders(0, {OFFSETS: [partition]}, raise_errors=False)
        return _leader(admin, OFFSETS, partition)[0] == new

    wait_for(elected, 60, 0.5, f"leader {new}")
