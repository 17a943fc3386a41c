"""A mixed group's ZooKeeper side kept between ticks (``flows.coexist_reads``), on a real
ZooKeeper, read through the flow's watched caches.

The reference for every check is a fresh ``read_group`` through a reader without caches.
A kept read is served while nothing below the group changed, and dropped when an old
consumer (another session) writes an offset, when one registers, when the partition
counts are read again, and when a change lands while the group is being read. The
negative control mutes the watches' counting: the kept read then goes stale, which the
same checks catch.
"""

from __future__ import annotations

import json

import pytest
from kazoo.client import KazooClient

from bridge.flows.coexist_reads import GroupReads, read_group
from bridge.zookeeper.reader import ConsumerTreeReader
from bridge.zookeeper.watched import WatchedChildren, WatchedData
from tests.conftest import wait_for
from zkpaths import TopicPartition

pytestmark = pytest.mark.integration

G = "g"
REG = {"version": 1, "subscription": {"t": 2}, "pattern": "static", "timestamp": "1"}
T0 = TopicPartition("t", 0)


def _group(zk: KazooClient) -> None:
    zk.create(f"/consumers/{G}/ids/g_a", json.dumps(REG).encode(), makepath=True)
    zk.create(f"/consumers/{G}/owners/t/0", b"g_a-0", makepath=True)
    zk.create(f"/consumers/{G}/offsets/t/0", b"10", makepath=True)
    zk.create(f"/consumers/{G}/offsets/t/1", b"20", makepath=True)


def _world(zk: KazooClient, muted: bool = False):
    watched, data = WatchedChildren(zk), WatchedData(zk)
    reader = ConsumerTreeReader(zk, report=print, watched=watched, watched_data=data)
    reads = (Deaf if muted else GroupReads)(watched, data)
    return reader, reads


class Deaf(GroupReads):
    """The negative control: no fire below a group is counted."""

    def _below_tracked(self, path: str) -> bool:
        return False


def _state(reader, reads: GroupReads, ids: tuple[str, ...], partitions: dict[str, int]):
    """As ``Coexistence.read_state`` does: the kept read, or a fresh one kept."""
    read = reads.cached(G, ids, partitions)
    if read is None:
        read = read_group(reader, G, ids, partitions, print)
        reads.keep(G, read)
    return read


def _fresh(zk: KazooClient, ids: tuple[str, ...], partitions: dict[str, int]):
    return read_group(ConsumerTreeReader(zk, report=print), G, ids, partitions, print)


def _same(a, b) -> bool:
    def seen(r):
        return r.members, r.threads, r.claims, r.offsets

    return seen(a) == seen(b)


@pytest.mark.parametrize("muted", [False, True], ids=["counted", "muted"])
def test_a_kept_read_is_served_until_an_old_consumer_changes_the_group(zk, other, muted):
    _group(zk)
    reader, reads = _world(zk, muted)
    ids, partitions = ("g_a",), {"t": 2}
    first = _state(reader, reads, ids, partitions)
    assert _same(first, _fresh(zk, ids, partitions)) and first.offsets[T0] == 10
    for _ in range(3):
        assert _state(reader, reads, ids, partitions) is first
    assert reads.hits == 3

    other.set(f"/consumers/{G}/offsets/t/0", b"11")  # an old consumer commits
    if muted:  # once the cache itself was told (its watch fired), the kept read is stale
        wait_for(lambda: reader.offsets({G: ["t"]})[G][T0].offset == 11, 10, 0.02, "11 seen")
        assert _state(reader, reads, ids, partitions).offsets[T0] == 10  # stale: caught
        return
    wait_for(
        lambda: _state(reader, reads, ids, partitions).offsets[T0] == 11, 10, 0.02, "offset 11"
    )
    assert _same(_state(reader, reads, ids, partitions), _fresh(zk, ids, partitions))

    other.create(f"/consumers/{G}/ids/g_b", json.dumps(REG).encode())  # one registers
    ids = ("g_a", "g_b")  # the flow passes the ids it lists: a new key, read again
    assert _same(_state(reader, reads, ids, partitions), _fresh(zk, ids, partitions))
    assert "g_b" in _state(reader, reads, ids, partitions).members

    kept = _state(reader, reads, ids, partitions)
    again = dict(partitions)  # the partition counts read again (every second), the same
    assert _state(reader, reads, ids, again).claims is kept.claims  # still kept
    more = {"t": 4}  # a partition added
    assert _state(reader, reads, ids, more).partitions is more
    assert _same(_state(reader, reads, ids, more), _fresh(zk, ids, more))


