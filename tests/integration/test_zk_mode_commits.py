"""Groups in storage mode ``zookeeper``: their offsets go into Kafka in one transaction a tick.

The groups flow copies every zookeeper-mode group's ZooKeeper offsets into Kafka with a
TxnOffsetCommit. One transaction (and one wait for OffsetFetch to show it) per group made a
tick seconds long once a few dozen old-consumer groups committed: bench.fleet measured
commit in ZooKeeper -> Kafka p99 23 s for 20 groups at 1,000 offset writes/s, 5.8 s with
one transaction a tick (docs/benchmarks.md). Here, one flow driven by hand: several
stopped groups (offsets only in ZooKeeper, as old consumers leave them) are all in Kafka
after one tick, from one transaction; the control is the same tick's offsets read back,
every group and partition.

An old consumer's commit wakes the flow through a data watch on its offset node (a tick
reads only the nodes whose watch fired): with a 30 s poll interval a commit is in Kafka
within seconds; and a watch whose event never arrives is caught by the full reconcile.
"""

from __future__ import annotations

import time

import pytest
from kazoo.client import KazooClient

import zkpaths
from bench import create_topic
from bridge.flows import groups as groups_flow
from bridge.flows.groups import GroupMirrorFlow
from bridge.kafka.commit import OffsetCommitter
from bridge.kafka.groups import GroupFilter
from bridge.kafka.proxy import PROXY_CLIENT_ID
from bridge.zookeeper.fence import claim_epoch
from bridge.zookeeper.writer import FencedWriter, Ledger
from tests.conftest import wait_for
from tests.integration.test_group_mirror import register_old_consumer
from tests.integration.test_ops import free_port, metric

pytestmark = pytest.mark.integration

ROOT = "/kzb"
GROUPS = 4


class CountingCommitter(OffsetCommitter):
    """The real committer, keeping the groups of each of its transactions."""

    transactions: list[set[str]]

    def _transact(self, per_group) -> None:
        self.transactions.append(set(per_group))
        super()._transact(per_group)


def test_zookeeper_mode_groups_commit_in_one_transaction(
    stack, zk: KazooClient, admin, topic_name, chroot
):
    topic = topic_name("t")
    create_topic(admin, topic, 2)
    groups = [topic_name(f"g{i}") for i in range(GROUPS)]
    want = {g: {0: 10 + i, 1: 20 + i} for i, g in enumerate(groups)}
    for g, offsets in want.items():
        for p, o in offsets.items():
            zk.create(zkpaths.offset_path(g, topic, p), str(o).encode(), makepath=True)
    committer = CountingCommitter(
        admin, {"bootstrap_servers": stack.bootstrap_servers}, f"test-zk-mode:{chroot}"
    )
    writer = FencedWriter(zk, claim_epoch(zk, f"{ROOT}/epoch", "t"), Ledger(ROOT))
    flow = GroupMirrorFlow(zk, admin, writer, GroupFilter(groups), root=ROOT, committer=committer)
    committer.transactions = []
    flow.resync()

    def kafka() -> dict[str, dict[int, int]]:
        got = admin.list_group_offsets(dict.fromkeys(groups))
        return {
            g: {tp.partition: om.offset for tp, om in got.get(g, {}).items() if om.offset >= 0}
            for g in groups
        }

    try:
        # every group's offsets are copied by the first tick that knows the topic and
        # reads the groups (a group whose DescribeGroups failed goes in a later one)
        wait_for(lambda: flow.tick() is not None and kafka() == want, 60, what="the copies")
        assert set().union(*committer.transactions) == set(groups)
        sizes = [len(t) for t in committer.transactions]
        assert max(sizes) > 1, f"a transaction per group: {sizes}"
        assert all(r.mode.value == "zookeeper" for r, _ in flow.records.values())
    finally:
        committer.close()
        admin.delete_topics([topic])


def test_a_transaction_of_many_groups_commits_every_group(stack, admin, topic_name, chroot):
    """One transaction carries 40 groups' offsets, each read back from Kafka. How long it
    takes (kafka-python's sender waits a whole ``retry_backoff_ms`` between a transaction's
    requests, hence the committer's 10 ms) is measured by ``bench.fleet``'s old-consumer
    phase, not bounded here: a timed assert would measure the machine's load."""
    topic = topic_name("t")
    create_topic(admin, topic, 1)
    n = 40
    per_group = {topic_name(f"g{i}"): {zkpaths.TopicPartition(topic, 0): 5 + i} for i in range(n)}
    committer = OffsetCommitter(
        admin, {"bootstrap_servers": stack.bootstrap_servers}, f"test-zk-mode-many:{chroot}"
    )
    try:
        assert committer.commit_groups(per_group, "test") == []
        for g, offsets in per_group.items():
            got = admin.list_group_offsets({g: None})[g]
            assert {tp.partition: om.offset for tp, om in got.items()} == {
                tp.partition: o for tp, o in offsets.items()
            }, g
    finally:
        committer.close()
        admin.delete_topics([topic])


