"""Pages of a paged reconcile (flows.paging): about PAGE_OFFSETS offsets each, and the
groups flow's reader of Kafka reading a page's groups just before their decision."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

import zkpaths
from bridge.flows import kafka_groups
from bridge.flows import paging as flow
from bridge.kafka.views import GroupView, ListedGroup
from bridge.zookeeper.owned import VERIFY_EVERY_S, VERIFY_PAGE_NODES, OwnedTree
from bridge.zookeeper.verification import GroupsRead
from bridge.zookeeper.writer import Ledger, LedgerRead
from tests.conftest import wait_for


@given(st.lists(st.integers(0, 5000), max_size=300))
def test_pages_keep_order_and_bounds(sizes):
    names = [f"g{i:04d}" for i in range(len(sizes))]
    pages = flow.pages(names, dict(zip(names, sizes, strict=True)))
    assert [g for p in pages for g in p] == names  # every group once, in order
    for page in pages:
        held = sum(max(1, sizes[int(g[1:])]) for g in page)
        assert 1 <= len(page) <= flow.PAGE_GROUPS
        # a page closes at the first group that reaches the budget, never later
        assert held - max(1, sizes[int(page[-1][1:])]) < flow.PAGE_OFFSETS


def test_fleet_sized_groups_make_small_pages():
    names = [f"g{i}" for i in range(200)]
    pages = flow.pages(names, dict.fromkeys(names, 50))
    assert [len(p) for p in pages] == [40] * 5  # 2,000 offsets a page, not 10,000


def _views(sizes: dict[str, int]) -> dict[str, GroupView]:
    return {
        g: GroupView(g, "Empty", "consumer", None, offsets=dict.fromkeys(range(n), 0))
        for g, n in sizes.items()
    }


@given(st.lists(st.integers(0, 500), min_size=1, max_size=200), st.data())
def test_a_pass_takes_each_group_once_in_pages_of_its_known_sizes(sizes, data):
    """Against a reference made here: groups in order until the first that reaches the
    budget (or PAGE_GROUPS), sized by their views where known, else by the guess."""
    names = [f"g{i:03d}" for i in range(len(sizes))]
    known = _views({g: n for g, n in zip(names, sizes, strict=True) if data.draw(st.booleans())})
    one = flow.ReconcilePass(reversed(names))  # taken in order whatever the order given
    taken: list[list[str]] = []
    while not one.finished:
        taken.append(one.take(known))  # nothing read: unknown groups are FIRST_GUESS
    assert [g for p in taken for g in p] == names
    for i, page in enumerate(taken):
        held = [max(1, len(known[g].offsets)) if g in known else flow.FIRST_GUESS for g in page]
        assert 1 <= len(page) <= flow.PAGE_GROUPS
        assert sum(held[:-1]) < flow.PAGE_OFFSETS  # closed at the first reaching the budget
        if i < len(taken) - 1:  # and not before (or the page is full)
            assert sum(held) >= flow.PAGE_OFFSETS or len(page) == flow.PAGE_GROUPS


def test_a_pass_guesses_unread_groups_from_the_ones_it_read():
    """A cold start knows no group's size: the first page takes FIRST_GUESS offsets a
    group (20 groups), the next the mean of the groups read (50: 40 groups)."""
    names = [f"g{i:03d}" for i in range(120)]
    one = flow.ReconcilePass(names)
    first = one.take({})
    assert len(first) == flow.PAGE_OFFSETS // flow.FIRST_GUESS
    one.read(first, _views(dict.fromkeys(first, 50)))
    assert len(one.take({})) == flow.PAGE_OFFSETS // 50


class _Follower:
    """The follower's side the reader asks each tick: no records (assigned, quiet)."""

    assigned = True
    topic = "__consumer_offsets"
    direct = None

    def changed_groups(self, timeout_ms: int = 0) -> set[str]:
        return set()

    def take_reshaped(self) -> set[str]:
        return set()

    def take_echoes(self) -> dict:
        return {}

    def take_said(self) -> dict:
        return {}

    def take_direct(self) -> dict:
        return {}


