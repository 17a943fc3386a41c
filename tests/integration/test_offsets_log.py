"""The follower of ``__consumer_offsets`` on the 3.9 stack (bridge/kafka/offsets_log.py).

Commits and group deletions by real clients arrive as events on the real topic. The
restart-after-compaction and unknown-version cases run on a compacted copy the test writes
(clients may not produce to ``__consumer_offsets``), with Kafka's own log cleaner.
"""

from __future__ import annotations

import gc
import time
import weakref

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTP
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata

from bench import create_topic
from bridge.audit.records import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value
from bridge.kafka.offsets_log import GroupChanged, OffsetCommitted, OffsetsLogFollower
from tests.conftest import wait_for
from zkpaths import TopicPartition

pytestmark = pytest.mark.integration

#: a compacted topic the broker cleans as soon as it can: segments roll after 100 ms and any
#: dirty share is worth cleaning (the cleaner thread looks every 15 s, Kafka's default)
COMPACTED = {
    "cleanup.policy": "compact",
    "segment.ms": "100",
    "min.cleanable.dirty.ratio": "0.001",
    "min.compaction.lag.ms": "0",
    "max.compaction.lag.ms": "1000",
}


def _follow(follower: OffsetsLogFollower, until, timeout: float, what: str) -> list:
    """Events read until ``until(events)`` holds."""
    events: list = []

    def done():
        events.extend(follower.poll(timeout_ms=200))
        return until(events)

    wait_for(done, timeout, what=what)
    return events


def _latest(events, into: dict | None = None) -> dict:
    out = {} if into is None else into
    for e in events:
        if isinstance(e, OffsetCommitted):
            out[(e.group, e.partition)] = e.offset
    return out


def test_real_commits_and_deletion_arrive_as_events(stack, admin, topic_name):
    topic = topic_name("t")
    create_topic(admin, topic, 2)
    group = topic_name("g")
    other = topic_name("other")
    consumer = KafkaConsumer(bootstrap_servers=stack.bootstrap_servers, group_id=group)
    # the topic exists once a group asked for its coordinator (on a fresh stack: now)
    warm = KafkaConsumer(bootstrap_servers=stack.bootstrap_servers, group_id=topic_name("w"))
    warm.commit({KafkaTP(topic, 0): OffsetAndMetadata(1, "", -1)})
    warm.close()
    follower = OffsetsLogFollower(stack.bootstrap_servers, start="end")
    try:
        consumer.commit({KafkaTP(topic, 0): OffsetAndMetadata(5, "", -1)})
        consumer.commit({KafkaTP(topic, 1): OffsetAndMetadata(7, "", -1)})
        want = {
            OffsetCommitted(group, TopicPartition(topic, 0), 5),
            OffsetCommitted(group, TopicPartition(topic, 1), 7),
        }
        events = _follow(follower, lambda ev: want <= set(ev), 60, "both commits as events")
        # negative control: no event names a group that committed nothing
        assert not [e for e in events if e.group == other]
        consumer.close()
        admin.delete_groups([group])
        gone = {
            OffsetCommitted(group, TopicPartition(topic, 0), None),
            OffsetCommitted(group, TopicPartition(topic, 1), None),
        }
        _follow(follower, lambda ev: gone <= set(ev), 60, "the deletion's tombstones")
    finally:
        consumer.close()
        follower.close()


def _produce(stack, topic: str, records: list[tuple[bytes, bytes | None]]) -> None:
    producer = KafkaProducer(bootstrap_servers=stack.bootstrap_servers, acks="all")
    try:
        for key, value in records:
            producer.send(topic, key=key, value=value, partition=0)
        producer.flush(timeout=60)
    finally:
        producer.close()


def _commits(groups: int, offset: int) -> list[tuple[bytes, bytes | None]]:
    return [
        (
            encode_key(OffsetCommitKey(f"g{i}", "t", 0)),
            encode_value(OffsetCommitValue(offset, "", 1)),
        )
        for i in range(groups)
    ]


def _records_in_log(stack, topic: str) -> int:
    """How many records partition 0 holds now, read from the beginning."""
    c = KafkaConsumer(bootstrap_servers=stack.bootstrap_servers, enable_auto_commit=False)
    tp = KafkaTP(topic, 0)
    try:
        c.assign([tp])
        c.seek_to_beginning(tp)
        end = c.end_offsets([tp])[tp]
        n = 0
        while c.position(tp) < end:
            n += sum(len(r) for r in c.poll(timeout_ms=500).values())
        return n
    finally:
        c.close()


def _read_all(stack, topic: str, start) -> tuple[list, dict[int, int]]:
    f = OffsetsLogFollower(stack.bootstrap_servers, topic=topic, start=start)
    try:
        events = _follow(f, lambda _ev: f.caught_up(), 60, "the follower caught up")
        return events, f.positions()
    finally:
        f.close()


