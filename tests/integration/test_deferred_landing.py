"""A cold start's page lands while the next one is decided (``OwnedTree.write(defer=True)``,
``OwnedTree.land``), on a real ZooKeeper.

The answers of a deferred write are taken before anything reads what it wrote (its
groups' owned nodes) or anything more is planned, and a batch refused meanwhile is retried
group by group as any refused write. The controls: a group not written stays as it was
read, and the write's answers are really pending until then (known does not hold them).
"""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient

import zkpaths
from bridge.decide.plan import Create, Desired
from bridge.zookeeper.fence import claim_epoch
from bridge.zookeeper.owned import OwnedTree
from bridge.zookeeper.writer import BatchRejected, FencedWriter, Ledger

pytestmark = pytest.mark.integration

ROOT = "/kzb-landing"


def _desired(group: str, offsets: dict[int, int]) -> dict[str, Desired]:
    """A group's offset nodes and the directories above them."""
    structural = Desired(structural=True)
    out = dict.fromkeys(
        [
            zkpaths.CONSUMERS,
            zkpaths.consumer_group_path(group),
            zkpaths.offsets_path(group),
            f"{zkpaths.offsets_path(group)}/t",
        ],
        structural,
    )
    for p, value in offsets.items():
        out[zkpaths.offset_path(group, "t", p)] = Desired(zkpaths.encode_offset(value))
    return out


@pytest.fixture
def tree(zk: KazooClient) -> tuple[OwnedTree, list]:
    reports: list = []
    writer = FencedWriter(zk, claim_epoch(zk, f"{ROOT}/epoch", "t"), Ledger(ROOT))
    owned = OwnedTree(zk, writer, ("/consumers",), lambda *r: reports.append(r))
    owned.resync(lambda groups, sizes, budget: [groups] if groups else [])
    return owned, reports


def test_a_deferred_page_lands_before_its_groups_are_read_or_more_is_written(zk, tree, topic_name):
    owned, _ = tree
    a, b = topic_name("a"), topic_name("b")
    first = _desired(a, {0: 5, 1: 6})
    assert owned.write(first, set(), set(), {a}, defer=True) > 0
    path = zkpaths.offset_path(a, "t", 0)
    assert path not in owned.known  # its answers are not taken yet (the control)
    assert owned.of_groups([b]) == set()  # another group's nodes: no need to land
    assert path not in owned.known
    # the next page's write lands the first one before planning (the shared parents'
    # markers exist once: planned on a stale ledger, its batch would be refused)
    second = _desired(b, {0: 7})
    assert owned.write(second, set(), set(), {b}, defer=True) > 0
    assert path in owned.known and path in owned.writer.ledger.owned
    assert owned.of_groups([b]) >= {zkpaths.offset_path(b, "t", 0)}  # a's group asked: landed
    assert zk.get(zkpaths.offset_path(b, "t", 0))[0] == b"7"
    assert zk.get(path)[0] == b"5"


def test_a_deferred_batch_refused_is_retried_group_by_group(zk, tree, topic_name):
    owned, reports = tree
    a, b = topic_name("a"), topic_name("b")
    desired = _desired(a, {0: 1}) | _desired(b, {0: 2})
    owned.write(desired, set(), set(), {a, b}, defer=True)
    owned.land()
    # b's offset node changed by someone else since it was written: a deferred write of
    # both groups is refused as a batch, and at landing the groups are read again and
    # written one by one (as a refused write that was waited for)
    zk.set(zkpaths.offset_path(b, "t", 0), b"9")
    again = _desired(a, {0: 3}) | _desired(b, {0: 4})
    owned.write(again, set(), owned.of_groups([a, b]), {a, b}, defer=True)
    assert owned.known[zkpaths.offset_path(a, "t", 0)].data == b"1"  # not landed yet
    owned.land()
    for group, value in ((a, b"3"), (b, b"4")):
        path = zkpaths.offset_path(group, "t", 0)
        data, stat = zk.get(path)
        assert data == value
        assert owned.known[path].version == stat.version  # known agrees with ZooKeeper
    assert not reports  # a refused batch is retried, not reported as a conflict


@pytest.mark.parametrize("lands", [True, False], ids=["landed", "negative-control"])
def test_another_write_on_the_writer_lands_the_deferred_one_first(zk, tree, topic_name, lands):
    """The registry flow writes with the same writer: its batch is sent only after the
    groups flow's deferred write landed (``FencedWriter.in_flight``), so neither is built
    on a ledger without the other's markers. Control: left in flight, the registry's
    batch is refused (what a bridge logged at every term's start: "registry batch
    rejected (Create /brokers rejected: NodeExistsError)")."""
    owned, _ = tree
    a = topic_name("a")
    owned.write(_desired(a, {0: 5}), set(), set(), {a}, defer=True)
    if not lands:
        owned.writer.in_flight = None
    registry: dict = {}
    ops = [Create("/brokers", b""), Create("/brokers/ids", b"")]
    if not lands:
        with pytest.raises(BatchRejected, match="NodeExists"):
            owned.writer.apply(ops, registry)
        return
    owned.writer.apply(ops, registry)
    path = zkpaths.offset_path(a, "t", 0)
    assert owned._landing is None
    assert path in owned.known and path in owned.writer.ledger.owned
    assert "/brokers/ids" in registry and "/brokers/ids" in owned.writer.ledger.owned
    assert zk.get(path)[0] == b"5"
