"""Commit records taken as a group's offsets, without asking Kafka (``flows.read_marks``).

A kafka-mode group without old consumers, read once, has its later commits mirrored from
their records alone: no OffsetFetch or DescribeGroups of it. A record older than the
group's last read, which the follower reads after that read (the follower a little
behind), is never taken: the group is read again, so what the bridge holds as Kafka's
offset does not go back.

The follower here follows a copy of ``__consumer_offsets`` that the test writes (as in
``test_offsets_trigger``'s read-behind test), so that a record can be placed exactly
before or after a read of the real group; Kafka serves the real commits.
"""

from __future__ import annotations

import pytest
from kafka import KafkaConsumer

from bench import create_topic
from bridge.flows import kafka_groups
from tests.conftest import wait_for
from tests.integration.test_offsets_trigger import (
    _ahead_world,
    _commit,
    _record_says,
    _tick_until,
    _zk_offset,
)
from zkpaths import TopicPartition

pytestmark = pytest.mark.integration


@pytest.fixture
def asked(monkeypatch) -> list[str]:
    """The groups the groups flow asks Kafka about (DescribeGroups, OffsetFetch): a spy
    around the real reads."""
    names: list[str] = []
    real_groups, real_offsets = kafka_groups.read_groups, kafka_groups.read_offsets

    def read_groups(admin, groups, types=None):
        names.extend(groups)
        return real_groups(admin, groups, types)

    def read_offsets(admin, groups):
        names.extend(groups)
        return real_offsets(admin, groups)

    monkeypatch.setattr(kafka_groups, "read_groups", read_groups)
    monkeypatch.setattr(kafka_groups, "read_offsets", read_offsets)
    return names


@pytest.mark.parametrize("new", [False, True], ids=["in-the-pass", "new-since"])
@pytest.mark.parametrize("taken", [True, False], ids=["taken", "negative-control"])
def test_a_commit_is_mirrored_from_its_record_alone(
    stack, zk, admin, topic_name, asked, taken, new
):
    """A group read by the pass, or new since (read when the listing between passes
    shows it, before its storage mode is known), has its next commits taken. Negative
    control: with records never taken, each commit has the group read."""
    topic, group = topic_name("t"), topic_name("g")
    create_topic(admin, topic, 1)
    consumer = KafkaConsumer(bootstrap_servers=stack.bootstrap_servers, group_id=group)
    flow, copy = _ahead_world(stack, zk, admin, topic_name, group, topic)
    if not taken:
        flow.follower.direct = None
    try:
        if new:  # the pass over before the group exists
            wait_for(lambda: flow.tick() >= 0 and flow.kafka._pass is None, 30, 0.05, "pass")
        _commit(consumer, topic, 5)
        _tick_until(flow, zk, group, topic, 5)  # read, and marked
        flow.tick()
        asked.clear()
        for offset in (9, 11):
            _commit(consumer, topic, offset)
            _record_says(stack, copy, group, topic, offset)
            _tick_until(flow, zk, group, topic, offset)
        assert (group in asked) is not taken
    finally:
        consumer.close()
        flow.follower.close()


@pytest.mark.parametrize("marked", [True, False], ids=["marked", "negative-control"])
def test_a_record_older_than_the_read_is_not_taken(
    stack, zk, admin, topic_name, monkeypatch, marked
):
    """Kafka serves 12; a record saying 7 (an older commit) is in the log before the
    group's read, but the follower reads it only after: the group is read again, and what
    the bridge holds as Kafka's offset stays 12. Negative control: with every record
    taken, it goes back to 7 (the node itself stays 12: a kafka-mode node only moves
    forward, I2; but the storage modes, the gates and the copies weigh that view)."""
    topic, group = topic_name("t"), topic_name("g")
    create_topic(admin, topic, 1)
    consumer = KafkaConsumer(bootstrap_servers=stack.bootstrap_servers, group_id=group)
    flow, copy = _ahead_world(stack, zk, admin, topic_name, group, topic)
    follower = flow.follower
    if not marked:
        monkeypatch.setattr(flow.kafka.marks, "past", lambda g, at: True)
    try:
        _commit(consumer, topic, 5)
        _tick_until(flow, zk, group, topic, 5)
        _commit(consumer, topic, 12)
        _record_says(stack, copy, group, topic, 7)  # in the log now, not read yet
        older = follower.positions()[0]
        # a tick that reads the group (Kafka: 12) while the follower reads nothing
        monkeypatch.setattr(follower, "changed_groups", lambda timeout_ms=0: set())
        flow.kafka.dirty.add(group)
        _tick_until(flow, zk, group, topic, 12)
        monkeypatch.undo()
        if not marked:
            monkeypatch.setattr(flow.kafka.marks, "past", lambda g, at: True)
        # the follower reads the older record now
        wait_for(lambda: flow.tick() >= 0 and follower.positions()[0] > older, 30, 0.05, "read")
        view = flow.kafka.picture.views[group]
        assert view.offsets[TopicPartition(topic, 0)] == (12 if marked else 7)
        assert _zk_offset(zk, group, topic) == 12
    finally:
        consumer.close()
        follower.close()
