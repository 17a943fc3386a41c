"""The operator's HTTP endpoint: ``/metrics``, ``/healthz`` and ``/readyz``.

``/metrics`` is prometheus_client's own WSGI app over ``METRICS.registry``; the two probes
are small WSGI handlers beside it, served by the standard library's ``wsgiref`` in a daemon
thread (the same server prometheus_client itself uses), so no HTTP is parsed here.

Readiness is a pure function of what the ``Bridge`` records (its election state and when each
flow last finished a pass without error), so its rules are unit-tested without a server:

- ``leader``: ready while ZooKeeper is connected and every flow succeeded within
  ``ready_ticks`` × its poll interval (never less than ``ready_floor_s``);
- ``standby``: ready while ZooKeeper is connected (it waits in the election, able to take over);
- ``connecting`` and ``stopping``: not ready.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

from bridge.config import MetricsSettings, split_hostport

if TYPE_CHECKING:
    from bridge.service import Bridge

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FlowHealth:
    """One flow as /readyz reports it."""

    last_ok_s_ago: float | None  # None: no successful pass yet in this term as leader
    limit_s: float


@dataclass(frozen=True)
class Readiness:
    ready: bool
    state: str
    reason: str
    flows: dict[str, FlowHealth] = field(default_factory=dict)

    def body(self) -> bytes:
        return (json.dumps(asdict(self), sort_keys=True) + "\n").encode()


def readiness(
    state: str,
    zk_connected: bool,
    flows: dict[str, tuple[float | None, float]],
    now: float,
    ready_ticks: float,
    ready_floor_s: float,
) -> Readiness:
    """Decide readiness from the bridge's state.

    ``flows`` maps a flow name to (monotonic time of its last successful pass or None, its
    poll interval in seconds); ``now`` is on the same monotonic clock.
    """
    health = {
        name: FlowHealth(
            None if last is None else round(now - last, 3),
            max(ready_ticks * interval, ready_floor_s),
        )
        for name, (last, interval) in flows.items()
    }
    if state in ("connecting", "stopping"):
        return Readiness(False, state, f"bridge is {state}", health)
    if not zk_connected:
        return Readiness(False, state, "ZooKeeper is not connected", health)
    if state == "standby":
        return Readiness(True, state, "standby: ZooKeeper connected, waiting in the election")
    if state != "leader":
        return Readiness(False, state, f"unknown state {state!r}", health)
    if not health:
        return Readiness(False, state, "leader, but no flow is running yet", health)
    stale = [
        f"{name} (never)" if h.last_ok_s_ago is None else f"{name} ({h.last_ok_s_ago:.1f}s ago)"
        for name, h in sorted(health.items())
        if h.last_ok_s_ago is None or h.last_ok_s_ago > h.limit_s
    ]
    if stale:
        return Readiness(
            False, state, "leader; no recent successful pass: " + ", ".join(stale), health
        )
    return Readiness(True, state, "leader; every flow passed recently", health)


def bridge_readiness(bridge: Bridge, settings: MetricsSettings) -> Readiness:
    """Readiness of a running ``Bridge`` (read from another thread; values are snapshots)."""
    zk = bridge.zk
    intervals = dict(bridge.flow_intervals)
    last_ok = dict(bridge.last_ok)
    return readiness(
        bridge.state,
        bool(zk is not None and zk.connected),
        {name: (last_ok.get(name), interval) for name, interval in intervals.items()},
        time.monotonic(),
        settings.ready_ticks,
        settings.ready_floor_s,
    )


StartResponse = Callable[..., Any]


def make_app(
    registry: CollectorRegistry, ready: Callable[[], Readiness]
) -> Callable[[dict, StartResponse], Iterable[bytes]]:
    """The WSGI app: prometheus_client's exposition for /metrics, the probes beside it."""
    metrics_app = make_wsgi_app(registry)

    def reply(start: StartResponse, status: str, body: bytes, ctype: str) -> list[bytes]:
        start(status, [("Content-Type", ctype), ("Content-Length", str(len(body)))])
        return [body]

    def app(environ: dict, start: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or "/"
        if path == "/metrics":
            return metrics_app(environ, start)
        if path == "/healthz":
            return reply(start, "200 OK", b"ok\n", "text/plain; charset=utf-8")
        if path == "/readyz":
            r = ready()
            status = "200 OK" if r.ready else "503 Service Unavailable"
            return reply(start, status, r.body(), "application/json")
        if path == "/":
            links = b"kafka-zk-bridge: /metrics /healthz /readyz\n"
            return reply(start, "200 OK", links, "text/plain; charset=utf-8")
        return reply(start, "404 Not Found", b"not found\n", "text/plain; charset=utf-8")

    return app


class _Handler(WSGIRequestHandler):
    """Requests go to the debug log, not to stderr as one line per scrape."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        log.debug("http %s", format % args)


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Server6(_Server):
    address_family = socket.AF_INET6


class Endpoint:
    """The running HTTP server; ``close()`` stops it."""

    def __init__(self, server: WSGIServer) -> None:
        self.server = server
        self.thread = threading.Thread(
            target=server.serve_forever, name="zkbridge-http", daemon=True
        )

    @property
    def address(self) -> str:
        host, port = self.server.server_address[:2]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def serve(
    address: str, ready: Callable[[], Readiness], registry: CollectorRegistry | None = None
) -> Endpoint:
    """Listen on ``address`` (HOST:PORT, port 0 = any free one) in a daemon thread.

    Raises ``OSError`` when the address cannot be bound (in use, not a local address).
    """
    from bridge.metrics import METRICS

    host, port = split_hostport(address, min_port=0)
    server_class = _Server6 if ":" in host else _Server
    server = make_server(
        host, port, make_app(registry or METRICS.registry, ready), server_class, _Handler
    )
    endpoint = Endpoint(server)
    endpoint.thread.start()
    return endpoint
