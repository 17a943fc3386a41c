"""Flows F2/F3 triggered by the follower of ``__consumer_offsets`` (issue 14), on the stack.

With a follower, the groups flow asks the group APIs only about the groups whose records
arrived, and about every group at each resync (the full reconcile). These tests drive one
flow by hand, tick by tick, against real commits of a real kafka-python consumer:

* an offset committed while a full reconcile runs (after it read Kafka, before it wrote) is
  written by a later tick, without another reconcile: the follower named the group;
* after a full read the groups are reconciled a page per tick, the first page first;
* the negative control - the same commit with the follower's events thrown away - is not
  written however many ticks pass, until the next reconcile writes it (a missed event is
  caught by the reconcile).
"""

from __future__ import annotations

import logging
import threading
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTP
from kafka.errors import KafkaError, NoError
from kafka.structs import OffsetAndMetadata
from kazoo.client import KazooClient

import zkpaths
from bench import create_topic
from bridge.audit.records import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value
from bridge.flows import group_modes, kafka_groups, paging
from bridge.flows.groups import GroupMirrorFlow
from bridge.kafka.groups import GroupFilter
from bridge.kafka.offsets_log import OffsetsLogFollower
from bridge.metrics import METRICS
from bridge.zookeeper import owned
from bridge.zookeeper.fence import claim_epoch
from bridge.zookeeper.writer import FencedWriter, Ledger
from tests.conftest import wait_for
from tests.integration.old_client import known_everywhere

pytestmark = pytest.mark.integration

ROOT = "/kzb"
#: how long the negative control ticks without the event: many follower round trips
DEAF_S = 4.0


@pytest.fixture
def world(stack, zk: KazooClient, admin, topic_name):
    """A topic, a group committing to it, and a flow with a follower mirroring the group."""
    topic = topic_name("t")
    create_topic(admin, topic, 1)
    group = topic_name("g")
    consumer = KafkaConsumer(bootstrap_servers=stack.bootstrap_servers, group_id=group)
    _commit(consumer, topic, 5)
    follower = OffsetsLogFollower(stack.bootstrap_servers, start="end")
    flow = following_flow(zk, admin, group, follower)
    try:
        yield flow, consumer, group, topic
    finally:
        consumer.close()
        follower.close()


def following_flow(zk: KazooClient, admin, group: str, follower) -> GroupMirrorFlow:
    """A groups flow mirroring ``group`` alone, its commits followed by ``follower``."""
    writer = FencedWriter(zk, claim_epoch(zk, f"{ROOT}/epoch", "t"), Ledger(ROOT))
    flow = GroupMirrorFlow(
        zk, admin, writer, GroupFilter([group]), root=ROOT, follower=follower, committer=None
    )
    flow.resync()
    return flow


def _zk_offset(zk: KazooClient, group: str, topic: str) -> int | None:
    path = zkpaths.offset_path(group, topic, 0)
    return int(zk.get(path)[0]) if zk.exists(path) else None


def _commit(consumer: KafkaConsumer, topic: str, offset: int) -> None:
    """Commit, again while the coordinator does not know the topic just created yet."""
    tp = KafkaTP(topic, 0)

    def committed() -> bool:
        try:
            consumer.commit({tp: OffsetAndMetadata(offset, "", -1)})
        except KafkaError:
            return False
        return consumer.committed(tp) == offset

    wait_for(committed, 30, 0.2, f"offset {offset} committed")


def commit_each(admin, groups: list[str], topic: str, offset: int) -> None:
    """``offset`` committed for each group, again while a broker may not know the topic just
    created yet (the answer is per partition)."""
    tp = KafkaTP(topic, 0)
    for g in groups:
        wait_for(
            lambda g=g: all(
                e is NoError
                for e in admin.alter_group_offsets(
                    g, {tp: OffsetAndMetadata(offset, "", -1)}
                ).values()
            ),
            30,
            0.2,
            f"the commit of {g}",
        )


def _followed_flow(zk, stack, admin, prefix: str) -> tuple[OffsetsLogFollower, GroupMirrorFlow]:
    """A follower from the log's end and a flow mirroring the groups named ``prefix-*``."""
    follower = OffsetsLogFollower(stack.bootstrap_servers, start="end")
    writer = FencedWriter(zk, claim_epoch(zk, f"{ROOT}/epoch", "t"), Ledger(ROOT))
    flow = GroupMirrorFlow(
        zk, admin, writer, GroupFilter([f"{prefix}-.*"]), root=ROOT, follower=follower
    )
    return follower, flow


