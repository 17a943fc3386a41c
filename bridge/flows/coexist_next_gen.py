"""Mixed next-generation groups: the I/O around ``decide.next_gen_handover``.

A ``consumer``-type group with old consumers registered: the proxies (already joined by
``Coexistence.ensure_proxies``) are told what to report as owned, the old threads' final
offsets are committed in Kafka *as their proxies* (ConsumerGroup.validateOffsetCommit wants
a member id and its epoch from a commit into a non-empty ``consumer`` group; 4.4.0 also takes
a transactional one with neither, which the groups flow's copies use, but earlier 4.x
releases refuse it), and a broker target that disagrees with the legacy range is reported.
Those commits and the copies read Kafka again under one lock first (``commit_ahead_as``).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from bridge.decide.handover import ZkGroupState
from bridge.decide.next_gen_handover import (
    NextGenDecision,
    broker_group,
    decide_next_gen_group,
    paced_heartbeat_ms,
)
from bridge.decide.plan import Node
from bridge.kafka.commit import OffsetCommitter
from bridge.kafka.proxy import PROXY_CLIENT_ID, ProxyMember
from bridge.kafka.views import GroupView
from bridge.metrics import METRICS
from zkpaths import TopicPartition

if TYPE_CHECKING:
    from bridge.flows.coexist import Coexistence

log = logging.getLogger(__name__)


def group_proxies(coexist: Coexistence, group: str) -> dict[str, ProxyMember]:
    """thread id -> this bridge's running proxy in ``group``."""
    return {t: p for (g, t), p in coexist.proxies.items() if g == group}


def decide_next_gen(
    coexist: Coexistence,
    group: str,
    view: GroupView,
    state: ZkGroupState,
    partitions: dict[str, int],
    current: dict[str, Node],
    now_ms: int,
) -> NextGenDecision:
    """One pass over a mixed ``consumer`` group (see the module docstring)."""
    with coexist._lock:
        pending = coexist.pending.get(group)
    if pending is not None and pending.decided is None:
        pending.decided = {}  # a leader gate from before the upgrade: the broker assigns now
    proxy_threads = {
        m.member_id: m.group_instance_id
        for m in view.members
        if m.client_id == PROXY_CLIENT_ID and m.group_instance_id
    }
    comparable = (
        view.assignment_epoch == view.group_epoch
        and set(proxy_threads.values()) == set(state.old_threads)
        and all(not m.topic_regex for m in view.members)
    )
    bg = broker_group(group, view.members, proxy_threads, comparable)
    decision = decide_next_gen_group(
        group,
        bg,
        view.members,
        state,
        dict(view.offsets),
        partitions,
        current,
        now_ms,
        coexist.forwarded.get(group, {}),
    )
    coexist.note_forwarded(group, decision.offsets, decision.released, now_ms)
    proxies = group_proxies(coexist, group)
    broker_ms = coexist.consumer_heartbeat()
    for proxy in proxies.values():
        proxy.keep_pace(paced_heartbeat_ms(proxy.own_heartbeat_ms, broker_ms))
    for thread, offsets in decision.to_kafka.items():
        commit_as(coexist, group, proxies.get(thread), offsets)
    for thread, owned in decision.owned.items():
        if thread in proxies:
            proxies[thread].set_owned(owned, decision.conditional.get(thread, {}))
    for thread in decision.rejoin & set(proxies):
        proxies[thread].request_rejoin()
    for problem in decision.problems:
        coexist.report(group, problem, "partial")
    report_mismatches(coexist, group, view, decision)
    report_held(coexist, group, decision.held, time.monotonic())
    return decision


