"""The bridge's copies of ZooKeeper offsets into Kafka never land behind a newer commit.

Kafka keeps a group's *last* commit of a partition, not its highest. The bridge copies
ZooKeeper offsets into Kafka from several places: the groups flow's copier (its own thread,
each copy decided from a tick's picture and waiting for the transaction before it), a
hand-over's final offsets and a commit as an old thread's proxy (the tick's thread). A copy
that waited while a newer offset went in moved Kafka back: CI saw a mixed next-generation
group's partition go 417 -> 405 in Kafka, and its next owner consume 405-416 a second time.

Here, on the real Kafka, with a real group member committing the newer offset:
* the negative control: a copy committed as it was decided moves Kafka back;
* the copier: a copy decided before a member's commit, and held behind the committer's
  lock (the transaction before it) while the member commits, is dropped;
* a commit as a proxy (``commit_ahead_as``) held the same way is dropped too, and one
  still ahead goes in.
"""

from __future__ import annotations

import threading

import pytest
from kafka import KafkaConsumer
from kafka.errors import CommitFailedError, RebalanceInProgressError
from kafka.structs import OffsetAndMetadata
from kafka.structs import TopicPartition as KafkaTP

from bench import create_topic
from bridge.devstack.lost_join import rejoin_if_join_lost
from bridge.flows.coexist_next_gen import commit_ahead_as
from bridge.flows.to_kafka import CopiesToKafka
from bridge.kafka.commit import OffsetCommitter
from tests.conftest import wait_for
from zkpaths import TopicPartition

pytestmark = pytest.mark.integration

OLD, NEW = 405, 417


class Member:
    """A real member of ``group`` (kafka-python, subscribed, joined) that commits as itself:
    the newer commit a copy must not land over. Also stands in for a proxy's ``commit``."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap.split(","),
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        # the topic in the member's metadata before it joins: kafka-python joined with a
        # topic it did not know yet gets no partition, and did not rejoin within 60 s
        wait_for(lambda: self.consumer.partitions_for_topic(topic), 60, what="the topic known")
        self.consumer.subscribe([topic])
        wait_for(
            lambda: (
                self.consumer.poll(200) is not None
                and not rejoin_if_join_lost(self.consumer)
                and self.consumer.assignment()
            ),
            60,
            what="the member joined",
        )
        self.commits: list[dict[TopicPartition, int]] = []
        self.closed = False

    def commit(self, offsets: dict[TopicPartition, int]) -> str | None:
        """Commit as the member; a commit refused while its group rebalances, or after the
        member was dropped from it (kafka-python rejoined, e.g. on a metadata refresh, or
        its heartbeats starved under load), is retried after a poll that rejoins, as an
        application does."""
        self.commits.append(dict(offsets))
        want = {
            KafkaTP(tp.topic, tp.partition): OffsetAndMetadata(o, "", -1)
            for tp, o in offsets.items()
        }

        def committed() -> bool:
            try:
                self.consumer.commit(want)
                return True
            except (RebalanceInProgressError, CommitFailedError):
                # a whole second: kafka-python 3.0 drops a join that completes between
                # two polls, and short polls kept it rejoining (bridge.kafka.shares)
                self.consumer.poll(1000)
                # and kafka-python 3.0.12 can drop a finished join round for good: the
                # member then never joins again (bridge.devstack.lost_join)
                rejoin_if_join_lost(self.consumer)
                return False

        wait_for(committed, 60, 0, "the member's commit")
        return None

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.consumer.close(autocommit=False)


@pytest.fixture
def scene(stack, admin, topic_name, chroot):
    topic = topic_name("t")
    group = topic_name("g")
    create_topic(admin, topic, 1)
    committer = OffsetCommitter(
        admin, {"bootstrap_servers": stack.bootstrap_servers}, f"test-in-order:{chroot}"
    )
    member = Member(stack.bootstrap_servers, group, topic)
    try:
        yield committer, member, group, TopicPartition(topic, 0)
    finally:
        member.close()
        committer.close()
        admin.delete_topics([topic])


def kafka_offset(admin, group: str, tp: TopicPartition) -> int:
    got = admin.list_group_offsets({group: None}).get(group, {})
    om = got.get(KafkaTP(tp.topic, tp.partition))
    return -1 if om is None else om.offset


def test_negative_control_a_copy_committed_as_decided_moves_kafka_back(scene, admin) -> None:
    """Not vacuous: Kafka takes the older copy over the member's newer commit."""
    committer, member, group, tp = scene
    member.commit({tp: NEW})
    committer.commit_groups({group: {tp: OLD}}, "test")
    # the commit's wait saw Kafka "at least" at 405 at once; the transaction's marker
    # makes 405 the group's offset a moment later (the later record in the log wins)
    wait_for(lambda: kafka_offset(admin, group, tp) == OLD, 30, what="the older copy landed")


def test_a_copy_held_behind_the_transaction_before_it_is_dropped_when_overtaken(
    scene, admin
) -> None:
    committer, member, group, tp = scene
    reported: list = []
    copier = CopiesToKafka(admin, committer, lambda *a: reported.append(a))
    try:
        with committer.lock:  # the transaction before it, in flight
            copier.submit({group: {tp: OLD}})  # decided while Kafka was behind 405
            member.commit({tp: NEW})  # meanwhile the member commits on, then leaves
            member.close()  # (a member's own partition is never copied: flows.to_kafka)
        assert copier.wait_idle(30)
        assert kafka_offset(admin, group, tp) == NEW
        assert not reported
        # and a copy still ahead goes in, through the same path
        copier.submit({group: {tp: NEW + 5}})
        assert copier.wait_idle(30)
        assert kafka_offset(admin, group, tp) == NEW + 5
    finally:
        copier.close()


def test_a_commit_as_a_proxy_held_behind_a_copy_is_dropped_when_overtaken(scene, admin) -> None:
    committer, member, group, tp = scene
    result: list = []
    with committer.lock:  # the copier's transaction, in flight
        t = threading.Thread(
            target=lambda: result.append(commit_ahead_as(committer, group, member, {tp: OLD}))
        )
        t.start()
        t.join(0.5)
        assert t.is_alive(), "commit_ahead_as must wait for the committer's lock"
        committer.commit_groups({group: {tp: NEW}}, "test")  # the copy lands first
    t.join(30)
    assert result == [(0, None)]
    assert kafka_offset(admin, group, tp) == NEW
    assert member.commits == []
    assert commit_ahead_as(committer, group, member, {tp: NEW + 1}) == (1, None)
    assert kafka_offset(admin, group, tp) == NEW + 1
