"""Coexistence with a ``consumer``-type group, against a model of KIP-848's revocation.

The model is written from the broker's rules (docs/coexistence.md, rules 3 and 4), not from
the decision: a partition leaves a member's current assignment only when the member no
longer reports it (a proxy: its ``owned_partitions`` at rejoin; a new member: it revokes
by itself), and enters its target owner's only when nobody holds it. Old threads claim and
release owner nodes in ZooKeeper, committing as they go; new members commit in Kafka.
Hypothesis drives every interleaving; at every step I1 (no partition fetched by an old
thread and a new member at once) and no offset regression at a hand-over must hold, and a
fair run in which the old consumers follow the broker's target converges to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zkpaths
from bridge.decide.handover import OwnerNode, ZkGroupState
from bridge.decide.next_gen_handover import (
    BrokerGroup,
    broker_group,
    decide_next_gen_group,
    held_by_old_threads,
    mismatches,
    paced_heartbeat_ms,
    proxies_to_rejoin,
)
from bridge.kafka.views import MemberView
from zkpaths import TopicPartition

G, T, N_PART = "g", "t", 4
THREADS = ("g_a-0", "g_b-0")  # old consumer threads
PROXIES = {f"proxy-{t}": t for t in THREADS}  # proxy member id -> thread
NEW = ("m-1", "m-2")  # next-generation members
MEMBERS = (*PROXIES, *NEW)
TPS = [TopicPartition(T, p) for p in range(N_PART)]


@dataclass
class World:
    current: dict[TopicPartition, str] = field(default_factory=dict)  # broker: who holds it
    target: dict[TopicPartition, str] = field(default_factory=dict)
    #: ZooKeeper owner node: ("old", thread) claimed by an old consumer, ("fence", thread)
    owners: dict[TopicPartition, tuple[str, str]] = field(default_factory=dict)
    zk_offsets: dict[TopicPartition, int] = field(default_factory=dict)
    kafka_offsets: dict[TopicPartition, int] = field(default_factory=dict)
    owned: dict[str, frozenset] = field(default_factory=dict)  # what proxies report
    #: partitions a proxy lets go only to the given proxy (it checks the target at rejoin)
    conditional: dict[str, dict] = field(default_factory=dict)
    consumed: dict[TopicPartition, int] = field(default_factory=dict)  # high-water mark

    def views(self) -> tuple[MemberView, ...]:
        def per(assignment: dict) -> dict[str, tuple[int, ...]]:
            return {T: tuple(sorted(tp.partition for tp, m in assignment.items() if m == mid))}

        out = []
        for mid in MEMBERS:
            cur = {tp: m for tp, m in self.current.items() if m == mid}
            tgt = {tp: m for tp, m in self.target.items() if m == mid}
            instance = PROXIES.get(mid)
            out.append(MemberView(mid, "c", "h", (T,), per(cur), instance, per(tgt)))
        return tuple(out)

    def zk(self) -> ZkGroupState:
        owners = {tp: OwnerNode(th, kind == "fence") for tp, (kind, th) in self.owners.items()}
        return ZkGroupState(frozenset(THREADS), owners, dict(self.zk_offsets))

    # ---- the bridge ------------------------------------------------------------------
    def bridge_tick(self) -> None:
        bg = broker_group(G, self.views(), PROXIES, comparable=True)
        d = decide_next_gen_group(
            G, bg, self.views(), self.zk(), self.kafka_offsets, {T: N_PART}, {}, 0
        )
        for offsets in d.to_kafka.values():  # committed as the proxy, before it lets go
            for tp, off in offsets.items():
                self.kafka_offsets[tp] = max(self.kafka_offsets.get(tp, -1), off)
        for tp, off in d.offsets.items():
            assert off >= self.zk_offsets.get(tp, -1), "I2: ZooKeeper offset moved backward"
            self.zk_offsets[tp] = off
        fences = {}
        for tp in TPS:
            want = d.desired.get(zkpaths.owner_path(G, T, tp.partition))
            if want is not None and want.data:
                fences[tp] = zkpaths.decode_owner(want.data)
        for tp in TPS:
            kind = self.owners.get(tp, ("", ""))[0]
            if kind == "old":
                assert tp not in fences, "a real old consumer's claim was overwritten"
            elif tp in fences:
                self.owners[tp] = ("fence", fences[tp])
            else:
                self.owners.pop(tp, None)
        self.owned = {PROXIES_BY_THREAD[t]: ps for t, ps in d.owned.items()}
        self.conditional = {PROXIES_BY_THREAD[t]: c for t, c in d.conditional.items()}

    # ---- the broker ------------------------------------------------------------------
    def proxy_rejoins(self, proxy: str) -> None:
        """The proxy describes the group, then joins with what it still owns: a conditional
        partition is let go only if the broker's target is still its heir."""
        owned = self.owned.get(proxy, frozenset())
        owned = owned - {
            tp
            for tp, heir in self.conditional.get(proxy, {}).items()
            if self.target.get(tp) == heir
        }
        for tp, m in list(self.current.items()):
            if m == proxy and self.target.get(tp) != proxy and tp not in owned:
                del self.current[tp]
                heir = self.target.get(tp)
                if heir in PROXIES:  # the bridge makes the heir proxy rejoin at once
                    self.take_free(heir)
        self.take_free(proxy)

    def new_member_revokes(self, member: str) -> None:
        for tp, m in list(self.current.items()):
            if m == member and self.target.get(tp) != member:
                del self.current[tp]
        self.take_free(member)

    def take_free(self, member: str) -> None:
        for tp, m in self.target.items():
            if m == member and tp not in self.current:
                self.current[tp] = member
                if member in NEW:  # it starts fetching at Kafka's committed offset
                    start = self.kafka_offsets.get(tp, -1)
                    assert start >= self.consumed.get(tp, -1), f"offset regression on {tp}"
                    assert self.owners.get(tp, ("",))[0] != "old", f"I1: {tp} taken early"

    # ---- the old consumers -------------------------------------------------------------
    def old_step(self, thread: str, tp: TopicPartition, follow: bool) -> None:
        mine = self.owners.get(tp) == ("old", thread)
        wanted = self.target.get(tp) == PROXIES_BY_THREAD[thread] if follow else not mine
        if mine and not wanted:
            del self.owners[tp]  # committed its last offset before releasing
        elif not mine and wanted and tp not in self.owners:
            assert self.zk_offsets.get(tp, -1) >= self.consumed.get(tp, -1), "regression"
            self.owners[tp] = ("old", thread)

    def consume(self) -> None:
        """Every fetcher moves on by one and commits where it is entitled to."""
        for tp in TPS:
            old = self.owners.get(tp, ("",))[0] == "old"
            new = self.current.get(tp) in NEW
            assert not (old and new), f"I1: {tp} fetched by an old thread and a new member"
            if old or new:
                self.consumed[tp] = self.consumed.get(tp, -1) + 1
                book = self.zk_offsets if old else self.kafka_offsets
                book[tp] = self.consumed[tp]


