"""After a ZooKeeper outage the bridge's session is back within about a second of the
server listening again: kazoo's default waits, doubling up to an hour, brought two standbys
back 24 s after a 9 s outage, and a takeover waited for them (tests/e2e/test_chaos.py).

Measured by hand the same way with kazoo's default retry instead (the negative control,
not run here: its timing is the default's jitter): 7.5 s after the server listened, against
0.7 s with the bridge's."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from bridge.config import ZooKeeperSettings
from bridge.connect import RECONNECT_MAX_S, zk_client
from tests.conftest import wait_for

pytestmark = pytest.mark.integration


def _listening(connect: str) -> bool:
    host, port = connect.split("/")[0].split(",")[0].rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), 0.2).close()
        return True
    except OSError:
        return False


def test_the_session_is_back_within_a_second_of_zookeeper(stack) -> None:
    client = zk_client(ZooKeeperSettings(connect=stack.zk_connect, session_timeout_s=60))
    client.start()
    try:
        assert client.connected
        stack.stop("zookeeper")
        wait_for(lambda: not client.connected, 30, 0.05, "the connection lost")
        time.sleep(11)  # kazoo's default: attempts about 12.7 s and 25.5 s after the loss
        marks: dict[str, float] = {}

        def watch() -> None:
            deadline = time.monotonic() + 60
            while len(marks) < 2 and time.monotonic() < deadline:
                now = time.monotonic()
                if "listening" not in marks and _listening(stack.zk_connect):
                    marks["listening"] = now
                if "back" not in marks and client.connected:
                    marks["back"] = now
                time.sleep(0.02)

        watcher = threading.Thread(target=watch)
        watcher.start()
        stack.start("zookeeper")
        stack.wait_healthy()
        watcher.join(60)
        took = marks["back"] - marks["listening"]
        # an attempt at most every RECONNECT_MAX_S (+40 % jitter), and the handshake
        assert took <= RECONNECT_MAX_S * 1.4 + 1.0, f"back {took:.1f} s after ZooKeeper"
        assert client.exists("/") is not None
    finally:
        client.stop()
        client.close()