def report_held(
    coexist: Coexistence, group: str, held: frozenset[TopicPartition], now: float
) -> None:
    """``[coexistence] max_hold_s`` in a ``consumer`` group: nothing is forced (the old
    thread keeps the partition, its next owner waits), but a partition an old thread holds
    past it is reported (one warning naming them, ``zkbridge_gate_timeouts{group}``), as
    the classic leader gate reports its timeout; again only when more become late."""
    before = coexist.held_since.get(group, {})
    since = {tp: before.get(tp, now) for tp in held}
    coexist.held_since[group] = since
    late = sorted(
        (tp for tp, t in since.items() if now - t > coexist.max_hold_s),
        key=lambda tp: (tp.topic, tp.partition),
    )
    if not late:
        coexist.held_reported.pop(group, None)
        return
    if set(late) <= set(coexist.held_reported.get(group, ())):
        coexist.held_reported[group] = late  # fewer than reported: released, not news
        return
    coexist.held_reported[group] = late
    METRICS.gate_timeouts.labels(group=group).inc()
    named = ", ".join(f"{tp.topic}-{tp.partition}" for tp in late[:10])
    if len(late) > 10:
        named += f" and {len(late) - 10} more"
    coexist.report(
        group,
        f"old threads have not released {named} for more than {coexist.max_hold_s}s "
        "(coexistence.max_hold_s) while the broker moves them to another member, which "
        "waits: an old consumer slow to rebalance, "
        "or one whose offsets cannot be committed (docs/coexistence.md)",
        "gate_timeout",
    )


def commit_as(
    coexist: Coexistence,
    group: str,
    proxy: ProxyMember | None,
    offsets: dict[TopicPartition, int],
) -> None:
    """The old thread's final ZooKeeper offsets into Kafka as its proxy; the proxy lets the
    partition go only once Kafka shows them (the next pass reads them back)."""
    if proxy is None:
        return
    committed, error = commit_ahead_as(coexist.committer, group, proxy, offsets)
    if error:
        log.warning(
            "commit as proxy %s in %s failed (retried next tick): %s", proxy.thread_id, group, error
        )
    elif committed:
        log.info(
            "old thread's final offsets committed as its proxy",
            extra={"group": group, "thread_id": proxy.thread_id, "partitions": committed},
        )


def commit_ahead_as(
    committer: OffsetCommitter,
    group: str,
    proxy: ProxyMember,
    offsets: dict[TopicPartition, int],
) -> tuple[int, str | None]:
    """Commit as ``proxy`` the ``offsets`` Kafka is still behind, read again under the
    committer's lock: the pass decided them from a picture a moment old, and the groups
    flow's copies may have put newer ones in since (``OffsetCommitter.commit_ahead``).
    Returns how many were committed and the error, if any."""
    with committer.lock:
        ahead = committer.ahead({group: offsets}).get(group, {})
        if not ahead:
            return 0, None
        return len(ahead), proxy.commit(ahead)


def report_mismatches(
    coexist: Coexistence, group: str, view: GroupView, decision: NextGenDecision
) -> None:
    """``zkbridge_assignment_mismatches{group}`` and one warning naming a partition."""
    METRICS.assignment_mismatches.labels(group=group).set(len(decision.mismatches))
    if not decision.mismatches:
        return
    tp, (given, expected) = next(iter(decision.mismatches.items()))
    coexist.report(
        group,
        f"the broker's target assignment differs from the old consumers' range over /ids "
        f"for {len(decision.mismatches)} partition(s), e.g. {tp.topic}-{tp.partition} to "
        f"{given or 'nobody'} where range gives it to {expected or 'nobody'} (server "
        f"assignor {view.protocol!r}); those partitions are withheld from the hand-over. "
        "Set group.consumer.assignors=range,uniform on the brokers and "
        "group.remote.assignor=range on the next-generation consumers "
        "(docs/coexistence.md)",
        "assignment_mismatch",
    )


def commit_departed(
    committer: OffsetCommitter,
    proxy: ProxyMember,
    state: ZkGroupState | None,
    kafka: dict[TopicPartition, int],
) -> None:
    """Before a departed thread's proxy leaves a ``consumer`` group: its thread's last
    ZooKeeper offsets, where ahead of Kafka, committed as the proxy (once it left, nobody
    outside the group may commit)."""
    if state is None:
        return
    mine = {TopicPartition(t, p) for t, ps in proxy.assignment.items() for p in ps}
    mine |= proxy.reported()
    ahead = {tp: o for tp, o in state.offsets.items() if tp in mine and o > kafka.get(tp, -1)}
    if ahead:
        _, error = commit_ahead_as(committer, proxy.group_id, proxy, ahead)
        if error:
            log.warning("final commit of departed %s failed: %s", proxy.thread_id, error)
