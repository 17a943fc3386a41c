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
from types import SimpleNamespace

import pytest
from kazoo.client import KazooClient

from bridge.flows.coexist_reads import GroupReads, read_group
from bridge.flows.group_modes import GroupStorageModes
from bridge.zookeeper.owned_paths import OwnedPaths
from bridge.zookeeper.reader import ConsumerTreeReader
from bridge.zookeeper.watched import WatchedChildren, WatchedData
from tests.conftest import wait_for
from tests.integration.unwatched import Blind
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


def _world(zk: KazooClient, kind: type[GroupReads] | None = None, blind: bool = False):
    """A reader through watched caches, and the kept reads of ``kind`` (GroupReads when
    none is given); ``blind``: absent lists kept without a watch."""
    watched, data = (Blind if blind else WatchedChildren)(zk), WatchedData(zk)
    reader = ConsumerTreeReader(zk, report=print, watched=watched, watched_data=data)
    return reader, (kind or GroupReads)(watched, data)


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
    reader, reads = _world(zk, Deaf if muted else GroupReads)
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
    _state(reader, reads, ids, partitions)  # the nodes' watches are armed
    other.set(f"/consumers/{G}/owners/t/0", b"g_a-0")  # a claim written again: read whole
    wait_for(lambda: reads.cached(G, ids, partitions) is None, 10, 0.02, "the change seen")
    stale = read_group(reader, G, ids, partitions, print)  # read ...
    other.set(f"/consumers/{G}/offsets/t/1", b"22")  # ... a commit lands meanwhile ...
    wait_for(lambda: data_fired(reads), 10, 0.02, "its watch fired")
    reads.keep(G, stale)  # ... and the read is kept
    assert _state(reader, reads, ids, partitions).offsets[TopicPartition("t", 1)] == 22


class Unread(GroupReads):
    """The negative control: the committed nodes taken, not read into the kept reads."""

    def _patch(self, group: str) -> None:
        self._committed.pop(group, None)


@pytest.mark.parametrize("kind", [GroupReads, Unread], ids=["patched", "unread"])
def test_a_commit_is_read_into_the_kept_read_and_anything_else_reads_the_group_again(
    zk, other, kind
):
    """An old consumer's commit (the change most frequent below a mixed group) reads only
    its node into the kept reads: the rest is kept as it was. A node deleted, or one that
    no longer decodes, reads the group whole (which reports the bad node). Negative
    control: the commit taken but not read in, the kept read is stale."""
    _group(zk)
    reader, reads = _world(zk, kind)
    modes = Modes(reader, reads)
    ids, partitions = ("g_a",), {"t": 2}
    first = _state(reader, reads, ids, partitions)
    modes._zk_offsets([G], set(), mixed={G})
    other.set(f"/consumers/{G}/offsets/t/0", b"11")  # an old consumer commits
    wait_for(lambda: data_fired(reads), 10, 0.02, "the watch called")
    now = _state(reader, reads, ids, partitions)
    if kind is Unread:
        assert now.offsets[T0] == 10  # stale: what reading the commit in prevents
        return
    assert _same(now, _fresh(zk, ids, partitions)) and now.offsets[T0] == 11
    assert now.claims is first.claims and now.members is first.members  # not read whole
    assert modes._zk_offsets([G], set(), mixed={G})[G][0] == _all_offsets(zk)

    other.set(f"/consumers/{G}/offsets/t/1", b"not an offset")
    wait_for(lambda: data_fired(reads), 10, 0.02, "the watch called")
    now = _state(reader, reads, ids, partitions)
    assert _same(now, _fresh(zk, ids, partitions)) and TopicPartition("t", 1) not in now.offsets
    assert now.claims is not first.claims  # read whole
    assert modes._zk_offsets([G], set(), mixed={G})[G][0] == _all_offsets(zk)

    kept = _state(reader, reads, ids, partitions)
    other.delete(f"/consumers/{G}/offsets/t/0")
    wait_for(lambda: data_fired(reads), 10, 0.02, "the watch called")
    now = _state(reader, reads, ids, partitions)
    assert _same(now, _fresh(zk, ids, partitions)) and now.offsets == {}
    assert now.claims is not kept.claims
    assert modes._zk_offsets([G], set(), mixed={G})[G][0] == _all_offsets(zk) == {}


