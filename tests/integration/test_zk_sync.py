"""The forced-sync handshake and the bridge's own-state writes, on a real ZooKeeper.

The answer is written behind the epoch check (I3): a deposed bridge's answer is refused as a
whole, and the operator's request survives for the new active bridge to answer.
"""

from __future__ import annotations

import threading

import pytest
from kazoo.client import KazooClient

from bridge.decide.migration import StorageMode
from bridge.zookeeper import sync
from bridge.zookeeper.fence import Fenced, claim_epoch
from bridge.zookeeper.records import create_record, read_records
from bridge.zookeeper.writer import FencedWriter, Ledger
from tests.conftest import wait_for
from zkpaths import TopicPartition

pytestmark = pytest.mark.integration

ROOT = "/kzb"


def _writer(zk: KazooClient, holder: str) -> FencedWriter:
    return FencedWriter(zk, claim_epoch(zk, f"{ROOT}/epoch", holder), Ledger(ROOT))


def _ask(zk: KazooClient, timeout_s: float) -> tuple[threading.Thread, list]:
    """``request_sync`` as ``zk-bridge migrate`` runs it, in a thread; its result in the list."""
    got: list = []
    thread = threading.Thread(
        target=lambda: got.append(sync.request_sync(zk, ROOT, "g", timeout_s))
    )
    thread.start()
    wait_for(lambda: "g" in sync.pending_requests(zk, ROOT), 5, what="the request")
    return thread, got


def test_request_answer_evaluate(zk: KazooClient) -> None:
    bridge = _writer(zk, "a")
    thread, got = _ask(zk, 10)
    request = sync.pending_requests(zk, ROOT)["g"]
    after = {TopicPartition("t", 1): (5, -1), TopicPartition("t", 0): (3, 4)}
    assert sync.answer(bridge, ROOT, "g", request, after)
    thread.join()
    assert got[0].request == request[0] and got[0].offsets == after
    assert sync.pending_requests(zk, ROOT) == {}  # retired with the answer
    # an answer to a request replaced meanwhile is not written; the newer one stays open
    thread, got = _ask(zk, 0.5)
    stale = sync.pending_requests(zk, ROOT)["g"]
    zk.set(sync.request_path(ROOT, "g"), b"newer")
    assert not sync.answer(bridge, ROOT, "g", stale, {})
    thread.join()
    assert got == [None] and sync.pending_requests(zk, ROOT)["g"][0] == "newer"
    # nothing of the bridge's own state enters the ownership ledger (the legacy tree's)
    assert zk.exists(f"{ROOT}/owned") is None


def test_a_deposed_bridge_cannot_answer_or_record(zk: KazooClient) -> None:
    old = _writer(zk, "old")
    _writer(zk, "new")  # takes over: the epoch moved
    thread, _got = _ask(zk, 0.5)
    request = sync.pending_requests(zk, ROOT)["g"]
    with pytest.raises(Fenced):
        sync.answer(old, ROOT, "g", request, {})
    thread.join()
    assert sync.pending_requests(zk, ROOT) == {"g": request}  # still open for the new one
    assert zk.exists(sync.result_path(ROOT, "g")) is None
    with pytest.raises(Fenced):
        create_record(old, ROOT, "g", StorageMode.ZOOKEEPER, "bridge (inferred)", 1)
    assert read_records(zk, ROOT) == {}


def test_records_are_created_once_behind_the_fence(zk: KazooClient) -> None:
    bridge = _writer(zk, "a")
    create_record(bridge, ROOT, "g", StorageMode.DUAL, "bridge (inferred)", 1)
    create_record(bridge, ROOT, "g", StorageMode.KAFKA, "bridge (inferred)", 2)  # exists: kept
    records = read_records(zk, ROOT)
    assert {g: (r.mode, v) for g, (r, v) in records.items()} == {"g": (StorageMode.DUAL, 0)}