@pytest.fixture
def cluster(monkeypatch):
    """The reader's Kafka calls answered from a dict of groups (name -> offsets held), each
    read recorded: the paging alone is tested here, against real brokers in
    tests/integration/test_offsets_trigger.py."""
    groups: dict[str, int] = {}
    reads: list[list[str]] = []

    def read_groups(admin, ids, types=None):
        reads.append(sorted(ids))
        return _views({g: groups[g] for g in ids if g in groups})

    monkeypatch.setattr(
        kafka_groups,
        "list_groups",
        lambda admin: {g: ListedGroup("consumer", "classic", "Empty") for g in groups},
    )
    monkeypatch.setattr(kafka_groups, "read_groups", read_groups)
    monkeypatch.setattr(kafka_groups, "partition_counts", lambda admin, topics=None: {})
    reader = kafka_groups.KafkaGroupsReader(None, lambda g: True, _Follower(), None, 3600)  # type: ignore[arg-type]
    reader._follows = lambda: True  # type: ignore[method-assign]
    return reader, groups, reads


def _page_read(reader) -> None:
    """Until the page's read on its own thread has ended."""
    deadline = time.monotonic() + 10
    while not reader._prefetch.ready():
        assert time.monotonic() < deadline, "the page's read did not end"
        time.sleep(0.001)


def test_a_cold_start_reads_kafka_a_page_per_tick(cluster):
    """At 10,000 groups the full read held the tick for 15-30 s (commits waited): every
    group is listed, then read a page at a time on a thread of its own, each decided in
    the tick after its read."""
    reader, groups, reads = cluster
    groups.update({f"g{i:03d}": 50 for i in range(120)})
    pic = reader.read()  # listed; the first page's read started
    assert not pic.views and pic.unread == set(groups)  # nothing decided before it is read
    _page_read(reader)
    pic = reader.read()
    assert reads[0] == sorted(groups)[:20]  # one page read, not every group
    assert set(pic.views) == set(reads[0]) == reader.reread_now == set(reader.page_now)
    assert pic.unread == set(groups) - set(reads[0])  # listed, not read: not decided yet
    while reader.reconciling():
        pic = reader.read()
    assert [len(r) for r in reads] == [20, 40, 40, 20]
    assert set(pic.views) == set(groups) and not pic.unread


def test_a_later_pass_is_paced_in_small_pages(cluster, monkeypatch):
    """The safety net's passes after the first: at 10,000 groups full pages back to back
    kept one under way 85 % of the time, each tick deciding 2,000 offsets beside the
    commits it was for. A later pass takes pages of BACKGROUND_PAGE_OFFSETS, at most one
    every BACKGROUND_EVERY_S; the first pass (the control) takes full pages back to back,
    without waiting."""
    monkeypatch.setattr(flow, "BACKGROUND_EVERY_S", 0.3)
    reader, groups, reads = cluster
    groups.update({f"g{i:03d}": 50 for i in range(60)})
    reader.read()
    while reader.reconciling():  # the first pass: full pages, not paced
        assert reader.first_pass()
        reader.read()
    assert [len(r) for r in reads] == [20, 40]
    reads.clear()
    taken: list[float] = []
    take = flow.ReconcilePass.take

    def timed(self, views):
        taken.append(time.monotonic())
        return take(self, views)

    monkeypatch.setattr(flow.ReconcilePass, "take", timed)
    assert reader.resync()
    reader.read()  # listed; its first page taken at once
    assert reader.reconciling() and not reader.first_pass() and len(taken) == 1
    while reader.reconciling():
        reader.read()
    assert [len(r) for r in reads] == [10] * 6  # 500 offsets a page
    gaps = [b - a for a, b in zip(taken, taken[1:], strict=False)]
    assert len(gaps) == 5 and min(gaps) >= 0.3 * 0.99


@pytest.mark.parametrize("touched", [True, False], ids=["checked", "negative-control"])
def test_a_group_read_while_its_page_was_read_is_not_taken_back_in_time(
    cluster, monkeypatch, touched
):
    """A page's read runs beside the ticks: a group of the page that a tick read meanwhile
    (its records) is newer there, so the page's tick reads it again instead of taking the
    page's view. Negative control: with nothing marked, the group's view goes back to the
    page's (older) read."""
    reader, groups, reads = cluster
    groups.update({f"g{i:03d}": 50 for i in range(40)})
    held, release = threading.Event(), threading.Event()
    read_groups = kafka_groups.read_groups

    def slow_page(admin, ids, types=None):
        views = read_groups(admin, ids, types)  # as of now
        if threading.current_thread().name.startswith("page-read"):
            held.set()
            release.wait(10)
        return views

    monkeypatch.setattr(kafka_groups, "read_groups", slow_page)
    if not touched:
        monkeypatch.setattr(reader._prefetch, "touched", lambda groups: None)
    reader.read()  # the first page's read starts, and is held
    assert held.wait(10)
    groups["g005"] = 60  # committed again: its records name it
    reader.dirty.add("g005")
    assert len(reader.read().views["g005"].offsets) == 60  # read by this tick
    release.set()
    _page_read(reader)
    pic = reader.read()  # the page's tick
    assert "g005" in reader.page_now
    assert len(pic.views["g005"].offsets) == (60 if touched else 50)