def _kafka_offsets(admin, group: str) -> dict[int, int]:
    got = admin.list_group_offsets({group: None}).get(group, {})
    return {tp.partition: om.offset for tp, om in got.items() if om.offset >= 0}


def test_an_old_consumers_commit_wakes_the_bridge(stack, zk, admin, topic_name, start_bridge):
    """Poll interval 30 s, reconcile every 60 s: the commit is in Kafka within 10 s only
    because the data watch on its offset node woke the flow (without it: ~30 s)."""
    topic, group = topic_name("t"), topic_name("g")
    create_topic(admin, topic, 1)
    node = zkpaths.offset_path(group, topic, 0)
    zk.create(node, b"7", makepath=True)  # a stopped old consumer's offset: mode zookeeper
    bridge = start_bridge(
        env={
            "ZK_BRIDGE__GROUPS__INCLUDE": f'["{group}"]',
            "ZK_BRIDGE__GROUPS__POLL_INTERVAL_S": "30",
            "ZK_BRIDGE__BRIDGE__RESYNC_INTERVAL_S": "600",
        },
    )
    try:
        wait_for(lambda: _kafka_offsets(admin, group) == {0: 7}, 90, what="the first copy")
        committed = time.monotonic()
        zk.set(node, b"8")
        wait_for(lambda: _kafka_offsets(admin, group) == {0: 8}, 60, what="the commit's copy")
        took = time.monotonic() - committed
        assert took < 10, f"the commit took {took:.1f}s: the flow waited for its poll"
    finally:
        bridge.stop()
        admin.delete_topics([topic])


def test_a_missed_watch_is_caught_by_the_reconcile(
    stack, zk: KazooClient, admin, topic_name, chroot, monkeypatch
):
    """A data watch ZooKeeper never fires (e.g. lost in a session move while kazoo still
    holds it) leaves the node's cached offset stale until a full reconcile forgets every
    cached answer (at most every ``FORGET_EVERY_S``) and reads again."""
    topic, group = topic_name("t"), topic_name("g")
    create_topic(admin, topic, 1)
    node = zkpaths.offset_path(group, topic, 0)
    zk.create(node, b"3", makepath=True)
    committer = OffsetCommitter(
        admin, {"bootstrap_servers": stack.bootstrap_servers}, f"test-zk-missed:{chroot}"
    )
    writer = FencedWriter(zk, claim_epoch(zk, f"{ROOT}/epoch", "t"), Ledger(ROOT))
    flow = GroupMirrorFlow(zk, admin, writer, GroupFilter([group]), root=ROOT, committer=committer)
    ticked = _ticker(flow, admin, group)

    try:
        wait_for(lambda: ticked() == {0: 3}, 60, what="the first copy")
        # the watch's event is lost: kazoo forgets the watch, the cache believes it is set
        full = (zk.chroot or "") + node
        assert flow.watched_data._fired in zk._data_watchers[full]
        zk._data_watchers[full].clear()
        flow.watched_data._armed = lambda path: True  # type: ignore[method-assign]
        zk.set(node, b"4")
        for _ in range(3):  # the negative control: the stale cache is what ticks read
            assert ticked() == {0: 3}
        flow.resync()  # a reconcile within FORGET_EVERY_S of the last forget keeps them
        for _ in range(3):
            assert ticked() == {0: 3}
        monkeypatch.setattr(groups_flow, "FORGET_EVERY_S", 0.0)
        flow.resync()  # the full reconcile that forgets: reads every node again
        wait_for(lambda: ticked() == {0: 4}, 60, what="the copy after the reconcile")
    finally:
        flow.close()
        committer.close()
        admin.delete_topics([topic])


def _ticker(flow: GroupMirrorFlow, admin, group: str):
    """A tick of ``flow`` after its first resync, waiting for its copies; then Kafka's
    offsets of ``group``."""
    assert flow.copies is not None
    copies = flow.copies
    flow.resync()

    def ticked() -> dict[int, int]:
        flow.tick()
        copies.wait_idle(30)
        return _kafka_offsets(admin, group)

    return ticked


def _commits(port: int, via: str) -> float:
    return metric(port, "zkbridge_kafka_commits_total", via=via) or 0.0


def _proxies_stable(admin, group: str) -> bool:
    desc = admin.describe_groups([group])[group]
    clients = {m["client_id"] for m in desc.get("members") or ()}
    return desc.get("group_state") == "Stable" and clients == {PROXY_CLIENT_ID}


