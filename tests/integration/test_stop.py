"""SIGTERM stops a bridge within seconds whatever its servers are doing (issue: a bridge
blocked for minutes in kazoo's lock release after ZooKeeper went away).

These tests stop ZooKeeper and every broker, so they run on a stack of their own."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from bridge.devstack.stack import private_stack
from tests.conftest import BridgeProcess, wait_for

pytestmark = pytest.mark.integration

#: the bridge's own grace is 4 s (bridge.cli.STOP_GRACE_S); the bound leaves room for a
#: loaded machine, the figure is printed
BOUND_S = 15.0


@pytest.fixture(scope="module")
def own_stack():
    s = private_stack("kzb-stop-")
    try:
        yield s
    finally:
        s.discard()


def running_leader(stack, tmp_path, zk_kazoo) -> BridgeProcess:
    """A bridge that leads. Its own epoch line, not only ``/brokers/ids/1``: after a
    ZooKeeper restart the killed predecessor's ephemeral is still there until its session
    expires, and a SIGTERM sent then reached a bridge without its handler yet (exit -15)."""
    bridge = BridgeProcess(stack.zk_connect, stack.bootstrap_servers, tmp_path / "bridge.log")
    wait_for(
        lambda: "claimed bridge epoch" in bridge.text() and zk_kazoo.exists("/brokers/ids/1"),
        60,
        what="the bridge leading",
    )
    return bridge


def sigterm_took(bridge: BridgeProcess) -> float:
    t0 = time.monotonic()
    bridge.proc.send_signal(signal.SIGTERM)
    try:
        bridge.proc.wait(BOUND_S)
    except subprocess.TimeoutExpired:
        bridge.proc.kill()
        tail = bridge.text()[-3000:]
        raise AssertionError(f"still running {BOUND_S}s after SIGTERM:\n{tail}") from None
    return time.monotonic() - t0


def ensure_up(stack) -> None:
    """Start what an earlier test left stopped. An outage test does not restart its servers
    itself: the last one's restart (every broker, ~45 s) would be thrown away with the stack."""
    for name in stack.processes():
        if not stack.alive(name):
            stack.start(name)
    stack.wait_healthy()


def test_sigterm_with_everything_up_is_a_clean_stop(own_stack, tmp_path):
    """The grace is not the normal path: a healthy bridge stops cleanly, well within it."""
    from kazoo.client import KazooClient

    ensure_up(own_stack)
    zk = KazooClient(own_stack.zk_connect)
    zk.start()
    try:
        bridge = running_leader(own_stack, tmp_path, zk)
        took = sigterm_took(bridge)
        print(f"\nSIGTERM, all up: exited after {took:.1f}s")
        assert bridge.proc.returncode == 0
        assert "exiting without a clean shutdown" not in bridge.text()
        # a clean stop closes the session: its ephemeral registrations go at once
        wait_for(lambda: not zk.exists("/brokers/ids/1"), 5, what="ephemerals gone")
    finally:
        zk.stop()
        zk.close()


@pytest.mark.parametrize("outage", ["zookeeper", "brokers"])
def test_sigterm_stops_the_bridge_with_a_server_gone(own_stack, tmp_path, outage):
    from kazoo.client import KazooClient

    ensure_up(own_stack)
    zk = KazooClient(own_stack.zk_connect)
    zk.start()
    down = ["zookeeper"] if outage == "zookeeper" else ["kafka-1", "kafka-2", "kafka-3"]
    bridge = running_leader(own_stack, tmp_path, zk)
    zk.stop()
    zk.close()
    try:
        for name in down:
            # SIGKILL: gone is gone for the bridge, and the last KRaft node of three would
            # otherwise spend the stop's 30 s bound in a controlled shutdown without a quorum
            own_stack.stop(name, hard=True)
        time.sleep(3)  # the bridge is now failing or retrying against the missing servers
        took = sigterm_took(bridge)
        print(f"\nSIGTERM with {outage} down: exited {bridge.proc.returncode} after {took:.1f}s")
        assert bridge.proc.returncode == 0, bridge.text()[-3000:]
        assert "Traceback" not in bridge.text()
    finally:
        bridge.stop()
