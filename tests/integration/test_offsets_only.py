"""A group whose records were only offset commits is read with OffsetFetch alone (issue 14).

At thousands of commits a second most groups a tick reads again changed one thing: an
offset. The groups flow reads those (kafka storage mode, no old consumers) with one
OffsetFetch and keeps their last description; a record of any other kind (a member joined,
a generation) has the group described again. Against a real broker and real kafka-python
members, one flow ticked by hand:

* commits of a live, Stable group are mirrored without one more DescribeGroups of it, and
  its owner nodes stay the member's;
* a second member joining (a GroupMetadata record) has it described again: the owner nodes
  then show both members - the control that the shortcut does not hide a change of members.
"""

from __future__ import annotations

import pytest
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTP
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata
from kazoo.client import KazooClient

import zkpaths
from bench import create_topic
from bridge.flows import kafka_groups
from bridge.flows.groups import GroupMirrorFlow
from bridge.kafka.groups import GroupFilter
from bridge.kafka.offsets_log import OffsetsLogFollower
from bridge.zookeeper.fence import claim_epoch
from bridge.zookeeper.writer import FencedWriter, Ledger
from tests.conftest import wait_for

pytestmark = pytest.mark.integration

ROOT = "/kzb"
PARTITIONS = 4


def _owners(zk: KazooClient, group: str, topic: str) -> dict[int, str]:
    out = {}
    for p in range(PARTITIONS):
        path = zkpaths.owner_path(group, topic, p)
        if zk.exists(path):
            out[p] = zk.get(path)[0].decode()
    return out


def _offset(zk: KazooClient, group: str, topic: str, p: int) -> int | None:
    path = zkpaths.offset_path(group, topic, p)
    return int(zk.get(path)[0]) if zk.exists(path) else None


def _member(stack, group: str, topic: str) -> KafkaConsumer:
    """A member subscribed once the topic is in its metadata (kafka-python joined with an
    unknown topic gets no partition and does not rejoin soon)."""
    member = KafkaConsumer(
        bootstrap_servers=stack.bootstrap_servers, group_id=group, enable_auto_commit=False
    )
    wait_for(lambda: member.partitions_for_topic(topic), 60, what="the topic known")
    member.subscribe([topic])
    return member


def _commit(member: KafkaConsumer, topic: str, offset: int) -> None:
    """``offset`` committed on every partition, again while a broker does not know the
    topic just created yet."""
    offsets = {KafkaTP(topic, p): OffsetAndMetadata(offset, "", -1) for p in range(PARTITIONS)}

    def committed() -> bool:
        try:
            member.commit(offsets)
        except KafkaError:
            member.poll(timeout_ms=100)
            return False
        return True

    wait_for(committed, 30, 0.2, f"offset {offset} committed")


def _poll_until(consumers: list[KafkaConsumer], done, what: str, flow=None) -> None:
    def step() -> bool:
        for c in consumers:
            c.poll(timeout_ms=100)
        if flow is not None:
            flow.tick()
        return done()

    wait_for(step, 60, 0.05, what)


def test_commits_alone_skip_the_describe_and_a_new_member_does_not(stack, zk, admin, topic_name):
    topic, group = topic_name("t"), topic_name("g")
    create_topic(admin, topic, PARTITIONS)
    first = _member(stack, group, topic)
    second = None
    follower = OffsetsLogFollower(stack.bootstrap_servers, start="end")
    writer = FencedWriter(zk, claim_epoch(zk, f"{ROOT}/epoch", "t"), Ledger(ROOT))
    flow = GroupMirrorFlow(
        zk, admin, writer, GroupFilter([group]), root=ROOT, follower=follower, committer=None
    )
    described: list[str] = []
    real = kafka_groups.read_groups

    def counting(admin_, groups, types=None):  # a spy: the real read, counted
        described.extend(groups)
        return real(admin_, groups, types)

    kafka_groups.read_groups = counting
    try:
        _poll_until([first], lambda: len(first.assignment()) == PARTITIONS, "first assigned")
        _commit(first, topic, 0)
        flow.resync()
        _poll_until(
            [first],
            lambda: len(_owners(zk, group, topic)) == PARTITIONS,
            "the owners mirrored",
            flow,
        )
        owners = _owners(zk, group, topic)
        assert len(set(owners.values())) == 1  # one member owns all
        for p in range(PARTITIONS):  # settle: every offset node there
            _poll_until([first], lambda p=p: _offset(zk, group, topic, p) is not None, "o", flow)

        described.clear()
        for n in (7, 11, 13):
            _commit(first, topic, n)
            _poll_until(
                [first],
                lambda n=n: all(_offset(zk, group, topic, p) == n for p in range(PARTITIONS)),
                f"offset {n} mirrored",
                flow,
            )
        assert group not in described  # three commits, no DescribeGroups of the group
        assert _owners(zk, group, topic) == owners

        second = _member(stack, group, topic)
        _poll_until(
            [first, second],
            lambda: len(set(_owners(zk, group, topic).values())) == 2,
            "both members mirrored as owners",
            flow,
        )
        assert group in described  # the new generation's record had it described
    finally:
        kafka_groups.read_groups = real
        for c in (first, second):
            if c is not None:
                c.close()
        follower.close()
