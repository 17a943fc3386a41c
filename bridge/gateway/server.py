"""The legacy gateway (flow F6): old request versions in, today's versions out.

**One listening port for every broker id.** Metadata and ``/brokers/ids`` keep the
cluster's broker ids but advertise each at the gateway's own endpoint; every request is
split per partition and routed to that partition's leader *of the moment* (a Fetch or
Produce whose partitions have different leaders fans out, one request per leader, and the
answers are merged in the client's order). Compared with one port per broker id, a leader
move or a broker replaced under a new address is invisible to the old client (it never
holds a stale "leader is N" that matters), the gateway needs one firewall opening and one
``--gateway-listen`` instead of a port range kept in step with the cluster's ids, and any
number of gateways can run side by side. Old clients still open one connection per broker
id (they key connections by id), all to the same port, which is harmless to the Scala
clients. kafka-node 3.x keys its brokers by *address* and finds a leader's broker among
them by id, so behind one port it knows one broker id only and cannot reach the others'
partitions ("Could not find broker"): for such clients ``broker_port_base`` gives every
broker id a port of its own as well (base + id, or a free port with base 0), served exactly
like the shared one (requests are still routed per partition, whatever port they came in on).

**Bounded memory.** Each client connection is served strictly in order, one request at a
time: the next request is not even read until the previous response was handed to the
socket and drained, so a slow reader is back-pressured by TCP and never buffered for, and
at most one response per connection exists. Requests over ``max_request_bytes`` are
refused by their size prefix before any byte of the body is read.

**Bad input** (malformed or truncated frames, absurd sizes, api keys or versions the gateway
does not serve, a client that stops reading) closes that connection with one log line naming
the client's address and client id and the reason; nothing else is affected. Old brokers
closed the connection on an unknown request too, which is what old clients expect. Other
api keys (the group membership APIs of 0.9+ Java clients, ...) are refused that way, and
ApiVersions lists only what the gateway serves, so a 0.10+ client says clearly what is
missing instead of misbehaving.

Upstream: asyncio connections pooled per broker (``upstream``), metadata cached and
refreshed (``cluster``); PLAINTEXT only for now (SSL/SASL upstream are refused at start).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bridge.config import split_hostport
from bridge.gateway import meta
from bridge.gateway.cluster import Cluster
from bridge.gateway.dispatch import HANDLERS, BadRequest, parse_request

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from kazoo.client import KazooClient

    from bridge.config import KafkaSettings
    from bridge.decide.simple_commits import ProxyIdentity

    #: group -> the bridge's proxies in it (thread id -> identity), None while the bridge
    #: does not lead; see ``simple_commits``
    ProxyView = Callable[[str], Mapping[str, ProxyIdentity] | None]

log = logging.getLogger(__name__)

MiB = 1 << 20


@dataclass
class Tunables:
    """Limits and timings; defaults follow the old brokers' where there was one."""

    #: client connections beyond this are closed as they arrive (Kafka's max.connections)
    max_connections: int = 1000
    #: an idle client connection is closed after this (Kafka's connections.max.idle.ms)
    idle_timeout_s: float = 600.0
    #: the body of a request whose size prefix arrived must follow within this
    body_timeout_s: float = 30.0
    #: a response not drained by the client within this: the client stopped reading
    write_timeout_s: float = 60.0
    #: every upstream request (a Fetch or Produce adds its own max_wait / timeout)
    upstream_timeout_s: float = 30.0
    #: connections per broker, shared by all client connections
    upstream_connections: int = 16
    #: full metadata refresh period
    metadata_refresh_s: float = 30.0
    #: bytes queued on a client socket before ``drain`` waits for the client to read
    write_buffer_bytes: int = 256 * 1024


class _Close(Exception):
    """This client connection ends; the message is the reason logged (at ``level``)."""

    def __init__(self, reason: str, level: int = logging.WARNING) -> None:
        super().__init__(reason)
        self.level = level


class Core:
    """What handlers see: the cluster, the endpoints, ZooKeeper, the limits."""

    def __init__(self, gateway: Gateway, cluster: Cluster) -> None:
        self._gateway, self.cluster = gateway, cluster
        self.zookeeper = gateway.zookeeper
        self.tunables = gateway.tunables
        #: group -> {thread id: ProxyIdentity} of the bridge's proxies, or None: simple
        #: commits pass through (``gateway.rewrite_simple_commits``)
        self.proxies = gateway.proxies

    def endpoint_for(self, broker_id: int) -> tuple[str, int]:
        """The broker id's own gateway port, or the shared one while it has none."""
        try:
            return self._gateway.endpoint_for(broker_id)
        except LookupError:
            host, port = self._gateway.address
            return self._gateway.advertised_host or host, port

    @staticmethod
    def served() -> dict[int, tuple[int, int]]:
        return {key: (lo, hi) for key, (_, lo, hi, _) in HANDLERS.items()}


