"""``[scale] mode = "shares"`` on the real stack (issue 14 item 3): several active bridges,
members of one consumer group of ``__consumer_offsets``, each holding the shares Kafka's
group coordinator deals it, each write checked against its share's epoch (I3 per share)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import uuid

import pytest
from kafka import TopicPartition as KafkaTP
from kazoo.client import KazooClient

import zkpaths
from bench import create_topic
from bridge.decide.plan import Create, Node
from bridge.decide.shares import epoch_path, share_of_group
from bridge.kafka.cluster import partition_counts
from bridge.kafka.offsets_log import OFFSETS_TOPIC
from bridge.zookeeper.fence import Fenced, ShareFence, ShareMoved
from bridge.zookeeper.writer import FencedWriter, Ledger
from tests.conftest import wait_for
from tests.integration.test_offsets_trigger import commit_each
from tests.integration.test_ops import free_port, get

pytestmark = pytest.mark.integration

ROOT = "/kafka-zk-bridge"
SESSION_MS = 6000
#: how long a group's commit may take to be mirrored after a rebalance: the new holders read
#: the groups of their shares in full first (a few seconds here; a minute seen at load 36)
MIRROR_S = 180


def _group_per_share(shares: int, prefix: str) -> dict[int, str]:
    """A group name for every share (the first name found hashing into it)."""
    out: dict[int, str] = {}
    i = 0
    while len(out) < shares:
        g = f"{prefix}-{i}"
        out.setdefault(share_of_group(g, shares), g)
        i += 1
    return out


def test_a_deposed_share_writer_is_fenced(stack, chroot):
    """A bridge that lost a share (another claimed its epoch) has its next write for that
    share refused whole; a write for a share it never held is not even sent."""
    a, b = KazooClient(stack.zk_connect + chroot), KazooClient(stack.zk_connect + chroot)
    a.start()
    b.start()
    try:
        groups = _group_per_share(50, "fenced")
        old = ShareFence(a, ROOT, "a", 50)
        old.claim({0, 3})
        writer = FencedWriter(a, None, Ledger(ROOT), shares=old)
        known: dict[str, Node] = {}
        g3, g4 = groups[3], groups[4]
        writer.apply([Create("/consumers", b""), Create(f"/consumers/{g3}", b"")], known)
        assert a.exists(f"/consumers/{g3}")

        new = ShareFence(b, ROOT, "b", 50)
        new.claim({3})  # a rebalance gave share 3 to b; a has not noticed
        with pytest.raises(Fenced):
            writer.apply([Create(f"/consumers/{g3}/ids", b"")], known)
        assert not a.exists(f"/consumers/{g3}/ids")
        assert not a.exists(f"{ROOT}/owned/consumers/{g3}/ids")  # nor its ledger marker
        with pytest.raises(ShareMoved):  # never held: refused before anything is sent
            writer.apply([Create(f"/consumers/{g4}", b"")], known)
        assert not a.exists(f"/consumers/{g4}")
        # share 0 (the registry's) is still a's: its writes go on
        writer.apply([Create("/brokers", b"")], known)
        assert json.loads(b.get(epoch_path(ROOT, 3))[0])["holder"] == "b"

        successor = FencedWriter(b, None, Ledger(ROOT), shares=new)
        successor.ledger.load(b, ["/consumers"])
        successor.apply([Create(f"/consumers/{g3}/ids", b"")], {})
        assert b.exists(f"/consumers/{g3}/ids")
    finally:
        a.stop()
        b.stop()


def test_a_share_dealt_back_is_taken_over_only_if_another_held_it_between(stack, chroot):
    """A rebalance revokes every share and deals most back: a share dealt back with no
    claim by another bridge in between kept its nodes as this bridge wrote them (its
    groups are not read again); one another bridge claimed in between is taken over."""
    a, b = KazooClient(stack.zk_connect + chroot), KazooClient(stack.zk_connect + chroot)
    a.start()
    b.start()
    try:
        mine, theirs = ShareFence(a, ROOT, "a", 50), ShareFence(b, ROOT, "b", 50)
        mine.claim({1, 2})
        assert mine.take_over() == {1, 2}, "a first claim: whoever held them wrote them"
        mine.release({1, 2})  # a rebalance
        mine.claim({1, 2})
        assert mine.take_over() == set(), "dealt back, nobody else in between"
        mine.release({1, 2})
        theirs.claim({2})  # another rebalance gave share 2 to b for a while
        theirs.release({2})
        mine.claim({1, 2})
        assert mine.take_over() == {2}
        assert mine.take_over() == set(), "each take-over is said once"
    finally:
        a.stop()
        b.stop()


def test_groups_taken_over_are_read_at_their_first_decision_not_all_at_once(stack, chroot):
    """A bridge taking over a share reads a group's ledger and nodes when a tick first
    decides it (``OwnedTree.ensure``), or by a background page; until then the group is
    pending and none of its nodes are planned against."""
    from bridge.decide.groups import SCOPE
    from bridge.zookeeper.owned import OwnedTree

    a, b = KazooClient(stack.zk_connect + chroot), KazooClient(stack.zk_connect + chroot)
    a.start()
    b.start()
    try:
        groups = _group_per_share(50, "lazy")
        g1, g2 = groups[1], groups[2]
        theirs = ShareFence(a, ROOT, "a", 50)
        theirs.claim({1, 2})
        writer = FencedWriter(a, None, Ledger(ROOT), shares=theirs)
        ops = [Create("/consumers", b"")]
        for g in (g1, g2):
            ops += [Create(f"/consumers/{g}", b""), Create(f"/consumers/{g}/ids", b"")]
        writer.apply(ops, {})
        theirs.release({1, 2})

        mine = ShareFence(b, ROOT, "b", 50)
        tree = OwnedTree(b, FencedWriter(b, None, Ledger(ROOT), shares=mine), SCOPE, print)
        tree.resync(lambda gs, sizes, budget: [gs], held=mine.holds_group)  # nothing held yet
        assert tree.loaded and tree.of_groups([g1, g2]) == set()
        mine.claim({1, 2})
        assert mine.take_over() == {1, 2}
        tree.take_over(tree.groups_where(lambda g: share_of_group(g, 50) in {1, 2}))
        assert tree.pending == {g1, g2}
        tree.ensure({g1, "another"})  # a tick deciding g1
        assert tree.pending == {g2}
        assert tree.of_groups([g1]) == {f"/consumers/{g1}", f"/consumers/{g1}/ids"}
        assert f"/consumers/{g1}/ids" in tree.known and tree.of_groups([g2]) == set()
        tree.resync(lambda gs, sizes, budget: [[g] for g in gs], held=mine.holds_group)
        t = 0.0
        while tree.verifying or tree.verify_read.pending:  # the background pages read
            t += 1.0  # the rest, one per pause, each on its own thread
            tree.verify_page(now=t)
            wait_for(lambda: not tree.verify_read.pending or tree.verify_read.ready(), 10, 0.01)
        assert not tree.pending and f"/consumers/{g2}/ids" in tree.known
    finally:
        a.stop()
        b.stop()


def test_a_join_kafka_python_left_unfinished_is_taken_up_again(stack, admin, topic_name):
    """kafka-python 3.0.12 leaves a join unfinished for good when the join itself clears
    the reason to rejoin. The real trigger, made deterministic: a leader subscribed to a
    topic that does not exist yet deals nothing; the topic created, its metadata snapshot
    changes and asks for a rejoin; a poll that returns before the join completes (timeout
    0) leaves it in flight, and the leader's new assignment, made inside it, clears the
    reason. Plain polls never finish it (the negative control: heartbeats stay off, nothing
    assigned); :func:`resume_unfinished_join` makes the next polls finish it."""
    from kafka import KafkaConsumer

    from bridge.kafka.shares import resume_unfinished_join

    topic = topic_name("late")
    consumer = KafkaConsumer(
        bootstrap_servers=stack.bootstrap_servers.split(","),
        group_id=f"zkb-join-{uuid.uuid4().hex[:8]}",
        enable_auto_commit=False,
        metadata_max_age_ms=500,  # the created topic is seen within a second
    )
    coordinator = consumer._coordinator
    try:
        consumer.subscribe([topic])
        wait_for(lambda: consumer.poll(100) is not None and coordinator.stable(), 30, 0.0)
        assert not consumer.assignment()  # the leader dealt nothing: no metadata
        create_topic(admin, topic, 2)
        full = {topic: {0, 1}}  # both partitions known: no later snapshot asks again
        wait_for(lambda: coordinator._metadata_snapshot == full, 30, 0.05, "the metadata")
        assert coordinator.need_rejoin()
        consumer.poll(timeout_ms=0)  # starts the join, returns before it completes
        wait_for(lambda: coordinator._join_task.is_done, 30, 0.05, "the join in flight")
        assert coordinator.rejoining and not coordinator.need_rejoin()
        for _ in range(10):  # the negative control: plain polls never take it up
            consumer.poll(100)
        assert not coordinator.stable() and not coordinator._heartbeat_enabled
        assert not consumer.assignment()

        assert resume_unfinished_join(coordinator)
        wait_for(lambda: consumer.poll(100) is not None and coordinator.stable(), 30, 0.0)
        assert {tp.partition for tp in consumer.assignment()} == {0, 1}
        assert coordinator._heartbeat_enabled
        assert not resume_unfinished_join(coordinator)  # a finished join is left alone
    finally:
        consumer.close(autocommit=False)


def _held(port: int) -> set[int] | None:
    """The shares one bridge says it holds (its /metrics), None while it does not answer."""
    answer = get(port, "/metrics")
    if answer is None or answer[0] != 200:
        return None
    held = set()
    for line in answer[1].splitlines():
        if line.startswith("zkbridge_share_held{") and line.rstrip().endswith(" 1.0"):
            held.add(int(line.split('share="')[1].split('"')[0]))
    return held


def _dealt(ports: dict[str, int], shares: int) -> dict[str, set[int]] | None:
    """Each bridge's shares once they are dealt: every one held, none twice, each bridge
    some; None until then."""
    held = {name: _held(port) for name, port in ports.items()}
    if any(h is None or not h for h in held.values()):
        return None
    union = set().union(*held.values())  # type: ignore[arg-type]
    if union != set(range(shares)) or sum(len(h) for h in held.values()) != shares:  # type: ignore[arg-type]
        return None
    return held  # type: ignore[return-value]


def _wait_dealt(bridges: dict, ports: dict[str, int], shares: int, what: str) -> dict:
    """:func:`_dealt` within ``MIRROR_S``; on a timeout each bridge's threads (SIGUSR1
    dumps them to its log) and last log lines go into the failure. A rebalance of the
    bridges' group completes only once every member polled again, and a bridge polls its
    follower once per tick: with 3,000 groups committed first a third bridge waited 21-23 s.
    CI found one bridge dealt nothing three times (60 s twice, then 180 s): kafka-python
    left its join unfinished for good (``test_a_join_kafka_python_left_unfinished_...``);
    two bridges started at once under load met it in 6 of 95 starts before the fix."""
    try:
        return wait_for(lambda: _dealt(ports, shares), MIRROR_S, 0.2, what)
    except AssertionError as exc:
        held = {name: _held(port) for name, port in ports.items()}
        logged = {name: len(bridges[name].text()) for name in ports}
        for name in ports:
            bridges[name].proc.send_signal(signal.SIGUSR1)
        dumped = lambda: all("most recent call first" in bridges[n].text() for n in ports)  # noqa: E731
        with contextlib.suppress(AssertionError):  # a dead bridge dumps nothing
            wait_for(dumped, 5, 0.1, "the bridges' thread dumps")
        report = [f"{exc}", f"held {held}"]
        for name in ports:  # the threads first: CI shows a failure's first lines only
            text = bridges[name].text()
            report += [f"--- {name}'s threads", text[logged[name] :][:8000]]
        for name in ports:
            report += [f"--- {name}'s last log lines", bridges[name].text()[: logged[name]][-5000:]]
        pytest.fail("\n".join(report), pytrace=False)


def _kafka_offset(admin, group: str, tp: KafkaTP) -> int | None:
    got = admin.list_group_offsets({group: None}).get(group, {})
    return getattr(got.get(tp), "offset", None)


def _claimed_at(zk: KazooClient, shares: set[int]) -> float:
    """When the last of ``shares`` was claimed: its epoch node's mtime (ZooKeeper's clock,
    on this machine), not when this test got round to looking."""
    return max(zk.exists(epoch_path(ROOT, s)).mtime for s in shares) / 1000


def _within_session(moved: float) -> None:
    """The bound: a dead bridge's shares are held again within the session timeout + 2 s
    (measured 6.5-7.2 s with a 6 s session at load 17-27, printed MET/MISSED every run).
    Held to it on a quiet machine (load average up to 1.5 per core); on a busier one the
    survivors' own rebalance waits for CPU (at load 55 on 2 cores they noticed it 11 s after
    the broker expired the dead member), so there the test holds them to a takeover by the
    rebalance at all: well before the slow paths (the reconcile, a 60 s retry) would do it."""
    load = os.getloadavg()[0]
    target = SESSION_MS / 1000 + 2
    print(
        f"shares held again {moved:.1f} s after the fault at load {load:.0f}: "
        f"{'MET' if moved <= target else 'MISSED'} (<= {target:.0f} s)"
    )
    quiet = load <= 1.5 * (os.cpu_count() or 1)
    bound = target if quiet else SESSION_MS / 1000 + 30
    assert moved <= bound, f"{moved:.1f} s at load {load:.0f} (bound {bound:.0f} s)"


def _mirrored(zk: KazooClient, groups: dict[int, str], topic: str, offset: int) -> list[str]:
    """The groups whose offset node does not say ``offset`` yet."""
    paths = {g: zkpaths.offset_path(g, topic, 0) for g in groups.values()}
    reads = {g: zk.get_async(p) for g, p in paths.items()}
    missing = []
    for g, r in reads.items():
        try:
            if int(r.get()[0]) != offset:
                missing.append(g)
        except Exception:  # noqa: BLE001 - not there yet
            missing.append(g)
    return missing


def test_bridges_share_the_shares_and_take_over_a_dead_ones(
    stack, zk, admin, start_bridge, topic_name
):
    """Two, then three active bridges: every share held by exactly one, a group in every
    share mirrored; kill -9 one: its shares are held again by the others within the session
    timeout + 2 s, and their groups' commits still mirrored."""
    topic = topic_name()
    create_topic(admin, topic, 1)
    gid = f"zkb-{uuid.uuid4().hex[:8]}"
    env = {
        "ZK_BRIDGE__SCALE__MODE": "shares",
        "ZK_BRIDGE__SCALE__GROUP_ID": gid,
        "ZK_BRIDGE__SCALE__SESSION_TIMEOUT_MS": str(SESSION_MS),
    }
    ports = {name: free_port() for name in "abc"}
    bridges = {}

    def start(name: str) -> None:
        bridges[name] = start_bridge(
            "--metrics-address",
            f"127.0.0.1:{ports[name]}",
            env={**env, "ZK_BRIDGE__BRIDGE__ID": name},
        )

    start("a")
    start("b")
    shares = wait_for(lambda: partition_counts(admin, [OFFSETS_TOPIC]).get(OFFSETS_TOPIC), 30)
    groups = _group_per_share(shares, topic)
    commit_each(admin, list(groups.values()), topic, 1)
    two = _wait_dealt(bridges, {n: ports[n] for n in "ab"}, shares, "2 bridges")
    wait_for(lambda: not _mirrored(zk, groups, topic, 1), MIRROR_S, 0.2, "every share's group")
    wait_for(lambda: zk.exists("/brokers/ids/1"), 30, what="the registry (share 0's holder)")
    for name, held in two.items():  # the epoch nodes name the same holders
        for s in held:
            assert json.loads(zk.get(f"{ROOT}/shares/{s}")[0])["holder"] == name

    start("c")
    three = _wait_dealt(bridges, ports, shares, "3 bridges")
    commit_each(admin, list(groups.values()), topic, 2)
    wait_for(lambda: not _mirrored(zk, groups, topic, 2), MIRROR_S, 0.2, "mirrored by 3 bridges")
    # groups only in ZooKeeper (old consumers stopped), one in a share of each bridge: each
    # bridge copies its offsets into Kafka with a transactional producer of its own (one id
    # for all would fence one bridge's producer at every other's commit)
    only_zk = _group_per_share(shares, f"{topic}-zk")
    stopped = {name: only_zk[min(held)] for name, held in three.items()}
    for g in stopped.values():
        zk.create(zkpaths.offset_path(g, topic, 0), b"7", makepath=True)
    tp = KafkaTP(topic, 0)
    for name, g in stopped.items():
        wait_for(
            lambda g=g: _kafka_offset(admin, g, tp) == 7,
            60,
            0.2,
            f"{g}'s offset copied into Kafka by {name}",
        )

    victim = next(n for n, h in three.items() if 0 not in h)  # the registry stays put
    killed = time.time()
    os.kill(bridges[victim].proc.pid, signal.SIGKILL)
    survivors = {n: ports[n] for n in "abc" if n != victim}
    after = _wait_dealt(bridges, survivors, shares, "the dead bridge's shares")
    moved = _claimed_at(zk, three[victim]) - killed
    print(f"\n{victim}'s {len(three[victim])} shares held again after {moved:.1f} s")
    _within_session(moved)
    for name, held in after.items():
        for s in held:
            assert json.loads(zk.get(f"{ROOT}/shares/{s}")[0])["holder"] == name
    commit_each(admin, list(groups.values()), topic, 3)
    wait_for(lambda: not _mirrored(zk, groups, topic, 3), MIRROR_S, 0.2, "mirrored after the kill")

    # SIGSTOP the survivor without share 0: the other holds everything within the session
    # timeout + 2 s; resumed, the zombie gives its shares up before it writes (revoked in its
    # first poll, or its batch fenced) and the shares are dealt between the two again
    zombie = next(n for n, h in after.items() if 0 not in h)
    (alone,) = set(survivors) - {zombie}
    before = len(bridges[zombie].text())
    stopped = time.time()
    os.kill(bridges[zombie].proc.pid, signal.SIGSTOP)
    try:
        wait_for(lambda: _held(ports[alone]) == set(range(shares)), 60, 0.2, "a frozen one's")
        moved = _claimed_at(zk, after[zombie]) - stopped
        print(f"{zombie} frozen: its {len(after[zombie])} shares held again after {moved:.1f} s")
        _within_session(moved)
        commit_each(admin, list(groups.values()), topic, 4)
        wait_for(lambda: not _mirrored(zk, groups, topic, 4), MIRROR_S, 0.2, "mirrored by one")
    finally:
        os.kill(bridges[zombie].proc.pid, signal.SIGCONT)
    _wait_dealt(bridges, survivors, shares, "the zombie back in the group")
    assert not _mirrored(zk, groups, topic, 4)  # the zombie wrote nothing of its old view
    resumed = bridges[zombie].text()[before:]
    assert "released shares" in resumed or "deposed from a share" in resumed, resumed[-3000:]
    commit_each(admin, list(groups.values()), topic, 5)
    wait_for(
        lambda: not _mirrored(zk, groups, topic, 5), MIRROR_S, 0.2, "mirrored after the zombie"
    )
    for name in survivors:
        text = bridges[name].text()
        assert "Traceback" not in text, text[-3000:]
