"""The real old Scala high-level consumers (Kafka 0.8.2.2 to 0.11.0.3), driven through a Java
harness.

``LegacyConsumer.java`` (next to this module, in ``harness/``) is compiled once per release
against its cached classpath (``SCALA_CONSUMERS``; the 0.10-only timestamp is looked up
reflectively, so one source builds against each); ``LegacyConsumerProcess`` runs it and
parses its stdout protocol (``MSG <thread> <topic> <partition> <offset> <wall_ms> <value>``
...) on a reader thread.
"""

from __future__ import annotations

import hashlib
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bridge.devstack.stack import StackError, _java
from bridge.jars import cache_root, ensure_classpath

HARNESS = Path(__file__).with_name("harness") / "LegacyConsumer.java"

#: every old Scala high-level consumer release tested, oldest first -> its classpath
#: (``bridge/jars/poms/<name>``): the last of each line from Maven Central
SCALA_CONSUMERS = {
    "0.8.2.2": "legacy082",
    "0.9.0.0": "legacy0900",
    "0.9.0.1": "legacy0901",
    "0.10.2.2": "legacy",
    "0.11.0.3": "legacy0113",
}

#: old-consumer settings a migration needs (docs/coexistence.md): rebalance retries that
#: outlast a new member's rejoin, and a ZooKeeper session no longer than the proxies'
MIGRATION_SETTINGS = [
    "--auto-offset-reset",
    "smallest",
    "--prop",
    "rebalance.backoff.ms=1000",
    "--prop",
    "rebalance.max.retries=30",
    "--prop",
    "zookeeper.session.timeout.ms=6000",
]


