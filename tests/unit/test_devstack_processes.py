"""How the devstack knows its own processes: by the config file a process runs with.

Real processes stand in for the servers here (a Python sleeper whose command line names
the node's config file, as the JVM's does); the servers themselves are exercised by the
integration tests that stop and start brokers.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.devstack.stack import Devstack, Ports, StackError


def sleeper(config: Path) -> subprocess.Popen:
    config.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", str(config)],
        start_new_session=True,
    )


@pytest.fixture
def stack(tmp_path: Path) -> Devstack:
    return Devstack(tmp_path, Ports.free())


def test_a_process_on_the_nodes_config_is_adopted_and_stopped(stack: Devstack) -> None:
    """A broker the record lost (say a start misread as failed) is still the node's process:
    `alive` finds it, so no twin is started on its ports, and `down` stops it."""
    lost = sleeper(stack.dir / "kafka-2" / "server.properties")
    try:
        assert not stack.alive("kafka-1")
        assert stack.alive("kafka-2")
        assert stack.state.pids["kafka-2"] == lost.pid
        assert stack.down() == ["kafka-2"]
        assert not Path(f"/proc/{lost.pid}").exists()
        assert not stack.alive("kafka-2")
    finally:
        lost.kill()


def test_a_reused_pid_is_not_taken_for_the_node(stack: Devstack, tmp_path: Path) -> None:
    other = sleeper(tmp_path / "elsewhere" / "kafka-1" / "server.properties")
    try:
        stack.state.pids["kafka-1"] = other.pid  # the recorded pid now runs something else
        assert not stack.alive("kafka-1")
        stack.down()
        assert other.poll() is None  # down stops only what is the stack's
    finally:
        other.kill()


def test_stop_kills_a_process_that_ignores_sigterm(stack: Devstack) -> None:
    config = stack.dir / "zookeeper" / "zoo.cfg"
    config.parent.mkdir(parents=True)
    stubborn = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print('ready', flush=True); time.sleep(120)",
            str(config),
        ],
        start_new_session=True,
        stdout=subprocess.PIPE,
    )
    try:
        assert stubborn.stdout.readline() == b"ready\n"
        stack.stop("zookeeper", timeout=1)
        # the stack reaps its processes, so ask /proc rather than the Popen
        assert not Path(f"/proc/{stubborn.pid}").exists()
        assert not stack.alive("zookeeper")
    finally:
        stubborn.kill()


def test_a_start_waits_for_its_ports_and_names_the_one_held(stack: Devstack) -> None:
    port = stack.state.ports.controllers[0]
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        with pytest.raises(StackError, match=rf"cannot start kafka-1: .*\[{port}\]"):
            stack._wait_ports_free("kafka-1", timeout=1)
    stack._wait_ports_free("kafka-1", timeout=1)  # released: returns at once


def test_up_refuses_ports_another_stack_holds_before_starting_anything(
    stack: Devstack,
) -> None:
    """Two stacks on one port: the second's servers would die at once while its health
    checks asked the first and called it healthy. `up` names the port and starts nothing."""
    port = stack.state.ports.zookeeper
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        with pytest.raises(StackError, match=rf"cannot start zookeeper: .*\[{port}\]"):
            stack.up(timeout=5)
    assert not stack.state.pids
    assert not any(stack.alive(n) for n in stack.processes())


def test_a_failed_start_quotes_only_its_own_run(stack: Devstack) -> None:
    home = stack.dir / "kafka-1"
    home.mkdir(parents=True)
    (home / "server.log").write_text("[t0] ERROR an old run's failure (x)\n")
    stack._spawn("kafka-1", ["-version"])  # the JVM prints its version and exits
    os.waitpid(stack.state.pids.pop("kafka-1"), 0)
    why = stack._why("kafka-1")
    assert "old run" not in why
    assert "version" in why


def test_a_new_cluster_id_never_starts_with_a_dash(monkeypatch) -> None:
    """Kafka's storage tool read ``-t -xyz`` as two options; Kafka's own ``Uuid.randomUuid``
    draws again for an id starting with ``-``, and so does the devstack."""
    import base64
    import uuid

    from bridge.devstack import servers

    dash = uuid.UUID(bytes=b"\xf8" + bytes(15))  # url-safe base64 of 0xf8... is "-..."
    plain = uuid.UUID(bytes=b"\x00" + bytes(15))
    assert base64.urlsafe_b64encode(dash.bytes).decode().startswith("-")
    draws = iter([dash, dash, plain])
    monkeypatch.setattr(servers.uuid, "uuid4", lambda: next(draws))
    cid = servers._new_cluster_id()
    assert cid == base64.urlsafe_b64encode(plain.bytes).decode().rstrip("=")
    assert len(cid) == 22


NO_PID = 2**22 + 1  # above Linux's PID_MAX_LIMIT: never a live process


@pytest.fixture
def started(monkeypatch) -> list[list[str]]:
    """The JVMs' command lines, recorded in place of starting them."""
    from types import SimpleNamespace

    from bridge.devstack import processes

    argvs: list[list[str]] = []

    def popen(argv: list[str], **_: object) -> SimpleNamespace:
        argvs.append(argv)
        return SimpleNamespace(pid=NO_PID)

    fake = SimpleNamespace(Popen=popen, STDOUT=subprocess.STDOUT, DEVNULL=subprocess.DEVNULL)
    monkeypatch.setattr(processes, "subprocess", fake)
    monkeypatch.setattr(processes, "_java", lambda: "java")
    return argvs


@pytest.mark.parametrize(("env", "heap"), [(None, "512m"), ("4g", "4g"), (" 2048m ", "2048m")])
def test_zookeeper_runs_with_the_configured_heap(stack, started, monkeypatch, env, heap) -> None:
    """``KZB_ZK_HEAP`` sizes ZooKeeper's heap (a 10,000-group fleet needs more than 512m)."""
    if env is None:
        monkeypatch.delenv("KZB_ZK_HEAP", raising=False)
    else:
        monkeypatch.setenv("KZB_ZK_HEAP", env)
    stack._start_zookeeper("zk.jar")
    (argv,) = started
    assert [a for a in argv if a.startswith("-Xmx")] == [f"-Xmx{heap}"]
    assert argv[-1] == str(stack.dir / "zookeeper" / "zoo.cfg")
    assert stack.state.pids["zookeeper"] == NO_PID


def test_brokers_keep_their_heap_whatever_zookeepers(stack, started, monkeypatch) -> None:
    monkeypatch.setenv("KZB_ZK_HEAP", "4g")
    stack._spawn("kafka-1", ["-cp", "kafka.jar", "kafka.Kafka", "server.properties"])
    (argv,) = started
    assert [a for a in argv if a.startswith("-Xmx")] == ["-Xmx512m"]


@pytest.mark.parametrize("bad", ["4 g", "-Xmx4g", "0m", "4gb", "big"])
def test_a_bad_zookeeper_heap_is_refused_before_the_jvm(stack, started, monkeypatch, bad) -> None:
    monkeypatch.setenv("KZB_ZK_HEAP", bad)
    with pytest.raises(StackError, match="KZB_ZK_HEAP"):
        stack._start_zookeeper("zk.jar")
    assert started == []
