"""The groups under /consumers and those with old consumers (flows.zk_groups): derived
again only when a watch on a list that says who is there fired, or a forced sync asks."""

from __future__ import annotations

from types import SimpleNamespace

from kazoo.protocol.states import EventType, KeeperState, WatchedEvent

from bridge.flows import zk_groups
from bridge.flows.zk_groups import ZkGroups
from bridge.zookeeper import watched as watched_module
from bridge.zookeeper.watched import WatchedChildren


class _Reader:
    """The tree reader's two lists, counted: who is listed and registered per group."""

    def __init__(self) -> None:
        self.listing = ["a", "b", "skip"]
        self.ids = {"a": ["a_old-1"], "b": ["b_bridge-1"]}  # a group absent here: no /ids
        self.reads = 0
        self.asked: list[list[str]] = []  # the groups of each read
        self.watched: WatchedChildren | None = None

    def groups(self) -> list[str]:
        return self.listing

    def consumer_ids(self, groups):
        """As through the watched cache: an /ids that exists is held (its watch armed)."""
        self.reads += 1
        self.asked.append(list(groups))
        assert self.watched is not None
        for g in groups:
            if g in self.ids:
                self.watched._cache[f"/consumers/{g}/ids"] = self.ids[g]
        return {g: self.ids.get(g, []) for g in groups}


def _fire(watched: WatchedChildren, path: str) -> None:
    watched._fired(WatchedEvent(EventType.CHILD, KeeperState.CONNECTED, path))


def _world():
    reader = _Reader()
    zk = SimpleNamespace(chroot="", _child_watchers={})
    watched = WatchedChildren(zk)  # type: ignore[arg-type]
    reader.watched = watched
    sets = ZkGroups(reader, watched, lambda g: g != "skip")  # type: ignore[arg-type]
    owned = {"/consumers/b/ids/b_bridge-1"}  # the bridge's own registration
    return reader, watched, sets, owned


def test_old_consumers_are_derived_again_only_after_a_list_that_says_who_changed():
    reader, watched, sets, owned = _world()
    assert sets.listed() == (["a", "b"], frozenset({"a", "b"}))
    assert sets.with_old_consumers(owned) == {"a"}  # b's id is the bridge's own
    assert sets.with_old_consumers(owned) == {"a"} and reader.reads == 1
    _fire(watched, "/consumers/a/offsets/t")  # a commit's list: not who is there
    sets.with_old_consumers(owned)
    assert reader.reads == 1
    reader.ids["b"].append("b_old-2")
    _fire(watched, "/consumers/b/ids")  # an old consumer joined b
    assert sets.with_old_consumers(owned) == {"a", "b"} and reader.reads == 2
    watched.clear()  # a lost connection or a resync: derived again
    sets.with_old_consumers(owned)
    assert reader.reads == 3
    sets.with_old_consumers(owned, fresh=True)  # a forced sync
    assert reader.reads == 4


def test_a_new_listing_or_filter_is_applied_again():
    reader, watched, sets, owned = _world()
    sets.listed()
    reader.listing = ["a", "b", "c", "skip"]  # the cache read /consumers again: a new list
    assert sets.listed()[0] == ["a", "b", "c"]
    sets.filter = lambda g: g == "c"
    assert sets.listed()[0] == ["a", "b", "c"]  # the same listing, the filter not told
    sets.refilter()  # the shares held changed
    assert sets.listed()[0] == ["c"]
    assert sets.with_old_consumers(owned) == set()


def test_the_reconcile_forgets_answers_a_batch_a_tick_and_derives_again():
    """At 10,000 groups forgetting every answer at once made the next tick read about
    30,000 lists and records again (seconds, commits waiting): a batch per tick, and what
    was derived from a forgotten list is derived again."""
    reader, watched, sets, owned = _world()
    watched._cache.update({"/consumers/a/ids": ["a_old-1"], "/consumers/a/offsets": ["t"]})
    sets.listed()
    sets.with_old_consumers(owned)
    watched.expire()
    watched.expire()  # one under way is not started over
    watched.expire_some(1)  # /consumers/a/ids
    assert len(watched) == 2
    sets.with_old_consumers(owned)
    assert reader.reads == 2  # a list that says who is there was forgotten: derived again
    watched.expire_some(1)  # /consumers/a/offsets
    sets.with_old_consumers(owned)
    assert reader.reads == 2  # an offsets list: not who is there
    watched.expire_some(1)  # /consumers/b/ids
    sets.with_old_consumers(owned)
    assert reader.reads == 3


def test_an_ids_list_absent_when_read_is_read_again_each_tick():
    """ZooKeeper arms no watch on an absent node: an old consumer creating a group's /ids
    later fires nothing, so such a group's /ids is read again every tick (only it)."""
    reader, _watched, sets, owned = _world()
    reader.listing = ["a", "b", "c"]
    sets.listed()
    assert sets.with_old_consumers(owned) == {"a"}
    reads = reader.reads
    sets.with_old_consumers(owned)
    assert reader.reads == reads + 1  # c alone, read again
    reader.ids["c"] = ["c_old-1"]  # an old consumer registered: nothing fired
    assert sets.with_old_consumers(owned) == {"a", "c"}
    reads = reader.reads
    sets.with_old_consumers(owned)
    assert reader.reads == reads  # c's /ids now holds a watch: nothing read