def _tick_until(flow: GroupMirrorFlow, zk: KazooClient, group: str, topic: str, want: int):
    """Tick until ZooKeeper holds ``want`` (a topic created a moment ago may wait for the
    next read of the topics, ``full_interval_s``)."""
    wait_for(lambda: flow.tick() >= 0 and _zk_offset(zk, group, topic) == want, 30, 0.1, f"{want}")


def _page_read(flow: GroupMirrorFlow) -> None:
    """Until the page under way was read from Kafka (on its own thread)."""
    prefetch = flow.kafka._prefetch
    wait_for(lambda: not prefetch.pending or prefetch.ready(), 30, 0.005, "the page's read")


def _verified_tick(flow: GroupMirrorFlow) -> None:
    """A tick, then until the verification's page it started (if any) was read on its own
    thread: the next tick compares it."""
    flow.tick()
    read = flow.tree.verify_read
    wait_for(lambda: not read.pending or read.ready(), 30, 0.005, "the verification's read")


def _verify_all(flow: GroupMirrorFlow) -> None:
    """Tick until the verification's pages were all read and compared."""
    deadline = time.monotonic() + 60
    while flow.tree.verifying or flow.tree.verify_read.pending:
        assert time.monotonic() < deadline, "the verification did not end"
        _verified_tick(flow)


def _tick_pass(flow: GroupMirrorFlow) -> None:
    """Tick until the pass under way decided its last page: each page is read on a thread
    of its own, then decided in the tick after that read ended."""
    flow.tick()
    deadline = time.monotonic() + 60
    while flow.kafka.reconciling():
        assert time.monotonic() < deadline, "the pass did not end"
        _page_read(flow)
        flow.tick()


def _page_reads(flow: GroupMirrorFlow, during=None) -> list[list[str]]:
    """Record the pages of the flow's reconcile passes as their tick takes their views
    from Kafka; ``during`` runs right after (Kafka read, nothing written yet)."""
    pages: list[list[str]] = []
    original = flow.kafka._reread

    def counted(pic, groups, prefetched):
        fresh = original(pic, groups, prefetched)
        if flow.kafka.page_now:
            pages.append(list(flow.kafka.page_now))
            if during is not None:
                during()
        return fresh

    flow.kafka._reread = counted
    return pages


def test_commit_during_reconcile_is_written_by_a_later_tick(zk, world):
    flow, consumer, group, topic = world
    _tick_until(flow, zk, group, topic, 5)
    raced = []
    full = _page_reads(flow, during=lambda: raced or (_commit(consumer, topic, 9), raced.append(1)))
    flow.resync()  # the reconcile: Kafka read, then offset 9 committed before the write
    _tick_pass(flow)
    assert raced and _zk_offset(zk, group, topic) == 5  # the reconcile wrote what it read
    _tick_until(flow, zk, group, topic, 9)
    assert full == [[group]]  # written by a triggered re-read, not by another reconcile


def test_missed_event_is_caught_by_the_reconcile(zk, world):
    flow, consumer, group, topic = world
    _tick_until(flow, zk, group, topic, 5)
    flow.follower.changed_groups = lambda timeout_ms=0: set()  # deaf: events thrown away
    _commit(consumer, topic, 11)
    deadline = time.monotonic() + DEAF_S
    while time.monotonic() < deadline:  # negative control: nothing names the group
        flow.tick()
        time.sleep(0.1)
    assert _zk_offset(zk, group, topic) == 5
    flow.resync()  # the safety net
    _tick_pass(flow)
    assert _zk_offset(zk, group, topic) == 11


def _ahead_world(stack, zk, admin, topic_name, group, topic):
    """A flow whose follower follows a copy of ``__consumer_offsets`` the test writes: a
    record can then be read before the coordinator serves its commit, as it can be on a
    loaded broker (the record is readable when the high watermark moves, the commit
    served when the append completes)."""
    copy = topic_name("offsets-copy")
    create_topic(admin, copy, 1)
    # its high watermark asked after each read (flows.read_marks) from any broker
    wait_for(lambda: known_everywhere(admin, copy, 1), 30, 0.1, f"{copy} everywhere")
    follower = OffsetsLogFollower(stack.bootstrap_servers, topic=copy, start="end", partitions=1)
    return following_flow(zk, admin, group, follower), copy


