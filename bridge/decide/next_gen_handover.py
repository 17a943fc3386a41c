"""Coexistence with a next-generation (KIP-848, ``consumer``-type) group: I1 by revocation.

Pure. In a ``consumer`` group the broker assigns; the bridge's proxies (static classic
members, instance id = old thread id) cannot hold a SyncGroup as a leader, but they decide
what they report as *owned* when they rejoin, and the broker hands a partition to its next
owner only once its previous owner stopped reporting it (docs/coexistence.md, rule 3 and 4).
So, per partition *p*:

* **old thread -> new member N**: the thread's proxy keeps *p* in its ``owned_partitions``
  until ZooKeeper shows *p* released by the old thread and fenced for N's mirrored thread
  id, and the old thread's last ZooKeeper offset is committed in Kafka (as that proxy);
* **N -> old thread**: the fence stays while N's current assignment (which includes what N
  is still revoking, 4.4.0) shows *p*; it goes once a *proxy's* current assignment shows *p*
  (positive confirmation), after N's last Kafka offset was copied to ZooKeeper if ahead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import zkpaths
from bridge.decide.groups import registration_data, structural
from bridge.decide.handover import OwnerNode, ZkGroupState, range_assignment, release_fences
from bridge.decide.plan import Desired, Node
from bridge.kafka.views import KafkaMember, MemberView
from zkpaths import TopicPartition
from zkpaths.mirror_ids import mirrored_consumer_id, mirrored_thread_id

Assignment = dict[TopicPartition, str]  # partition -> member id


@dataclass(frozen=True)
class BrokerGroup:
    """What ConsumerGroupDescribe says of the group, split into proxies and new members."""

    #: proxy member id -> the old thread it stands for
    group: str
    proxies: dict[str, str]
    #: new (next-generation) member id -> its mirrored thread id
    new_members: dict[str, str]
    current: Assignment
    target: Assignment
    #: the members in the order and shape the legacy range needs (None: not comparable now)
    range_members: tuple[KafkaMember, ...] | None = None


def partitions_of(assignment: Mapping[str, tuple[int, ...]] | None) -> list[TopicPartition]:
    return [TopicPartition(t, p) for t, ps in (assignment or {}).items() for p in ps]


def broker_group(
    group: str,
    members: tuple[MemberView, ...],
    proxy_threads: Mapping[str, str],
    comparable: bool,
) -> BrokerGroup:
    """``proxy_threads``: member id -> thread id of the members that are this bridge's
    proxies; every other member is a new member, mirrored under ``/ids``. ``comparable``:
    the target assignment is at the group epoch and every old thread has its proxy in."""
    current: Assignment = {}
    target: Assignment = {}
    new: dict[str, str] = {}
    for m in members:
        if m.member_id not in proxy_threads:
            new[m.member_id] = mirrored_thread_id(group, m.member_id, m.group_instance_id)
        current.update((tp, m.member_id) for tp in partitions_of(m.assignment))
        target.update((tp, m.member_id) for tp in partitions_of(m.target_assignment))
    ranged = tuple(
        KafkaMember(
            m.member_id,
            proxy_threads.get(m.member_id, m.group_instance_id),
            tuple(m.topics or ()),
        )
        for m in members
    )
    return BrokerGroup(
        group, dict(proxy_threads), new, current, target, ranged if comparable else None
    )


#: the member id whose mirrored thread id a fence holds while a partition moves between two
#: proxies (or waits for one): no old consumer has it, so none can claim the partition
HANDOVER_MEMBER = "zk-bridge-handover"


def fenced_for(owner: OwnerNode | None, thread: str | None) -> bool:
    """Whether ``owner`` is a bridge fence (for ``thread``, if given)."""
    return owner is not None and owner.ours and (thread is None or owner.thread == thread)


def may_release(
    tp: TopicPartition,
    proxy: str,
    bg: BrokerGroup,
    zk: ZkGroupState,
    kafka_offsets: Mapping[TopicPartition, int],
) -> bool:
    """Whether ``proxy`` may stop reporting ``tp`` as owned (acknowledge its revocation):
    only once ZooKeeper shows it fenced, so no old thread fetches it while the broker has
    it free or with its next owner, and once Kafka has ZooKeeper's offset. Even towards
    another proxy: the broker's target can move on to a new member before this proxy
    rejoins, and a partition let go then went to that member at Kafka's older offset
    (hypothesis found it: offsets a thread had committed in ZooKeeper consumed again)."""
    to = bg.target.get(tp)
    if to == proxy:
        return False
    committed = zk.offsets.get(tp, -1) <= kafka_offsets.get(tp, -1)
    # towards another proxy or nobody: any fence of the bridge's; a new member: its own
    return fenced_for(zk.owners.get(tp), bg.new_members.get(to or "")) and committed


def heir_claimed(tp: TopicPartition, bg: BrokerGroup, zk: ZkGroupState) -> str | None:
    """The proxy ``tp`` moves to, when that proxy's own old thread already claimed it in
    ZooKeeper (it won the race with the bridge's fence): the holder may let it go to that
    proxy only, so only while the broker's target is still that proxy; the proxy checks
    that with a ConsumerGroupDescribe right before it rejoins (docs/coexistence.md)."""
    to = bg.target.get(tp)
    owner = zk.owners.get(tp)
    heir = bg.proxies.get(to or "")
    if heir is not None and owner is not None and not owner.ours and owner.thread == heir:
        return to
    return None


@dataclass
class NextGenDecision:
    desired: dict[str, Desired] = field(default_factory=dict)
    #: old thread -> partitions its proxy reports as owned when it rejoins
    owned: dict[str, frozenset[TopicPartition]] = field(default_factory=dict)
    #: old thread -> partitions its proxy lets go only if the target is still the given
    #: proxy (member id) when it rejoins (``heir_claimed``); they are in ``owned`` too
    conditional: dict[str, dict[TopicPartition, str]] = field(default_factory=dict)
    #: old thread -> final ZooKeeper offsets to commit in Kafka as its proxy, before release
    to_kafka: dict[str, dict[TopicPartition, int]] = field(default_factory=dict)
    #: fences released by this decision, and offsets to move forward in ZooKeeper (I2)
    released: list[TopicPartition] = field(default_factory=list)
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    #: old threads whose proxies should rejoin now (``proxies_to_rejoin``)
    rejoin: set[str] = field(default_factory=set)
    #: partition -> (broker's target owner, legacy range's owner), proxies' partitions only
    mismatches: dict[TopicPartition, tuple[str | None, str | None]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    #: partitions the broker moves away from a proxy that still reports them owned
    #: (``held_by_old_threads``)
    held: frozenset[TopicPartition] = frozenset()


def held_by_old_threads(
    bg: BrokerGroup, owned: Mapping[str, frozenset[TopicPartition]]
) -> frozenset[TopicPartition]:
    """Partitions the broker's target moves away from a proxy that the proxy still reports
    as owned: its old thread has not released them in ZooKeeper yet (or their final offsets
    are not in Kafka yet). Nothing forces them (I1 first: the next owner waits), so a hold
    longer than ``[coexistence] max_hold_s`` is what the flow reports."""
    return frozenset(
        tp
        for tp, member in bg.current.items()
        if (thread := bg.proxies.get(member)) is not None
        and bg.target.get(tp) not in (None, member)
        and tp in owned.get(thread, frozenset())
    )


def proxies_owned(
    out: NextGenDecision,
    bg: BrokerGroup,
    zk: ZkGroupState,
    kafka_offsets: Mapping[TopicPartition, int],
) -> None:
    """What each proxy reports as owned (``out.owned``, ``out.conditional``), and the
    offsets to commit as it before it may release a partition to a new member."""
    owned: dict[str, set[TopicPartition]] = {t: set() for t in bg.proxies.values()}
    to_kafka = out.to_kafka
    for tp, owner in zk.owners.items():
        if not owner.ours and owner.thread in owned:
            owned[owner.thread].add(tp)
    for tp, member in bg.current.items():
        thread = bg.proxies.get(member)
        if thread is None or may_release(tp, member, bg, zk, kafka_offsets):
            continue
        owned[thread].add(tp)
        heir = heir_claimed(tp, bg, zk)
        if heir is not None:
            out.conditional.setdefault(thread, {})[tp] = heir
        to = bg.target.get(tp)
        if to != member and fenced_for(zk.owners.get(tp), bg.new_members.get(to or "")):
            zk_offset = zk.offsets.get(tp, -1)  # fenced: the final offset, committed first
            if zk_offset > kafka_offsets.get(tp, -1):
                to_kafka.setdefault(thread, {})[tp] = zk_offset
    out.owned = {t: frozenset(ps) for t, ps in owned.items()}


def proxies_to_rejoin(
    bg: BrokerGroup,
    owned: Mapping[str, frozenset[TopicPartition]],
    conditional: Mapping[str, Mapping[TopicPartition, str]] | None = None,
) -> set[str]:
    """Proxies whose next rejoin moves the group on: one with a revocation it may now
    acknowledge, one whose target has a partition nobody holds (the broker would tell them
    at their next heartbeat; a rejoin now saves up to a heartbeat interval per step of a
    hand-over, and shortens the moment a partition is free between two proxies). A proxy
    still holding what it must revoke is not asked: it would rejoin in a loop."""
    out = set()
    for tp, member in bg.current.items():
        thread = bg.proxies.get(member)
        if thread is None or bg.target.get(tp) == member:
            continue
        if tp not in owned[thread] or tp in (conditional or {}).get(thread, {}):
            out.add(member)
    for tp, member in bg.target.items():
        if member in bg.proxies and tp not in bg.current:
            out.add(member)
    return out


def fences(
    bg: BrokerGroup,
    zk: ZkGroupState,
    kafka_offsets: Mapping[TopicPartition, int],
    forwarded: Mapping[TopicPartition, int] | None = None,
    now_ms: int = 0,
) -> tuple[dict[TopicPartition, str], list[TopicPartition], dict[TopicPartition, int]]:
    """Fences wanted (partition -> mirrored thread id), fences released, and the offsets
    to move forward in ZooKeeper: a fence goes only once its forward offset has stood
    (``release_fences``), and a partition a new member let go towards a proxy has its
    offset moved forward at once, while still fenced (its final commit came before the
    revocation), so the fence can usually go the moment the proxy holds it."""
    wanted: dict[TopicPartition, str] = {}
    early: dict[TopicPartition, int] = {}
    waiting = mirrored_thread_id(bg.group, HANDOVER_MEMBER)
    for tp in set(bg.current) | set(bg.target) | set(zk.owners):
        owner = zk.owners.get(tp)
        if owner is not None and not owner.ours:
            continue  # a real old consumer's claim: never overwritten
        holder, to = bg.current.get(tp), bg.target.get(tp)
        if holder in bg.new_members:
            wanted[tp] = bg.new_members[holder]  # the new member owns it (or still revokes)
        elif to in bg.new_members:
            wanted[tp] = bg.new_members[to]  # fenced before the proxy may let it go
        elif holder is None or holder != to:
            # free in the broker, or leaving its proxy: an old thread claiming it now could
            # fetch it while a new member takes it; fenced until its proxy holds it
            wanted[tp] = owner.thread if owner is not None else waiting
            if holder is None and to in bg.proxies and owner is not None:
                early[tp] = kafka_offsets.get(tp, -1)
    candidates = [tp for tp, o in zk.owners.items() if o.ours and tp not in wanted]
    released, forward = release_fences(candidates, zk, kafka_offsets, forwarded or {}, now_ms)
    for tp in set(candidates) - set(released):
        wanted[tp] = zk.owners[tp].thread  # stays until its forward offset has stood
    forward.update((tp, k) for tp, k in early.items() if k > zk.offsets.get(tp, -1))
    return wanted, released, forward


def mismatches(
    bg: BrokerGroup, partitions: Mapping[str, int]
) -> dict[TopicPartition, tuple[str | None, str | None]]:
    """Proxies' partitions where the broker's target is not the legacy range over ``/ids``
    (``uniform``, a static or pattern-subscribed new member): the old consumers follow
    the range, so the bridge must not follow the broker there."""
    if bg.range_members is None:
        return {}
    expected = range_assignment(bg.range_members, partitions)
    proxies = set(bg.proxies)
    out = {}
    for tp in sorted(set(expected) | set(bg.target), key=lambda tp: (tp.topic, tp.partition)):
        given, want = bg.target.get(tp), expected.get(tp)
        if given != want and (given in proxies or want in proxies):
            out[tp] = (given, want)
    return out


def decide_next_gen_group(
    group: str,
    bg: BrokerGroup,
    members: tuple[MemberView, ...],
    zk: ZkGroupState,
    kafka_offsets: Mapping[TopicPartition, int],
    partitions: Mapping[str, int],
    current: Mapping[str, Node],
    now_ms: int,
    forwarded: Mapping[TopicPartition, int] | None = None,
) -> NextGenDecision:
    """The bridge's part of a mixed ``consumer`` group: mirrored new members (persistent,
    as in classic coexistence), fences, what each proxy reports as owned. ``forwarded``:
    partition -> when a forward offset was decided for it (``fences``)."""
    out = NextGenDecision()
    d = out.desired
    d.update(structural(group))
    for m in members:
        for t in m.topics or ():
            if zkpaths.topic_problem(t) is None:
                d[zkpaths.topic_owners_path(group, t)] = Desired(structural=True)
                d[zkpaths.topic_offsets_path(group, t)] = Desired(structural=True)
        if m.member_id not in bg.new_members:
            continue
        if m.group_instance_id is not None or m.topic_regex:
            out.problems.append(
                f"new member {m.member_id} is static or subscribed by pattern; a mixed "
                "group needs dynamic new members subscribed by topic names"
            )
        path = zkpaths.consumer_id_path(
            group, mirrored_consumer_id(group, m.member_id, m.group_instance_id)
        )
        d[path] = Desired(registration_data(tuple(m.topics or ()), current.get(path), now_ms))
    proxies_owned(out, bg, zk, kafka_offsets)
    out.held = held_by_old_threads(bg, out.owned)
    out.rejoin = {bg.proxies[m] for m in proxies_to_rejoin(bg, out.owned, out.conditional)}
    wanted, out.released, out.offsets = fences(bg, zk, kafka_offsets, forwarded, now_ms)
    for tp, thread in wanted.items():
        if tp.topic in partitions and thread:
            d[zkpaths.topic_owners_path(group, tp.topic)] = Desired(structural=True)
            d[zkpaths.owner_path(group, tp.topic, tp.partition)] = Desired(
                zkpaths.encode_owner(thread)
            )
    out.mismatches = mismatches(bg, partitions)
    return out


def paced_heartbeat_ms(own_ms: int, consumer_protocol_ms: int | None) -> int:
    """How often a proxy in a ``consumer`` group heartbeats. A classic member learns that
    the broker moved its target only from a heartbeat (or a rejoin), while the group's
    consumer-protocol members hear it at the broker's ``group.consumer.heartbeat.interval.ms``;
    a proxy slower than them makes every hand-over wait for it. So: the broker's interval
    when it is shorter than the proxy's own (its session / 10), never below 100 ms."""
    if consumer_protocol_ms is None or consumer_protocol_ms <= 0:
        return own_ms
    return max(100, min(own_ms, consumer_protocol_ms))
