"""Gating and fencing decisions of mixed groups, as pure functions, plus every interleaving
of one join and one leave explored exhaustively against I1 (no double ownership)."""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zkpaths
from bridge.decide.handover import (
    FORWARD_SETTLE_MS,
    JoinedGeneration,
    KafkaMember,
    OwnerNode,
    PendingSync,
    ZkGroupState,
    decide_mixed_group,
    range_assignment,
    retry_withheld,
    step_held_sync,
    sync_gate,
    withheld,
)
from zkpaths import TopicPartition

G, T = "g", "t"
OLD = "g_host-1-abcd1234-0"  # an old consumer's thread id
PROXY = KafkaMember("zk-bridge-proxy-1", OLD, (T,))
NEW = KafkaMember("consumer-1-uuid", None, (T,))
NEW_THREAD = zkpaths.mirrored_thread_id(G, NEW.member_id)
P0, P1 = TopicPartition(T, 0), TopicPartition(T, 1)


def gen(*members: KafkaMember, partitions: int = 2) -> JoinedGeneration:
    return JoinedGeneration(1, members, range_assignment(members, {T: partitions}))


def test_range_puts_proxies_first_like_the_legacy_order():
    g = gen(NEW, PROXY)
    assert g.assignment == {P0: PROXY.member_id, P1: NEW.member_id}


def test_gate_waits_while_the_old_owner_holds_the_partition():
    gate = sync_gate(
        G, gen(PROXY, NEW), ZkGroupState(frozenset({OLD}), {P1: OwnerNode(OLD, False)}), {}
    )
    assert gate.waiting == {P1: OLD} and not gate.ready
    assert withheld(gen(PROXY, NEW), gate) == {P0: PROXY.member_id}


def test_gate_asks_for_a_fence_once_released_then_is_ready():
    state = ZkGroupState(frozenset({OLD}), {}, {P1: 40})
    gate = sync_gate(G, gen(PROXY, NEW), state, {P1: 40})
    assert gate.fences == {P1: NEW_THREAD} and not gate.waiting and not gate.ready
    fenced = replace(state, owners={P1: OwnerNode(NEW_THREAD, True)})
    assert sync_gate(G, gen(PROXY, NEW), fenced, {P1: 40}).ready


@pytest.mark.parametrize(
    ("zk", "kafka", "copy"), [(50, 40, True), (40, 40, False), (30, 40, False)]
)
def test_gate_copies_the_old_owners_offset_only_forward(zk, kafka, copy):
    state = ZkGroupState(frozenset({OLD}), {P1: OwnerNode(NEW_THREAD, True)}, {P1: zk})
    gate = sync_gate(G, gen(PROXY, NEW), state, {P1: kafka})
    assert gate.offsets_to_kafka == ({P1: zk} if copy else {})


def test_fence_of_another_new_member_is_rewritten_not_waited_for():
    other = zkpaths.mirrored_thread_id(G, "consumer-2-uuid")
    state = ZkGroupState(frozenset({OLD}), {P1: OwnerNode(other, True)})
    gate = sync_gate(G, gen(PROXY, NEW), state, {})
    assert gate.fences == {P1: NEW_THREAD} and not gate.waiting


def owner_path(tp: TopicPartition) -> str:
    return zkpaths.owner_path(G, tp.topic, tp.partition)


def test_release_moves_the_offset_forward_first_and_drops_the_fence_once_it_stood():
    state = ZkGroupState(frozenset({OLD}), {P1: OwnerNode(NEW_THREAD, True)}, {P1: 40})
    d = decide_mixed_group(G, gen(PROXY), state, {P1: 55}, {}, 1000)
    assert d.offsets == {P1: 55} and d.released == []
    assert owner_path(P1) in d.desired  # the fence stays over the forward offset
    moved = replace(state, offsets={P1: 55})
    settle = 1000 + FORWARD_SETTLE_MS
    d = decide_mixed_group(G, gen(PROXY), moved, {P1: 55}, {}, settle - 1, {P1: 1000})
    assert d.released == [] and owner_path(P1) in d.desired
    d = decide_mixed_group(G, gen(PROXY), moved, {P1: 55}, {}, settle, {P1: 1000})
    assert d.released == [P1] and owner_path(P1) not in d.desired and d.offsets == {}


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 900), min_size=1, max_size=12),
    st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 400)), min_size=1, max_size=8),
    st.integers(0, 100),
)
def test_an_old_thread_never_starts_below_the_new_members_final_offset(ticks, attempts, ahead):
    """The old consumer's rebalance attempt as 0.10 makes it: it reads its offset, then
    claims the owner node a moment later (up to 400 ms, a stalled JVM), and fetches from
    what it read if the claim succeeds. Bridge passes run at arbitrary moments. Against the
    invariant itself: the thread never starts below the new member's final Kafka offset
    (the same write releasing the fence and moving the offset forward broke it)."""
    zk_offset, kafka = 40, 40 + ahead
    fence, forwarded, t = True, {}, 0
    events = []  # (ms, order, kind, value): a pass before a claim at the same ms
    for gap in ticks:
        t += gap
        heapq.heappush(events, (t, 0, "tick", 0))
    for at, window in attempts:
        heapq.heappush(events, (at, 1, "read", window))
    while events:
        at, _, kind, value = heapq.heappop(events)
        if kind == "tick":
            state = ZkGroupState(
                frozenset({OLD}),
                {P1: OwnerNode(NEW_THREAD, True)} if fence else {},
                {P1: zk_offset},
            )
            d = decide_mixed_group(G, gen(PROXY), state, {P1: kafka}, {}, at, forwarded)
            zk_offset = max(zk_offset, d.offsets.get(P1, -1))
            forwarded.update(dict.fromkeys(d.offsets, at))
            fence = fence and P1 not in d.released
        elif kind == "read":  # the claim follows, ``value`` ms later
            heapq.heappush(events, (at + value, 2, "claim", zk_offset))
        elif not fence:  # the claim succeeds: the thread fetches from what it read
            assert value >= kafka, f"claimed at {at} ms with offset {value} < {kafka}"
            return