def data_fired(reads: GroupReads) -> bool:
    """Whether a fire below the group waits to be taken (peeked, not taken)."""
    return any(bool(c._paths) for c in reads._fired)


def test_forgetting_every_cached_answer_drops_every_kept_read(zk):
    _group(zk)
    reader, reads = _world(zk)
    data = reader.watched_data
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

    def keep_offsets(self, group, read) -> bool:
        self._offsets[group] = read
        return True


@pytest.mark.parametrize("kind", [GroupReads, Trusting], ids=["watched", "unwatched"])
def test_a_read_from_a_directory_not_created_yet_is_kept_only_behind_a_watch(zk, other, kind):
    """No thread has claimed a partition yet: ``owners/t`` does not exist, so a read of it
    arms no watch; its absence is kept behind an ``exists`` watch, which the thread's
    first claim fires. Negative control: the absence kept without that watch, and the
    read kept whatever its lists hold, the claim is missed for good."""
    zk.create(f"/consumers/{G}/ids/g_a", json.dumps(REG).encode(), makepath=True)
    zk.create(f"/consumers/{G}/offsets/t/0", b"10", makepath=True)
    reader, reads = _world(zk, kind, blind=kind is not GroupReads)
    ids, partitions = ("g_a",), {"t": 2}
    assert _state(reader, reads, ids, partitions).claims == {}
    other.create(f"/consumers/{G}/owners/t/0", b"g_a-0", makepath=True)  # the first claim
    wait_for(lambda: _fresh(zk, ids, partitions).claims, 10, 0.02, "the claim in ZooKeeper")
    claims = _state(reader, reads, ids, partitions).claims
    if kind is Trusting:
        assert claims == {}  # stale for good: what the held check prevents
    else:
        assert claims == _fresh(zk, ids, partitions).claims != {}


class Modes(GroupStorageModes):
    """The groups flow's storage-mode half, with only what ``_zk_offsets`` reads."""

    def __init__(self, reader: ConsumerTreeReader, reads: GroupReads) -> None:
        self.reader = reader
        self.coexist = SimpleNamespace(reads=reads)
        self.known = {}
        self.tree = SimpleNamespace(read_fresh=reader.watched_data.nodes)  # as the flow's
        # no ledger: no topic dir is listed ahead of the group's (``owned_topic_dirs``)
        self.writer = SimpleNamespace(ledger=SimpleNamespace(owned=OwnedPaths()))


def _all_offsets(zk: KazooClient) -> dict[TopicPartition, int]:
    """The reference: every offset node of the group, read without caches."""
    nodes = ConsumerTreeReader(zk, report=print).offsets({G: None})[G]
    return {tp: n.offset for tp, n in nodes.items()}


@pytest.mark.parametrize("kind", [GroupReads, Deaf], ids=["counted", "muted"])
def test_a_mixed_groups_offset_nodes_are_kept_until_one_changes(zk, other, kind):
    """As the storage modes read them each tick: kept while nothing below the group
    fired, read again after an old consumer's commit, a new topic's first commit, and a
    lost connection; which nodes are the bridge's is looked up in ``owned`` each time."""
    _group(zk)
    reader, reads = _world(zk, kind)
    data = reader.watched_data
    modes = Modes(reader, reads)

    def offsets(owned: set[str] = frozenset()):
        return modes._zk_offsets([G], owned, mixed={G})[G]

    assert offsets()[0] == _all_offsets(zk) == {T0: 10, TopicPartition("t", 1): 20}
    hits = reads.hits
    mine = f"/consumers/{G}/offsets/t/1"
    assert offsets({mine}) == ({T0: 10, TopicPartition("t", 1): 20}, {TopicPartition("t", 1)})
    assert reads.hits == hits + 1  # served from the kept read, the bridge's own looked up

    other.set(f"/consumers/{G}/offsets/t/0", b"11")  # an old consumer commits
    wait_for(lambda: reader.offsets({G: ["t"]})[G][T0].offset == 11, 10, 0.02, "11 cached")
    if kind is Deaf:
        assert offsets()[0][T0] == 10  # stale: what counting the fires prevents
        return
    # kazoo calls the watch a moment after the cache read again: until then, one tick late
    wait_for(lambda: data_fired(reads), 10, 0.02, "the watch called")
    assert offsets()[0] == _all_offsets(zk)

    other.create(f"/consumers/{G}/offsets/u/0", b"5", makepath=True)  # a new topic
    wait_for(lambda: offsets()[0] == _all_offsets(zk), 10, 0.02, "u-0 seen")
    data.clear()  # a lost connection: kazoo dropped every watch
    hits = reads.hits
    assert offsets()[0] == _all_offsets(zk) and reads.hits == hits


