"""I3 on the real ZooKeeper: a bridge that lost its epoch cannot write, not even once."""

from __future__ import annotations

import os
import signal
import time

import pytest
from kazoo.client import KazooClient

from bridge.decide.acl import AclPolicy
from bridge.decide.plan import Create, Delete, Node, SetData
from bridge.zookeeper.acl import repair_acls
from bridge.zookeeper.fence import Fenced, claim_epoch
from bridge.zookeeper.writer import FencedWriter, Ledger
from tests.conftest import wait_for

pytestmark = pytest.mark.integration

ROOT = "/kafka-zk-bridge"


def test_a_deposed_writer_has_every_batch_rejected(stack, chroot):
    a, b = KazooClient(stack.zk_connect + chroot), KazooClient(stack.zk_connect + chroot)
    a.start()
    b.start()
    try:
        old = FencedWriter(a, claim_epoch(a, f"{ROOT}/epoch", "a"), Ledger(ROOT))
        known: dict[str, Node] = {}
        old.apply([Create("/brokers", b""), Create("/brokers/ids", b"")], known)
        assert a.exists("/brokers/ids")

        new_epoch = claim_epoch(b, f"{ROOT}/epoch", "b")  # a successor takes over
        assert new_epoch.value == old.epoch.value + 1

        with pytest.raises(Fenced):
            old.apply([Create("/brokers/ids/1", b"zombie", ephemeral=True)], known)
        with pytest.raises(Fenced):
            old.apply([SetData("/brokers/ids", b"zombie", known["/brokers/ids"].version)], known)
        assert not a.exists("/brokers/ids/1")
        assert a.get("/brokers/ids")[0] == b""
        assert not a.exists(f"{ROOT}/owned/brokers/ids/1")  # the ledger did not move either
        # the ACL repair records its policy through the fenced writer too
        policy = AclPolicy(None, ROOT)
        with pytest.raises(Fenced):
            repair_acls(a, policy, old)
        assert not a.exists(f"{ROOT}/acl")

        successor = FencedWriter(b, new_epoch, Ledger(ROOT))
        successor.ledger.load(b, ["/brokers"])
        successor.apply([Create("/brokers/ids/2", b"ok", ephemeral=True)], {})
        assert b.exists("/brokers/ids/2")
        assert not repair_acls(b, policy, successor).skipped
        assert b.get(f"{ROOT}/acl")[0] == policy.fingerprint().encode()
        assert repair_acls(b, policy, successor).skipped  # recorded: not done again
    finally:
        a.stop()
        b.stop()


def test_paused_leader_is_replaced_and_steps_down_on_resume(stack, zk, start_bridge):
    """SIGSTOP the active bridge past its session: the standby takes over within the session
    timeout plus a little; the resumed zombie writes nothing and goes back to waiting."""
    env = {"ZK_BRIDGE__ZOOKEEPER__SESSION_TIMEOUT_S": "4"}
    first = start_bridge(env=env)
    wait_for(lambda: zk.exists("/brokers/ids/1"), 30, what="first bridge leading")
    second = start_bridge(env=env)
    time.sleep(2)
    assert "claimed bridge epoch" not in second.text()  # a standby waits its turn

    os.kill(first.proc.pid, signal.SIGSTOP)
    paused_at = time.monotonic()
    try:
        wait_for(lambda: "claimed bridge epoch" in second.text(), 30, 0.1, "standby takeover")
        takeover = time.monotonic() - paused_at
        wait_for(lambda: zk.exists("/brokers/ids/1"), 15, what="registry re-created")
        owner = zk.exists("/brokers/ids/1").ephemeralOwner
    finally:
        os.kill(first.proc.pid, signal.SIGCONT)
    print(f"\nstandby took over {takeover:.1f} s after the leader froze (session timeout 4 s)")
    assert takeover < 4 + 6
    time.sleep(5)  # the zombie wakes up with a stale view and its old epoch
    log = first.text()
    assert "session lost" in log or "deposed" in log, log[-2000:]
    assert zk.exists("/brokers/ids/1").ephemeralOwner == owner  # still the successor's
    assert first.proc.poll() is None, "the old leader keeps running as a standby"
    epoch = zk.get("/kafka-zk-bridge/epoch")[0]
    assert b'"epoch": 2' in epoch or b'"epoch":2' in epoch


def test_a_node_recreated_in_one_batch_stays_in_the_ledger(stack, chroot):
    """Ephemeral -> persistent (an old consumer joins a mirrored group) is a Delete and a
    Create of one path in one batch; the node must still be the bridge's afterwards (I4),
    or the next pass would take the bridge's own mirrored id for an old consumer."""
    zk = KazooClient(stack.zk_connect + chroot)
    zk.start()
    try:
        writer = FencedWriter(zk, claim_epoch(zk, f"{ROOT}/epoch", "a"), Ledger(ROOT))
        known: dict[str, Node] = {}
        path = "/consumers/g/ids/g_~~m1"
        zk.ensure_path("/consumers/g/ids")
        writer.apply([Create(path, b"{}", ephemeral=True)], known)
        assert zk.exists(path).ephemeralOwner
        writer.apply([Delete(path, known[path].version), Create(path, b"{}")], known)
        assert not zk.exists(path).ephemeralOwner  # persistent now
        fresh = Ledger(ROOT)  # what a successor (or the next resync) reads
        fresh.load(zk, ["/consumers"])
        assert path in fresh.owned
        # and back: persistent -> ephemeral
        writer.apply(
            [Delete(path, known[path].version), Create(path, b"{}", ephemeral=True)], known
        )
        fresh = Ledger(ROOT)
        fresh.load(zk, ["/consumers"])
        assert path in fresh.owned and zk.exists(path).ephemeralOwner
    finally:
        zk.stop()


def test_the_ledger_in_memory_is_the_ledger_in_zookeeper_and_holds_each_path_once(stack, chroot):
    """After creates and deletes, the ledger the writer keeps is what a successor reads
    (I4); the owned paths' markers are not kept a second time (inner holds only the
    parents, however many offsets), and the owned set holds the planned path itself."""
    zk = KazooClient(stack.zk_connect + chroot)
    zk.start()
    try:
        writer = FencedWriter(zk, claim_epoch(zk, f"{ROOT}/epoch", "a"), Ledger(ROOT))
        known: dict[str, Node] = {}
        zk.ensure_path("/consumers/g/offsets/t")
        zk.ensure_path("/consumers/g/ids")
        offsets = [f"/consumers/g/offsets/t/{p}" for p in range(50)]
        writer.apply(
            [Create(p, b"1") for p in offsets] + [Create("/consumers/g/ids/x", b"")], known
        )
        writer.apply([Delete(offsets[7], known[offsets[7]].version)], known)
        writer.apply([Create("/consumers/g/offsets/t/50", b"1")], known)
        fresh = Ledger(ROOT)
        fresh.load(zk, ["/"])
        assert set(fresh.owned) == set(writer.ledger.owned)
        assert (
            set(fresh.inner)
            == set(writer.ledger.inner)
            == {
                "",
                "/consumers",
                "/consumers/g",
                "/consumers/g/offsets",
                "/consumers/g/offsets/t",
                "/consumers/g/ids",
            }
        )
        assert offsets[7] not in writer.ledger.owned and not writer.ledger.has_marker(offsets[7])
        assert all(writer.ledger.has_marker(p) for p in offsets if p != offsets[7])
        kept = {p: p for p in writer.ledger.owned}
        assert kept[offsets[3]] is offsets[3]  # the plan's string, not a copy of it
    finally:
        zk.stop()