def test_compacted_topic_followed_after_restart(stack, admin: KafkaAdminClient, topic_name):
    topic = topic_name("offsets")
    admin.create_topics([NewTopic(topic, 1, 1, topic_configs=COMPACTED)])
    groups, rounds = 20, 5
    for r in range(rounds):  # phase A: offsets 0..4 per group
        _produce(stack, topic, _commits(groups, r))
    first, saved = _read_all(stack, topic, "beginning")
    seen = _latest(first)
    assert seen == {(f"g{i}", TopicPartition("t", 0)): rounds - 1 for i in range(groups)}

    for r in range(rounds, 2 * rounds):  # phase B, after the saved positions: 5..9
        _produce(stack, topic, _commits(groups, r))
    _produce(stack, topic, [(encode_key(OffsetCommitKey("g0", "t", 0)), None)])  # g0 deleted
    produced = groups * 2 * rounds + 1

    def compacted() -> bool:
        time.sleep(0.2)  # past segment.ms: the next record rolls the segment it lands in
        _produce(stack, topic, [(b"filler", b"x")])  # an undecodable key: skipped
        return _records_in_log(stack, topic) < produced

    wait_for(compacted, 120, interval=2, what="the log cleaner compacting the topic")

    expected = {(f"g{i}", TopicPartition("t", 0)): 2 * rounds - 1 for i in range(1, groups)}
    expected[("g0", TopicPartition("t", 0))] = None
    after, _ = _read_all(stack, topic, saved)  # restarted from the saved positions
    assert _latest(after, dict(seen)) == expected
    fresh, _ = _read_all(stack, topic, "beginning")  # restarted with nothing saved
    assert _latest(fresh) == expected
    # the negative control: the compacted log really lost superseded records
    assert len([e for e in fresh if isinstance(e, OffsetCommitted)]) < produced


def test_unknown_record_versions_reported_once_and_skipped(stack, admin, topic_name):
    topic = topic_name("versions")
    create_topic(admin, topic, 1)
    key = encode_key(OffsetCommitKey("g", "t", 0))
    newer_value = b"\x00\x63" + b"\x00" * 30  # offset commit value v99
    newer_key = b"\x00\x2a\x00\x01x"  # key v42
    good = encode_value(OffsetCommitValue(12, "", 1))
    _produce(
        stack,
        topic,
        [
            (key, newer_value),
            (newer_key, b"\x00\x00"),
            (key, newer_value),
            (newer_key, b""),
            (key, good),
        ],
    )
    reports: list[tuple[str, str]] = []
    f = OffsetsLogFollower(
        stack.bootstrap_servers,
        topic=topic,
        start="beginning",
        report=lambda where, msg: reports.append((where, msg)),
    )
    try:
        events = _follow(f, lambda _ev: f.caught_up(), 60, "the follower caught up")
    finally:
        f.close()
    assert events == [
        GroupChanged("g"),  # the group is read again from the group APIs
        GroupChanged("g"),
        OffsetCommitted("g", TopicPartition("t", 0), 12),
    ]
    assert [w for w, _ in reports] == [f"{topic}-0 offset 0", f"{topic}-0 offset 1"]
    assert "v99" in reports[0][1] and "key v42" in reports[1][1]


class _Held:
    """What a tick holds while it polls (its Kafka picture, its decisions)."""


def _poll_holding(poll, times: int) -> weakref.ref:
    held = _Held()
    ref = weakref.ref(held)
    for _ in range(times):
        poll(50)  # an empty topic: every poll waits for a fetch and times out
    return ref


def _held_after_polls(poll) -> bool:
    """Whether what the caller held outlives its polls, reference counting alone."""
    gc.collect()
    gc.disable()  # the garbage in question is cyclic: only the collector would free it
    try:
        ref = _poll_holding(poll, 5)
        # neither answer depends on this pause: it only lets the fetches the polls waited
        # for be answered, so what stays held is garbage, not a wait still pending
        time.sleep(1.0)
        return ref() is not None
    finally:
        gc.enable()
        gc.collect()


def test_a_poll_that_finds_nothing_keeps_nothing_of_its_caller(stack, admin, topic_name):
    """kafka-python 3.0's timed-out wait leaves a reference cycle whose traceback holds
    every frame of the stack the poll ran on; the bridge freezes what survives a full
    collection (bridge.heap), so on the tick's stack it kept each tick's picture for an
    hour. The follower polls on a thread of its own; negative control: the consumer's own
    poll on the caller's stack keeps the caller's locals (if it stops doing so, a newer
    kafka-python fixed the cycle and the follower's thread can go)."""
    topic = topic_name("empty")
    create_topic(admin, topic, 1)
    follower = OffsetsLogFollower(stack.bootstrap_servers, topic=topic, start="end", partitions=1)
    try:
        assert not _held_after_polls(lambda t: follower.poll(timeout_ms=t))
        assert _held_after_polls(lambda t: follower.consumer.poll(timeout_ms=t))
    finally:
        follower.close()