@pytest.mark.parametrize("kind", [GroupReads, Trusting], ids=["watched", "unwatched"])
def test_offsets_read_before_the_first_commit_are_kept_only_behind_a_watch(zk, other, kind):
    """No old consumer committed yet: ``offsets`` does not exist, and a read of it arms no
    watch; its absence is kept behind an ``exists`` watch, which the first commit fires.
    Negative control: the absence kept without that watch, and the read kept whatever its
    lists hold, the commit is missed for good."""
    zk.create(f"/consumers/{G}/ids/g_a", json.dumps(REG).encode(), makepath=True)
    modes = Modes(*_world(zk, kind, blind=kind is not GroupReads))
    assert modes._zk_offsets([G], set(), mixed={G})[G][0] == {}
    other.create(f"/consumers/{G}/offsets/t/0", b"7", makepath=True)  # the first commit
    wait_for(lambda: _all_offsets(zk), 10, 0.02, "the commit in ZooKeeper")
    seen = modes._zk_offsets([G], set(), mixed={G})[G][0]
    assert seen == ({} if kind is Trusting else {T0: 7})


def _children_fired(reads: GroupReads) -> bool:
    return bool(reads._fired[0]._paths)


@pytest.mark.parametrize("muted", [False, True], ids=["counted", "muted"])
def test_a_group_is_unchanged_only_while_nothing_below_it_changed_since_asked(zk, other, muted):
    """What lets the flow leave a mixed group alone for a tick (``flows.settled``): its
    kept reads stood since the last ask, and no watch below it fired. A read, a patch, a
    commit not read in yet, a registration, every answer forgotten: each makes it changed
    for one ask. Negative control: the fires not counted, an old consumer's commit leaves
    the group 'unchanged' (the flow would not decide it: the commit never copied)."""
    _group(zk)
    reader, reads = _world(zk, Deaf if muted else GroupReads)
    modes = Modes(reader, reads)
    ids, partitions = ("g_a",), {"t": 2}

    def tick() -> None:  # as the flow reads who is registered, then decides the group
        reader.consumer_ids([G])
        _state(reader, reads, ids, partitions)
        modes._zk_offsets([G], set(), mixed={G})

    tick()
    assert reads.unchanged({G}) == set()  # read just now: its decision checked once more
    tick()
    assert reads.unchanged({G, "other"}) == {G}

    other.set(f"/consumers/{G}/offsets/t/0", b"11")  # an old consumer commits
    if muted:
        wait_for(lambda: reader.offsets({G: ["t"]})[G][T0].offset == 11, 10, 0.02, "11 seen")
        assert reads.unchanged({G}) == {G}  # stale: caught
        return
    wait_for(lambda: data_fired(reads), 10, 0.02, "its watch called")
    assert reads.unchanged({G}) == set()  # fired, not read in yet
    tick()  # read in (patched)
    assert reads.unchanged({G}) == set()
    tick()
    assert reads.unchanged({G}) == {G}

    other.create(f"/consumers/{G}/ids/g_b", json.dumps(REG).encode())  # one registers
    wait_for(lambda: _children_fired(reads), 10, 0.02, "its watch called")
    assert reads.unchanged({G}) == set()
    ids = ("g_a", "g_b")
    tick()  # read again whole (new ids)
    assert reads.unchanged({G}) == set()
    tick()
    assert reads.unchanged({G}) == {G}

    reader.watched_data.clear()  # a lost connection: every answer forgotten
    assert reads.unchanged({G}) == set()