def test_release_never_moves_an_offset_backward():
    state = ZkGroupState(frozenset({OLD}), {P1: OwnerNode(NEW_THREAD, True)}, {P1: 70})
    d = decide_mixed_group(G, gen(PROXY), state, {P1: 55}, {}, 0)
    assert d.released == [P1] and d.offsets == {}


def test_new_members_are_mirrored_and_proxies_are_not():
    d = decide_mixed_group(G, gen(PROXY, NEW), ZkGroupState(frozenset({OLD})), {}, {}, 5)
    ids = [p for p in d.desired if p.startswith(zkpaths.consumer_ids_path(G) + "/")]
    assert ids == [zkpaths.consumer_id_path(G, zkpaths.mirrored_consumer_id(G, NEW.member_id))]


def test_a_static_new_member_is_reported():
    static = KafkaMember("consumer-9-uuid", "billing-1", (T,))
    d = decide_mixed_group(G, gen(PROXY, static), ZkGroupState(frozenset({OLD})), {}, {}, 5)
    assert any("static" in p for p in d.problems)


# ---- every interleaving of one join and one leave, checked against I1 ------------------


@dataclass(frozen=True)
class World:
    """One partition (P1) moving between old thread OLD and new member NEW."""

    owner: str | None  # owner node: OLD, "fence", or None
    old_fetching: bool
    new_fetching: bool
    ids_has_new: bool  # the mirrored NEW is under /ids (old consumers see it)
    joined: bool  # Kafka's join phase for the generation with NEW completed
    synced: bool  # the leader sent SyncGroup; NEW knows its partitions
    zk_offset: int
    kafka_offset: int
    revoked: bool = False  # (leave) NEW revoked on its eager rejoin
    left: bool = False  # (leave) the generation without NEW completed its join


def zk_state(w: World) -> ZkGroupState:
    owners = {}
    if w.owner == OLD:
        owners[P1] = OwnerNode(OLD, False)
    elif w.owner == "fence":
        owners[P1] = OwnerNode(NEW_THREAD, True)
    return ZkGroupState(frozenset({OLD}), owners, {P1: w.zk_offset})


def bridge_tick(w: World, generation: JoinedGeneration) -> World:
    """What the bridge writes in one tick, from the real decision functions."""
    d = decide_mixed_group(G, generation, zk_state(w), {P1: w.kafka_offset}, {}, 0)
    owner = w.owner
    if owner_path(P1) in d.desired and owner is None:
        owner = "fence"
    elif owner == "fence" and owner_path(P1) not in d.desired:
        owner = None
    zk_offset = w.zk_offset
    if P1 in d.offsets:
        zk_offset = d.offsets[P1]
    kafka_offset = w.kafka_offset
    gate = sync_gate(G, generation, zk_state(w), {P1: w.kafka_offset})
    if gate.offsets_to_kafka:
        kafka_offset = max(kafka_offset, gate.offsets_to_kafka[P1])
    return replace(w, owner=owner, zk_offset=zk_offset, kafka_offset=kafka_offset)


def join_moves(w: World):
    g = gen(PROXY, NEW)
    if w.joined and not w.ids_has_new:
        yield "bridge mirrors NEW into /ids", replace(w, ids_has_new=True)
    if w.ids_has_new and w.owner == OLD:  # old consumer rebalances: commits, stops, releases
        yield "old releases", replace(w, owner=None, old_fetching=False, zk_offset=w.zk_offset + 5)
    if not w.joined:
        yield "join completes", replace(w, joined=True)
    if w.old_fetching and w.zk_offset < 12:  # a bounded amount of progress keeps it finite
        yield "old consumes", replace(w, zk_offset=w.zk_offset + 1)
    if w.joined and not w.synced:
        yield "bridge tick", bridge_tick(w, g)
        if sync_gate(G, g, zk_state(w), {P1: w.kafka_offset}).ready:
            yield "leader syncs", replace(w, synced=True)
    if w.synced and not w.new_fetching:
        yield "new starts at committed offset", replace(w, new_fetching=True)


