"""storm-kafka 1.2.4's KafkaSpout, hosted by ``harness/StormSpout.java`` in one JVM.

The harness runs the real spout class (open, nextTuple, ack, deactivate, close) with a real
``TopologyContext``, as a one-task Storm executor would, without a Storm cluster: storm-core
1.2.4's ``LocalCluster`` does not start on JDK 17 (its shaded ZooKeeper 3.4.14 client cannot
connect; docs/compatibility.md).
:class:`StormSpoutProcess` sends it commands on stdin and parses its stdout (``MSG``,
``PARTITION``, ``TOOK`` ...) on a reader thread.
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

from bridge.devstack.legacy import HARNESS, Consumed, harness_classpath
from bridge.devstack.stack import StackError, _java

SOURCE = HARNESS.with_name("StormSpout.java")


class StormSpoutProcess:
    """One JVM hosting KafkaSpout instances one after the other."""

    def __init__(
        self,
        zk_connect: str,
        chroot: str,
        zk_root: str,
        spout_id: str,
        topic: str,
        log: Path | None = None,
    ) -> None:
        """``zk_root`` is the spout's ``SpoutConfig.zkRoot``: an absolute ZooKeeper path, since
        storm-kafka's offset store takes no chroot; ``chroot`` is where the bridge writes
        ``/brokers``, which ``ZkHosts`` reads."""
        self.messages: list[Consumed] = []
        self.lines: list[str] = []
        #: partition -> "host:port" the spout fetched from, as the last TAKE left it
        self.partitions: dict[int, str] = {}
        self._cond = threading.Condition()
        self._stderr = (log or Path("/dev/null")).open("ab")
        argv = [
            _java(),
            "-cp",
            harness_classpath(SOURCE, "storm"),
            "StormSpout",
            *("--zk", zk_connect, "--brokers-zk", zk_connect + chroot),
            *("--zk-root", zk_root, "--spout-id", spout_id, "--topic", topic),
        ]
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._wait_line("READY", 60)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            with self._cond:
                self.lines.append(line)
                if line.startswith("MSG "):
                    _, thread, topic, part, off, wall, value = (line.split(" ", 6) + [""])[:7]
                    self.messages.append(
                        Consumed(thread, topic, int(part), int(off), int(wall), value)
                    )
                elif line.startswith("PARTITION "):
                    _, part, host = line.split(" ")
                    self.partitions[int(part)] = host
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def _wait_line(self, prefix: str, timeout: float, after: int = 0) -> str:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = next((ln for ln in self.lines[after:] if ln.startswith(prefix)), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise StackError(f"storm spout: no {prefix!r} in {timeout}s: {self.lines[-5:]}")
                self._cond.wait(min(left, 0.5))

    def _command(self, text: str, answer: str, timeout: float) -> str:
        with self._cond:
            mark = len(self.lines)
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        return self._wait_line(answer, timeout, mark)

    def start(self, storm_id: str, timeout: float = 60) -> None:
        """A new spout instance (a topology (re)start): it reads its partition nodes."""
        self._command(f"START {storm_id}", "STARTED", timeout)

    def take(self, n: int, timeout: float = 90) -> list[Consumed]:
        """Emit and ack ``n`` more tuples; the messages they carried."""
        before = len(self.messages)
        self._command(f"TAKE {n}", "TOOK", timeout)
        return self.messages[before:]

    def stop_spout(self, timeout: float = 30) -> None:
        """deactivate() (the spout commits its offsets) and close()."""
        self._command("STOP", "STOPPED", timeout)

    def close(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write("QUIT\n")
                self.proc.stdin.close()
                self.proc.wait(timeout)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5)
        self._stderr.close()
        return self.proc.returncode