def test_a_change_while_the_group_is_read_drops_the_read_at_the_next_tick(zk, other):
    """The group is tracked before it is read: a watch firing between the read and its
    keeping is counted, and the next tick reads again (kept from the keeping on, the
    change would have been missed for good: nothing fires twice)."""
    _group(zk)
    reader, reads = _world(zk)
    ids, partitions = ("g_a",), {"t": 2}
    _state(reader, reads, ids, partitions)  # the offset nodes' watches are armed
    other.set(f"/consumers/{G}/offsets/t/1", b"21")
    wait_for(lambda: reads.cached(G, ids, partitions) is None, 10, 0.02, "the change seen")
    stale = read_group(reader, G, ids, partitions, print)  # read ...
    other.set(f"/consumers/{G}/offsets/t/1", b"22")  # ... a commit lands meanwhile ...
    wait_for(lambda: data_fired(reads), 10, 0.02, "its watch fired")
    reads.keep(G, stale)  # ... and the read is kept
    assert _state(reader, reads, ids, partitions).offsets[TopicPartition("t", 1)] == 22


def data_fired(reads: GroupReads) -> bool:
    """Whether a fire below the group waits to be taken (peeked, not taken)."""
    return any(bool(c._paths) for c in reads._fired)


def test_forgetting_every_cached_answer_drops_every_kept_read(zk):
    _group(zk)
    watched, data = WatchedChildren(zk), WatchedData(zk)
    reader = ConsumerTreeReader(zk, report=print, watched=watched, watched_data=data)
    reads = GroupReads(watched, data)
    ids, partitions = ("g_a",), {"t": 2}
    first = _state(reader, reads, ids, partitions)
    assert _state(reader, reads, ids, partitions) is first
    data.clear()  # a lost connection: kazoo dropped every watch
    assert _state(reader, reads, ids, partitions) is not first


class Trusting(GroupReads):
    """The negative control: keeps every read, watched lists or not."""

    def keep(self, group, read) -> bool:
        self._reads[group] = read
        return True


@pytest.mark.parametrize("kind", [GroupReads, Trusting], ids=["held-only", "trusting"])
def test_a_read_from_a_directory_not_created_yet_is_not_kept(zk, other, kind):
    """No thread has claimed a partition yet: ``owners/t`` does not exist, so nothing
    watches it, and the thread's first claim would fire nothing. Such a read is not kept:
    the claim is seen at the next tick (kept, it would be missed for good)."""
    zk.create(f"/consumers/{G}/ids/g_a", json.dumps(REG).encode(), makepath=True)
    zk.create(f"/consumers/{G}/offsets/t/0", b"10", makepath=True)
    watched, data = WatchedChildren(zk), WatchedData(zk)
    reader = ConsumerTreeReader(zk, report=print, watched=watched, watched_data=data)
    reads = kind(watched, data)
    ids, partitions = ("g_a",), {"t": 2}
    assert _state(reader, reads, ids, partitions).claims == {}
    other.create(f"/consumers/{G}/owners/t/0", b"g_a-0", makepath=True)  # the first claim
    wait_for(lambda: _fresh(zk, ids, partitions).claims, 10, 0.02, "the claim in ZooKeeper")
    claims = _state(reader, reads, ids, partitions).claims
    if kind is Trusting:
        assert claims == {}  # stale for good: what the held check prevents
    else:
        assert claims == _fresh(zk, ids, partitions).claims != {}
