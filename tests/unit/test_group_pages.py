"""Pages of a paged reconcile (flows.kafka_groups.pages): about PAGE_OFFSETS offsets each."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

import zkpaths
from bridge.flows import kafka_groups as flow
from bridge.zookeeper.owned import VERIFY_EVERY_S, VERIFY_PAGE_NODES, OwnedTree
from bridge.zookeeper.writer import Ledger


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


def test_a_resync_during_a_paged_reconcile_waits_for_it_to_finish():
    """At fleet size a reconcile outlasted bridge.resync_interval_s (2,000 groups x 50
    offsets: about 3 minutes against 60 s) and every resync started it over, so the groups
    of its last pages were never reconciled. A resync under way is deferred; once the last
    page is done the next one is taken."""
    reader = flow.KafkaGroupsReader(None, lambda g: True, None, None, 1.0)  # type: ignore[arg-type]
    reader.picture = marker = object()  # type: ignore[assignment]
    names = {f"g{i:03d}" for i in range(120)}
    sizes = dict.fromkeys(names, 50)
    reader._pages, reader._paging = [], (0.0, 0, 0.0)  # as a full read leaves them
    done = set(reader.next_page(names, sizes))
    assert len(done) == 40 and reader.reconciling()
    assert reader.resync() is False and reader.picture is marker  # not started over
    while reader.reconciling():
        done |= reader.next_page(names, sizes)
    assert done == names  # every group reached
    assert reader.resync() is True and reader.picture is None  # the next pass is asked for


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


def test_verification_pages_are_small_and_paced():
    """Pages of 2,000 offsets back to back took 78 % of an idle bridge's main thread at
    10,000 groups: a page holds about VERIFY_PAGE_NODES nodes, and one is verified at most
    every VERIFY_EVERY_S; the term's first pass reads only the groups still pending."""
    _, tree = _loaded_tree(20, 100)
    read: list[list[str]] = []
    tree.reload = read.append  # type: ignore[method-assign]
    tree.resync(flow.pages)
    assert max(len(p) for p in tree.verifying) <= VERIFY_PAGE_NODES // 100 + 1
    for now in (10.0, 10.0 + VERIFY_EVERY_S / 2, 10.0 + VERIFY_EVERY_S * 1.01):
        tree.verify_page(now=now)
    assert len(read) == 2  # the second call came too soon
    # the term's first pass: a group read at its first decision is not read again
    fresh = OwnedTree(None, SimpleNamespace(ledger=Ledger("/r")), ("/consumers",), print)  # type: ignore[arg-type]
    fresh.reload = read.append  # type: ignore[method-assign]
    fresh.loaded, fresh._first_pass = True, True
    fresh.pending, fresh.verifying = {"b"}, [["a", "b"], ["c"]]
    fresh.verify_page(now=1.0)
    fresh.verify_page(now=2.0)
    assert read[-2:] == [["b"], []] and not fresh._first_pass


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
