"""A local stack of real servers: one ZooKeeper and a 3-node KRaft Kafka, all on loopback.

Every process is a plain ``java -cp`` child started in its own session, with its config,
data and log under one directory. The directory's ``stack.json`` records what was started
(pids, ports, cluster id), which makes ``up`` idempotent and lets ``down`` stop only what
this stack started.

Every broker has two client listeners: ``PLAINTEXT`` (what old consumers use) and
``SASL_PLAINTEXT`` with SASL/PLAIN, whose one user (``bridge``) gets a random password per
stack, kept in ``stack.json``. That is a local development credential on loopback only;
``zk-bridge devstack status`` prints it so that clients can be pointed at the listener.

Each JVM gets at most 512 MB of heap; ZooKeeper's is ``KZB_ZK_HEAP`` (default ``512m``,
any JVM size such as ``4g``), read when ZooKeeper starts: a fleet of millions of offset
nodes outgrows the default (docs/benchmarks.md, fleet scale).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bridge.devstack.processes import (
    DEFAULT_HEAP,
    _ask_group_coordinator,
    _bindable,
    _init_txn,
    _java,
    _pids,
    _port_open,
    _runs_with,
    spawn_jvm,
    zk_four_letter,
    zk_heap,
)
from bridge.devstack.servers import (
    KAFKA_NODES,
    KAFKA_VERSIONS,
    LOG4J,
    NEXT_GEN_GROUPS,
    SASL_MECHANISM,
    SASL_USERNAME,
    Ports,
    StackError,
    StackState,
    _new_cluster_id,
    kafka_line,
    kafka_properties,
    zookeeper_config,
)
from bridge.jars import ensure_classpath, jar_dir


class Devstack:
    """Start, inspect and stop the local stack rooted at ``directory``."""

    def __init__(
        self, directory: Path | str, ports: Ports | None = None, kafka_version: str | None = None
    ) -> None:
        """``kafka_version``: ``3.9`` (default) or ``4.x`` for a new stack; an existing stack
        keeps the line its data was formatted with, and asking for another one is an error."""
        self.dir = Path(directory).resolve()
        self.state_file = self.dir / "stack.json"
        #: size of each log file at the latest spawn, so a failure quotes only that run
        self._log_marks: dict[Path, int] = {}
        line = kafka_line(kafka_version) if kafka_version else None
        if self.state_file.exists():
            self.state = StackState.load(self.state_file)
            if line and line != self.state.kafka_version:
                raise StackError(
                    f"the stack in {self.dir} runs Kafka {self.state.kafka_version}; stop it "
                    f"and remove the directory, or use another --dir, for Kafka {line}"
                )
        else:
            self.state = StackState(
                ports=ports or Ports(), cluster_id=_new_cluster_id(), kafka_version=line or "3.9"
            )

    @property
    def kafka_version(self) -> str:
        """The Kafka line this stack runs: ``3.9`` or ``4``."""
        return self.state.kafka_version

    def _classpath(self) -> str:
        return ensure_classpath(KAFKA_VERSIONS[self.state.kafka_version])

    # ---- addresses -----------------------------------------------------------------
    @property
    def zk_connect(self) -> str:
        return f"127.0.0.1:{self.state.ports.zookeeper}"

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.state.ports.brokers)

    @property
    def sasl_bootstrap_servers(self) -> str:
        """The SASL_PLAINTEXT listeners (SASL/PLAIN, ``sasl_username``/``sasl_password``)."""
        return ",".join(f"127.0.0.1:{p}" for p in self.state.ports.sasl_brokers)

    @property
    def sasl_username(self) -> str:
        return SASL_USERNAME

    @property
    def sasl_password(self) -> str:
        return self.state.sasl_password

    def broker_port(self, node_id: int) -> int:
        return self.state.ports.brokers[node_id - 1]

    def sasl_port(self, node_id: int) -> int:
        return self.state.ports.sasl_brokers[node_id - 1]

    # ---- lifecycle -----------------------------------------------------------------
    def up(self, timeout: float = 180.0, internal_topics: bool = True) -> None:
        """Start whatever is not running and wait until everything answers; with
        ``internal_topics``, group and transaction coordinators included (which creates
        Kafka's internal topics on a fresh cluster)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        classpath = self._classpath()
        # a server whose port another stack holds dies at once, while the health checks
        # below would ask that other stack and call this one healthy: refuse first
        stopped = [n for n in self.processes() if not self.alive(n)]
        for name in stopped:
            self._wait_ports_free(name, timeout=5.0)
        if "zookeeper" in stopped:
            self._start_zookeeper(classpath)
        for node in KAFKA_NODES:
            if f"kafka-{node}" in stopped:
                self._start_kafka(node, classpath)
        self.state.save(self.state_file)
        deadline = time.monotonic() + timeout
        self.wait_healthy(timeout)
        if internal_topics:
            self.wait_internal_topics(max(deadline - time.monotonic(), 30.0))

    def wait_internal_topics(self, timeout: float = 120.0) -> None:
        """Block until a group coordinator and a transaction coordinator answer. A fresh
        cluster creates ``__consumer_offsets`` and ``__transaction_state`` (50 partitions
        each) on their first use, and until then answers COORDINATOR_NOT_AVAILABLE: seen
        as a first command's or test's failure on a loaded machine, not as a stack still
        starting. Cheap once the topics exist."""
        from kafka.errors import KafkaError

        servers = self.bootstrap_servers.split(",")
        deadline = time.monotonic() + timeout
        for what, ask in (("group", _ask_group_coordinator), ("transaction", _init_txn)):
            while True:
                try:
                    ask(servers)
                    break
                except KafkaError as exc:
                    if time.monotonic() > deadline:
                        raise StackError(
                            f"no {what} coordinator answered within {timeout:.0f}s: {exc}"
                        ) from None
                time.sleep(1.0)

    def down(self, timeout: float = 30.0) -> list[str]:
        """Stop the processes this stack started (and only those); return their names."""
        names = [n for n in self.processes() if self.alive(n)]
        self._stop(names, signal.SIGTERM, timeout)
        self.state.pids.clear()
        if self.dir.exists():
            self.state.save(self.state_file)
        return names

    def status(self) -> dict:
        """Health of each process and the addresses clients use."""
        procs = {}
        zk = self.state.ports.zookeeper
        procs["zookeeper"] = {
            "pid": self.state.pids.get("zookeeper"),
            "running": self.alive("zookeeper"),
            "healthy": zk_four_letter(zk) == "imok",
            "port": zk,
        }
        for node in KAFKA_NODES:
            name, port, sasl = f"kafka-{node}", self.broker_port(node), self.sasl_port(node)
            procs[name] = {
                "pid": self.state.pids.get(name),
                "running": self.alive(name),
                "healthy": self.alive(name) and _port_open(port) and _port_open(sasl),
                "port": port,
                "sasl_port": sasl,
            }
        return {
            "directory": str(self.dir),
            "zookeeper": self.zk_connect,
            "bootstrap_servers": self.bootstrap_servers,
            "sasl_bootstrap_servers": self.sasl_bootstrap_servers,
            "sasl_mechanism": SASL_MECHANISM,
            "sasl_username": self.sasl_username,
            "sasl_password": self.sasl_password,
            "cluster_id": self.state.cluster_id,
            "kafka_version": self.kafka_release(),
            "processes": procs,
        }

    def kafka_release(self) -> str:
        """The Kafka release the stack runs (from its classpath), e.g. ``4.4.0``."""
        jars = sorted(jar_dir(KAFKA_VERSIONS[self.kafka_version]).glob("kafka_2.13-*.jar"))
        return jars[0].name.removeprefix("kafka_2.13-").removesuffix(".jar") if jars else "?"

    def wait_healthy(self, timeout: float = 180.0) -> None:
        """Block until ZooKeeper says imok and Kafka reports all three brokers."""
        deadline = time.monotonic() + timeout
        while zk_four_letter(self.state.ports.zookeeper) != "imok":
            self._check_running("zookeeper")
            if time.monotonic() > deadline:
                raise StackError(
                    f"ZooKeeper did not answer on {self.zk_connect}; see {self._log('zookeeper')}"
                )
            time.sleep(0.3)
        self.wait_brokers(set(KAFKA_NODES), deadline - time.monotonic())
        for node in KAFKA_NODES:
            port = self.sasl_port(node)
            while not _port_open(port):
                if time.monotonic() > deadline:
                    raise StackError(
                        f"kafka-{node} does not listen on its SASL_PLAINTEXT port {port} (a "
                        "broker started before the stack had that listener?); run "
                        "'zk-bridge devstack down' and 'up' again, or see "
                        f"{self._log(f'kafka-{node}')}"
                    )
                time.sleep(0.3)

    def wait_brokers(self, expected: set[int], timeout: float = 120.0) -> None:
        """Wait until the cluster's metadata lists exactly ``expected`` live brokers."""
        from kafka import KafkaAdminClient  # imported late: devstack down needs no client

        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            for node in expected:
                self._check_running(f"kafka-{node}")
            live = [self.broker_port(n) for n in expected if _port_open(self.broker_port(n))]
            if live:
                try:
                    admin = KafkaAdminClient(
                        bootstrap_servers=",".join(f"127.0.0.1:{p}" for p in live),
                        request_timeout_ms=5000,
                        bootstrap_timeout_ms=5000,
                    )
                    try:
                        cluster = admin.describe_cluster()
                    finally:
                        admin.close()
                    ids = {b["broker_id"] for b in cluster["brokers"] if not b.get("is_fenced")}
                    if ids == expected:
                        return
                    last = f"live brokers {sorted(ids)}"
                except Exception as exc:  # noqa: BLE001 - any client error means "not yet"
                    last = f"{type(exc).__name__}: {exc}"
            time.sleep(0.5)
        raise StackError(f"Kafka brokers {sorted(expected)} not ready: {last}")

    # ---- single-process control, used by fault tests ----------------------------------
    def stop(self, name: str, *, hard: bool = False, timeout: float = 30.0) -> None:
        """Stop one process (SIGTERM, or SIGKILL when ``hard``) and wait for it to exit."""
        self._stop([name], signal.SIGKILL if hard else signal.SIGTERM, timeout)
        self.state.pids.pop(name, None)
        self.state.save(self.state_file)

    def _stop(self, names: list[str], sig: int, timeout: float) -> None:
        """Signal each process (and any twin found on its config), SIGKILL after ``timeout``."""
        signalled: set[int] = set()
        deadline = time.monotonic() + timeout
        while live := [n for n in names if self.alive(n)]:
            late = time.monotonic() > deadline
            for name in live:
                pid = self.state.pids[name]
                if late or pid not in signalled:
                    self._signal(name, signal.SIGKILL if late else sig)
                    signalled.add(pid)
            time.sleep(0.1)
        for name in names:
            self._reap(name)

    def start(self, name: str) -> None:
        """Start one stopped process again (with the same config and data)."""
        if self.alive(name):
            return
        classpath = self._classpath()

        def spawn() -> None:
            self._wait_ports_free(name)
            if name == "zookeeper":
                self._start_zookeeper(classpath)
            else:
                self._start_kafka(int(name.rsplit("-", 1)[1]), classpath)

        spawn()
        # a server restarted right after a stop can die on what its predecessor left (a
        # port or lock not yet released): give it one more start, a moment later
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.alive(name):
            time.sleep(0.5)
        if not self.alive(name):
            self._reap(name)
            print(f"{name} exited at start; starting it once more:\n{self._why(name)}")
            time.sleep(3)
            if not self.alive(name):  # never two processes on one node's config
                spawn()
        self.state.save(self.state_file)

    def pause(self, name: str) -> None:
        self._signal(name, signal.SIGSTOP)

    def resume(self, name: str) -> None:
        self._signal(name, signal.SIGCONT)

    def alive(self, name: str) -> bool:
        """True when a process of ours runs as ``name``.

        Ours means: started with this node's config file. The recorded pid is checked
        first (pids get reused); when it is not ours, any process running with the node's
        config is adopted, so a process the record lost (a crashed CLI, a start misread as
        failed) is stopped by ``down`` and never gets a twin bound to the same ports.
        """
        marker = str(self._config_file(name)).encode()
        pid = self.state.pids.get(name)
        if pid and _runs_with(pid, marker):
            return True
        for other in _pids():
            if other != pid and _runs_with(other, marker):
                self.state.pids[name] = other
                return True
        return False

    # ---- internals -------------------------------------------------------------------
    def _log(self, name: str) -> Path:
        return self.dir / name / "server.log"

    def _check_running(self, name: str) -> None:
        """Raise when ``name`` died during start-up: still gone after half a second. One
        healthy 4.x broker read as gone in its first second ("it logged nothing") and ran
        on; the suspect is a read of ``/proc`` while the java launcher starts (not proven)."""
        deadline = time.monotonic() + 0.5
        while not self.alive(name):
            if time.monotonic() > deadline:
                raise StackError(
                    f"{name} exited during start-up; see {self.dir / name}:\n{self._why(name)}"
                )
            time.sleep(0.05)

    def _why(self, name: str) -> str:
        """The ERROR/FATAL lines this process's latest start logged (the cause), else the
        tail of what it wrote; lines of earlier runs are left out."""
        text = ""
        for f in (self.dir / name / "stdout.log", self._log(name)):
            if f.exists():
                with f.open("rb") as fh:
                    fh.seek(self._log_marks.get(f, 0))
                    text += fh.read().decode(errors="replace")
        errors = [ln for ln in text.splitlines() if " ERROR " in ln or " FATAL " in ln]
        if errors:
            return "\n".join(errors[:10])[:3000]
        return text[-1500:] if text.strip() else "(it logged nothing)"

    def _config_file(self, name: str) -> Path:
        return self.dir / name / ("zoo.cfg" if name == "zookeeper" else "server.properties")

    def _node_ports(self, name: str) -> list[int]:
        p = self.state.ports
        if name == "zookeeper":
            return [p.zookeeper]
        i = int(name.rsplit("-", 1)[1]) - 1
        return [p.brokers[i], p.controllers[i], p.sasl_brokers[i]]

    def _wait_ports_free(self, name: str, timeout: float = 30.0) -> None:
        """Wait until every port of ``name`` can be bound: a server started while one is
        taken dies with "Unable to start acceptor" and says nothing of who holds it."""
        deadline = time.monotonic() + timeout
        while True:
            taken = [port for port in self._node_ports(name) if not _bindable(port)]
            if not taken:
                return
            if time.monotonic() > deadline:
                raise StackError(
                    f"cannot start {name}: loopback port(s) {taken} still in use after "
                    f"{timeout:.0f} s (another process holds them; see `ss -ltnp`)"
                )
            time.sleep(0.5)

    def _spawn(self, name: str, argv: list[str], heap: str = DEFAULT_HEAP) -> None:
        home = self.dir / name
        home.mkdir(parents=True, exist_ok=True)
        for f in (home / "stdout.log", self._log(name)):
            self._log_marks[f] = f.stat().st_size if f.exists() else 0
        self.state.pids[name] = spawn_jvm(home, self._log(name), argv, heap)

    def _start_zookeeper(self, classpath: str) -> None:
        home = self.dir / "zookeeper"
        (home / "data").mkdir(parents=True, exist_ok=True)
        cfg = home / "zoo.cfg"
        cfg.write_text(zookeeper_config(home, self.state.ports.zookeeper))
        self._spawn(
            "zookeeper",
            ["-cp", classpath, "org.apache.zookeeper.server.ZooKeeperServerMain", str(cfg)],
            zk_heap(),
        )

    def _kafka_config(self, node: int) -> Path:
        home = self.dir / f"kafka-{node}"
        props = kafka_properties(node, self.state, home)
        cfg = home / "server.properties"
        cfg.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        cfg.chmod(0o600)  # holds the SASL listener's password
        return cfg

    def _start_kafka(self, node: int, classpath: str) -> None:
        home = self.dir / f"kafka-{node}"
        home.mkdir(parents=True, exist_ok=True)
        cfg = self._kafka_config(node)
        log4j = home / "log4j.properties"
        log4j.write_text(LOG4J.replace("${logfile}", str(self._log(f"kafka-{node}"))))
        if not (home / "data" / "meta.properties").exists():
            out = subprocess.run(
                [
                    _java(),
                    "-cp",
                    classpath,
                    f"-Dlog4j.configuration=file:{log4j}",
                    "kafka.tools.StorageTool",
                    "format",
                    f"--cluster-id={self.state.cluster_id}",
                    "-c",
                    str(cfg),
                    "--ignore-formatted",
                ],
                capture_output=True,
                text=True,
            )
            if out.returncode != 0:
                raise StackError(f"formatting kafka-{node} failed: {out.stdout}{out.stderr}")
        self._spawn(f"kafka-{node}", ["-cp", classpath, "kafka.Kafka", str(cfg)])

    def _signal(self, name: str, sig: int) -> None:
        pid = self.state.pids.get(name)
        if pid and self.alive(name):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def _reap(self, name: str) -> None:
        pid = self.state.pids.get(name)
        if pid:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass

    def discard(self) -> None:
        """Stop everything and remove the stack's directory (for private stacks)."""
        self.down()
        shutil.rmtree(self.dir, ignore_errors=True)

    def processes(self) -> Iterator[str]:
        yield "zookeeper"
        for node in KAFKA_NODES:
            yield f"kafka-{node}"


def private_stack(prefix: str = "kzb-stack-", kafka_version: str | None = None) -> Devstack:
    """A throw-away stack on free ports in a fresh temporary directory (tests, benchmarks);
    ``discard()`` stops it and removes the directory."""
    stack = Devstack(Path(tempfile.mkdtemp(prefix=prefix)), Ports.free(), kafka_version)
    try:
        stack.up()
    except BaseException:
        stack.discard()  # a failed start leaves no JVM of its own running
        raise
    return stack


__all__ = [
    "KAFKA_NODES",
    "KAFKA_VERSIONS",
    "NEXT_GEN_GROUPS",
    "SASL_MECHANISM",
    "SASL_USERNAME",
    "Devstack",
    "Ports",
    "StackError",
    "StackState",
    "_java",
    "kafka_line",
    "private_stack",
    "zk_four_letter",
]
