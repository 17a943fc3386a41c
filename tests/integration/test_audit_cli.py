"""``zk-bridge snapshot`` and ``zk-bridge audit`` refusing bad input: one line, an exit code.

Each case runs the real command in a child process against real servers (or a port nobody
listens on) and checks the message, the exit code and that no traceback leaks out. These
all fail before Spark starts, so they are quick.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from bridge.audit import dump
from tests.conftest import ROOT

pytestmark = pytest.mark.integration


def zk_bridge(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bridge.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=180,
        env={**os.environ, **(env or {})},
    )


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def refused(proc: subprocess.CompletedProcess, code: int, *words: str) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    for w in words:
        assert w in proc.stderr, proc.stderr


@pytest.fixture
def snap(stack, chroot, tmp_path) -> Path:
    """A real (empty) snapshot of the test's chroot."""
    out = tmp_path / "snap"
    proc = zk_bridge("snapshot", "--zookeeper", stack.zk_connect + chroot, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "snapshot: 0 groups, 0 nodes (0 bad)" in proc.stdout
    return out


def test_snapshot_of_an_unreachable_zookeeper(tmp_path) -> None:
    proc = zk_bridge(
        "snapshot",
        "--zookeeper",
        f"127.0.0.1:{closed_port()}",
        "--out",
        str(tmp_path / "s"),
        env={"ZK_BRIDGE__ZOOKEEPER__CONNECTION_TIMEOUT_S": "1"},
    )
    refused(proc, 3, "snapshot: ZooKeeper at 127.0.0.1:", "did not answer")


def test_audit_with_a_wrong_snapshot_path(stack, tmp_path) -> None:
    proc = zk_bridge(
        "audit",
        "--bootstrap-server",
        stack.bootstrap_servers,
        "--snapshot",
        str(tmp_path / "no-such-dir"),
        "--out",
        str(tmp_path / "out"),
    )
    refused(proc, 2, "audit: snapshot", "does not exist")
    not_a_snapshot = zk_bridge(
        "audit", "--dump", str(tmp_path), "--snapshot", str(tmp_path), "--out", str(tmp_path)
    )
    refused(not_a_snapshot, 2, "is not a snapshot", "zk-bridge snapshot")


def test_audit_of_an_unreachable_cluster(snap, tmp_path) -> None:
    proc = zk_bridge(
        "audit",
        "--bootstrap-server",
        f"127.0.0.1:{closed_port()}",
        "--snapshot",
        str(snap),
        "--out",
        str(tmp_path / "out"),
        env={"ZK_BRIDGE__KAFKA__REQUEST_TIMEOUT_MS": "2000"},
    )
    refused(proc, 3, "audit: Kafka at 127.0.0.1:", "is not reachable")


def test_audit_input_mistakes(snap, tmp_path) -> None:
    refused(zk_bridge("audit", "--out", str(tmp_path)), 2, "--snapshot required")
    refused(
        zk_bridge("audit", "--snapshot", str(snap), "--out", str(tmp_path)),
        2,
        "give --bootstrap-server",
    )
    refused(
        zk_bridge("audit", "--dump", str(tmp_path / "nope"), "--snapshot", str(snap), "--out", "o"),
        2,
        "is not a directory",
    )
    empty = tmp_path / "empty-dump"
    dump.write_dump(empty, iter([]), {}, fmt="jsonl")
    refused(
        zk_bridge(
            "audit", "--dump", str(empty), "--snapshot", str(snap), "--out", str(tmp_path / "o")
        ),
        4,
        "holds no records",
    )
    refused(
        zk_bridge(
            "audit", "--dump", str(empty), "--snapshot", str(snap), "--out", "o", "--groups", "(("
        ),
        2,
        "is not a valid regex",
    )


def test_audit_of_a_cluster_where_no_group_ever_committed(snap, tmp_path) -> None:
    """A fresh cluster of its own: __consumer_offsets does not exist until a first commit."""
    from bridge.devstack import Devstack, Ports

    d = Path(tempfile.mkdtemp(prefix="kzb-empty-"))
    fresh = Devstack(d, Ports.free())
    try:
        fresh.up(internal_topics=False)
        proc = zk_bridge(
            "audit",
            "--bootstrap-server",
            fresh.bootstrap_servers,
            "--snapshot",
            str(snap),
            "--out",
            str(tmp_path / "out"),
        )
        refused(proc, 4, "__consumer_offsets does not exist", "no group has committed")
        dumped = zk_bridge(
            "audit", "dump", "--bootstrap-server", fresh.bootstrap_servers, "--out", str(d / "x")
        )
        refused(dumped, 4, "audit dump: topic __consumer_offsets does not exist")
    finally:
        fresh.down()
        shutil.rmtree(d, ignore_errors=True)
