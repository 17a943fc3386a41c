"""Mixed groups: proxies for old threads, the leader's gated SyncGroup, fences and releases.

Used by the group flow for every group that has real old consumers registered. It owns
the I/O of coexistence (proxy members on the shared Kafka loop, transactional offset
commits, reading a group's owners and offsets); the decisions are ``decide.handover``'s.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import suppress

from kafka import KafkaAdminClient
from kazoo.client import KazooClient

import zkpaths
from bridge.decide.handover import (
    HeldStep,
    JoinedGeneration,
    KafkaMember,
    MixedDecision,
    OwnerNode,
    PendingSync,
    ZkGroupState,
    decide_mixed_group,
    retry_withheld,
    step_held_sync,
)
from bridge.decide.kafka_node import kafka_node_refusal, proxies_only
from bridge.decide.next_gen_handover import NextGenDecision
from bridge.decide.plan import Node
from bridge.decide.simple_commits import ProxyIdentity
from bridge.flows.coexist_checks import GroupChecks
from bridge.flows.coexist_next_gen import commit_departed, decide_next_gen
from bridge.flows.coexist_reads import GroupReads, read_group
from bridge.kafka.cluster import consumer_heartbeat_interval_ms
from bridge.kafka.commit import OffsetCommitter
from bridge.kafka.proxy import PROXY_CLIENT_ID, ProxyMember, ProxyPool
from bridge.kafka.views import CLASSIC, CONSUMER, GroupView
from bridge.metrics import METRICS
from bridge.zookeeper.reader import ConsumerTreeReader, NodeProblem
from zkpaths import TopicPartition
from zkpaths.dialects import KAFKA_NODE, Member

log = logging.getLogger(__name__)


class Coexistence(GroupChecks):
    def __init__(
        self,
        zk: KazooClient,
        admin: KafkaAdminClient,
        client_options: dict,
        transactional_id: str,
        *,
        max_hold_s: float = 15.0,
        session_timeout_ms: int = 30000,
        report=None,
    ) -> None:
        self.zk = zk
        self.admin = admin
        self.client_options = client_options
        self.transactional_id = transactional_id
        self.max_hold_s = max_hold_s
        self.session_timeout_ms = session_timeout_ms
        self.report = report or (lambda subject, message, kind: log.warning(message))
        self.pool: ProxyPool | None = None
        self.proxies: dict[tuple[str, str], ProxyMember] = {}
        self.pending: dict[str, PendingSync] = {}
        self.retry: set[str] = set()
        #: per group, its ZooKeeper consumers by dialect (read_state) and why it is refused
        self.members: dict[str, dict[str, Member]] = {}
        self.refused: dict[str, str] = {}
        #: mixed next-generation (``consumer``-type) groups as the last pass saw them, with
        #: their ZooKeeper state and Kafka offsets (a departing proxy commits from them)
        self.next_gen: dict[str, tuple[ZkGroupState, dict[TopicPartition, int]]] = {}
        #: consumer groups: partition -> since when (monotonic) an old thread holds it while
        #: the broker moves it on, and what was last reported late (coexist_next_gen)
        self.held_since: dict[str, dict[TopicPartition, float]] = {}
        self.held_reported: dict[str, list[TopicPartition]] = {}
        #: per group, partition -> when (ms) a forward offset was decided for a fence that
        #: is still up: the fence goes once it has stood (decide.handover.release_fences)
        self.forwarded: dict[str, dict[TopicPartition, int]] = {}
        #: per group, the last Stable generation judged against range, and the judgement
        self.judged: dict[str, tuple[JoinedGeneration, dict[str, int], dict]] = {}
        #: the brokers' group.consumer.heartbeat.interval.ms, read at the first mixed
        #: consumer-type group (the proxies there keep pace with it: next_gen_handover)
        self.consumer_heartbeat_ms: int | None = None
        self._heartbeat_read = False
        self._lock = threading.Lock()
        #: the groups flow's reader (its watches: only changed nodes are read again)
        self.reader: ConsumerTreeReader | None = None
        #: and each mixed group's read, kept until something below the group changed
        self.reads: GroupReads | None = None
        self.committer = OffsetCommitter(admin, client_options, transactional_id)

    # ---- the leader gate, on the proxies' IO loop -------------------------------------------
    async def leader_gate(self, proxy: ProxyMember, generation_id: int, members):
        request = PendingSync(generation_id, members, time.monotonic())
        with self._lock:
            self.pending[proxy.group_id] = request
        log.info(
            "leader proxy holds SyncGroup until the hand-over is safe",
            extra={"group": proxy.group_id, "generation": generation_id},
        )
        while request.decided is None and not proxy.closed:
            await proxy.pool.sleep(0.05)
        with self._lock:
            if self.pending.get(proxy.group_id) is request:
                del self.pending[proxy.group_id]
        return request.decided or {}

    # ---- proxies ----------------------------------------------------------------------
    def ensure_proxies(
        self,
        group: str,
        threads: dict[str, tuple[str, ...]],
        state: ZkGroupState | None = None,
    ) -> None:
        """One proxy per old thread: start the missing ones, remove the departed ones. In a
        ``consumer`` group a departed thread's last offsets are committed as its proxy
        before it leaves: from ``state``, ZooKeeper as this pass read it (an old consumer
        commits, then deregisters: the last pass's read may predate its final commit)."""
        if threads and self.pool is None:
            self.pool = ProxyPool(self.client_options)
        for (g, thread), proxy in list(self.proxies.items()):
            if g == group and (
                thread not in threads or proxy.topics != tuple(sorted(threads[thread]))
            ):
                if g in self.next_gen:
                    last, kafka = self.next_gen[g]
                    commit_departed(self.committer, proxy, state or last, kafka)
                proxy.stop(leave=True)
                del self.proxies[(g, thread)]
                log.info("proxy left", extra={"group": g, "thread_id": thread})
        for thread, topics in threads.items():
            if (group, thread) in self.proxies:
                continue
            assert self.pool is not None
            proxy = ProxyMember(
                self.pool,
                group,
                thread,
                topics,
                self.leader_gate,
                session_timeout_ms=self.session_timeout_ms,
            )
            proxy.start()
            self.proxies[(group, thread)] = proxy
            log.info("proxy started", extra={"group": group, "thread_id": thread})
        METRICS.proxies.labels(group=group).set(len(threads))

    def proxy_view(self, group: str) -> dict[str, ProxyIdentity]:
        """Read-only: thread id -> its proxy's member id and generation, for the legacy
        gateway's simple commits (called from the gateway's thread; a snapshot)."""
        out = {}
        for (g, thread), proxy in list(self.proxies.items()):
            if g == group and not proxy.closed:
                member_id, generation, assigned = proxy.identity()
                out[thread] = ProxyIdentity(member_id, thread, generation, assigned)
        return out

    def groups(self) -> set[str]:
        return {g for g, _ in self.proxies}

    def at_rest(self, groups: set[str]) -> set[str]:
        """Of ``groups``, the ones where nothing waits on the clock or on a proxy: no
        SyncGroup held, no withheld assignment to retry, no forward offset standing before
        its fence goes, not next-generation (its proxies keep pace every pass), and every
        proxy joined with its SyncGroup answered. Only then is a decision a function of
        what it read alone, and the flow may leave the group be while that stands
        (``flows.settled``)."""
        with self._lock:
            moving = set(self.pending)
        moving |= self.retry | self.forwarded.keys() | self.next_gen.keys()
        moving |= self.held_since.keys()
        for (g, _), proxy in list(self.proxies.items()):
            if g in groups and g not in moving and not proxy.synced():
                moving.add(g)
        return groups - moving

    def committing_proxy(self, group: str) -> ProxyMember | None:
        """A joined proxy of ``group`` to commit the groups flow's copies as (any member of
        the generation may commit for the group), None when none is joined. Called from
        the copier's thread: a snapshot."""
        for (g, _), proxy in sorted(list(self.proxies.items()), key=lambda kv: kv[0]):
            if g == group and not proxy.closed and proxy.identity()[1] >= 0:
                return proxy
        return None

    def dealt_to_proxies(self, group: str, generation: int) -> frozenset[TopicPartition]:
        """The partitions ``generation`` of ``group`` gave its proxies (those whose SyncGroup
        answered in it): no Kafka member holds them while that generation lasts. Called
        from the copier's thread: a snapshot."""
        dealt: set[TopicPartition] = set()
        for (g, _), proxy in list(self.proxies.items()):
            if g == group and not proxy.closed:
                _, at, assigned = proxy.identity()
                if at == generation:
                    dealt |= assigned
        return frozenset(dealt)

    def forget(self, keep: Callable[[str], bool]) -> None:
        """Stop the proxies of every group ``keep`` rejects, and drop what this bridge knew
        of those groups: with shares, the groups of a share just revoked (on the flow's
        thread, inside the poll that revoked it, before the bridges' rebalance completes).
        Without it a bridge that lost a share kept its proxies heartbeating, and a held
        SyncGroup nobody here would decide; the new holder's proxies, with the same static
        ids, then fenced them and were fenced back in turn. No LeaveGroup: the new holder's
        proxies take the same ids, as a successor's do when a whole term ends (``close``)."""
        gone = {g for g, _ in self.proxies if not keep(g)}
        for (g, thread), proxy in list(self.proxies.items()):
            if g in gone:
                proxy.stop(leave=False)
                del self.proxies[(g, thread)]
        for per_group in (
            self.members,
            self.refused,
            self.next_gen,
            self.held_since,
            self.held_reported,
            self.forwarded,
            self.judged,
        ):
            for g in [g for g in per_group if not keep(g)]:
                del per_group[g]
        self.retry = {g for g in self.retry if keep(g)}
        for g in gone:
            with suppress(KeyError):  # a group whose proxies were never counted
                METRICS.proxies.remove(g)
        if gone:
            log.info(
                "proxies of groups no longer held stopped",
                extra={"groups": len(gone), "proxies_left": len(self.proxies)},
            )

    def close(self, leave: bool = False) -> None:
        for proxy in self.proxies.values():
            proxy.stop(leave=leave)
        self.proxies.clear()
        self.committer.close()
        if self.pool is not None:
            self.pool.close()

    # ---- ZooKeeper side of a mixed group ----------------------------------------------
    def read_state(
        self, group: str, legacy_ids: list[str], owned: set[str], partitions: dict[str, int]
    ) -> tuple[ZkGroupState, dict[str, tuple[str, ...]]]:
        """Old threads (thread -> topics), owners and offsets of ``group`` (read again only
        when something below it changed: ``reads``); remembers its members' dialects
        (``self.members``) for :meth:`refusal`."""
        reader = self.reader or ConsumerTreeReader(self.zk, report=self._bad_node)
        ids = tuple(legacy_ids)
        read = self.reads.cached(group, ids, partitions) if self.reads is not None else None
        if read is None:
            read = read_group(reader, group, ids, partitions, self.report)
            if self.reads is not None:
                self.reads.keep(group, read)
        self.members[group] = read.members
        if any(m.dialect == KAFKA_NODE for m in read.members.values()):
            claims = {tp: thread for tp, (thread, _) in read.claims.items()}
            threads = {t: set(ts) for t, ts in read.threads.items()}
            claims = reader.known_owners(group, claims, threads, owned)
            paths = {tp: path for tp, (_, path) in read.claims.items()}
            owners = {
                tp: OwnerNode(
                    thread,
                    (paths.get(tp) or zkpaths.owner_path(group, tp.topic, tp.partition)) in owned,
                )
                for tp, thread in claims.items()
            }
        else:  # every claim as read, with its path (a mixed group's every tick: kept short)
            owners = {
                tp: OwnerNode(thread, path in owned) for tp, (thread, path) in read.claims.items()
            }
        state = ZkGroupState(frozenset(read.threads), owners, dict(read.offsets))
        return state, {t: tuple(sorted(ts)) for t, ts in read.threads.items()}

    def refusal(
        self, group: str, view: GroupView | None, pending: PendingSync | None = None
    ) -> str | None:
        """Why the bridge will not mix this group (kafka-node with anyone else), or None;
        a refused group's leader proxy assigns every partition to the proxies. ``pending``:
        the held SyncGroup to judge with (default: the one held now)."""
        threads = {
            t for (g, t) in self.proxies if g == group
        }  # proxies stand for these old threads
        # a proxy of a consumer that just left may still be listed: not a Kafka client
        kafka_clients = {
            m.member_id: m.client_id
            for m in (view.members if view is not None else ())
            if m.group_instance_id not in threads and m.client_id != PROXY_CLIENT_ID
        }
        if pending is None:
            with self._lock:
                pending = self.pending.get(group)
        for m in pending.members if pending is not None else ():
            if m.group_instance_id is None:  # joined in the rebalance held now (proxies
                kafka_clients.setdefault(m.member_id, "?")  # are static members)
        why = kafka_node_refusal(group, self.members.get(group, {}), kafka_clients)
        if why is None:
            self.refused.pop(group, None)
        else:
            self.refused[group] = why
        return why

    def _bad_node(self, problem: NodeProblem) -> None:
        self.report(problem.path, f"bad node left alone: {problem.reason}", "bad_node")

    # ---- one pass over a mixed group ---------------------------------------------------
    def decide(
        self,
        group: str,
        view: GroupView | None,
        state: ZkGroupState,
        partitions: dict[str, int],
        current: dict[str, Node],
        now_ms: int,
    ) -> MixedDecision | NextGenDecision | None:
        """The group's desired nodes and forward offsets, or None to keep it as it is
        (rebalancing, unknown)."""
        kafka_offsets = dict(view.offsets) if view else {}
        with self._lock:
            pending = self.pending.get(group)
        # judged again on the very request about to be answered: one that arrived after the
        # flow's own check must not slip a Kafka member its range
        if self.members.get(group) and self.refusal(group, view, pending):
            if pending is not None and pending.decided is None:
                pending.decided = proxies_only(pending.members, state.old_threads, partitions)
            return None  # reported by the flow; nothing is mirrored into a refused group
        if view is not None and view.group_type == CONSUMER and view.members and not view.error:
            self.next_gen[group] = (state, kafka_offsets)
            return decide_next_gen(self, group, view, state, partitions, current, now_ms)
        if group in self.next_gen and not classic_again(view):
            return None  # unreadable now (an error, a coordinator moving): as it is
        self.held_since.pop(group, None)
        self.held_reported.pop(group, None)
        if self.next_gen.pop(group, None) is not None:  # classic again: nothing to report
            for (g, _), proxy in self.proxies.items():
                if g == group:
                    proxy.set_owned(None, {})  # undecided: it reports what it holds
                    proxy.keep_pace(None)
        if pending is not None and pending.decided is None:
            step = step_held_sync(
                group, pending, state, kafka_offsets, partitions, time.monotonic(), self.max_hold_s
            )
            gen = step.gen
            if step.gate.offsets_to_kafka:
                self._commit_to_kafka(group, step.gate.offsets_to_kafka)
            if step.release is not None:
                self._release(group, pending, step)
        elif self._check_protocol(group, view):
            return None  # the two worlds cannot share this group; reported, nothing written
        elif self._departed_proxies(group, view):
            return None  # Kafka still lists a proxy the bridge stopped: wait for its leave
        elif view is not None and view.state == "Stable" and not view.error:
            gen = _stable_generation(view)
            if group in self.retry and retry_withheld(group, gen, state, kafka_offsets):
                self._rejoin_leader(group)
            self._check_leadership(group, view, state)
            if group not in self.retry:  # a withheld assignment is reported as gate_timeout
                self._check_assignment(group, view, gen, partitions)
        else:
            return None
        decision = decide_mixed_group(
            group, gen, state, kafka_offsets, current, now_ms, self.forwarded.get(group, {})
        )
        self.note_forwarded(group, decision.offsets, decision.released, now_ms)
        for problem in decision.problems:
            self.report(group, problem, "partial")
        return decision

    def note_forwarded(
        self,
        group: str,
        offsets: Mapping[TopicPartition, int],
        released: list[TopicPartition],
        now_ms: int,
    ) -> None:
        """Remember when each forward offset was decided, until its fence is released."""
        mine = self.forwarded.setdefault(group, {})
        mine.update(dict.fromkeys(offsets, now_ms))
        for tp in released:
            mine.pop(tp, None)
        if not mine:
            self.forwarded.pop(group, None)

    def consumer_heartbeat(self) -> int | None:
        """The brokers' heartbeat interval for consumer-protocol members, read once."""
        if not self._heartbeat_read:
            self._heartbeat_read = True
            self.consumer_heartbeat_ms = consumer_heartbeat_interval_ms(self.admin)
        return self.consumer_heartbeat_ms

    def _departed_proxies(self, group: str, view: GroupView | None) -> bool:
        """Whether ``view`` lists a proxy of this bridge that was stopped (its old consumer
        left, e.g. ``kill -9``): until Kafka drops it, the view would read as a new member
        leading the group, so nothing is decided on it."""
        running = {t for (g, t) in self.proxies if g == group}
        return view is not None and any(
            m.client_id == PROXY_CLIENT_ID and m.group_instance_id not in running
            for m in view.members
        )

    def _release(self, group: str, pending: PendingSync, step: HeldStep) -> None:
        """The leader proxy sends ``step.release``: say so, and remember a withheld group."""
        held_s = time.monotonic() - pending.since
        pending.decided = step.release
        if not step.timed_out:
            log.info(
                "hand-over safe; leader sends SyncGroup",
                extra={
                    "group": group,
                    "generation": step.gen.generation_id,
                    "held_s": round(held_s, 3),
                },
            )
            METRICS.handover_hold.observe(held_s)
            return
        self.retry.add(group)
        METRICS.gate_timeouts.labels(group=group).inc()
        self.report(
            group,
            f"old owners did not release {sorted(map(str, step.gate.waiting))} "
            f"within {self.max_hold_s}s; those partitions are withheld and the "
            "group rebalances again once they are free",
            "gate_timeout",
        )

    def _rejoin_leader(self, group: str) -> None:
        for (g, _), proxy in self.proxies.items():
            if g == group and proxy.is_leader:
                self.retry.discard(group)
                proxy.request_rejoin()
                log.info(
                    "leader proxy rejoins to hand over withheld partitions", extra={"group": group}
                )
                return

    def _commit_to_kafka(self, group: str, offsets: dict[TopicPartition, int]) -> None:
        """The old owners' final offsets, into the live group before the leader syncs
        (where Kafka is still behind them: the copies may have put newer ones in)."""
        self.committer.commit_ahead({group: offsets}, "zk_to_kafka_handover")


def classic_again(view: GroupView | None) -> bool:
    """Whether a group last seen ``consumer``-type is now read, without error, as a
    classic one. Only then do its proxies stop holding what their old threads own: a read
    that failed (or a consumer group described without its members) says nothing, and
    letting go on it would let the broker hand an old thread's partitions on (I1)."""
    return view is not None and not view.error and view.group_type == CLASSIC


def _stable_generation(view: GroupView) -> JoinedGeneration:
    """A Stable classic group's members and assignment as Kafka describes them (the
    generation id is not needed to judge it)."""
    members = tuple(
        KafkaMember(m.member_id, m.group_instance_id, m.topics or ()) for m in view.members
    )
    assignment = {
        TopicPartition(t, p): m.member_id
        for m in view.members
        for t, ps in (m.assignment or {}).items()
        for p in ps
    }
    return JoinedGeneration(-1, members, assignment)