PROXIES_BY_THREAD = {t: p for p, t in PROXIES.items()}

actions = st.one_of(
    st.tuples(st.just("target"), st.lists(st.sampled_from(MEMBERS), min_size=4, max_size=4)),
    st.tuples(st.just("bridge"), st.none()),
    st.tuples(st.just("proxy"), st.sampled_from(tuple(PROXIES))),
    st.tuples(st.just("new"), st.sampled_from(NEW)),
    st.tuples(st.just("old"), st.tuples(st.sampled_from(THREADS), st.sampled_from(TPS))),
    st.tuples(st.just("consume"), st.none()),
)


def started() -> World:
    """A group that became a ``consumer`` group from the proxies' classic one (the broker
    keeps the classic members' assignment), once the bridge has looked at it."""
    first = next(iter(PROXIES))
    world = World(current=dict.fromkeys(TPS, first), target=dict.fromkeys(TPS, first))
    world.bridge_tick()
    return world


def step(world: World, action: tuple, follow: bool) -> None:
    kind, arg = action
    if kind == "target":
        world.target = dict(zip(TPS, arg, strict=True))
    elif kind == "bridge":
        world.bridge_tick()
    elif kind == "proxy":
        world.proxy_rejoins(arg)
    elif kind == "new":
        world.new_member_revokes(arg)
    elif kind == "old":
        world.old_step(arg[0], arg[1], follow)
    world.consume()


@settings(max_examples=500, deadline=None)
@given(st.lists(actions, max_size=60), st.booleans())
def test_i1_and_offsets_hold_in_every_interleaving(script, follow):
    world = started()
    for action in script:
        step(world, action, follow)


@settings(max_examples=150, deadline=None)
@given(st.lists(actions, max_size=30))
def test_a_fair_run_reaches_the_brokers_target(script):
    """Old consumers that follow the target (as with range on both sides): every partition
    ends with its target owner, in ZooKeeper too for old threads."""
    world = started()
    for action in script:
        step(world, action, follow=True)
    for _ in range(6):  # every party takes its turn, in the order that needs the most rounds
        for th in THREADS:
            for tp in TPS:
                world.old_step(th, tp, follow=True)
        world.bridge_tick()
        for p in PROXIES:
            world.proxy_rejoins(p)
        for m in NEW:
            world.new_member_revokes(m)
        world.consume()
    assert world.current == world.target
    for tp, m in world.target.items():
        if m in PROXIES:
            assert world.owners.get(tp) == ("old", PROXIES[m])
        else:
            assert world.owners.get(tp) == ("fence", zkpaths.mirrored_thread_id(G, m))


