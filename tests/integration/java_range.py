"""Kafka's Java ``RangeAssignor`` (kafka-clients 3.9) as an independent reference for tests.

One JVM (``bridge/devstack/harness/RangeReference.java`` on the devstack's "kafka"
classpath) answers one JSON case per line, so a property test can ask it for hundreds of
assignments at the cost of one JVM start.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence

from bridge.devstack.legacy import HARNESS, harness_classpath
from bridge.devstack.stack import _java
from zkpaths import TopicPartition

SOURCE = HARNESS.with_name("RangeReference.java")

#: (member id, group.instance.id or None, subscribed topics), in the broker's order
Member = tuple[str, str | None, Sequence[str]]


class JavaRange:
    """A running ``RangeReference`` JVM; :meth:`assign` asks it for one assignment."""

    def __init__(self) -> None:
        argv = [
            _java(),
            "-Xmx128m",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            harness_classpath(SOURCE, "kafka"),
            "RangeReference",
        ]
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )

    def assign(
        self, members: Sequence[Member], partitions: Mapping[str, int]
    ) -> dict[TopicPartition, str]:
        """Kafka's range assignment: partition -> member id."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        case = {
            "members": [{"id": m, "instance": i, "topics": list(ts)} for m, i, ts in members],
            "partitions": dict(partitions),
        }
        self.proc.stdin.write(json.dumps(case) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"RangeReference exited ({self.proc.poll()}) on {case}")
        answer = json.loads(line)
        if "error" in answer and not isinstance(answer["error"], list):
            raise RuntimeError(f"RangeReference failed on {case}: {answer['error']}")
        return {
            TopicPartition(topic, partition): member
            for member, owned in answer.items()
            for topic, partition in owned
        }

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
