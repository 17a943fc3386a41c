"""Flow F1: Kafka metadata → ``/brokers``, ``/controller``, ``/cluster/id`` in ZooKeeper.

Each tick reads a ``ClusterView``, asks ``decide_registry`` what the tree should be, plans
the difference against the known tree and hands it to the fenced writer. The known tree is
read in full on resync (start, session loss, a rejected batch, and periodically) and kept
up to date from our own writes in between.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from kafka import KafkaAdminClient
from kazoo.client import KazooClient

import zkpaths
from bridge.decide.plan import Node, plan_writes
from bridge.decide.registry import (
    SCOPE,
    decide_registry,
    with_gateway_endpoints,
    with_legacy_endpoints,
)
from bridge.decide.topic_presence import TopicPresence
from bridge.kafka.cluster import Quorum, read_brokers, read_cluster, still_listed
from bridge.kafka.views import BrokerView, ClusterView
from bridge.metrics import METRICS
from bridge.zookeeper.writer import BatchRejected, FencedWriter, children, read_nodes

log = logging.getLogger(__name__)

#: a read answered longer ago than this (the flow ran elsewhere meanwhile) is read again
STALE_READ_S = 5.0


def read_registry(client: KazooClient, extra: set[str]) -> dict[str, Node]:
    """Every node of the legacy registry that exists now, plus ``extra`` paths."""
    paths = {"/brokers", zkpaths.BROKER_IDS, zkpaths.BROKER_TOPICS, "/cluster", *extra}
    paths |= {zkpaths.CONTROLLER, zkpaths.CONTROLLER_EPOCH, zkpaths.CLUSTER_ID}
    top = children(client, [zkpaths.BROKER_IDS, zkpaths.BROKER_TOPICS])
    paths |= {f"{zkpaths.BROKER_IDS}/{c}" for c in top[zkpaths.BROKER_IDS]}
    # a child that is no legal topic name was not written by Kafka or the bridge: leave it
    topics = [
        f"{zkpaths.BROKER_TOPICS}/{t}"
        for t in top[zkpaths.BROKER_TOPICS]
        if zkpaths.topic_problem(t) is None
    ]
    paths |= set(topics)
    part_dirs = [t + "/partitions" for t in topics]
    paths |= set(part_dirs)
    for pdir, parts in children(client, part_dirs).items():
        for p in parts:
            paths |= {f"{pdir}/{p}", f"{pdir}/{p}/state"}
    return read_nodes(client, sorted(paths))


class GatewayEndpoints(Protocol):
    """What the registry needs of the legacy gateway (``bridge.gateway.server.Gateway``)."""

    def endpoint_for(self, broker_id: int) -> tuple[str, int]: ...


def gateway_endpoints(
    gateway: GatewayEndpoints, broker_ids: list[int]
) -> dict[int, tuple[str, int]]:
    """The gateway endpoint of each broker id it has one for (a LookupError: none yet)."""
    out = {}
    for bid in broker_ids:
        try:
            out[bid] = gateway.endpoint_for(bid)
        except LookupError:
            continue
    return out


class RegistryFlow:
    name = "registry"

    def __init__(
        self,
        zk: KazooClient,
        admin: KafkaAdminClient,
        writer: FencedWriter,
        security_protocol: str = "PLAINTEXT",
        legacy_admin: KafkaAdminClient | None = None,
        gateway: GatewayEndpoints | None = None,
        broker_json_version: int = 4,
    ) -> None:
        self.zk = zk
        self.admin = admin
        self.writer = writer
        self.security_protocol = security_protocol
        #: connected to ``registry.legacy_bootstrap_servers``: whose endpoints are published
        self.legacy_admin = legacy_admin
        #: with ``registry.advertise = "gateway"``: /brokers/ids publishes its endpoints
        self.gateway = gateway
        #: ``registry.broker_json_version``: what every configured old client can parse
        self.broker_json_version = broker_json_version
        self._no_legacy_endpoint: frozenset[int] = frozenset()
        self.quorum = Quorum()
        self.known: dict[str, Node] = {}
        self.refused: str | None = None
        self.presence = TopicPresence()
        self._reported: set[str] = set()
        #: set by the service: Kafka is then read off the flows' thread (``_read``)
        self.wake: Callable[[], None] | None = None
        self._reader = ThreadPoolExecutor(1, thread_name_prefix="registry-read")
        self._reading: tuple[Future, float] | None = None
        self._primed = False  # read inline since the last resync

    def owned(self) -> set[str]:
        """The registry's owned nodes (from the ledger's index, not a pass over every
        owned node: the groups' offset nodes are most of them)."""
        return set().union(*(self.writer.ledger.owned.under(s) for s in SCOPE))

    def resync(self) -> None:
        self.writer.ledger.load(self.zk, SCOPE)
        self.known = read_registry(self.zk, self.owned())
        self._reading, self._primed = None, False  # the next tick reads at once (``_read``)

    @property
    def awaiting(self) -> bool:
        """A read is in flight (``_read``): the tick that started it neither succeeded nor
        failed; the one its answer wakes says which (the service's streaks, ``/readyz``)."""
        return self._reading is not None

    def close(self) -> None:
        self._reading = None
        self._reader.shutdown(wait=False)

    def tick(self) -> int:
        """Mirror once; returns the number of znode writes made."""
        read = self._read()
        if read is None:
            return 0
        cluster, legacy = read
        view = self._published(self._debounced(cluster), legacy)
        owned = self.owned()
        decision = decide_registry(
            view,
            self.known,
            owned,
            int(time.time() * 1000),
            broker_json_version=self.broker_json_version,
        )
        for bad in decision.bad_nodes:
            self._report_once(bad.path, "bad node left alone: %s", bad.reason, "bad_node")
        if decision.refusal:
            if self.refused != decision.refusal:
                log.error("registry mirror refuses to write: %s", decision.refusal)
            self.refused = decision.refusal
            METRICS.registry_refused.set(1)
            return 0
        self.refused = None
        METRICS.registry_refused.set(0)
        plan = plan_writes(decision.desired, self.known, owned, self.writer.session_id)
        for c in plan.conflicts:
            self._report_once(c.path, "not writing node: %s", c.reason, "conflict")
        if not plan.ops:
            return 0
        try:
            self.writer.apply(plan.ops, self.known)
        except BatchRejected as exc:
            log.warning("registry batch rejected (%s); re-reading ZooKeeper", exc)
            METRICS.zk_errors.labels(kind=type(exc.error).__name__).inc()
            self.resync()
            return 0
        METRICS.writes.labels(flow=self.name).inc(len(plan.ops))
        return len(plan.ops)

    def _read(self) -> tuple[ClusterView, dict[int, BrokerView] | None] | None:
        """The cluster (and the legacy listener's brokers, if configured). Run by the
        service (``wake`` set), read off the flows' thread: this tick starts the read and
        the one its answer wakes takes it (None until then); the registry's requests held
        the flows' one thread, and every commit waiting with it, for a fifth of the old
        consumers' phase in ``bench.fleet`` (py-spy). Without ``wake``, and in the first
        tick after a resync (a term's start: the registry is written before the groups,
        so the brokers and topics old consumers look up are there first), read now."""
        if self.wake is None or not self._primed:
            self._primed = True
            return self._read_now()
        if self._reading is not None:
            future, started = self._reading
            if not future.done():
                return None
            self._reading = None
            if time.monotonic() - started <= STALE_READ_S:
                return future.result()  # raises as the read did: the tick failed
        future = self._reader.submit(self._read_now)
        self._reading = (future, time.monotonic())
        wake = self.wake
        future.add_done_callback(lambda _: wake())
        return None

    def _read_now(self) -> tuple[ClusterView, dict[int, BrokerView] | None]:
        cluster = read_cluster(self.admin, self.security_protocol, self.quorum)
        if self.gateway is None and self.legacy_admin is not None:
            return cluster, read_brokers(self.legacy_admin, "PLAINTEXT")
        return cluster, None

    def _published(self, view: ClusterView, legacy: dict[int, BrokerView] | None) -> ClusterView:
        """``view`` with the endpoints /brokers/ids publishes: the gateway's, the legacy
        listener's (``legacy``, read with the view), or (neither configured) the ones
        the bridge connects through."""
        if self.gateway is not None:
            view = with_gateway_endpoints(
                view, gateway_endpoints(self.gateway, sorted(view.brokers))
            )
            where = "in the legacy gateway"
        elif self.legacy_admin is not None and legacy is not None:
            view = with_legacy_endpoints(view, legacy)
            where = "on the legacy listener"
        else:
            return view
        if view.unsettled_brokers != self._no_legacy_endpoint and view.unsettled_brokers:
            log.warning(
                "brokers %s have no endpoint %s (yet); their registrations are kept as they are",
                sorted(view.unsettled_brokers),
                where,
            )
        self._no_legacy_endpoint = view.unsettled_brokers
        return view

    def _debounced(self, view: ClusterView) -> ClusterView:
        """``view`` with a missing topic kept until every broker says it is gone, and a
        deleted topic that a lagging broker still shows left out (``TopicPresence``)."""
        missing = self.presence.missing(view)
        listed = still_listed(self.admin, missing, view.brokers) if missing else set()
        settled, stale = self.presence.settle(view, time.monotonic(), listed)
        if stale:
            log.debug("deleted topics %s still in a lagging broker's metadata", sorted(stale))
        return settled

    def _report_once(self, path: str, msg: str, reason: str, kind: str) -> None:
        """Log and count a node problem once per (node, reason), not once per tick."""
        key = f"{path}:{reason}"
        if key in self._reported:
            return
        self._reported.add(key)
        METRICS.node_problems.labels(flow=self.name, kind=kind).inc()
        log.warning(msg, reason, extra={"node": path})
