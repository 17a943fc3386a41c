"""Reads of absent nodes leave no reference cycle behind (``bridge.zookeeper.answers``).

A failed read raised by ``result.get()`` ties the reading frame, its traceback and the
async result into a cycle that only a full collection frees, with everything the frame
held. Each check reads absent nodes on a real ZooKeeper with the collector's findings
saved (``DEBUG_SAVEALL``) and looks for a frame of the reading function among them. The
negative control reads the old way and must be found.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator

import pytest
from kazoo.exceptions import NoNodeError

from bridge.zookeeper.reader import ConsumerTreeReader
from bridge.zookeeper.watched import WatchedChildren, WatchedData
from bridge.zookeeper.writer import Ledger, children, read_nodes

pytestmark = pytest.mark.integration

ABSENT = [f"/consumers/nobody-{i}/offsets/t/0" for i in range(20)]


def frames_left(read: Callable[[], object]) -> Iterator[str]:
    """Names of the functions whose frames the collector found unreachable after ``read``
    (and nothing else run meanwhile on this thread)."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        read()
        gc.collect()
        names = [o.f_code.co_name for o in gc.garbage if type(o).__name__ == "frame"]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    return iter(names)


def old_read_nodes(zk, paths):
    """The negative control: absent nodes skipped by catching the raised error."""
    pending = [(p, zk.get_async(p)) for p in paths]
    out = {}
    for path, result in pending:
        try:
            out[path] = result.get()
        except NoNodeError:
            continue
    return out


def test_the_old_way_leaves_its_frame_in_a_cycle(zk) -> None:
    assert "old_read_nodes" in set(frames_left(lambda: old_read_nodes(zk, ABSENT)))


def test_the_writers_reads_leave_none(zk) -> None:
    zk.ensure_path("/consumers/here")
    assert read_nodes(zk, ABSENT + ["/consumers/here"]).keys() == {"/consumers/here"}
    left = set(frames_left(lambda: read_nodes(zk, ABSENT)))
    left |= set(frames_left(lambda: children(zk, ABSENT)))
    assert not left & {"read_nodes", "children", "answer"}


def test_the_ledgers_walk_leaves_none(zk) -> None:
    ledger = Ledger("/zkbridge")
    left = set(frames_left(lambda: ledger.load(zk, ["/consumers/nobody"], ABSENT[:5])))
    assert "load" not in left
    assert not ledger.owned


def test_the_readers_and_caches_leave_none(zk) -> None:
    reader = ConsumerTreeReader(zk)
    data, lists = WatchedData(zk), WatchedChildren(zk)
    assert reader.pipelined("get", ABSENT) == {}
    assert data.get(ABSENT) == {}
    assert lists.children(ABSENT) == {p: [] for p in ABSENT}
    left = set(frames_left(lambda: reader.pipelined("get", ABSENT)))
    left |= set(frames_left(lambda: data.get(ABSENT)))
    left |= set(frames_left(lambda: lists.children(ABSENT)))
    assert not left & {"pipelined", "_read", "get", "children", "answer"}