def harness_classpath(source: Path = HARNESS, jars_name: str = "legacy") -> str:
    """Compile a harness (once per source version) against the ``jars_name`` classpath
    (by default the old consumer's) and return its full classpath."""
    jars = ensure_classpath(jars_name)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    tag = "" if jars_name == "legacy" else f"{jars_name}-"
    out = cache_root() / f"harness-{tag}{digest}"
    if not (out / f"{source.stem}.class").exists():
        javac = shutil.which("javac") or str(Path(_java()).with_name("javac"))
        tmp = out.with_name(out.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        res = subprocess.run(
            [javac, "-cp", jars, "-d", str(tmp), str(source)], capture_output=True, text=True
        )
        if res.returncode != 0:
            raise StackError(f"compiling {source.name} failed:\n{res.stderr}")
        shutil.rmtree(out, ignore_errors=True)
        tmp.rename(out)
    return f"{out}:{jars}"


@dataclass(frozen=True)
class Consumed:
    thread: str
    topic: str
    partition: int
    offset: int
    wall_ms: int
    value: str
    #: with ``--details true`` (``MSGK`` lines): the key, and the message's own timestamp and
    #: its type (``CreateTime``, ``LogAppendTime``; ``-1``/``NONE`` where the client has none)
    key: bytes | None = None
    timestamp: int | None = None
    timestamp_type: str | None = None


def _parse_msgk(line: str) -> Consumed:
    """``MSGK <thread> <topic> <partition> <offset> <wall_ms> <ts> <ts_type> <key> <value>``."""
    _, thread, topic, part, off, wall, ts, ts_type, key, value = (line.split(" ", 9) + [""])[:10]
    raw_key = None if key == "\\N" else b"" if key == "-" else bytes.fromhex(key)
    return Consumed(thread, topic, int(part), int(off), int(wall), value, raw_key, int(ts), ts_type)


class ConsumerProcess:
    """A consumer child process speaking the harness's stdout protocol; records messages."""

    def __init__(self, argv: list[str], log: Path | None = None) -> None:
        self.messages: list[Consumed] = []
        self.lines: list[str] = []
        self.consumer_id: str | None = None
        self.ready = threading.Event()
        self.exited = threading.Event()
        self._stderr = (log or Path("/dev/null")).open("ab")
        #: the child's stdout protocol lines too, beside its log (what a failed test's
        #: reader needs: which offsets each member read, when, and its own status lines)
        self._stdout_copy = log.with_name(log.name + ".stdout").open("a") if log else None
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=self._stderr, text=True, bufsize=1
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            self.lines.append(line)
            if self._stdout_copy is not None:
                self._stdout_copy.write(line + "\n")
            if line.startswith("MSG "):
                _, thread, topic, part, off, wall, value = (line.split(" ", 6) + [""])[:7]
                self.messages.append(Consumed(thread, topic, int(part), int(off), int(wall), value))
            elif line.startswith("MSGK "):
                self.messages.append(_parse_msgk(line))
            elif line.startswith("CONSUMER "):
                self.consumer_id = line.split(" ", 1)[1]
            elif line == "READY":
                self.ready.set()
            elif line.startswith("EXIT"):
                self.exited.set()
        if self._stdout_copy is not None:
            self._stdout_copy.close()
        self.exited.set()

    def wait_ready(self, timeout: float = 60) -> None:
        if not self.ready.wait(timeout):
            raise StackError(f"legacy consumer not ready after {timeout}s: {self.lines[-5:]}")

    def wait_consumed(self, n: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while len(self.messages) < n:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                got = len(self.messages)
                raise StackError(f"legacy consumer got {got}/{n} messages; last: {self.lines[-5:]}")
            time.sleep(0.1)

    def wait_ended(self, timeout: float) -> bool:
        """Wait for the process itself to end. ``exited`` is set at the last EXIT line, which
        the harness prints just before ``System.exit``: a SIGTERM sent between the two would
        replace the harness's own exit code with 143."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM: the harness commits, shuts the connector down and prints EXIT."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5)
        self._stderr.close()
        return self.proc.returncode

    @property
    def name(self) -> str:
        return f"pid{self.proc.pid}"

    def kill(self) -> None:
        """kill -9: no commit, no clean-up; its ephemeral nodes expire with the session."""
        self.proc.kill()
        self.proc.wait()
        self._reader.join(5)
        self._stderr.close()


class LegacyConsumerProcess(ConsumerProcess):
    """One JVM running the old Scala consumer with the given flags: 0.10.2.2 (``jars``
    "legacy"), or another release's classpath from ``SCALA_CONSUMERS``. ``more``: further
    connectors in the same JVM, (group, topics, flags) each, one JVM start for several groups
    (their messages apart: ``of_group``)."""

    def __init__(
        self,
        zookeeper: str,
        group: str,
        topics: list[str],
        *,
        streams: int = 1,
        extra: list[str] | None = None,
        log: Path | None = None,
        jars: str = "legacy",
        more: tuple[tuple[str, list[str], list[str]], ...] = (),
    ) -> None:
        argv = [_java(), "-Xmx256m", "-cp", harness_classpath(jars_name=jars), "LegacyConsumer"]
        argv += _connector(zookeeper, group, topics, streams, extra or [])
        for other, other_topics, flags in more:
            argv += ["--and", *_connector(zookeeper, other, other_topics, 1, flags)]
        super().__init__(argv, log)

    def of_group(self, group: str) -> list[Consumed]:
        """The messages the connector of ``group`` took (its thread ids start ``<group>_``)."""
        return [m for m in self.messages if m.thread.startswith(f"{group}_")]

    def wait_consumed(self, n: int, timeout: float = 60) -> None:
        """As ``ConsumerProcess.wait_consumed``; on a timeout the JVM's threads (``jstack``)
        are appended to its log first, so a stalled fetcher or stream can be read there."""
        try:
            super().wait_consumed(n, timeout)
        except StackError:
            self.thread_dump()
            raise

    def thread_dump(self) -> None:
        if self.proc.poll() is not None or self._stderr.closed:
            return
        jstack = shutil.which("jstack") or str(Path(_java()).with_name("jstack"))
        try:
            dump = subprocess.run(
                [jstack, str(self.proc.pid)], capture_output=True, timeout=30
            ).stdout
        except (OSError, subprocess.TimeoutExpired):
            return
        self._stderr.write(b"\n--- jstack after a wait_consumed timeout ---\n" + dump)
        self._stderr.flush()


def _connector(
    zookeeper: str, group: str, topics: list[str], streams: int, extra: list[str]
) -> list[str]:
    argv = ["--zookeeper", zookeeper, "--group", group, "--streams", str(streams)]
    for t in topics:
        argv += ["--topic", t]
    return argv + extra


class NewConsumerProcess(ConsumerProcess):
    """A kafka-python ``KafkaConsumer`` (range assignor) in its own process."""

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topics: list[str],
        *,
        client_id: str,
        extra: list[str] | None = None,
        log: Path | None = None,
    ) -> None:
        argv = [
            sys.executable,
            "-m",
            "bridge.devstack.new_consumer",
            "--bootstrap-server",
            bootstrap,
            "--group",
            group,
            "--client-id",
            client_id,
        ]
        for t in topics:
            argv += ["--topic", t]
        super().__init__(argv + (extra or []), log)