def _record_says(stack, copy: str, group: str, topic: str, offset: int) -> None:
    producer = KafkaProducer(bootstrap_servers=stack.bootstrap_servers, acks="all")
    try:
        key = encode_key(OffsetCommitKey(group, topic, 0))
        producer.send(copy, key=key, value=encode_value(OffsetCommitValue(offset, "", 1)))
        producer.flush(timeout=60)
    finally:
        producer.close()


@pytest.mark.parametrize("deaf", [False, True], ids=["waits", "negative-control"])
def test_a_record_read_before_its_commit_is_served_is_read_again(
    stack, zk, admin, topic_name, deaf
):
    """CI's burst once left a group's last commit out of ZooKeeper for 40 s: its record
    was read, the group read again before the coordinator served the commit, and nothing
    named the group again. A read behind the group's records is made again until it shows
    them. Negative control: with the records' offsets not kept, the node stays behind."""
    topic, group = topic_name("t"), topic_name("g")
    create_topic(admin, topic, 1)
    consumer = KafkaConsumer(bootstrap_servers=stack.bootstrap_servers, group_id=group)
    flow, copy = _ahead_world(stack, zk, admin, topic_name, group, topic)
    # records of a group whose commits are read, not taken as they are (a mixed group's):
    # the copy's records here say what Kafka does not serve yet (flows.read_marks)
    flow.kafka.offsets_only = lambda g: False
    try:
        _commit(consumer, topic, 5)
        _tick_until(flow, zk, group, topic, 5)
        if deaf:
            flow.follower.take_said = lambda: {}
        _record_says(stack, copy, group, topic, 9)  # read before Kafka serves offset 9
        wait_for(lambda: flow.tick() >= 0 and group in flow.kafka.reread_now, 30, 0.05, "a re-read")
        assert _zk_offset(zk, group, topic) == 5  # what Kafka served
        assert flow.kafka.ahead.waiting() is not deaf
        # soon, not at the next poll (without the wait: the plain wait, False)
        assert flow.await_records(0.5 if deaf else 30.0, threading.Event()) is not deaf
        _commit(consumer, topic, 9)  # served now; no record names the group again
        deadline = time.monotonic() + DEAF_S
        while time.monotonic() < deadline and _zk_offset(zk, group, topic) != 9:
            flow.tick()
            time.sleep(0.05)
        assert _zk_offset(zk, group, topic) == (5 if deaf else 9)
        assert not flow.kafka.ahead.waiting()
    finally:
        consumer.close()
        flow.follower.close()


def test_full_read_reconciled_page_by_page(stack, zk, admin, topic_name, monkeypatch, caplog):
    """After a full read the groups are written a page per tick, the first page in the
    tick after its read, with a line saying when all were (PAGE_GROUPS made small for the
    test)."""
    monkeypatch.setattr(paging, "PAGE_GROUPS", 4)
    topic = topic_name("t")
    create_topic(admin, topic, 1)
    # brokers learn of a topic one by one: a full read asking one that has not yet takes
    # the offsets for a deleted topic's, and writes none (a busy stack: 2 runs in 3)
    wait_for(lambda: known_everywhere(admin, topic, 1), 30, 0.1, f"{topic} everywhere")
    prefix = topic_name("p")
    names = [f"{prefix}-{i:02d}" for i in range(10)]
    commit_each(admin, names, topic, 3)
    follower, flow = _followed_flow(zk, stack, admin, prefix)
    try:
        flow.resync()
        caplog.set_level(logging.INFO, logger=paging.log.name)
        caplog.set_level(logging.INFO, logger="bridge.zookeeper.records")
        flow.tick()  # listed; the first page's read started: nothing decided unread
        written = [{g for g in names if _zk_offset(zk, g, topic) == 3}]
        for _ in range(3):
            _page_read(flow)
            flow.tick()
            written.append({g for g in names if _zk_offset(zk, g, topic) == 3})
        # a page per tick, in order: the negative control is that the first is not all
        assert [len(w) for w in written] == [0, 4, 8, 10]
        assert written[1] == set(names[:4])
        assert not any("reconciled" in r.getMessage() for r in caplog.records)
        flow.tick()  # the line once the last page was written, with the modes it inferred
        done = [r.getMessage() for r in caplog.records if "reconciled" in r.getMessage()]
        assert len(done) == 1 and "10 groups" in done[0], done
        assert done[0].endswith("storage modes inferred: kafka 10"), done
        inferred = [r for r in caplog.records if "storage mode inferred" in r.getMessage()]
        assert not inferred  # not a line per page
    finally:
        follower.close()


