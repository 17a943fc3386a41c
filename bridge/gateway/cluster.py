"""What the gateway knows of the cluster: brokers, partition leaders, group coordinators.

Refreshed periodically and whenever a broker says a partition or group is not where the
cache thought (concurrent refreshes are coalesced into one Metadata request). Requests go to
the broker pools of ``upstream``; ``scatter`` sends one request per leader concurrently and
retries the partitions whose leader moved on the new leader.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from kafka.protocol.api_message import ApiMessage
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest

from bridge.gateway import errors
from bridge.gateway.upstream import BrokerPool, UpstreamError
from zkpaths import TopicPartition

log = logging.getLogger(__name__)

METADATA_VERSION = 7  # 4.x accepts Metadata v4+ (KIP-896); v7 carries leader epochs
FIND_COORDINATOR_VERSION = 2  # v0 is gone from 4.x, v3+ is flexible


@dataclass(frozen=True)
class Broker:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class Partition:
    error: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass
class Topic:
    error: int
    internal: bool
    partitions: dict[int, Partition] = field(default_factory=dict)


@dataclass(frozen=True)
class Failed:
    """A partition the gateway could not get an answer for, with the code to give."""

    error_code: int


class Cluster:
    """Metadata cache and broker pools of one gateway (lives on the gateway's loop)."""

    def __init__(
        self,
        bootstrap: list[tuple[str, int]],
        client_id: str,
        *,
        timeout: float,
        max_connections: int,
    ) -> None:
        self.bootstrap, self.client_id = bootstrap, client_id
        self.timeout, self.max_connections = timeout, max_connections
        self.brokers: dict[int, Broker] = {}
        self.topics: dict[str, Topic] = {}
        self.controller_id = -1
        self.cluster_id: str | None = None
        self._pools: dict[tuple[str, int], BrokerPool] = {}
        self._coordinators: dict[str, int] = {}
        self._refreshing: asyncio.Task | None = None

    def _pool(self, host: str, port: int) -> BrokerPool:
        pool = self._pools.get((host, port))
        if pool is None:
            pool = self._pools[(host, port)] = BrokerPool(
                host,
                port,
                self.client_id,
                max_connections=self.max_connections,
                timeout=self.timeout,
            )
        return pool

    async def send_to(self, broker_id: int, request: ApiMessage, timeout: float | None = None):
        broker = self.brokers.get(broker_id)
        if broker is None:
            raise UpstreamError(f"broker {broker_id} is not in the cluster metadata")
        return await self._pool(broker.host, broker.port).send(request, timeout)

    async def send_any(self, request: ApiMessage) -> ApiMessage:
        """``request`` to any live broker (the bootstrap servers until metadata is known)."""
        candidates = [(b.host, b.port) for b in self.brokers.values()] or list(self.bootstrap)
        random.shuffle(candidates)
        last: Exception | None = None
        for host, port in candidates + [hp for hp in self.bootstrap if hp not in candidates]:
            try:
                return await self._pool(host, port).send(request)
            except UpstreamError as exc:
                last = exc
        raise UpstreamError(f"no broker answered {request.name}: {last}")

    async def metadata(self, topics: list[str] | None, auto_create: bool = True):
        """Metadata for ``topics`` (None = all) from the cluster; the cache learns from it."""
        request = MetadataRequest[METADATA_VERSION](
            topics=None
            if topics is None
            else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=auto_create,
        )
        response = await self.send_any(request)
        self._learn(response, full=topics is None)
        return response

    def _learn(self, response, *, full: bool) -> None:
        brokers = {b.node_id: Broker(b.node_id, b.host, b.port, b.rack) for b in response.brokers}
        if brokers:
            self.brokers = brokers
        self.controller_id, self.cluster_id = response.controller_id, response.cluster_id
        learned = {}
        for t in response.topics:
            parts = {
                p.partition_index: Partition(
                    p.error_code, p.leader_id, tuple(p.replica_nodes), tuple(p.isr_nodes)
                )
                for p in t.partitions
            }
            learned[t.name] = Topic(t.error_code, bool(t.is_internal), parts)
        if full:
            self.topics = learned
        else:
            for name, topic in learned.items():
                if topic.error == errors.UNKNOWN_TOPIC_OR_PARTITION:
                    self.topics.pop(name, None)
                else:
                    self.topics[name] = topic

    async def refresh(self) -> None:
        """A full metadata refresh; callers arriving meanwhile share the one in flight."""
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.ensure_future(self.metadata(None, auto_create=False))
        try:
            await asyncio.shield(self._refreshing)
        except UpstreamError as exc:
            log.warning("gateway: cluster metadata refresh failed: %s", exc)

    async def leader(self, tp: TopicPartition) -> int | None:
        """The partition's leader as last known (-1 = none elected), asking the cluster if
        the partition is unknown; None if the cluster does not have it either."""
        topic = self.topics.get(tp[0])
        if topic is None or tp[1] not in topic.partitions:
            await self.refresh()
            topic = self.topics.get(tp[0])
        if topic is None or tp[1] not in topic.partitions:
            return None
        return topic.partitions[tp[1]].leader

    async def coordinator(self, group: str, *, fresh: bool = False) -> tuple[int, int]:
        """(error code, node id) of ``group``'s coordinator."""
        if not fresh and group in self._coordinators:
            return errors.NONE, self._coordinators[group]
        self._coordinators.pop(group, None)
        request = FindCoordinatorRequest[FIND_COORDINATOR_VERSION](key=group, key_type=0)
        try:
            response = await self.send_any(request)
        except UpstreamError:
            return errors.COORDINATOR_NOT_AVAILABLE, -1
        if response.error_code == errors.NONE:
            self._coordinators[group] = response.node_id
            if response.node_id not in self.brokers:
                await self.refresh()
        return response.error_code, response.node_id

    def forget_coordinator(self, group: str) -> None:
        self._coordinators.pop(group, None)

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()


#: per-leader call: (leader id, its partitions) -> partition -> answer (with .error_code)
LeaderCall = Callable[[int, list[TopicPartition]], Awaitable[dict[TopicPartition, object]]]


async def scatter(
    cluster: Cluster,
    partitions: Iterable[TopicPartition],
    call: LeaderCall,
    *,
    attempts: int = 5,
    resend_after_disconnect: bool = True,
) -> dict[TopicPartition, object]:
    """Each partition's answer from its leader, one concurrent request per leader.

    Partitions whose leader moved (or is unknown) are retried on the new leader after a
    metadata refresh. A request whose connection broke is retried only if
    ``resend_after_disconnect`` (not for Produce: it may have been appended)."""
    pending, results = list(dict.fromkeys(partitions)), {}
    for attempt in range(attempts):
        by_leader: dict[int | None, list[TopicPartition]] = {}
        for tp in pending:
            by_leader.setdefault(await cluster.leader(tp), []).append(tp)
        results.update(
            {tp: Failed(errors.UNKNOWN_TOPIC_OR_PARTITION) for tp in by_leader.pop(None, [])}
        )
        results.update({tp: Failed(errors.LEADER_NOT_AVAILABLE) for tp in by_leader.pop(-1, [])})
        answers = await asyncio.gather(
            *(call(leader, tps) for leader, tps in by_leader.items()), return_exceptions=True
        )
        for (leader, tps), answer in zip(by_leader.items(), answers, strict=True):
            if isinstance(answer, UpstreamError):
                log.info("gateway: broker %d: %s", leader, answer)
                code = (
                    errors.NOT_LEADER_FOR_PARTITION
                    if resend_after_disconnect
                    else errors.REQUEST_TIMED_OUT
                )
                results.update({tp: Failed(code) for tp in tps})
            elif isinstance(answer, BaseException):
                raise answer
            else:
                results.update(answer)
        pending = [
            tp for tp in pending if _retriable(results.get(tp), resend_after_disconnect, attempt)
        ]
        if not pending or attempt == attempts - 1:
            break
        await asyncio.sleep(0.1 * 2**attempt)
        await cluster.refresh()
    return results


def _retriable(answer: object, resend: bool, attempt: int) -> bool:
    code = getattr(answer, "error_code", errors.UNKNOWN)
    if isinstance(answer, Failed) and code == errors.REQUEST_TIMED_OUT:
        return resend
    if code == errors.UNKNOWN_TOPIC_OR_PARTITION:
        # brokers learn of a new topic one after another: ask once more, then believe it
        return attempt == 0
    return code in errors.LEADERSHIP
