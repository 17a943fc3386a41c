"""After a ZooKeeper outage the bridge's session is back within about a second of the
server serving again: kazoo's default waits, doubling up to an hour, brought two standbys
back 24 s after a 9 s outage, and a takeover waited for them (tests/e2e/test_chaos.py).

Measured by hand the same way with kazoo's default retry instead (the negative control,
not run here: its timing is the default's jitter): 7.5 s after the server served, against
0.7 s with the bridge's."""

from __future__ import annotations

import threading
import time

import pytest

from bridge.config import ZooKeeperSettings
from bridge.connect import RECONNECT_MAX_S, zk_client
from bridge.devstack.processes import zk_four_letter
from tests.conftest import wait_for

pytestmark = pytest.mark.integration


def _serving(port: int) -> bool:
    """ZooKeeper answers requests: listening is not enough, a server loading a large
    database (a stack the fleet benchmark filled: 250 MB) refuses sessions for seconds
    after it listens, and the test measured that load (7.2 s) instead of the retry."""
    return "Mode:" in zk_four_letter(port, "srvr", 0.2)


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
                if "serving" not in marks and _serving(stack.state.ports.zookeeper):
                    marks["serving"] = now
                if "back" not in marks and client.connected:
                    marks["back"] = now
                time.sleep(0.02)

        watcher = threading.Thread(target=watch)
        watcher.start()
        stack.start("zookeeper")
        stack.wait_healthy()
        watcher.join(60)
        took = marks["back"] - marks["serving"]
        # an attempt at most every RECONNECT_MAX_S (+40 % jitter), and the handshake
        assert took <= RECONNECT_MAX_S * 1.4 + 1.0, f"back {took:.1f} s after ZooKeeper"
        assert client.exists("/") is not None
    finally:
        client.stop()
        client.close()