def test_the_negative_control_proxies_reporting_nothing_break_i1():
    """The model finds the violation when proxies acknowledge at once (what a proxy with a
    v0 subscription, no owned partitions, does): a new member takes a partition its old
    thread still fetches."""
    world = World(target=dict.fromkeys(TPS, "proxy-g_a-0"))
    world.proxy_rejoins("proxy-g_a-0")
    world.old_step("g_a-0", TPS[0], follow=True)
    world.target = dict.fromkeys(TPS, "m-1")
    world.owned = {}  # no bridge: nothing reported as owned
    world.proxy_rejoins("proxy-g_a-0")
    try:
        world.new_member_revokes("m-1")
    except AssertionError as exc:
        assert "I1" in str(exc)
    else:
        raise AssertionError("the model did not catch a new member taking a held partition")


def test_proxies_are_asked_to_rejoin_only_when_it_moves_the_group_on():
    """A proxy that may acknowledge a revocation, or whose target has a free partition,
    rejoins now; one still holding what it must revoke does not (it would loop)."""
    a, b = PROXIES_BY_THREAD[THREADS[0]], PROXIES_BY_THREAD[THREADS[1]]
    world = World(current={TPS[0]: a, TPS[1]: a}, target={TPS[0]: "m-1", TPS[1]: b})
    world.owners = {TPS[0]: ("old", THREADS[0])}  # still fetched by its old thread
    bg = broker_group(G, world.views(), PROXIES, comparable=True)
    held = frozenset({TPS[0]})
    assert proxies_to_rejoin(bg, {THREADS[0]: held, THREADS[1]: frozenset()}) == {a}  # TPS[1]
    assert proxies_to_rejoin(bg, {THREADS[0]: frozenset(TPS[:2]), THREADS[1]: frozenset()}) == set()
    world.current = {TPS[0]: a}  # TPS[1] is free now: its target, b, takes it at a rejoin
    bg = broker_group(G, world.views(), PROXIES, comparable=True)
    assert proxies_to_rejoin(bg, {THREADS[0]: held, THREADS[1]: frozenset()}) == {b}


def test_a_target_other_than_the_legacy_range_is_reported_per_partition():
    """The agreement check: the broker's target for the proxies against the range the old
    consumers compute over /ids (proxies by thread id, then new members by member id)."""
    a, b = PROXIES_BY_THREAD[THREADS[0]], PROXIES_BY_THREAD[THREADS[1]]
    ranged = {TPS[0]: a, TPS[1]: b, TPS[2]: "m-1", TPS[3]: "m-2"}  # range: one each, in order
    world = World(current=dict(ranged), target=dict(ranged))
    assert mismatches(broker_group(G, world.views(), PROXIES, comparable=True), {T: 4}) == {}
    world.target = {TPS[0]: "m-1", TPS[1]: b, TPS[2]: a, TPS[3]: "m-2"}  # e.g. uniform, sticky
    bg = broker_group(G, world.views(), PROXIES, comparable=True)
    assert mismatches(bg, {T: 4}) == {TPS[0]: ("m-1", a), TPS[2]: (a, "m-1")}
    # a target computed before the group's latest change is not judged (comparable=False)
    assert mismatches(broker_group(G, world.views(), PROXIES, comparable=False), {T: 4}) == {}


@pytest.mark.parametrize(
    ("own", "broker", "paced"),
    [
        (3000, 1000, 1000),  # the devstack's brokers: proxies keep pace with the members
        (3000, 5000, 3000),  # Kafka's default 5 s: the proxy's own is already shorter
        (3000, None, 3000),  # a broker that does not say (before 3.7, or an error)
        (3000, 0, 3000),
        (3000, 20, 100),  # never below 100 ms
    ],
)
def test_a_proxy_in_a_consumer_group_heartbeats_as_often_as_its_members(own, broker, paced):
    assert paced_heartbeat_ms(own, broker) == paced


def test_partitions_an_old_thread_holds_while_the_broker_moves_them_on_are_held():
    """Held: in a proxy's current assignment, targeted at another member, still reported
    owned by the proxy. Not held: released by the proxy, kept by the target, or with no
    target yet (a stale target after a departure)."""
    a = PROXIES_BY_THREAD[THREADS[0]]
    bg = BrokerGroup(
        G,
        PROXIES,
        {"m-1": "g_~~m-1-0"},
        {TPS[0]: a, TPS[1]: a, TPS[2]: a, TPS[3]: a},
        {TPS[0]: "m-1", TPS[1]: "m-1", TPS[2]: a},
    )
    owned = {THREADS[0]: frozenset({TPS[0], TPS[2], TPS[3]}), THREADS[1]: frozenset()}
    assert held_by_old_threads(bg, owned) == {TPS[0]}


