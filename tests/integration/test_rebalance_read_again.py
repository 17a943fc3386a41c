"""A classic group read between its generation's record and its turn to Stable (issue 14).

The coordinator appends a generation's GroupMetadata record on the leader's SyncGroup and
turns the group Stable when the append completes; the follower can read the record first.
A group read in that moment is CompletingRebalance, kept as it was, and no later record
names it: CI once saw a mixed group's fences stay up until its old consumer gave up. Here a
real member holds a real group in CompletingRebalance while the record is written into a
copy of ``__consumer_offsets`` the flow follows; the member's SyncGroup then turns the
group Stable with no record the flow sees. Negative control: with the state not kept as a
reason to read again, the member's owner node never shows.
"""

from __future__ import annotations

import threading
import time

import pytest
from kafka import KafkaProducer
from kazoo.client import KazooClient

import zkpaths
from bench import create_topic
from bridge.audit.records import GroupMetadataKey, GroupMetadataValue, encode_key, encode_value
from bridge.flows.log_ahead import LogAhead
from tests.conftest import wait_for
from tests.integration.raw_member import RawMember
from tests.integration.test_offsets_trigger import DEAF_S, _ahead_world

pytestmark = pytest.mark.integration


def _generation_record(stack, copy: str, group: str) -> None:
    """A GroupMetadata record naming ``group`` (its content is not what the flow reads)."""
    value = GroupMetadataValue("consumer", 1, "range", None)
    producer = KafkaProducer(bootstrap_servers=stack.bootstrap_servers, acks="all")
    try:
        producer.send(copy, key=encode_key(GroupMetadataKey(group)), value=encode_value(value))
        producer.flush(timeout=60)
    finally:
        producer.close()


def _names_seen(flow) -> set[str]:
    """The groups the flow's follower named: the test waits for its record to be read."""
    named: set[str] = set()
    follower, changed = flow.follower, flow.follower.changed_groups

    def seen(*args, **kwargs) -> set[str]:
        groups = changed(*args, **kwargs)
        named.update(groups)
        return groups

    follower.changed_groups = seen
    return named


def _owner(zk: KazooClient, group: str, topic: str) -> str | None:
    path = zkpaths.owner_path(group, topic, 0)
    return zk.get(path)[0].decode() if zk.exists(path) else None


@pytest.mark.parametrize("deaf", [False, True], ids=["read-again", "negative-control"])
def test_a_rebalance_read_before_it_turned_stable_is_read_again(stack, zk, admin, topic_name, deaf):
    topic, group = topic_name("t"), topic_name("g")
    create_topic(admin, topic, 1)
    flow, copy = _ahead_world(stack, zk, admin, topic_name, group, topic)
    if deaf:  # the code before: a read in CompletingRebalance was not a reason
        ahead = flow.kafka.ahead
        ahead.behind = lambda g, offsets, dead, completing=False: LogAhead.behind(
            ahead, g, offsets, dead
        )
    named = _names_seen(flow)
    member = RawMember(admin, group, topic, "raw-1")
    try:
        member.join()  # CompletingRebalance until its SyncGroup
        _generation_record(stack, copy, group)
        wait_for(lambda: flow.tick() >= 0 and group in named, 30, 0.05, "the record")
        assert group in flow.kafka.reread_now
        assert flow.kafka.picture.views[group].state == "CompletingRebalance"
        assert _owner(zk, group, topic) is None  # kept as it was: nothing to mirror yet
        assert flow.kafka.ahead.waiting() is not deaf
        # soon, not at the next poll (without the wait: the plain wait, False)
        assert flow.await_records(0.5 if deaf else 30.0, threading.Event()) is not deaf
        member.sync([0])  # Stable now; no record the flow follows names the group again
        deadline = time.monotonic() + DEAF_S
        while time.monotonic() < deadline and _owner(zk, group, topic) is None:
            flow.tick()
            time.sleep(0.05)
        owner = _owner(zk, group, topic)
        assert (owner is None) if deaf else (owner or "").startswith(f"{group}_raw"), owner
        assert not flow.kafka.ahead.waiting()
    finally:
        member.leave()
        flow.follower.close()
