"""Bad input at the legacy gateway: only that connection is closed, with one log line.

A real ``Gateway`` on a real socket. ApiVersions is answered by the gateway itself, so no
cluster is needed: the healthy connection beside each bad one keeps getting answers.
"""

from __future__ import annotations

import logging
import socket
import struct
import threading

import pytest
from kafka.protocol.consumer import FetchRequest
from kafka.protocol.metadata import ApiVersionsRequest

from bridge.config import KafkaSettings
from bridge.gateway.server import Gateway
from tests.conftest import wait_for
from tests.integration.old_client import OldClient

MAX_REQUEST = 64 * 1024


@pytest.fixture
def gateway():
    # nothing listens on port 1: the cluster is unreachable, which these tests do not need
    gw = Gateway(
        "127.0.0.1:0",
        KafkaSettings(bootstrap_servers="127.0.0.1:1"),
        max_request_bytes=MAX_REQUEST,
        write_timeout_s=1.0,
        body_timeout_s=1.0,
        upstream_timeout_s=1.0,
    )
    gw.start()
    yield gw
    gw.stop()


def _frame(api_key: int, version: int, body: bytes, client_id: bytes = b"bad-client") -> bytes:
    header = struct.pack(">hhih", api_key, version, 7, len(client_id)) + client_id
    return struct.pack(">i", len(header) + len(body)) + header + body


FETCH_V0 = FetchRequest[0](
    replica_id=-1,
    max_wait_ms=0,
    min_bytes=1,
    topics=[
        FetchRequest.FetchTopic(
            topic="t",
            partitions=[
                FetchRequest.FetchTopic.FetchPartition(
                    partition=0, fetch_offset=0, partition_max_bytes=1
                )
            ],
        )
    ],
).encode()

CASES = {
    "absurd size": (struct.pack(">i", 1 << 30), "request size 1073741824 outside"),
    "negative size": (struct.pack(">i", -5), "request size -5 outside"),
    "truncated body": (struct.pack(">i", 100) + b"x" * 10, "truncated request: 10 of 100"),
    "truncated size": (b"\x00\x00", "truncated size: 2 of 4"),
    "header past its frame": (
        struct.pack(">i", 12) + struct.pack(">hhih", 1, 0, 7, 500) + b"ab",
        "malformed request header",
    ),
    "unknown api key": (_frame(19, 0, b""), "api key 19 is not served"),  # CreateTopics
    "unserved version": (_frame(1, 4, FETCH_V0), "FetchRequest v4 is not served (v0-v3 are)"),
    "truncated request body": (_frame(1, 0, FETCH_V0[:-5]), "malformed FetchRequest v0"),
}


def _closed_lines(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "bridge.gateway.server" and "closing connection" in r.getMessage()
    ]


def _check_only_that_connection(
    gateway, caplog, bad: socket.socket, reason: str, timeout: float = 10
) -> None:
    peer = "{}:{}".format(*bad.getsockname()[:2])
    lines = wait_for(
        lambda: [line for line in _closed_lines(caplog) if peer in line], timeout, what=reason
    )
    assert len(lines) == 1, lines
    assert reason in lines[0], lines[0]
    bad.settimeout(5)
    try:  # closed by the gateway: what it had sent already, then the end
        while bad.recv(1 << 16):
            pass
    except ConnectionResetError:
        pass


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_closes_only_that_connection(gateway, caplog, case):
    caplog.set_level(logging.INFO, logger="bridge.gateway")
    data, reason = CASES[case]
    healthy = OldClient(gateway.address, client_id="healthy")
    assert healthy.send(ApiVersionsRequest[0]()).error_code == 0
    bad = socket.create_connection(gateway.address)
    bad.sendall(data)
    if case.startswith("truncated"):
        bad.shutdown(socket.SHUT_WR)  # the rest never comes
    _check_only_that_connection(gateway, caplog, bad, reason)
    assert "healthy" not in " ".join(_closed_lines(caplog))
    assert healthy.send(ApiVersionsRequest[1]()).error_code == 0
    healthy.close()
    bad.close()


def test_a_client_that_stops_reading_is_closed(gateway, caplog):
    """It pipelines requests and reads nothing: the gateway stops reading it too (one
    response at a time), gives up after ``write_timeout_s`` and serves everyone else."""
    caplog.set_level(logging.INFO, logger="bridge.gateway")
    healthy = OldClient(gateway.address, client_id="healthy")
    bad = socket.socket()
    bad.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    bad.connect(gateway.address)
    burst = _frame(18, 0, b"", client_id=b"no-reader") * 10_000

    def flood() -> None:
        try:
            while True:
                bad.sendall(burst)
        except OSError:
            pass  # closed by the gateway

    threading.Thread(target=flood, daemon=True).start()
    # the kernel's buffers (bounded by the gateway's SO_SNDBUF) and the transport's fill first
    _check_only_that_connection(gateway, caplog, bad, "stopped reading", timeout=60)
    assert "no-reader" in _closed_lines(caplog)[-1]
    assert healthy.send(ApiVersionsRequest[0]()).error_code == 0
    healthy.close()
    bad.close()


def test_a_newer_api_versions_gets_the_served_list_in_v0(gateway):
    """KIP-511: ApiVersions beyond what is served is answered (in v0), not closed."""
    client = OldClient(gateway.address)
    client.write(ApiVersionsRequest[3](client_software_name="x", client_software_version="1"))
    client.sock.settimeout(5)
    size = struct.unpack(">i", client._exactly(4))[0]
    body = client._exactly(size)
    error_code, count = struct.unpack_from(">hi", body, 4)
    assert error_code == 35 and count >= 8
    assert client.send(ApiVersionsRequest[0]()).error_code == 0
    client.close()


def test_an_idle_connection_is_closed_quietly(caplog):
    """Idle past ``idle_timeout_s`` (old brokers' connections.max.idle.ms): closed with one
    INFO line, not a warning: it is routine, not bad input."""
    caplog.set_level(logging.INFO, logger="bridge.gateway")
    gw = Gateway("127.0.0.1:0", KafkaSettings(bootstrap_servers="127.0.0.1:1"), idle_timeout_s=0.5)
    gw.start()
    try:
        idle = OldClient(gw.address, client_id="idle")
        assert idle.send(ApiVersionsRequest[0]()).error_code == 0
        assert idle.closed_by_peer(timeout=10)
        (line,) = [r for r in caplog.records if "closing connection" in r.getMessage()]
        assert line.levelno == logging.INFO and "'idle'" in line.getMessage()
        assert "idle for" in line.getMessage()
        idle.close()
    finally:
        gw.stop()