def test_a_hold_past_max_hold_s_is_reported_once_and_again_when_more_are_late():
    from types import SimpleNamespace

    from bridge.flows.coexist_next_gen import report_held

    said: list[str] = []
    coexist = SimpleNamespace(
        held_since={},
        held_reported={},
        max_hold_s=15.0,
        report=lambda group, message, kind: said.append(f"{kind}: {message}"),
    )
    report_held(coexist, G, frozenset({TPS[0]}), 100.0)
    report_held(coexist, G, frozenset({TPS[0], TPS[1]}), 110.0)
    assert said == []  # within max_hold_s
    report_held(coexist, G, frozenset({TPS[0], TPS[1]}), 115.5)
    report_held(coexist, G, frozenset({TPS[0], TPS[1]}), 116.0)
    assert len(said) == 1 and said[0].startswith("gate_timeout: old threads have not released t-0 ")
    report_held(coexist, G, frozenset({TPS[0], TPS[1]}), 125.5)  # t-1 late too now
    assert len(said) == 2 and "t-0, t-1" in said[1]
    report_held(coexist, G, frozenset({TPS[1]}), 125.8)  # t-0 released: not news
    assert len(said) == 2
    report_held(coexist, G, frozenset(), 126.0)  # released: nothing held, nothing said
    assert coexist.held_since[G] == {} and G not in coexist.held_reported and len(said) == 2


def test_a_fence_going_to_a_proxy_moves_the_offset_forward_first_and_goes_once_it_stood():
    """A new member let the partition go (nobody holds it, the target is a proxy): its
    final Kafka offset is moved forward at once, under the fence; the fence goes once the
    proxy holds the partition and the forward offset has stood FORWARD_SETTLE_MS (an old
    consumer reads its offsets before it claims: decide.handover.release_fences)."""
    from bridge.decide.handover import FORWARD_SETTLE_MS
    from bridge.decide.next_gen_handover import BrokerGroup, fences
    from zkpaths.mirror_ids import mirrored_thread_id

    tp = TopicPartition("t", 0)
    fence = mirrored_thread_id(G, "n")
    owners = {tp: OwnerNode(fence, True)}
    free = BrokerGroup(G, {"p": "old-0"}, {"n": fence}, {}, {tp: "p"})
    wanted, released, forward = fences(
        free, ZkGroupState(frozenset({"old-0"}), owners, {tp: 40}), {tp: 55}, {}, 1000
    )
    assert wanted == {tp: fence} and released == [] and forward == {tp: 55}
    held = BrokerGroup(G, {"p": "old-0"}, {"n": fence}, {tp: "p"}, {tp: "p"})
    moved = ZkGroupState(frozenset({"old-0"}), owners, {tp: 55})
    at = 1000 + FORWARD_SETTLE_MS
    wanted, released, forward = fences(held, moved, {tp: 55}, {tp: 1000}, at - 1)
    assert wanted == {tp: fence} and released == [] and forward == {}
    wanted, released, forward = fences(held, moved, {tp: 55}, {tp: 1000}, at)
    assert tp not in wanted and released == [tp] and forward == {}


def test_a_partition_let_go_towards_a_proxy_whose_target_moves_on_keeps_its_offset():
    """Found by hypothesis: an old thread committed 0-2 in ZooKeeper and released its
    partition towards another proxy; the bridge fenced it and let its proxy go of it. The
    target moved on to a new member before the proxy rejoined, so the partition was let go
    to that member at Kafka's offset (-1): 0-2 consumed again. Now the proxy lets go only
    once Kafka has ZooKeeper's offset, whoever its next owner is."""
    a, b = "proxy-g_a-0", "proxy-g_b-0"
    script = [
        ("old", ("g_a-0", TPS[1])),  # claims it: consumes 0, 1, 2 on the steps below
        ("target", [a, a, a, a]),
        ("target", [a, b, a, a]),
        ("old", ("g_a-0", TPS[1])),  # releases it towards b, ZooKeeper at 2
        ("bridge", None),  # fenced
        ("bridge", None),  # a may let it go
        ("target", [a, "m-1", a, a]),  # the target moves on
        ("proxy", a),  # a rejoins without it
        ("new", "m-1"),  # m-1 takes it: at Kafka's offset, which must be 2
    ]
    world = started()
    for action in script:
        step(world, action, follow=True)
    assert world.current[TPS[1]] in (a, "m-1")
    assert world.kafka_offsets.get(TPS[1], -1) >= 2
