"""The bridge process: elect, fence, then run the flows until told to stop or deposed.

Several bridges may run; they queue on a kazoo ``Lock`` under the bridge root. The holder
claims a new epoch (see ``zookeeper.fence``) and only then writes. Losing the ZooKeeper
session, or finding a batch fenced, sends the process back to the queue; its ephemerals
died with the session, so the next leader (perhaps itself) resyncs from scratch.
"""

from __future__ import annotations

import logging
import threading
import time
from functools import partial

from kafka import KafkaAdminClient
from kafka.errors import KafkaError
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import ConnectionLoss, LockTimeout, SessionExpiredError

import zkpaths
from bridge.config import KafkaSettings, Settings
from bridge.connect import connect_kafka, connect_zookeeper
from bridge.decide.groups import OnGroupDeleted
from bridge.decide.shares import REGISTRY_SHARE
from bridge.flows import Flow
from bridge.flows.coexist import Coexistence
from bridge.flows.groups import GroupMirrorFlow
from bridge.flows.registry import RegistryFlow
from bridge.heap import LongLivedHeap
from bridge.kafka.cluster import partition_counts
from bridge.kafka.commit import OffsetCommitter
from bridge.kafka.groups import GroupFilter
from bridge.kafka.offsets_log import OFFSETS_TOPIC, OffsetsLogFollower
from bridge.kafka.shares import SharedFollower
from bridge.logs import FailureStreak
from bridge.metrics import METRICS
from bridge.zookeeper.acl import announce, repair_acls
from bridge.zookeeper.fence import Fenced, ShareFence, bridge_identity, claim_epoch
from bridge.zookeeper.writer import FencedWriter, Ledger

log = logging.getLogger(__name__)

#: how long a stopping bridge waits for the legacy gateway's connections to close; well
#: inside the CLI's stop grace (``bridge.cli.STOP_GRACE_S``)
GATEWAY_STOP_S = 2.0


class GatewayError(RuntimeError):
    """The legacy gateway could not start (its listen address is taken, or not local)."""


