"""The local stack's processes: finding Java, ports, ``/proc``, and the JVMs' start.

Every server is a plain ``java -cp`` child in its own session; a process is known as the
stack's by the config file on its command line (see ``Devstack.alive``).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

from bridge.devstack.servers import LOG4J, StackError

#: ZooKeeper's heap (``-Xmx``) comes from this variable: a large fleet's node count outgrows
#: the default (bench.fleet's 10,000 groups x 100 partitions needs e.g. ``4g``)
ZK_HEAP_ENV = "KZB_ZK_HEAP"
DEFAULT_HEAP = "512m"
_HEAP = re.compile(r"[1-9][0-9]*[kKmMgG]?")


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    java = shutil.which("java")
    if not java:
        raise StackError("no 'java' found (set JAVA_HOME or install a JDK 17+)")
    return java


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the JVM binds
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _pids() -> list[int]:
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def _runs_with(pid: int, marker: bytes) -> bool:
    """Whether ``pid`` is a live (not zombie) process with ``marker`` in its command line."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return marker in cmdline and stat.rsplit(")", 1)[1].split()[0] != "Z"


def _port_open(port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def zk_four_letter(port: int, word: str = "ruok", timeout: float = 1.0) -> str:
    """Send a ZooKeeper four-letter command; '' when the server does not answer."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(word.encode())
            chunks = []
            while chunk := s.recv(4096):
                chunks.append(chunk)
            return b"".join(chunks).decode(errors="replace")
    except OSError:
        return ""


def zk_heap() -> str:
    """ZooKeeper's maximum heap, from ``KZB_ZK_HEAP`` (a JVM size such as ``4g``); checked
    here, as a JVM refusing it would only say so in its own log."""
    heap = os.environ.get(ZK_HEAP_ENV, "").strip() or DEFAULT_HEAP
    if not _HEAP.fullmatch(heap):
        raise StackError(f"{ZK_HEAP_ENV}={heap!r} is not a heap size such as 512m or 4g")
    return heap


def spawn_jvm(home: Path, log: Path, argv: list[str], heap: str = DEFAULT_HEAP) -> int:
    """Start a JVM in ``home`` (its own session) with at most ``heap`` of heap, logging to
    ``log`` through log4j and its stdout/stderr to ``home/stdout.log``; returns its pid."""
    (home / "log4j.properties").write_text(LOG4J.replace("${logfile}", str(log)))
    jvm = [
        _java(),
        "-Xms128m",
        f"-Xmx{heap}",
        "-XX:+UseG1GC",
        "-Djava.awt.headless=true",
        f"-Dlog4j.configuration=file:{home / 'log4j.properties'}",
        f"-Dkafka.logs.dir={home}",
        "-Dzookeeper.jmx.log4j.disable=true",
    ]
    with (home / "stdout.log").open("ab") as out:
        proc = subprocess.Popen(
            jvm + argv,
            cwd=home,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    return proc.pid


def _ask_group_coordinator(servers: list[str]) -> None:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=servers)
    try:
        admin.list_group_offsets("kzb-devstack-warm-up")
    finally:
        admin.close()


def _init_txn(servers: list[str]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=servers, transactional_id="kzb-devstack-warm-up", max_block_ms=10_000
    )
    try:
        producer.init_transactions()
    finally:
        producer.close(timeout=5)