def test_a_mixed_groups_copies_are_committed_as_its_proxy(
    stack, zk, admin, topic_name, start_bridge
):
    """An old consumer's commits into a group the bridge has a proxy in go into Kafka as
    that proxy (an OffsetCommit at its generation), not in a transaction; a group with no
    old consumer registered (so no proxy) is the control: its copies go in a transaction."""
    topic, group, alone = topic_name("t"), topic_name("g"), topic_name("alone")
    create_topic(admin, topic, 2)
    consumer_id = register_old_consumer(zk, group, topic)
    thread = zkpaths.thread_id(consumer_id, 0)
    for p in range(2):
        zk.create(
            zkpaths.owner_path(group, topic, p), thread.encode(), ephemeral=True, makepath=True
        )
        zk.create(zkpaths.offset_path(group, topic, p), b"3", makepath=True)
    port = free_port()
    bridge = start_bridge(
        "--metrics-address",
        f"127.0.0.1:{port}",
        env={"ZK_BRIDGE__GROUPS__INCLUDE": f'["{group}", "{alone}"]'},
    )
    try:
        wait_for(lambda: _kafka_offsets(admin, group) == {0: 3, 1: 3}, 90, what="the first copy")
        wait_for(lambda: _proxies_stable(admin, group), 60, what="the proxy joined")
        before = _commits(port, "proxy"), _commits(port, "transaction")
        for offset in (4, 5, 6):
            zk.set(zkpaths.offset_path(group, topic, 0), str(offset).encode())
            wait_for(
                lambda o=offset: _kafka_offsets(admin, group).get(0) == o, 30, what=f"{offset}"
            )
        after = _commits(port, "proxy"), _commits(port, "transaction")
        assert after[0] - before[0] >= 1 and after[1] == before[1], (before, after)
        # their records came back as the bridge's own: the group was not read again for
        # them, and each next copy still went in (the waits above)
        wait_for(lambda: (metric(port, "zkbridge_own_commit_records_total") or 0) >= 1, 10)
        # the control: offsets only (no old consumer registered, no proxy)
        zk.create(zkpaths.offset_path(alone, topic, 0), b"9", makepath=True)
        wait_for(lambda: _kafka_offsets(admin, alone) == {0: 9}, 90, what="the control's copy")
        assert _commits(port, "transaction") > after[1]
    finally:
        bridge.stop()
        admin.delete_topics([topic])


@pytest.mark.parametrize("deaf", [False, True], ids=["watched", "deaf"])
def test_a_quiet_mixed_group_is_decided_again_when_an_old_consumer_commits(
    stack, zk, other, admin, topic_name, chroot, monkeypatch, deaf
):
    """A mixed group whose decision was written, with nothing to copy and nothing waiting
    (its proxy synced, no SyncGroup held), is left alone by the ticks that follow
    (``flows.settled``); an old consumer's commit (another session) makes the next tick
    decide it and copy the commit into Kafka. Negative control: the fires below the group
    not heard (``GroupReads.unchanged`` trusting its kept reads), the commit is never
    copied while the group stays quiet."""
    from bridge.flows.coexist import Coexistence
    from bridge.flows.coexist_reads import GroupReads
    from bridge.kafka.offsets_log import OffsetsLogFollower

    if deaf:
        monkeypatch.setattr(
            GroupReads,
            "unchanged",
            lambda self, groups: set(groups) & self._reads.keys() & self._offsets.keys(),
        )
    topic, group = topic_name("t"), topic_name("g")
    create_topic(admin, topic, 2)
    thread = zkpaths.thread_id(register_old_consumer(other, group, topic), 0)
    for p in range(2):
        path = zkpaths.owner_path(group, topic, p)
        other.create(path, thread.encode(), ephemeral=True, makepath=True)
        other.create(zkpaths.offset_path(group, topic, p), b"3", makepath=True)
    options = {"bootstrap_servers": stack.bootstrap_servers}
    coexist = Coexistence(zk, admin, options, transactional_id=f"test-quiet:{chroot}")
    follower = OffsetsLogFollower(stack.bootstrap_servers, wait=False)
    writer = FencedWriter(zk, claim_epoch(zk, f"{ROOT}/epoch", "t"), Ledger(ROOT))
    flow = GroupMirrorFlow(
        zk,
        admin,
        writer,
        GroupFilter([group]),
        coexistence=coexist,
        committer=coexist.committer,
        root=ROOT,
        follower=follower,
    )
    ticked = _ticker(flow, admin, group)

    try:
        wait_for(lambda: ticked() == {0: 3, 1: 3}, 90, what="the first copy")
        wait_for(lambda: _proxies_stable(admin, group), 60, what="the proxy joined")
        wait_for(lambda: ticked() and group in flow._quiet, 60, 0.1, "the group left alone")
        for _ in range(3):  # nothing changes: every tick leaves it alone
            ticked()
            assert group in flow._quiet
        for offset in (4, 5):
            other.set(zkpaths.offset_path(group, topic, 0), str(offset).encode())
            if deaf:
                counters = coexist.reads._fired if coexist.reads is not None else []
                wait_for(  # the watch fired (counted), and nobody listened
                    lambda cs=counters: any(c._paths for c in cs), 10, 0.02, "the watch fired"
                )
                quiet = 0
                for _ in range(5):  # (a rebalance would have it decided: not counted)
                    got = ticked()
                    if group in flow._quiet:
                        assert got == {0: offset - 1, 1: 3}  # stale: caught
                        quiet += 1
                assert quiet, "never left alone: the control shows nothing"
                return
            wait_for(lambda o=offset: ticked().get(0) == o, 30, 0.05, f"{offset} copied")
            wait_for(lambda: ticked() and group in flow._quiet, 30, 0.1, "left alone again")
    finally:
        flow.close()
        coexist.close()
        follower.close()
        admin.delete_topics([topic])