class Bridge:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.root = settings.bridge.root
        self.identity = settings.bridge.id or bridge_identity()
        self.stop_event = threading.Event()
        self._session_lost = threading.Event()
        #: set by a flow's watch (run it now), by stop() and a lost session
        self._wake = threading.Event()
        self.zk: KazooClient | None = None
        self.admin: KafkaAdminClient | None = None
        #: on registry.legacy_bootstrap_servers, read for the endpoints /brokers/ids publishes
        self.legacy_admin: KafkaAdminClient | None = None
        #: the legacy gateway (``[gateway]``), run by every bridge, leader or standby
        self.gateway = None
        self.is_leader = False
        self._coexistence = None
        self._follower: OffsetsLogFollower | None = None
        #: [scale] mode = "shares": the epochs of the shares this bridge holds
        self._fence: ShareFence | None = None
        self._registry_writer: FencedWriter | None = None
        self._registry_here = False  # whether this bridge holds share 0 (and the registry)
        #: frozen every few seconds, so full collections walk only what is new
        self.heap = LongLivedHeap()
        # ---- read by /readyz (bridge.http) from its own thread ----
        #: "connecting" | "standby" | "leader" | "stopping"
        self.state = "connecting"
        #: poll interval of each flow run in the current term as leader
        self.flow_intervals: dict[str, float] = {}
        #: monotonic time each flow last finished a pass without error, this term
        self.last_ok: dict[str, float] = {}

    def _on_state(self, state: str) -> None:
        if state == KazooState.LOST and not self.stop_event.is_set():
            log.warning("ZooKeeper session lost; stepping down until re-elected")
            self._session_lost.set()
            self._wake.set()
        elif state == KazooState.SUSPENDED:
            log.warning("ZooKeeper connection suspended")

    def run(self) -> None:
        """Connect, then lead or wait, until ``stop()``."""
        self.zk = connect_zookeeper(self.settings.zookeeper, root=self.root)
        announce(self.zk.acl_policy)
        self.zk.add_listener(self._on_state)
        self.admin = connect_kafka(self.settings.kafka)
        self.legacy_admin = self._connect_legacy()
        try:
            self._start_gateway()
        except GatewayError:
            self.close()
            raise
        log.info(
            "bridge started",
            extra={
                "zookeeper": self.settings.zookeeper.connect,
                "bootstrap_servers": self.settings.kafka.bootstrap_servers,
                "security_protocol": self.settings.kafka.security_protocol,
                "id": self.identity,
                **(
                    {"legacy_bootstrap_servers": self.settings.registry.legacy_bootstrap_servers}
                    if self.legacy_admin is not None
                    else {}
                ),
            },
        )
        try:
            while not self.stop_event.is_set():
                if self.settings.scale.mode == "shares":
                    self._share_once()
                else:
                    self._lead_once()
        finally:
            self.state = "stopping"
            self.stop_event.set()
            self.close()

    def stop(self) -> None:
        self.state = "stopping"
        self.stop_event.set()
        self._wake.set()

    def _start_gateway(self) -> None:
        """Start the legacy gateway (flow F6) when ``[gateway]`` turns it on: before the
        flows, so the endpoints the registry publishes already answer."""
        g = self.settings.gateway
        if not g.enabled:
            return
        from bridge.gateway.server import Gateway

        assert g.listen is not None  # the settings refuse an enabled gateway without it
        try:
            gateway = Gateway(
                g.listen,
                self.settings.kafka,
                zookeeper=self.zk,
                advertised_host=g.advertised_host,
                broker_port_base=g.broker_port_base,
                max_request_bytes=g.max_request_bytes,
                max_connections=g.max_connections,
                idle_timeout_s=g.idle_timeout_s,
                proxies=self._proxy_view if g.rewrite_simple_commits else None,
            )
        except ValueError as exc:  # a setting the gateway cannot serve (e.g. SASL upstream)
            raise GatewayError(f"the legacy gateway cannot start: {exc}") from None
        try:
            gateway.start()
        except OSError as exc:
            raise GatewayError(
                f"the legacy gateway cannot listen on {g.listen}: {exc.strerror or exc}; "
                "set gateway.listen (or --gateway-listen) to a free local address"
            ) from None
        self.gateway = gateway
        host, port = gateway.address
        log.info(
            "legacy gateway listening",
            extra={"address": f"{host}:{port}", "advertise": self.settings.registry.advertise},
        )

    def _proxy_view(self, group: str) -> dict | None:
        """The gateway's read-only view of this term's proxies in ``group`` (thread id ->
        ``ProxyIdentity``); None while this bridge does not lead, or with shares does not
        hold the group's share (another bridge's proxies may be in the group, which this
        one cannot commit as)."""
        fence = self._fence
        if not (fence.holds_group(group) if fence is not None else self.is_leader):
            return None
        coexistence = self._coexistence
        return coexistence.proxy_view(group) if coexistence is not None else {}

    def _connect_legacy(self) -> KafkaAdminClient | None:
        """The PLAINTEXT connection whose broker endpoints the registry publishes, if set."""
        s = self.settings
        if not s.registry.enabled or s.registry.advertise == "gateway":
            return None
        if s.registry.legacy_bootstrap_servers is None:
            if s.kafka.security_protocol != "PLAINTEXT":
                log.warning(
                    "the registry publishes the brokers' %s endpoints in /brokers/ids, which "
                    "old ZooKeeper consumers cannot use (they speak PLAINTEXT only); set "
                    "registry.legacy_bootstrap_servers to the listener they should use",
                    s.kafka.security_protocol,
                )
            return None
        legacy = KafkaSettings(
            bootstrap_servers=s.registry.legacy_bootstrap_servers,
            client_id=s.kafka.client_id,
            request_timeout_ms=s.kafka.request_timeout_ms,
        )
        return connect_kafka(
            legacy, what="Kafka legacy listener (registry.legacy_bootstrap_servers)"
        )

    def close(self) -> None:
        if self.gateway is not None:
            self.gateway.stop(timeout=GATEWAY_STOP_S)
            self.gateway = None
        if self.admin is not None:
            self.admin.close()
            self.admin = None
        if self.legacy_admin is not None:
            self.legacy_admin.close()
            self.legacy_admin = None
        if self.zk is not None:
            self.zk.stop()
            self.zk.close()
            self.zk = None

    def _lead_once(self) -> None:
        assert self.zk is not None and self.admin is not None
        lock = self.zk.Lock(f"{self.root}/leader", self.identity)
        self.state = "standby"
        try:
            while True:
                try:
                    if lock.acquire(timeout=1.0):
                        break
                except LockTimeout:
                    pass  # still a standby: another bridge holds the lock
                if self.stop_event.is_set():
                    lock.cancel()
                    return
        except (ConnectionLoss, SessionExpiredError):
            time.sleep(1)
            return
        self._session_lost.clear()
        try:
            epoch = claim_epoch(self.zk, f"{self.root}/epoch", self.identity)
            writer = FencedWriter(self.zk, epoch, Ledger(self.root), halted=self.stop_event)
            repair_acls(self.zk, self.zk.acl_policy, writer)
            self.is_leader = True
            self.flow_intervals, self.last_ok = {}, {}
            self.state = "leader"
            METRICS.leader.set(1)
            METRICS.epoch.set(epoch.value)
            flows = self._flows(writer)
            self._run_flows(flows)
        except Fenced as exc:
            if not self.stop_event.is_set():
                log.error("deposed: %s; stepping down", exc)
        except (ConnectionLoss, SessionExpiredError) as exc:
            log.warning("ZooKeeper %s while leading; stepping down", type(exc).__name__)
        finally:
            self._end_term()
            # with ZooKeeper away, kazoo retries the release for ever: a stopping bridge
            # leaves it, and its lock node dies with its session
            if self.zk.connected or not self.stop_event.is_set():
                try:
                    lock.release()
                except Exception:  # noqa: BLE001 - session may be gone; the lock dies with it
                    pass

    def _end_term(self) -> None:
        """Leading (or holding shares) ended: close what the term started."""
        self.is_leader = False
        self.state = "stopping" if self.stop_event.is_set() else "standby"
        METRICS.leader.set(0)
        if self._follower is not None:
            self._follower.close()  # shared: leaves the bridges' group, its shares move
            self._follower = None
        self._fence = None
        if self._coexistence is not None:
            # stopping without LeaveGroup: a successor's proxies take the same static ids
            self._coexistence.close(leave=False)
            self._coexistence = None

    def _share_once(self) -> None:
        """``[scale] mode = "shares"``: active on the shares Kafka's group coordinator deals
        this bridge as a member of ``scale.group_id`` (``bridge.kafka.shares``), each write
        checked against its share's epoch; deposed from a share (a write fenced), it leaves
        the group and joins again. The registry flow runs on the holder of share 0."""
        assert self.zk is not None
        s = self.settings
        self._session_lost.clear()
        try:  # the parents every holder writes under, made once, before any flow plans:
            # bridges starting together raced to create them, and each loser's whole first
            # page of groups went the slow way (rejected, then retried group by group)
            for parent in (zkpaths.CONSUMERS, f"{self.root}/owned{zkpaths.CONSUMERS}"):
                self.zk.ensure_path(parent)
        except (ConnectionLoss, SessionExpiredError):
            self.stop_event.wait(1.0)
            return
        self._fence = fence = ShareFence(self.zk, self.root, self.identity, 0)
        options = s.kafka.client_options()
        servers = options.pop("bootstrap_servers")
        try:
            self._follower = SharedFollower(
                servers,
                s.scale.group_id,
                fence,
                partitions=self._offsets_partitions,
                session_timeout_ms=s.scale.session_timeout_ms,
                client_options=options,
            )
            writer = FencedWriter(self.zk, None, Ledger(self.root), self.stop_event, fence)
            self._registry_writer, self._registry_here = writer, False
            self.flow_intervals, self.last_ok = {}, {}
            self.state = "leader"
            self._run_flows(self._flows(writer))
        except KafkaError as exc:  # Kafka away right now: try again in a moment
            log.warning("cannot join the bridges' group: %s: %s", type(exc).__name__, exc)
            self.stop_event.wait(1.0)
        except Fenced as exc:
            if not self.stop_event.is_set():
                log.error("deposed from a share: %s; joining the bridges' group again", exc)
        except (ConnectionLoss, SessionExpiredError) as exc:
            log.warning("ZooKeeper %s while holding shares; joining again", type(exc).__name__)
            self.stop_event.wait(1.0)  # ZooKeeper may be away for a while: no join storm
        finally:
            self._end_term()

    def _offsets_partitions(self) -> int | None:
        """How many shares there are: the partitions of ``__consumer_offsets``, asked with
        the admin's bounded calls (None while Kafka does not say)."""
        assert self.admin is not None
        return partition_counts(self.admin, [OFFSETS_TOPIC]).get(OFFSETS_TOPIC)

    def _flows(self, writer: FencedWriter) -> list[tuple[Flow, float]]:
        """The enabled flows, each with its own poll interval."""
        assert self.zk is not None and self.admin is not None
        s = self.settings
        flows: list[tuple[Flow, float]] = []
        if s.registry.enabled:
            flows.append(
                (
                    RegistryFlow(
                        self.zk,
                        self.admin,
                        writer,
                        s.kafka.security_protocol,
                        legacy_admin=self.legacy_admin,
                        gateway=self.gateway if s.registry.advertise == "gateway" else None,
                        broker_json_version=s.registry.broker_json_version,
                    ),
                    s.registry.poll_interval_s,
                )
            )
        if s.groups.enabled:
            flows.append((self._groups_flow(writer), s.groups.poll_interval_s))
        return flows

    def _groups_flow(self, writer: FencedWriter) -> GroupMirrorFlow:
        """The groups flow with its helpers: coexistence (proxies) and the committer of the
        offsets it copies into Kafka."""
        assert self.zk is not None and self.admin is not None
        s = self.settings
        group_filter = GroupFilter(s.groups.include, s.groups.exclude)
        # one transactional producer per writer: with shares every bridge is one (the
        # same id on two bridges would fence each other's producer at every commit)
        txn_id = f"kafka-zk-bridge:{self.root}"
        if self._fence is not None:
            txn_id += f":{self.identity}"
        coexistence = None
        if s.coexistence.enabled:
            coexistence = Coexistence(
                self.zk,
                self.admin,
                s.kafka.client_options(),
                transactional_id=txn_id,
                max_hold_s=s.coexistence.max_hold_s,
                session_timeout_ms=s.coexistence.proxy_session_timeout_ms,
            )
            self._coexistence = coexistence
        committer = (
            coexistence.committer
            if coexistence is not None
            else OffsetCommitter(self.admin, s.kafka.client_options(), txn_id)
        )
        flow = GroupMirrorFlow(
            self.zk,
            self.admin,
            writer,
            group_filter,
            OnGroupDeleted(s.groups.on_group_deleted),
            coexistence,
            full_interval_s=s.groups.full_interval_s,
            committer=committer,
            root=self.root,
            storm_spouts=s.storm.spouts,
            follower=self._follower_of_offsets(),
            shares=self._fence,
        )
        flow.overlap_writes = True
        return flow

    def _follower_of_offsets(self) -> OffsetsLogFollower | None:
        """The groups flow's follower of ``__consumer_offsets`` (closed when leading ends);
        it starts following once the flow's first full read found the topic."""
        if self._fence is not None:
            return self._follower  # the bridges' group member, made with the term
        if not self.settings.groups.follow_offsets_log:
            return None
        options = self.settings.kafka.client_options()
        servers = options.pop("bootstrap_servers")
        try:
            self._follower = OffsetsLogFollower(servers, client_options=options, wait=False)
        except KafkaError as exc:  # Kafka away right now: this term polls every group
            log.warning(
                "not following __consumer_offsets this term: %s: %s", type(exc).__name__, exc
            )
        return self._follower

    def _runs_here(self, flow: Flow) -> bool:
        """Whether ``flow`` runs on this bridge now: always, but with shares the registry
        flow runs on the holder of share 0 only (resynced, and the ACLs repaired, when that
        share comes to this bridge)."""
        if self._fence is None or flow.name != "registry":
            return True
        here = REGISTRY_SHARE in self._fence.held()
        METRICS.leader.set(1 if here else 0)  # one per root, as with the election
        if here and not self._registry_here:
            assert self.zk is not None
            repair_acls(self.zk, self.zk.acl_policy, self._registry_writer)
            flow.resync()
        self._registry_here = here
        return here

    def _run_flows(self, flows: list[tuple[Flow, float]]) -> None:
        resync_every = self.settings.bridge.resync_interval_s
        for flow, _ in flows:
            flow.resync()
        last_resync = time.monotonic()
        due = {flow.name: 0.0 for flow, _ in flows}
        self.flow_intervals = {flow.name: interval for flow, interval in flows}
        streaks = {flow.name: FailureStreak() for flow, _ in flows}
        for flow, _ in flows:
            if hasattr(flow, "wake"):  # a watch fired: the flow runs now, not at its poll
                flow.wake = partial(self._woken, due, flow.name)
        self.heap.install()
        try:
            self._loop(flows, due, streaks, resync_every, last_resync)
        finally:
            self.heap.uninstall()
            for flow, _ in flows:
                if hasattr(flow, "close"):
                    flow.close()

    def _idle(self, flows: list[tuple[Flow, float]], due: dict[str, float]) -> None:
        """Wait for the next flow due, a wake, or (a flow that follows
        ``__consumer_offsets``) new records, which make that flow due now."""
        timeout = max(0.0, min(due.values()) - time.monotonic())
        waiting = [f for f, _ in flows if hasattr(f, "await_records")]
        if not waiting or timeout == 0:
            self._wake.wait(timeout)
        elif waiting[0].await_records(timeout, self._wake):
            due[waiting[0].name] = 0.0

    def _woken(self, due: dict[str, float], name: str) -> None:
        due[name] = 0.0
        self._wake.set()

    def _loop(self, flows, due, streaks, resync_every: float, last_resync: float) -> None:
        while not self.stop_event.is_set() and not self._session_lost.is_set():
            now = time.monotonic()
            if now - last_resync > resync_every:
                for flow, _ in flows:
                    flow.resync()
                last_resync = now
            for flow, interval in flows:
                if now < due[flow.name]:
                    continue
                due[flow.name] = now + interval
                if not self._runs_here(flow):
                    self.last_ok[flow.name] = time.monotonic()  # not this bridge's to run
                    continue
                started = time.monotonic()
                with METRICS.tick_seconds.labels(flow=flow.name).time():
                    try:
                        written = flow.tick()
                        if getattr(flow, "awaiting", False):
                            continue  # its read in flight: the tick it wakes says how it went
                        if written:  # it wrote: the pass read Kafka at ``started``
                            METRICS.mirror_lag.labels(flow=flow.name).observe(
                                time.monotonic() - started
                            )
                        self.last_ok[flow.name] = time.monotonic()
                        METRICS.flow_last_success.labels(flow=flow.name).set_to_current_time()
                        recovered = streaks[flow.name].success(self.last_ok[flow.name])
                        if recovered:
                            log.info("%s flow %s", flow.name, recovered)
                    except (Fenced, ConnectionLoss, SessionExpiredError):
                        raise
                    except Exception as exc:  # noqa: BLE001 - one bad tick must not kill the bridge
                        kind = type(exc).__name__
                        METRICS.kafka_errors.labels(kind=kind).inc()
                        note = streaks[flow.name].failure(kind, time.monotonic())
                        if note is not None:
                            log.warning("%s flow tick failed: %s: %s%s", flow.name, kind, exc, note)
            self.heap.between_ticks()
            self._idle(flows, due)
            self._wake.clear()