def _loaded_tree(groups: int, partitions: int) -> tuple[list[str], OwnedTree]:
    """An owned tree whose term's first read is done, owning ``partitions`` offset nodes of
    each of ``groups`` groups (only its paging is used: no ZooKeeper)."""
    ledger = Ledger("/kafka-zk-bridge")
    names = [f"g{i:03d}" for i in range(groups)]
    for g in names:
        for p in range(partitions):
            ledger.owned.add(zkpaths.offset_path(g, "t", p))
    tree = OwnedTree(None, SimpleNamespace(ledger=ledger), ("/consumers",), print)  # type: ignore[arg-type]
    tree.loaded = True
    return names, tree


def test_a_resync_during_a_verification_waits_for_it_to_finish():
    """The same for the owned tree's background verification: at 10,000 groups each resync
    started it over at its first page. A resync under way is deferred (groups taken over
    meanwhile are queued after it); once the last page is read the next one is queued."""
    names, tree = _loaded_tree(120, 50)
    assert tree.resync(flow.pages) is True
    first = tree.verifying.pop(0)  # one page verified
    assert tree.resync(flow.pages) is False and tree.verifying[0] != first  # not started over
    tree.take_over(["taken"])
    assert tree.resync(flow.pages) is False and tree.verifying[-1] == ["taken"]
    seen = set(first)
    while tree.verifying:
        seen |= set(tree.verifying.pop(0))
    assert seen == {*names, "taken"}  # every group reached
    assert tree.resync(flow.pages) is True and tree.verifying[0] == first


def _recording(tree: OwnedTree, read: list[list[str]], gate: threading.Event | None = None):
    """``tree`` reads its pages into ``read`` (nothing found); off the test's thread, after
    ``gate`` if given."""

    def fake(page: list[str]) -> GroupsRead:
        if gate is not None and threading.current_thread() is not threading.main_thread():
            assert gate.wait(10)
        read.append(list(page))
        return GroupsRead(list(page), LedgerRead(set(), set()), {})

    tree.read_groups = fake  # type: ignore[method-assign]


def _read_ended(tree: OwnedTree) -> None:
    """Until the page under way (if any) was read on its thread."""
    prefetch = tree.verify_read
    wait_for(lambda: not prefetch.pending or prefetch.ready(), 10, 0.005, "the page's read")


def test_verification_pages_are_small_and_paced():
    """Pages of 2,000 offsets back to back took 78 % of an idle bridge's main thread at
    10,000 groups: a page holds about VERIFY_PAGE_NODES nodes, and one is read at most
    every VERIFY_EVERY_S; the term's first pass reads only the groups still pending."""
    _, tree = _loaded_tree(20, 100)
    read: list[list[str]] = []
    _recording(tree, read)
    tree.resync(flow.pages)
    assert max(len(p) for p in tree.verifying) <= VERIFY_PAGE_NODES // 100 + 1
    for now in (10.0, 10.0 + VERIFY_EVERY_S / 2, 10.0 + VERIFY_EVERY_S * 1.01):
        tree.verify_page(now=now)
        _read_ended(tree)
    assert len(read) == 2  # the second call came too soon
    # the term's first pass: a group read at its first decision is not read again
    fresh = OwnedTree(None, SimpleNamespace(ledger=Ledger("/r")), ("/consumers",), print)  # type: ignore[arg-type]
    _recording(fresh, read)
    fresh.loaded, fresh._first_pass = True, True
    fresh.pending, fresh.verifying = {"b"}, [["a", "b"], ["c"]]
    fresh.verify_page(now=1.0)
    _read_ended(fresh)
    fresh.verify_page(now=2.0)
    assert read[-1] == ["b"] and not fresh.pending and not fresh._first_pass
    assert not fresh.verify_read.pending  # "c" was read at its first decision