def test_a_group_whose_topic_shows_late_is_written_once_it_shows(zk, world, monkeypatch):
    """A full read whose topics miss a topic just created (a broker that has not learned of
    it yet, seen under load) decides its groups again in the tick the topic shows, without
    another event or reconcile."""
    flow, consumer, group, topic = world
    _tick_until(flow, zk, group, topic, 5)
    real = kafka_groups.partition_counts
    hide = [1]

    def late(admin, topics=None):
        counts = real(admin, topics)
        if hide and topics is None:
            hide.pop()
            counts.pop(topic, None)
        return counts

    monkeypatch.setattr(kafka_groups, "partition_counts", late)
    _commit(consumer, topic, 7)
    flow.resync()
    flow.tick()  # the full read, without the topic: nothing written for it
    assert not hide and _zk_offset(zk, group, topic) == 5
    flow.follower.changed_groups = lambda timeout_ms=0: set()  # no event helps it
    wait_for(lambda: flow.tick() >= 0 and _zk_offset(zk, group, topic) == 7, 10, 0.1, "7")


def test_a_resync_verifies_the_ledger_a_page_per_tick(stack, zk, admin, topic_name, monkeypatch):
    """After the term's first full read, a resync walks nothing at once: the owned groups
    are read again a page per tick. Someone else deletes an offset node the bridge owns
    (the flow's known tree still has it): without a resync no tick re-creates it (the
    negative control); after one, the tick verifying its group's page does, and the tick
    before it (an earlier page) does not."""
    monkeypatch.setattr(paging, "PAGE_GROUPS", 2)
    monkeypatch.setattr(owned, "VERIFY_EVERY_S", 0.0)  # a page every tick, not paced
    topic = topic_name("t")
    create_topic(admin, topic, 1)
    prefix = topic_name("p")
    names = [f"{prefix}-{i}" for i in range(4)]
    commit_each(admin, names, topic, 3)
    writer = FencedWriter(zk, claim_epoch(zk, f"{ROOT}/epoch", "t"), Ledger(ROOT))
    flow = GroupMirrorFlow(zk, admin, writer, GroupFilter([f"{prefix}-.*"]), root=ROOT)
    flow.resync()
    wait_for(
        lambda: flow.tick() >= 0 and all(_zk_offset(zk, g, topic) == 3 for g in names),
        30,
        0.1,
        "every group mirrored",
    )
    loads: list[list[str]] = []
    real_read = writer.ledger.read
    writer.ledger.read = lambda client, scopes=("/",), nodes=(): (
        loads.append(list(scopes)),
        real_read(client, scopes, nodes),
    )[1]
    last = names[-1]
    zk.delete(zkpaths.offset_path(last, topic, 0))
    for _ in range(3):
        flow.tick()
    assert _zk_offset(zk, last, topic) is None  # the known tree still says it is there
    flow.resync()
    assert loads == []  # nothing walked at once
    _verified_tick(flow)  # the first page (the first two groups) read
    _verified_tick(flow)  # compared; the second page (the deleted node's group) read
    assert _zk_offset(zk, last, topic) is None
    _verified_tick(flow)  # compared: re-created from the group's view
    assert _zk_offset(zk, last, topic) == 3
    assert loads == [[f"/consumers/{g}" for g in names[:2]], [f"/consumers/{g}" for g in names[2:]]]