def leave_moves(w: World):
    g = gen(PROXY)
    if not w.revoked:  # eager rejoin: commit, stop fetching
        yield (
            "new revokes",
            replace(w, revoked=True, new_fetching=False, kafka_offset=w.kafka_offset + 3),
        )
    if w.new_fetching and w.kafka_offset < 22:
        yield "new consumes", replace(w, kafka_offset=w.kafka_offset + 1)
    if w.revoked and not w.left:
        yield "join without NEW completes", replace(w, left=True)
    if w.left:
        yield "bridge tick", bridge_tick(w, g)
    if w.left and w.ids_has_new:
        yield "bridge drops NEW from /ids", replace(w, ids_has_new=False)
    if not w.ids_has_new and w.owner is None and not w.old_fetching:
        yield "old claims", replace(w, owner=OLD, old_fetching=True)
    if w.ids_has_new and w.owner is None and not w.old_fetching:
        yield "old claims on a stale view", replace(w, owner=OLD, old_fetching=True)


def explore(start: World, moves, done) -> int:
    seen = {start}
    queue = deque([(start, [])])
    finals = 0
    while queue:
        w, path = queue.popleft()
        assert not (w.old_fetching and w.new_fetching), f"I1 violated after {path}"
        nxt = list(moves(w))
        if done(w):
            finals += 1
        for label, w2 in nxt:
            assert w2.zk_offset >= w.zk_offset and w2.kafka_offset >= w.kafka_offset, (
                f"offset moved backward by {label} after {path}"
            )
            if w2 not in seen:
                seen.add(w2)
                queue.append((w2, [*path, label]))
    return finals


def test_every_interleaving_of_a_join_keeps_i1_and_completes():
    start = World(OLD, True, False, False, False, False, zk_offset=10, kafka_offset=0)
    finals = explore(start, join_moves, lambda w: w.new_fetching)
    assert finals > 0, "the hand-over must be able to complete"


def test_every_interleaving_of_a_leave_keeps_i1_and_completes():
    start = World("fence", False, True, True, True, True, zk_offset=10, kafka_offset=20)
    finals = explore(start, leave_moves, lambda w: w.old_fetching and w.zk_offset >= 23)
    # and the old consumer never restarts from before where the new member stopped
    assert explore(start, leave_moves, lambda w: w.old_fetching and w.zk_offset < 23) == 0
    assert finals > 0, "the old consumer must get the partition back at the new offset"


# ---- the held SyncGroup: pending -> released | withheld -> retried -------------------


def held(since: float = 100.0) -> PendingSync:
    return PendingSync(7, (PROXY, NEW), since)


def test_a_held_sync_keeps_holding_while_the_old_owner_holds_the_partition():
    state = ZkGroupState(frozenset({OLD}), {P1: OwnerNode(OLD, False)}, {P1: 40})
    step = step_held_sync(G, held(), state, {}, {T: 2}, now=110.0, max_hold_s=15)
    assert step.release is None and not step.timed_out
    assert step.gen.generation_id == 7 and step.gate.waiting == {P1: OLD}


def test_a_held_sync_is_released_with_the_range_assignment_once_safe():
    state = ZkGroupState(frozenset({OLD}), {P1: OwnerNode(NEW_THREAD, True)}, {P1: 50})
    step = step_held_sync(G, held(), state, {P1: 40}, {T: 2}, now=101.0, max_hold_s=15)
    # the old owner's last offset goes into Kafka first (the flow commits it), then the sync
    assert step.gate.offsets_to_kafka == {P1: 50} and step.release is None
    step = step_held_sync(G, held(), state, {P1: 50}, {T: 2}, now=101.5, max_hold_s=15)
    assert step.release == {P0: PROXY.member_id, P1: NEW.member_id} and not step.timed_out


def test_past_the_hold_the_waiting_partitions_are_withheld_and_retried_once_free():
    state = ZkGroupState(frozenset({OLD}), {P1: OwnerNode(OLD, False)})
    step = step_held_sync(G, held(), state, {}, {T: 2}, now=115.5, max_hold_s=15)
    assert step.timed_out and step.release == {P0: PROXY.member_id}
    running = JoinedGeneration(-1, (PROXY, NEW), {P0: PROXY.member_id, P1: NEW.member_id})
    assert not retry_withheld(G, running, state, {})
    freed = replace(state, owners={})
    assert retry_withheld(G, running, freed, {})
