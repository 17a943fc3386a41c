"""Fixtures: one real stack per test session, a private ZooKeeper chroot per test.

The stack is the same one ``zk-bridge devstack`` runs (real ZooKeeper, 3 KRaft brokers).
Set ``KZB_STACK_DIR`` to reuse a stack that is already up (it is then left running).
Each test gets its own chroot, so bridges and legacy clients of different tests never see
each other's ``/brokers`` or ``/consumers``; Kafka topics are named per test for the same
reason.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]

# Properties check results, not speed: on a loaded machine (2 cores shared by several test
# runs) one example of test_mirror_ids took 279 ms against hypothesis' default 200 ms
# deadline and failed as "flaky". Timings are the benchmarks' business.
settings.register_profile("kzb", deadline=None)
settings.load_profile("kzb")


def wait_for(cond: Callable[[], object], timeout: float, interval: float = 0.05, what: str = ""):
    """Poll ``cond`` until truthy; return its value or fail naming ``what``."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = cond()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or cond}: last={last!r}")


@pytest.fixture(autouse=True)
def _logging_as_it_was():
    """A test that runs the CLI in-process (``bridge.cli.main``) sets the root logger up
    with a handler on the ``sys.stderr`` of that moment: pytest's capture of that test,
    closed after it. Every later test's log line then printed "--- Logging error ---
    ValueError: I/O operation on closed file" into the run's output. After each test the
    bridge's handler (``bridge.logs.HANDLER_NAME``) leaves the root logger, and the levels
    it set are put back (pytest's own handlers come and go with each phase)."""
    from bridge.logs import HANDLER_NAME

    root = logging.getLogger()
    levels = {n: logging.getLogger(n).level for n in ("", "kafka", "kazoo")}
    yield
    for handler in [h for h in root.handlers if h.get_name() == HANDLER_NAME]:
        root.removeHandler(handler)
    for n, level in levels.items():
        logging.getLogger(n).setLevel(level)


@pytest.fixture(scope="session")
def stack():
    from bridge.devstack import Devstack, Ports

    existing = os.environ.get("KZB_STACK_DIR")
    if existing:
        s = Devstack(existing)
        s.up()
        yield s
        return
    d = Path(tempfile.mkdtemp(prefix="kzb-stack-"))
    s = Devstack(d, Ports.free())
    try:
        s.up()
        yield s
    finally:
        s.down()
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def stack4():
    """One Kafka 4.x stack (the newest 4 release) for every 4.x module of the session, as
    ``stack`` is for 3.9; modules run on it by overriding ``stack`` with it. Set
    ``KZB_STACK4_DIR`` to reuse a 4.x stack that is already up (it is then left running)."""
    from bridge.devstack import Devstack
    from bridge.devstack.stack import private_stack

    existing = os.environ.get("KZB_STACK4_DIR")
    if existing:
        s = Devstack(existing, kafka_version="4.x")
        s.up()
        yield s
        return
    s = private_stack("kzb-stack4-", kafka_version="4.x")
    try:
        yield s
    finally:
        s.discard()


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "zk_auth(scheme, credential): the chroot is cleaned up with this ZooKeeper auth "
        "(for tests whose bridge protects its nodes with ACLs)",
    )


@pytest.fixture
def chroot(stack, request) -> str:
    """A fresh ZooKeeper chroot for this test (created, then removed afterwards).

    With ``@pytest.mark.zk_auth("digest", "user:password")`` the removal authenticates first,
    so nodes a bridge created with restrictive ACLs can be deleted."""
    from kazoo.client import KazooClient

    name = re.sub(r"[^A-Za-z0-9_-]", "_", request.node.name)[:60]
    root = f"/t-{name}-{uuid.uuid4().hex[:6]}"
    auth = request.node.get_closest_marker("zk_auth")
    c = KazooClient(stack.zk_connect, auth_data=[tuple(auth.args)] if auth else None)
    c.start()
    c.ensure_path(root)
    yield root
    c.delete(root, recursive=True)
    c.stop()
    c.close()


@pytest.fixture
def zk(stack, chroot):
    """A plain kazoo client inside the test's chroot: what a legacy reader sees."""
    from kazoo.client import KazooClient

    c = KazooClient(stack.zk_connect + chroot)
    c.start()
    yield c
    c.stop()
    c.close()


@pytest.fixture
def other(stack, chroot):
    """A second session in the test's chroot, as an old consumer's: its changes reach the
    bridge's caches by watch only."""
    from kazoo.client import KazooClient

    c = KazooClient(stack.zk_connect + chroot)
    c.start()
    yield c
    c.stop()
    c.close()


@pytest.fixture
def admin(stack):
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    from bridge.kafka.coordinators import forget, moved

    def forgetting(method):
        def call(self, groups, *args, **kwargs):
            try:
                return method(self, groups, *args, **kwargs)
            except KafkaError as exc:
                if moved(exc):
                    forget(self, [groups] if isinstance(groups, str) else list(groups))
                raise

        return call

    class TestAdmin(KafkaAdminClient):
        """kafka-python's admin client, forgetting a group's cached coordinator when an
        answer says it moved, as the bridge does (``bridge/kafka/coordinators.py``): KRaft
        moves leaders back to their preferred replicas every five minutes, and a test's
        retries would otherwise ask the old coordinator until they time out (seen in a
        clean-clone CI run: NOT_COORDINATOR for 60 s after such a rebalance)."""

        list_group_offsets = forgetting(KafkaAdminClient.list_group_offsets)
        describe_groups = forgetting(KafkaAdminClient.describe_groups)

    # reconnect within a second of a broker's restart, as the bridge does (default: 30 s)
    a = TestAdmin(
        bootstrap_servers=stack.bootstrap_servers.split(","), reconnect_backoff_max_ms=1000
    )
    yield a
    a.close()


@pytest.fixture
def topic_name(request) -> Callable[[str], str]:
    base = re.sub(r"[^A-Za-z0-9]", "", request.node.name)[:40]

    def make(suffix: str = "") -> str:
        return f"{base}-{suffix}{uuid.uuid4().hex[:6]}"

    return make


class BridgeProcess:
    """A real ``zk-bridge run`` child process with its log in a file."""

    def __init__(
        self, zookeeper: str, bootstrap: str, log: Path, *extra: str, env: dict | None = None
    ) -> None:
        self.log = log
        self._out = log.open("ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bridge.cli",
                # KZB_TEST_BRIDGE_LOG_LEVEL=DEBUG: every test bridge's log in detail
                "--log-level",
                os.environ.get("KZB_TEST_BRIDGE_LOG_LEVEL", "INFO"),
                "run",
                "--zookeeper",
                zookeeper,
                "--bootstrap-server",
                bootstrap,
                *extra,
            ],
            stdout=self._out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            # port 0: bridges of one test (or a bridge already on 9308) never collide;
            # a test that scrapes passes --metrics-address, which wins over this
            env={**os.environ, "ZK_BRIDGE__METRICS__ADDRESS": "127.0.0.1:0", **(env or {})},
        )

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._out.close()
        return self.proc.returncode


@pytest.fixture
def start_bridge(stack, chroot, tmp_path):
    started: list[BridgeProcess] = []

    def start(
        *extra: str,
        zookeeper: str | None = None,
        bootstrap: str | None = None,
        env: dict | None = None,
    ):
        b = BridgeProcess(
            zookeeper or stack.zk_connect + chroot,
            bootstrap or stack.bootstrap_servers,
            tmp_path / f"bridge-{len(started)}.log",
            *extra,
            env=env,
        )
        started.append(b)
        return b

    yield start
    for b in started:
        b.stop()