@pytest.mark.parametrize("mode", ["skips", "decides-all", "drift-unheard"])
def test_a_pass_skips_groups_as_they_were_and_the_verification_finds_drift(
    zk, world, monkeypatch, mode
):
    """At 10,000 groups a pass that found nothing to change took as long as a cold start:
    a group read again with the view it was last written with is not decided again. Its
    nodes are still checked: someone else deletes one, the next resync's verification
    reads the group again, and the group is decided and the node re-created. Negative
    controls: with nothing taken as settled the pass decides the group again; with the
    verification's finding not heard, the node stays deleted."""
    monkeypatch.setattr(owned, "VERIFY_EVERY_S", 0.0)  # a page every tick, not paced
    flow, _consumer, group, topic = world
    # brokers learn of a topic one by one: a pass's read of the topics a moment after it
    # was made can miss it (the group is then decided again: a partition count changed)
    wait_for(lambda: known_everywhere(flow.admin, topic, 1), 30, 0.1, f"{topic} everywhere")
    _tick_until(flow, zk, group, topic, 5)
    # a topic created a moment ago: decided again once its partition count is read
    wait_for(lambda: flow.tick() >= 0 and group in flow.settled.groups, 30, 0.1, "settled")
    if mode == "decides-all":
        monkeypatch.setattr(flow.settled, "unchanged", lambda same: set())
    if mode == "drift-unheard":
        monkeypatch.setattr(flow.tree, "take_drifted", lambda: set())
    decided: list[str] = []
    real = flow._decide_group
    monkeypatch.setattr(flow, "_decide_group", lambda g, *a: (decided.append(g), real(g, *a))[1])
    pages = _page_reads(flow)
    flow.resync()
    _tick_pass(flow)
    assert pages == [[group]] and not flow.kafka.reconciling()  # read by the pass
    assert decided == ([group] if mode == "decides-all" else [])
    zk.delete(zkpaths.offset_path(group, topic, 0))  # behind the bridge's back
    flow.resync()
    _tick_pass(flow)
    _verify_all(flow)  # the verification's page reads the group again: due, decided, written
    assert _zk_offset(zk, group, topic) == (None if mode == "drift-unheard" else 5)


def test_a_commit_ends_the_wait_between_ticks(zk, world):
    """The service's wait between ticks polls the follower: a commit's record ends it
    (the tick runs now, not at its poll interval) and names its group; a wake (a watch, a
    stop) ends it without a record."""
    flow, consumer, group, topic = world
    _tick_until(flow, zk, group, topic, 5)
    woken = threading.Event()
    woken.set()
    assert flow.await_records(30, woken) is False  # woken: over at once, no record
    _commit(consumer, topic, 9)
    assert flow.await_records(30, threading.Event()) is True
    # its commit taken as the record says (flows.read_marks), or the group to read again
    assert group in flow.kafka.dirty | flow.follower.direct_groups()
    _tick_until(flow, zk, group, topic, 9)


def test_a_full_read_in_chunks_reads_every_group(admin, topic_name, monkeypatch):
    """The full read asks Kafka ``CHUNK_GROUPS`` groups at a time (one OffsetFetch of
    10,000 groups outran its bound); against the real broker, chunks of 2 over 5 groups
    still give each group its own description and offsets."""
    from bridge.kafka import groups as kafka_groups_api
    from zkpaths import TopicPartition

    monkeypatch.setattr(kafka_groups_api, "CHUNK_GROUPS", 2)
    topic = topic_name("t")
    create_topic(admin, topic, 1)
    names = [topic_name(f"g{i}") for i in range(5)]
    commit_each(admin, names, topic, 3)
    commit_each(admin, names[-1:], topic, 8)  # one group differs: no answer is shared
    views = kafka_groups_api.read_groups(admin, names)
    assert sorted(views) == sorted(names)
    want = {g: {TopicPartition(topic, 0): 8 if g == names[-1] else 3} for g in names}
    assert {g: v.offsets for g, v in views.items()} == want
    assert all(v.error is None for v in views.values())


PHASES = ("requests", "verify", "kafka", "zookeeper", "decide", "modes", "write", "answer")


def _phase_counts() -> dict[str, float]:
    from bridge.metrics import METRICS

    got = {
        s.labels["phase"]: s.value
        for family in METRICS.registry.collect()
        for s in family.samples
        if s.name == "zkbridge_flow_phase_seconds_count" and s.labels["flow"] == "groups"
    }
    return {p: got.get(p, 0.0) for p in PHASES}


def test_each_pass_times_its_phases(zk, world):
    """A pass that writes a commit observes every phase of ``zkbridge_flow_phase_seconds``
    once, so an operator (and ``bench.fleet``) sees which part a slow pass went to."""
    flow, consumer, group, topic = world
    before = _phase_counts()
    flow.tick()
    assert {p: n - before[p] for p, n in _phase_counts().items()} == dict.fromkeys(PHASES, 1)
    _commit(consumer, topic, 9)
    _tick_until(flow, zk, group, topic, 9)
    assert all(n > before[p] + 1 for p, n in _phase_counts().items())