class Gateway:
    """The gateway: listening socket, its own asyncio loop in a daemon thread."""

    def __init__(
        self,
        listen: str,
        kafka: KafkaSettings,
        *,
        zookeeper: KazooClient | None = None,
        advertised_host: str | None = None,
        broker_port_base: int | None = None,
        max_request_bytes: int = 100 * MiB,
        proxies: ProxyView | None = None,
        **tunables,
    ) -> None:
        if kafka.security_protocol != "PLAINTEXT":
            raise ValueError(
                f"the gateway speaks PLAINTEXT to the cluster only (kafka.security_protocol "
                f"is {kafka.security_protocol})"
            )
        self.listen_host, self.listen_port = split_hostport(listen, min_port=0)
        self.kafka, self.zookeeper = kafka, zookeeper
        self.proxies = proxies
        self.advertised_host = advertised_host
        self.max_request_bytes = max_request_bytes
        self.tunables = Tunables(**tunables)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_asked = False
        self._server: asyncio.base_events.Server | None = None
        self._address: tuple[str, int] | None = None
        self._clients: set[asyncio.Task] = set()
        #: None: every broker id at the shared port; else a port per broker id (see above)
        self.broker_port_base = broker_port_base
        self._broker_servers: dict[int, asyncio.base_events.Server] = {}
        self._broker_ports: dict[int, int] = {}

    @property
    def address(self) -> tuple[str, int]:
        if self._address is None:
            raise RuntimeError("the gateway is not started")
        return self._address

    def endpoint_for(self, broker_id: int) -> tuple[str, int]:
        """Every broker id is advertised at the gateway's one endpoint (see the module doc),
        or with ``broker_port_base`` at its own port (a LookupError until that listens)."""
        host, port = self.address
        if self.broker_port_base is not None:
            if broker_id not in self._broker_ports:
                raise LookupError(f"no gateway port for broker {broker_id} yet")
            port = self._broker_ports[broker_id]
        if self.advertised_host:
            return self.advertised_host, port
        if host in ("0.0.0.0", "::", ""):
            return socket.getfqdn(), port
        return host, port

    def start(self) -> None:
        ready: dict = {}
        started = threading.Event()
        self._stop_asked = False
        self._thread = threading.Thread(
            target=self._run, args=(ready, started), name="gateway", daemon=True
        )
        self._thread.start()
        started.wait()
        if "error" in ready:
            raise ready["error"]

    def _run(self, ready: dict, started: threading.Event) -> None:
        loop = self._loop = asyncio.new_event_loop()
        bootstrap = [split_hostport(s) for s in self.kafka.bootstrap_servers.split(",")]
        self._cluster = Cluster(
            bootstrap,
            self.kafka.client_id,
            timeout=self.tunables.upstream_timeout_s,
            max_connections=self.tunables.upstream_connections,
        )
        self._core = Core(self, self._cluster)
        try:
            self._server = loop.run_until_complete(
                asyncio.start_server(
                    self._client, self.listen_host, self.listen_port, limit=1 << 16
                )
            )
        except OSError as exc:
            ready["error"] = exc
            started.set()
            loop.close()
            return
        self._address = self._server.sockets[0].getsockname()[:2]
        refresher = loop.create_task(self._refresh_periodically())
        log.info("gateway: listening on %s:%d", *self._address)
        started.set()
        try:
            loop.run_forever()
        finally:
            refresher.cancel()
            loop.run_until_complete(self._shutdown())
            loop.close()

    async def _refresh_periodically(self) -> None:
        while True:
            await self._cluster.refresh()
            if self.broker_port_base is not None:
                await self._open_broker_ports()
            await asyncio.sleep(self.tunables.metadata_refresh_s)

    async def _open_broker_ports(self) -> None:
        """A listening port for each broker id the cluster has (never closed while the
        gateway runs: a client may still hold the id's old address). A port that cannot be
        opened is said once per refresh and tried again; its broker id stays unpublished."""
        for bid in sorted(set(self._cluster.brokers) - set(self._broker_servers)):
            assert self.broker_port_base is not None
            port = self.broker_port_base + bid if self.broker_port_base else 0
            try:
                server = await asyncio.start_server(
                    self._client, self.listen_host, port, limit=1 << 16
                )
            except OSError as exc:
                log.warning(
                    "gateway: cannot listen on %s:%d for broker %d: %s",
                    self.listen_host,
                    port,
                    bid,
                    exc.strerror or exc,
                )
                continue
            self._broker_servers[bid] = server
            self._broker_ports[bid] = server.sockets[0].getsockname()[1]
            log.info(
                "gateway: broker %d listening on %s:%d",
                bid,
                self.listen_host,
                self._broker_ports[bid],
            )

    async def _shutdown(self) -> None:
        self._server.close()
        for server in self._broker_servers.values():
            server.close()
        for task in list(self._clients):
            task.cancel()
        await asyncio.gather(*self._clients, return_exceptions=True)
        self._cluster.close()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop (and the listeners with it) and wait for its thread. Scheduled even
        when the loop is not running yet: ``start`` returns just before ``run_forever``,
        and a stop in that moment used to leave the thread serving (and logging) forever."""
        if self._loop is None or self._thread is None:
            return
        if not self._stop_asked:  # once: a second stop during the shutdown would cut it
            self._stop_asked = True
            try:
                self._loop.call_soon_threadsafe(self._loop.stop)
            except RuntimeError:  # closed: the thread is done already
                pass
        self._thread.join(timeout)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._clients) >= self.tunables.max_connections:
            peer = writer.get_extra_info("peername")
            log.warning(
                "gateway: closing connection from %s:%s: %d connections already (max_connections)",
                *peer[:2],
                len(self._clients),
            )
            writer.close()
            return
        task = asyncio.current_task()
        self._clients.add(task)
        conn = _Connection(self._core, self.max_request_bytes, reader, writer)
        try:
            await conn.serve()
        except asyncio.CancelledError:
            pass  # the gateway stops: its connections end with it
        finally:
            self._clients.discard(task)


class _Connection:
    """One old client's connection, served one request at a time."""

    def __init__(self, core: Core, max_request_bytes: int, reader, writer) -> None:
        self.core, self.max_request_bytes = core, max_request_bytes
        self.reader, self.writer = reader, writer
        self.tunables = core.tunables
        self.peer = "{}:{}".format(*tuple(writer.get_extra_info("peername")[:2]))
        self.client_id: str | None = None
        # what a slow reader can pin: this in the transport plus as much in the kernel
        writer.transport.set_write_buffer_limits(high=self.tunables.write_buffer_bytes)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.tunables.write_buffer_bytes)

    async def serve(self) -> None:
        try:
            while await self._one():
                pass
        except _Close as close:
            log.log(
                close.level,
                "gateway: closing connection from %s (client id %r): %s",
                self.peer,
                self.client_id,
                close,
            )
        except (ConnectionError, OSError) as exc:
            log.info(
                "gateway: connection from %s (client id %r) lost: %r",
                self.peer,
                self.client_id,
                exc,
            )
        except Exception as exc:  # noqa: BLE001 - one connection's failure is its own
            log.warning(
                "gateway: closing connection from %s (client id %r): cannot answer: %r",
                self.peer,
                self.client_id,
                exc,
            )
        finally:
            self.writer.close()

    async def _read(self, n: int, timeout: float, what: str) -> bytes | None:
        try:
            return await asyncio.wait_for(self.reader.readexactly(n), timeout)
        except asyncio.IncompleteReadError as exc:
            if not exc.partial and what == "size":
                return None  # closed between requests: the normal end
            raise _Close(
                f"truncated {what}: {len(exc.partial)} of {n} bytes, then end of stream"
            ) from None
        except TimeoutError:
            if what == "size":
                # as old brokers did (connections.max.idle.ms): routine, not bad input
                raise _Close(f"idle for {timeout:.0f} s", logging.INFO) from None
            raise _Close(f"truncated {what}: not all of {n} bytes within {timeout:.0f} s") from None

    async def _one(self) -> bool:
        """Read, answer and drain one request; False at the client's clean end of stream."""
        head = await self._read(4, self.tunables.idle_timeout_s, "size")
        if head is None:
            return False
        size = struct.unpack(">i", head)[0]
        if not 10 <= size <= self.max_request_bytes:
            raise _Close(f"request size {size} outside 10..{self.max_request_bytes} bytes")
        body = await self._read(size, self.tunables.body_timeout_s, "request")
        try:
            header, request = parse_request(body)
        except BadRequest as exc:
            self.client_id = exc.client_id or self.client_id
            raise _Close(str(exc)) from None
        self.client_id = header.client_id
        version = header.request_api_version
        if request is None:  # an ApiVersions newer than served: KIP-511
            await self._answer(meta.unsupported_api_versions(self.core), header, 0)
            return True
        handler = HANDLERS[header.request_api_key][3]
        response = await handler(self.core, request, version)
        if response is not None:
            await self._answer(response, header, version)
        return True

    async def _answer(self, response, header, version: int) -> None:
        response.with_header(correlation_id=header.correlation_id)
        self.writer.write(response.encode(header=True, framed=True))
        try:
            await asyncio.wait_for(self.writer.drain(), self.tunables.write_timeout_s)
        except TimeoutError:
            raise _Close(
                f"stopped reading: response not taken within {self.tunables.write_timeout_s:.0f} s"
            ) from None