def test_only_the_groups_listed_since_and_those_whose_ids_fired_are_read_again():
    """A cold start creates groups every tick: reading every group's /ids again each time
    grew with the groups written (18 % of its main thread at 10,000 groups)."""
    reader, watched, sets, owned = _world()
    sets.listed()
    assert sets.with_old_consumers(owned) == {"a"}
    assert reader.asked == [["a", "b"]]
    reader.listing = ["a", "b", "c", "skip"]
    reader.ids["c"] = ["c_old-1"]
    _fire(watched, "/consumers")
    sets.listed()
    assert sets.with_old_consumers(owned) == {"a", "c"}
    assert reader.asked[-1] == ["c"]
    reader.ids["a"] = []  # a's old consumer left
    _fire(watched, "/consumers/a/ids")
    assert sets.with_old_consumers(owned) == {"c"}
    assert reader.asked[-1] == ["a"]
    reader.listing = ["b", "c"]  # a deleted
    _fire(watched, "/consumers")
    sets.listed()
    reads = reader.reads
    assert sets.with_old_consumers(owned) == {"c"}
    assert reader.reads == reads  # nothing new to read


def test_a_cold_start_lists_consumers_at_most_once_a_second(monkeypatch):
    """During the term's first pass the bridge's own writes create groups under
    /consumers every tick: a listing that changed less than COLD_LIST_EVERY_S ago is
    served again without asking (at 10,000 groups, listing and deriving from it each tick was a
    tenth of the main thread); after it, or outside a first pass (the control), the new
    listing is taken, with every group created meanwhile. A refilter is not delayed."""
    clock = [100.0]
    monkeypatch.setattr(zk_groups.time, "monotonic", lambda: clock[0])
    reader, _watched, sets, _owned = _world()
    asked = []
    real = reader.groups
    reader.groups = lambda: (asked.append(1), real())[1]  # type: ignore[method-assign]
    assert sets.listed(cold=True)[0] == ["a", "b"]  # the first listing: asked
    reader.listing = ["a", "b", "c", "skip"]
    clock[0] += 0.5
    assert sets.listed(cold=True)[0] == ["a", "b"] and len(asked) == 1  # served again
    assert sets.listed()[0] == ["a", "b", "c"] and len(asked) == 2  # not cold: asked
    reader.listing = ["a", "b", "c", "d", "skip"]
    clock[0] += 0.5
    assert sets.listed(cold=True)[0] == ["a", "b", "c"] and len(asked) == 2
    clock[0] += 0.6  # a second after the last change
    assert sets.listed(cold=True)[0] == ["a", "b", "c", "d"] and len(asked) == 3
    clock[0] += 0.1
    sets.filter = lambda g: g == "d"
    sets.refilter()  # the shares held changed: applied at once
    assert sets.listed(cold=True)[0] == ["d"]


def test_the_reconcile_forgets_at_a_pace_in_time_not_per_tick(monkeypatch):
    """Under a commit load the flow ticks 30+ times a second: a batch per tick forgot
    30,000 answers in two seconds, every mixed group's nodes read again at once. By
    default ``expire_some`` forgets EXPIRE_PER_S a second however often it is called
    (at most a second's worth at once); an explicit count is taken as given."""
    clock = [50.0]
    monkeypatch.setattr(watched_module.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(watched_module, "EXPIRE_PER_S", 100)
    _reader, watched, _sets, _owned = _world()
    watched._cache.update({f"/consumers/g{i}/ids": [] for i in range(1000)})
    watched.expire()
    for _ in range(30):  # thirty ticks within 0.3 s: 30 answers, not 30 batches
        clock[0] += 0.01
        watched.expire_some()
    assert len(watched) == 1000 - 30
    clock[0] += 5.0  # a long pause: a second's worth, not five
    watched.expire_some()
    assert len(watched) == 1000 - 30 - 100
    watched.expire_some(7)
    assert len(watched) == 1000 - 137


def test_derives_says_beforehand_whether_the_old_consumers_are_read_again():
    """``derives`` (the flow lands a deferred write first when it says so: a member the
    bridge wrote is not to be taken for an old consumer) against what the next
    ``with_old_consumers`` actually reads, step by step."""
    reader, watched, sets, owned = _world()

    def step() -> None:
        before, reads = sets.derives(), reader.reads
        sets.with_old_consumers(owned)
        assert before == (reader.reads > reads)

    sets.listed()
    step()  # the first derivation
    step()  # nothing changed: no read, and derives said so
    _fire(watched, "/consumers/a/offsets/t")  # not who is there
    step()
    _fire(watched, "/consumers/b/ids")
    step()
    reader.listing = ["a", "b", "c"]  # a group appeared under /consumers
    _fire(watched, "/consumers")
    sets.listed()
    step()  # c has no /ids: unwatched, read again next time too
    step()
    reader.ids["c"] = []
    step()
    step()  # held now: nothing more to read
