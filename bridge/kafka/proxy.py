"""Proxy members: each old consumer thread speaks the group protocol through the bridge.

Built on kafka-python's ``BaseCoordinator``: JoinGroup, SyncGroup, Heartbeat, LeaveGroup
are the library's, run on one shared IO loop for every proxy of the process. A proxy is a
*static* member (``group.instance.id`` = the old thread id) offering only the ``range``
protocol with its thread's topics, so Kafka orders proxies exactly as old consumers order
their threads.

When a proxy is the group leader it does not run an assignor: it hands the joined
generation to a *leader gate* coroutine (the coexistence flow), which may hold the
SyncGroup until ZooKeeper shows the hand-over is safe. The wait is ``await``-ed on the
shared loop, so every other proxy keeps heartbeating meanwhile.

In a next-generation (``consumer``) group the broker assigns and there is no leader: a proxy
acknowledges a revocation by rejoining without the partition in its subscription's
``owned_partitions`` (docs/coexistence.md). What it reports is ``owned``, set by the
coexistence flow from ZooKeeper; a partition stays reported until the hand-over is safe.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

import kafka.errors as Errors
from kafka.coordinator.base import BaseCoordinator
from kafka.net.compat import KafkaNetClient
from kafka.net.selector import NetworkSelector
from kafka.protocol.consumer import (
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    SyncGroupRequest,
)
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafka.structs import MemberState

from bridge.kafka.messages import ConsumerGroupDescribeRequest
from bridge.kafka.views import KafkaMember
from bridge.metrics import METRICS
from zkpaths import TopicPartition

log = logging.getLogger(__name__)

PROXY_CLIENT_ID = "zk-bridge-proxy"

#: leader gate: given the joined generation's members, returns partition -> member id
LeaderGate = Callable[["ProxyMember", int, tuple[KafkaMember, ...]], Awaitable[dict]]


class ProxyPool:
    """One IO thread for every proxy member of the process.

    Each proxy still gets connections of its own: a broker handles one request per
    connection at a time, so a JoinGroup parked in the coordinator's purgatory would hold
    up every other proxy's heartbeat queued behind it on a shared connection.
    """

    def __init__(self, client_options: dict, bootstrap_timeout_ms: int = 10000) -> None:
        self.options = {**client_options, "client_id": PROXY_CLIENT_ID}
        self.bootstrap_timeout_ms = bootstrap_timeout_ms
        self.net = NetworkSelector(**self.options)
        self.net.start()
        probe = self.client()
        self.broker_version = probe._manager.broker_version
        self.release(probe)

    def client(self) -> KafkaNetClient:
        """A client with its own connections, on the shared loop."""
        client = KafkaNetClient(net=self.net, **self.options)
        client._manager.bootstrap(self.bootstrap_timeout_ms)
        return client

    def release(self, client: KafkaNetClient) -> None:
        async def close() -> None:
            client._manager.close()

        self.net.run(close)

    def spawn(self, coro_fn: Callable[[], Awaitable[object]]):
        """Run a coroutine on the shared loop in the background."""
        return self.net.call_soon_with_future(coro_fn)

    def sleep(self, seconds: float):
        return self.net.sleep(seconds)

    def close(self) -> None:
        self.net.close()


class ProxyMember(BaseCoordinator):
    """The Kafka group member standing for one old consumer thread."""

    def __init__(
        self,
        pool: ProxyPool,
        group: str,
        thread_id: str,
        topics: tuple[str, ...],
        leader_gate: LeaderGate,
        *,
        session_timeout_ms: int = 30000,
        rebalance_timeout_ms: int = 60000,
    ) -> None:
        super().__init__(
            pool.client(),
            group_id=group,
            group_instance_id=thread_id,
            session_timeout_ms=session_timeout_ms,
            heartbeat_interval_ms=max(1000, session_timeout_ms // 10),
            max_poll_interval_ms=rebalance_timeout_ms,
            api_version=pool.broker_version,
        )
        self.pool = pool
        self.own_heartbeat_ms: int = self.config["heartbeat_interval_ms"]
        self.thread_id = thread_id
        self.topics = tuple(sorted(topics))
        self.leader_gate = leader_gate
        self.closed = False
        self.is_leader = False
        self.assignment: dict[str, tuple[int, ...]] = {}
        #: (generation, its assignment): set once the generation's SyncGroup answered
        self._assigned_at: tuple[int, frozenset[TopicPartition]] = (-1, frozenset())
        self.last_error: str | None = None
        self._task = None
        #: what the proxy reports as owned when it joins (next-generation groups): the
        #: coexistence flow sets it; the broker keeps a reported partition with the proxy.
        #: None until the flow decided: the proxy then reports what it holds, so a group
        #: the broker turns ``consumer``-type under it (a next-generation member joining)
        #: cannot take its partitions before the flow has read ZooKeeper
        self.owned: frozenset[TopicPartition] | None = None
        #: partitions to let go only while the target still gives them to this member id
        self.conditional: dict[TopicPartition, str] = {}
        self._join_owned: frozenset[TopicPartition] = frozenset()

    # ---- what BaseCoordinator asks of a subclass --------------------------------------
    def protocol_type(self) -> str:
        return "consumer"

    def group_protocols(self):
        """``range`` with the thread's topics, in a v1 subscription carrying
        ``owned_partitions``: a ``consumer`` group's broker takes an empty v0 list as
        "revoked everything" (GroupMetadataManager.classicGroupJoinToConsumerGroup)."""
        per_topic: dict[str, list[int]] = {}
        for tp in sorted(self._join_owned):
            per_topic.setdefault(tp.topic, []).append(tp.partition)
        owned = [
            ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=ps)
            for t, ps in per_topic.items()
        ]
        subscription = ConsumerProtocolSubscription(
            version=1, topics=list(self.topics), user_data=b"", owned_partitions=owned
        )
        return [("range", subscription)]

    def keep_pace(self, interval_ms: int | None) -> None:
        """Heartbeat every ``interval_ms`` (None: the proxy's own interval, session / 10):
        kafka-python's heartbeat reads its interval at every beat, so it takes effect at the
        next one (``decide.next_gen_handover.paced_heartbeat_ms`` says why and when)."""
        self.heartbeat.config["heartbeat_interval_ms"] = interval_ms or self.own_heartbeat_ms

    def set_owned(
        self, owned: frozenset[TopicPartition] | None, conditional: dict[TopicPartition, str]
    ) -> None:
        """Report ``owned`` from the next join on (None: what it holds), less the
        ``conditional`` partitions whose target is still the given member then; rejoin at
        once when it lets a partition go, so the broker hands it over without waiting for
        the next heartbeat."""
        released = bool(self.reported() - (owned if owned is not None else self.held()))
        self.owned, self.conditional = owned, dict(conditional)
        if released and not self.closed:
            self.request_rejoin()

    def held(self) -> frozenset[TopicPartition]:
        """The partitions the proxy's last SyncGroup gave it."""
        return self._assigned_at[1]

    def synced(self) -> bool:
        """Whether the proxy is joined and its last JoinGroup's SyncGroup answered: it
        holds its generation's partitions (not joining, not waiting on the leader)."""
        generation = self._generation.generation_id
        return not self.closed and generation >= 0 and self._assigned_at[0] == generation

    def reported(self) -> frozenset[TopicPartition]:
        """What the proxy reports as owned at its next join (before ``conditional``)."""
        return self.owned if self.owned is not None else self.held()

    async def _owned_at_join(self) -> frozenset[TopicPartition]:
        """``owned`` less the conditional partitions the broker's target still gives to
        their heir, by a ConsumerGroupDescribe right before the join: a decision from the
        last pass must not let a partition go to a member the target has moved it from."""
        owned = self.reported()
        if not self.conditional:
            return owned
        try:
            request = ConsumerGroupDescribeRequest(
                group_ids=[self.group_id], include_authorized_operations=False
            )
            response = await self._manager.send(request, node_id=self.coordinator_id)
            target = {
                TopicPartition(tp.topic_name, p): m.member_id
                for g in response.groups
                for m in g.members
                for tp in (m.target_assignment.topic_partitions or ())
                for p in tp.partitions
            }
        except Exception as exc:  # noqa: BLE001 - unsure: keep them all, retried next join
            log.warning("proxy %s: describe before join failed: %s", self.thread_id, exc)
            return owned
        go = {tp for tp, heir in self.conditional.items() if target.get(tp) == heir}
        return owned - go

    def _perform_assignment(self, leader_id, protocol, members):  # pragma: no cover
        raise AssertionError("proxies assign through the leader gate")

    async def _on_join_complete_async(self, generation, member_id, protocol, assignment_bytes):
        METRICS.note_generation(self.group_id, generation)
        decoded = ConsumerProtocolAssignment.decode(assignment_bytes) if assignment_bytes else None
        self.assignment = {
            t: tuple(sorted(ps)) for t, ps in (decoded.assigned_partitions if decoded else [])
        }
        # one tuple, replaced whole: the gateway's thread reads it without the lock
        self._assigned_at = (
            generation,
            frozenset(TopicPartition(t, p) for t, ps in self.assignment.items() for p in ps),
        )
        log.info(
            "proxy joined",
            extra={
                "group": self.group_id,
                "thread_id": self.thread_id,
                "generation": generation,
                "leader": self.is_leader,
                "partitions": sum(map(len, self.assignment.values())),
            },
        )

    # ---- join and sync, with the leader's hand-over gate ----------------------------------
    async def _do_join_and_sync_async(self):
        if self.coordinator_unknown():
            raise Errors.CoordinatorNotAvailableError(self.coordinator_id)
        with self._lock:
            self.state = MemberState.REBALANCING
        self._join_owned = await self._owned_at_join()
        join = JoinGroupRequest(
            group_id=self.group_id,
            session_timeout_ms=self.config["session_timeout_ms"],
            rebalance_timeout_ms=self.config["max_poll_interval_ms"],
            member_id=self._generation.member_id,
            group_instance_id=self.group_instance_id,
            protocol_type=self.protocol_type(),
            protocols=self.group_protocols(),
            max_version=7,
        )
        sent = time.monotonic()
        response = await self._manager.send(
            join,
            node_id=self.coordinator_id,
            request_timeout_ms=self.config["max_poll_interval_ms"] + 5000,
        )
        self._process_join_group_response(response, sent)
        self.is_leader = response.leader == response.member_id
        assignments = await self._leader_assignments(response) if self.is_leader else []
        sync = SyncGroupRequest(
            group_id=self.group_id,
            generation_id=self._generation.generation_id,
            member_id=self._generation.member_id,
            group_instance_id=self.group_instance_id,
            protocol_type=self.protocol_type(),
            protocol_name=self._generation.protocol,
            assignments=assignments,
            max_version=5,
        )
        sent = time.monotonic()
        # the coordinator answers a follower's SyncGroup only once the leader's arrives, which
        # the leader gate may hold up to coexistence.max_hold_s: with the client's request
        # timeout (10 s) it timed out first, the proxy rejoined and the group churned
        sync_response = await self._manager.send(
            sync,
            node_id=self.coordinator_id,
            request_timeout_ms=self.config["max_poll_interval_ms"] + 5000,
        )
        return self._process_sync_group_response(sync_response, sent)

    async def _leader_assignments(self, response) -> list[tuple[str, bytes]]:
        """The leader's SyncGroup assignments: whatever the hand-over gate lets each member
        own (it may hold the answer until the old consumers let go)."""
        members = tuple(
            KafkaMember(
                m.member_id,
                m.group_instance_id or None,
                tuple(ConsumerProtocolSubscription.decode(m.metadata).topics),
            )
            for m in response.members
        )
        target: dict[TopicPartition, str] = await self.leader_gate(
            self, response.generation_id, members
        )
        per_member: dict[str, dict[str, list[int]]] = {m.member_id: {} for m in members}
        for tp, member in sorted(target.items()):
            per_member.setdefault(member, {}).setdefault(tp.topic, []).append(tp.partition)
        return [
            (mid, ConsumerProtocolAssignment(0, sorted(parts.items()), b"").encode())
            for mid, parts in per_member.items()
        ]

    def identity(self) -> tuple[str, int, frozenset[TopicPartition]]:
        """(member id, generation, the partitions that generation gave it) of the last
        JoinGroup: what an offset commit made on this member's behalf is checked against
        ("", -1 and nothing while not joined; nothing until its SyncGroup answers). Read
        without the coordinator's lock (the gateway's loop must not wait on the proxies'
        loop): both are immutable tuples, replaced whole."""
        generation = self._generation
        at, assigned = self._assigned_at
        if at != generation.generation_id:
            assigned = frozenset()
        return generation.member_id or "", generation.generation_id, assigned

    # ---- committing as the member (next-generation groups) ----------------------------------
    def commit(
        self, offsets: dict[TopicPartition, int], at: tuple[str, int] | None = None
    ) -> str | None:
        """Commit ``offsets`` as this member, at its member epoch (a ``consumer`` group
        takes commits from its members only: ConsumerGroup.validateOffsetCommit checks the
        member id and, for a classic member, generation == member epoch). ``at``: the
        (member id, generation) to commit at, taken before the caller read the group, so
        Kafka refuses the commit if the group moved on since. Returns the first error, or
        None."""
        return self.pool.net.run(self._commit, offsets, at)

    async def _commit(
        self, offsets: dict[TopicPartition, int], at: tuple[str, int] | None = None
    ) -> str | None:
        generation = self._generation
        if self.coordinator_unknown() or not generation.has_member_id():
            return "not joined"
        member_id, generation_id = at or (generation.member_id, generation.generation_id)
        topic_cls = OffsetCommitRequest.OffsetCommitRequestTopic
        part_cls = topic_cls.OffsetCommitRequestPartition
        per_topic: dict[str, list] = {}
        for tp, offset in sorted(offsets.items()):
            per_topic.setdefault(tp.topic, []).append(
                part_cls(
                    partition_index=tp.partition,
                    committed_offset=offset,
                    committed_leader_epoch=-1,
                    committed_metadata="",
                )
            )
        request = OffsetCommitRequest(
            max_version=8,
            group_id=self.group_id,
            generation_id_or_member_epoch=generation_id,
            member_id=member_id,
            group_instance_id=self.group_instance_id,
            topics=[topic_cls(name=t, partitions=ps) for t, ps in per_topic.items()],
        )
        try:
            response = await self._manager.send(request, node_id=self.coordinator_id)
        except Errors.KafkaError as exc:
            return f"{type(exc).__name__}: {exc}"
        for topic, partitions in response.topics:
            for partition, code in partitions:
                if code:
                    return f"{topic}-{partition}: {Errors.for_code(code).__name__}"
        return None

    # ---- life cycle ------------------------------------------------------------------------
    def start(self) -> None:
        self._task = self.pool.spawn(self._run)

    async def _run(self) -> None:
        """Keep the member joined: rejoin whenever the coordinator asks for it."""
        while not self.closed:
            try:
                # as a consumer's poll() does: (re)start the heartbeat loop if it ended,
                # find the coordinator, rejoin when asked; a no-op when all is well
                await self.ensure_active_group_async(timeout_ms=5000)
                # the loop is this member's "poll": without it the heartbeat thread would
                # leave the group every max_poll_interval_ms as if the consumer had stalled
                self.poll_heartbeat()
                self.last_error = None
            except Exception as exc:  # noqa: BLE001 - retried; surfaced through last_error
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("proxy %s in %s: %s", self.thread_id, self.group_id, self.last_error)
                await self.pool.sleep(1.0)
            await self.pool.sleep(0.1)

    async def _leave(self) -> None:
        """Static members never leave on close; the bridge removes the proxy explicitly."""
        if self.coordinator_unknown() or not self._generation.has_member_id():
            return
        request = LeaveGroupRequest(
            group_id=self.group_id,
            member_id=self._generation.member_id,
            members=[
                LeaveGroupRequest.MemberIdentity(
                    member_id=self._generation.member_id,
                    group_instance_id=self.group_instance_id,
                    reason="old consumer thread left ZooKeeper",
                )
            ],
        )
        try:
            await self._manager.send(request, node_id=self.coordinator_id)
        except Errors.KafkaError as exc:
            log.warning("LeaveGroup for %s failed: %s", self.thread_id, exc)

    def stop(self, leave: bool = True) -> None:
        """Stop heartbeating; with ``leave`` the member leaves the group at once."""
        self.closed = True
        if leave:
            try:
                self.pool.net.run(self._leave)
            except Exception as exc:  # noqa: BLE001 - best effort; session timeout covers it
                log.warning("proxy %s did not leave cleanly: %s", self.thread_id, exc)
        self._close_heartbeat()
        self.reset_generation()
        self.pool.release(self._client)


#: one group's commit as a proxy: the member, the offsets, and the (member id, generation)
ProxyCommit = tuple[ProxyMember, dict[TopicPartition, int], tuple[str, int]]


def commit_each(commits: dict[str, ProxyCommit]) -> dict[str, str | None]:
    """Each group's offsets committed as its proxy, every commit sent at once (each proxy
    has connections of its own, so they are answered side by side, not one after another:
    a cycle of 20 groups took 20 round trips). Per group, the first error, or None."""
    out: dict[str, str | None] = {}
    by_pool: dict[int, dict[str, ProxyCommit]] = {}
    for group, commit in commits.items():
        by_pool.setdefault(id(commit[0].pool), {})[group] = commit
    for batch in by_pool.values():
        net = next(iter(batch.values()))[0].pool.net
        out.update(net.run(_commit_all, net, batch))
    return out


async def _commit_all(net: NetworkSelector, batch: dict[str, ProxyCommit]) -> dict:
    sent = {
        group: net.call_soon_with_future(proxy._commit, offsets, at)
        for group, (proxy, offsets, at) in batch.items()
    }
    out: dict[str, str | None] = {}
    for group, future in sent.items():
        try:
            out[group] = await future
        except Errors.KafkaError as exc:
            out[group] = f"{type(exc).__name__}: {exc}"
    return out