def test_the_groups_gauge_counts_every_group_mirrored_not_the_ticks(zk, world, monkeypatch):
    """``zkbridge_groups{mode}`` says how many groups the bridge mirrors in each storage
    mode: a tick that decided no group (all settled) still says every group's, where a
    count of the tick's groups said 0 (the case checked: that tick decided nothing)."""
    monkeypatch.setattr(group_modes, "COUNT_EVERY_S", 0.0)  # counted at each change
    flow, _consumer, group, topic = world
    wait_for(lambda: known_everywhere(flow.admin, topic, 1), 30, 0.1, f"{topic} everywhere")
    _tick_until(flow, zk, group, topic, 5)
    wait_for(lambda: flow.tick() >= 0 and group in flow.settled.groups, 30, 0.1, "settled")
    decided: list[str] = []
    real = flow._decide_group
    monkeypatch.setattr(flow, "_decide_group", lambda g, *a: (decided.append(g), real(g, *a))[1])
    flow.tick()
    assert decided == []  # nothing in this tick's scope
    kafka_mode = sum(1 for r, _ in flow.records.values() if r.mode.value == "kafka")
    assert group in flow.records and kafka_mode >= 1
    gauge = METRICS.registry.get_sample_value("zkbridge_groups", {"mode": "kafka"})
    assert gauge == kafka_mode


def test_a_group_not_in_zookeeper_has_its_offsets_read_by_its_root_alone(zk, admin, topic_name):
    """A cold start's groups are not under ``/consumers`` yet: their offsets are not
    listed (the absent root says there are none), and the tree's write asks nothing more
    of the root. The control: a group an old consumer left in ZooKeeper is listed and
    its offset read."""
    fresh, rooted = topic_name("fresh"), topic_name("rooted")
    zk.create(zkpaths.offset_path(rooted, "t", 0), b"7", makepath=True)
    writer = FencedWriter(zk, claim_epoch(zk, f"{ROOT}/epoch", "t"), Ledger(ROOT))
    flow = GroupMirrorFlow(zk, admin, writer, GroupFilter([fresh, rooted]), root=ROOT)
    asked: list[str] = []
    for cache in (flow.watched, flow.watched_data):
        send = cache._send
        cache._send = lambda path, send=send: (asked.append(path), send(path))[1]

    read = flow._zk_offsets([fresh, rooted], set())

    assert read[fresh] == ({}, set())
    assert read[rooted] == ({zkpaths.TopicPartition("t", 0): 7}, set())
    assert zkpaths.offsets_path(fresh) not in asked  # no listing of what cannot exist
    assert zkpaths.offsets_path(rooted) in asked  # the control
    asked.clear()
    root = zkpaths.consumer_group_path(fresh)
    assert flow.tree._read_present([root, f"{root}/offsets"]) == {}
    assert asked == []  # its absence is held behind the exists watch already


def test_a_cold_starts_pages_land_later_but_not_in_a_tick_answering_a_forced_sync(
    zk, stack, admin, topic_name, monkeypatch
):
    """During the first pass a page's writes land while the next is decided
    (``OwnedTree.write(defer=True)``); a tick that answers ``zk-bridge migrate``'s forced
    sync waits for its writes, since its answer says what they reached. The control:
    the pages' other ticks do defer."""
    from bridge.zookeeper import sync

    monkeypatch.setattr(paging, "PAGE_GROUPS", 1)  # a page per group: several ticks
    topic = topic_name("t")
    create_topic(admin, topic, 1)
    prefix = topic_name("p")
    names = [f"{prefix}-{i}" for i in range(4)]
    commit_each(admin, names, topic, 3)
    follower, flow = _followed_flow(zk, stack, admin, prefix)
    writes: list[tuple[bool, bool]] = []  # (deferred, a sync request pending)
    real_write = flow.tree.write

    def write(desired, refresh, owned, scope, defer=False):
        asked = bool(sync.pending_requests(zk, ROOT))
        writes.append((defer, asked))
        return real_write(desired, refresh, owned, scope, defer)

    flow.tree.write = write  # type: ignore[method-assign]
    answered: list = []
    try:
        flow.resync()
        thread = threading.Thread(
            target=lambda: answered.append(sync.request_sync(zk, ROOT, names[0], 30))
        )
        thread.start()
        wait_for(lambda: sync.pending_requests(zk, ROOT), 10, what="the forced sync asked")
        wait_for(
            lambda: flow.tick() >= 0 and all(_zk_offset(zk, g, topic) == 3 for g in names),
            60,
            0.05,
            "every group mirrored",
        )
        thread.join(30)
    finally:
        follower.close()
    assert answered and answered[0] is not None  # the sync was answered
    assert (True, False) in writes  # the control: a first pass's page deferred
    assert not [w for w in writes if w == (True, True)]  # never while a sync is answered