def test_a_page_is_read_off_the_tick_and_what_the_tick_touched_meanwhile_is_read_again():
    """A page is read on its own thread (the tick goes on meanwhile) and compared by the
    tick after the read ended; a group the tick wrote or read again meanwhile is not
    taken from that older read but queued for a later page. A read that failed is queued
    again whole."""
    _, tree = _loaded_tree(4, 1)
    read: list[list[str]] = []
    gate = threading.Event()
    _recording(tree, read, gate)
    tree.verifying = [["g000", "g001"], ["g002"]]
    tree.verify_page(now=1.0)
    tree.verify_page(now=9.0)  # still reading: nothing compared, nothing more started
    assert tree.verify_read.pending and read == [] and tree.verifying == [["g002"]]
    adopted: list[list[str]] = []
    tree._adopt_groups = lambda r: adopted.append(r.groups)  # type: ignore[method-assign]
    tree.reload(["g001"])  # the tick read g001 again meanwhile (adopted at once)
    gate.set()
    _read_ended(tree)
    tree.verify_page(now=9.0)
    assert adopted == [["g001"], ["g000"]]  # g001 from the tick's read, not the page's
    assert tree.verifying == [["g001"]] and tree.verify_read.pending  # g002 under way

    def failing(page: list[str]) -> GroupsRead:
        raise ConnectionError("ZooKeeper went away")

    _read_ended(tree)
    tree.read_groups = failing  # type: ignore[method-assign]
    tree.verify_page(now=20.0)  # g002 compared, g001's read starts and fails
    _read_ended(tree)
    tree.verify_page(now=20.0)
    assert adopted[-1] == ["g002"] and tree.verifying == [["g001"]]


def test_markers_of_nodes_without_children_are_not_listed():
    """A page reads each marker's data and lists its children; the legacy layout's leaves
    (ids/<id>, owners/<t>/<p>, offsets/<t>/<p>) have none below them, nor their markers."""
    ledger = Ledger("/kafka-zk-bridge")
    leaves = [
        zkpaths.offset_path("g", "t", 3),
        zkpaths.owner_path("g", "t", 3),
        "/consumers/g/ids/g_host-1-abc",
    ]
    inner = ["/consumers", "/consumers/g", "/consumers/g/ids", "/consumers/g/offsets/t", "/"]
    inner += ["/consumers/ids/offsets/x", "/brokers/ids/1"]
    assert all(ledger._leaf(ledger.marker(p)) for p in leaves)
    assert not any(ledger._leaf(ledger.marker(p)) for p in inner)


def test_a_group_the_pages_read_failed_for_is_read_by_the_pages_tick(cluster, monkeypatch):
    """A group whose view in the page's read is an error (its coordinator moved, a
    timeout) is read again by the tick that decides the page, as any group whose read
    failed: it is not left out of the pass."""
    reader, groups, reads = cluster
    groups.update({f"g{i:03d}": 50 for i in range(10)})
    read_groups = kafka_groups.read_groups

    def failing_once(admin, ids, types=None):
        views = read_groups(admin, ids, types)
        if threading.current_thread().name.startswith("page-read") and "g003" in views:
            views["g003"] = GroupView("g003", "Unknown", "", None, error="coordinator moved")
        return views

    monkeypatch.setattr(kafka_groups, "read_groups", failing_once)
    reader.read()
    _page_read(reader)
    pic = reader.read()
    assert reads[-1] == ["g003"]  # read again by the page's tick itself
    assert "g003" in reader.page_now and not pic.views["g003"].error
    assert "g003" not in pic.unread


def test_the_periodic_listing_is_made_off_the_tick(cluster, monkeypatch):
    """Between passes ListGroups is made every full_interval_s (a group the records
    missed, or one gone, is read again); at 10,000 groups it held the tick 90-130 ms
    every second. It runs on a thread of its own now, and the tick after it ended asks
    the group it found: not the tick that started it (the control: the tick's thread never
    lists)."""
    reader, groups, reads = cluster
    groups.update({"a": 1})
    listed_on: list[str] = []
    real = kafka_groups.list_groups

    def listing(admin):
        listed_on.append(threading.current_thread().name)
        return real(admin)

    monkeypatch.setattr(kafka_groups, "list_groups", listing)
    reader.full_interval_s = 0.05
    pic = reader.read()
    while reader.reconciling():
        pic = reader.read()
    assert set(pic.views) == {"a"}
    groups["b"] = 1  # created, and no record of it followed
    reads.clear()
    deadline = time.monotonic() + 10
    while "b" not in reader.read().views:
        assert time.monotonic() < deadline, "the listing's group was not read"
        time.sleep(0.01)
    assert reads[-1] == ["b"]  # read by the tick after the listing ended
    assert len(listed_on) >= 2 and threading.main_thread().name not in listed_on[1:]
    reader.close()
