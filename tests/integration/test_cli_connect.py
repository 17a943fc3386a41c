"""Operator commands and their servers: where the addresses come from, and what an operator
sees when one does not answer (one line naming it and how to point at it, exit 3, quickly)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.integration

COMMANDS = [
    ["groups"],
    ["describe", "g"],
    ["migrate", "g", "--to", "dual"],
    ["offsets", "export", "g"],
    ["snapshot", "--out", "snapshot.jsonl"],
]


def dead_address() -> str:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def zk_bridge(
    *args: str, env: dict | None = None, cwd=ROOT
) -> tuple[subprocess.CompletedProcess, float]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ZK_BRIDGE")}
    t0 = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "bridge.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**clean, **(env or {})},
    )
    return out, time.monotonic() - t0


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_an_unreachable_zookeeper_is_one_line_and_quick(command, tmp_path):
    address = dead_address()
    out, took = zk_bridge(*command, env={"ZK_BRIDGE_ZOOKEEPER": address}, cwd=tmp_path)
    print(f"{' '.join(command)}: exit {out.returncode} after {took:.1f}s: {out.stderr!r}")
    assert out.returncode == 3, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert f"ZooKeeper at {address} did not answer" in lines[0]
    assert "--zookeeper" in lines[0] and "ZK_BRIDGE_ZOOKEEPER" in lines[0]
    assert took < 20, f"took {took:.1f}s (the wait is 5 s)"


def test_an_unreachable_kafka_is_named(stack):
    address = dead_address()
    out, took = zk_bridge("groups", "--zookeeper", stack.zk_connect, "--bootstrap-server", address)
    print(f"exit {out.returncode} after {took:.1f}s: {out.stderr!r}")
    assert out.returncode == 3
    (line,) = out.stderr.strip().splitlines()
    assert f"Kafka at {address} did not answer" in line and "ZK_BRIDGE_BOOTSTRAP_SERVERS" in line


def test_addresses_come_from_the_environment_and_a_flag_wins(stack, chroot, zk):
    zk.ensure_path("/consumers/envgroup/offsets/t")
    env = {
        "ZK_BRIDGE_ZOOKEEPER": stack.zk_connect + chroot,
        "ZK_BRIDGE_BOOTSTRAP_SERVERS": stack.bootstrap_servers,
    }
    out, _ = zk_bridge("groups", env=env)
    assert out.returncode == 0 and "envgroup" in out.stdout, out.stderr
    dead = {**env, "ZK_BRIDGE_ZOOKEEPER": dead_address()}
    flagged, _ = zk_bridge("groups", "--zookeeper", stack.zk_connect + chroot, env=dead)
    assert flagged.returncode == 0 and "envgroup" in flagged.stdout, flagged.stderr


def test_devstack_status_prints_what_commands_read(stack):
    out, _ = zk_bridge("devstack", "status", "--dir", str(stack.dir), "--output", "env")
    assert out.returncode == 0, out.stderr
    assert f"export ZK_BRIDGE_ZOOKEEPER={stack.zk_connect}\n" in out.stdout
    assert f"export ZK_BRIDGE_BOOTSTRAP_SERVERS={stack.bootstrap_servers}\n" in out.stdout
