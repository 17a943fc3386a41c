"""Kafka's own code as an independent reference for property tests.

Each reference is one long-lived JVM running a harness from ``bridge/devstack/harness/``
that answers one case per line, so a property test can ask it for hundreds of assignments
at the cost of one JVM start: :class:`JavaRange` is kafka-clients 3.9's ``RangeAssignor``
(the "kafka" classpath), :class:`LegacyAssignors` the old Scala consumer's range and
roundrobin assignors (kafka_2.11-0.10.2.2, the "legacy" classpath, over an embedded
ZooKeeper), :class:`KafkaMessages` Kafka's generated message classes.
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Mapping, Sequence

from bridge.devstack.legacy import HARNESS, harness_classpath
from bridge.devstack.stack import _java
from zkpaths import TopicPartition

#: (member id, group.instance.id or None, subscribed topics), in the broker's order
Member = tuple[str, str | None, Sequence[str]]


class _LineJvm:
    """A harness JVM answering one stdin line with one stdout line."""

    def __init__(self, name: str, jars: str, *args: str) -> None:
        argv = [
            _java(),
            "-Xmx128m",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            harness_classpath(HARNESS.with_name(f"{name}.java"), jars),
            name,
            *args,
        ]
        self.name = name
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )

    def ask(self, line: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise RuntimeError(f"{self.name} exited ({self.proc.poll()}) on {line!r}")
        return answer.rstrip("\n")

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class JavaRange(_LineJvm):
    """kafka-clients 3.9's ``RangeAssignor`` (harness ``RangeReference``)."""

    def __init__(self) -> None:
        super().__init__("RangeReference", "kafka")

    def assign(
        self, members: Sequence[Member], partitions: Mapping[str, int]
    ) -> dict[TopicPartition, str]:
        """Kafka's range assignment: partition -> member id."""
        case = {
            "members": [{"id": m, "instance": i, "topics": list(ts)} for m, i, ts in members],
            "partitions": dict(partitions),
        }
        answer = json.loads(self.ask(json.dumps(case)))
        if "error" in answer and not isinstance(answer["error"], list):
            raise RuntimeError(f"RangeReference failed on {case}: {answer['error']}")
        return {
            TopicPartition(topic, partition): member
            for member, owned in answer.items()
            for topic, partition in owned
        }


class LegacyAssignors(_LineJvm):
    """kafka_2.11-0.10.2.2's ``RangeAssignor`` / ``RoundRobinAssignor`` (harness
    ``LegacyAssignors``), each consumer assigning in its own ``AssignmentContext``."""

    def __init__(self) -> None:
        super().__init__("LegacyAssignors", "legacy")

    def assign(
        self, assignor: str, registrations: Mapping[str, bytes], partitions: Mapping[str, int]
    ) -> dict[TopicPartition, str]:
        """Partition -> thread id, from the registrations' JSON (consumer id -> data)."""
        fields = [assignor, ",".join(f"{t}={n}" for t, n in partitions.items())]
        fields += [f"{c}={base64.b64encode(data).decode()}" for c, data in registrations.items()]
        status, *owned = self.ask("\t".join(fields)).split("\t")
        if status != "OK":
            raise RuntimeError(f"LegacyAssignors failed on {fields}: {owned}")
        result = {}
        for item in owned:
            tp, thread = item.split("=", 1)
            topic, partition = tp.rsplit("/", 1)
            result[TopicPartition(topic, int(partition))] = thread
        return result


class KafkaMessages(_LineJvm):
    """Kafka 3.9's generated messages (``__consumer_offsets`` keys and values, consumer
    protocol), written by ``MessageUtil.toVersionPrefixedBytes`` (harness ``GoldenVectors``)."""

    def __init__(self) -> None:
        super().__init__("GoldenVectors", "kafka", "--lines")

    def write(self, message: str, version: int, fields: dict, **tagged: list) -> bytes:
        """Kafka's bytes for ``message`` at ``version`` from its JSON ``fields``; ``tagged``
        and ``member_tagged`` carry unknown tagged fields as ``[tag, hex]`` pairs."""
        request = {"kind": "message", "message": message, "version": version, "fields": fields}
        answer = json.loads(self.ask(json.dumps(request | tagged)))
        if "error" in answer:
            raise RuntimeError(f"Kafka cannot write {request}: {answer['error']}")
        return bytes.fromhex(answer["hex"])


#: one message as an old client's reader returns it: offset, key, value, magic, timestamp,
#: timestamp type ("CreateTime", "LogAppendTime", "NoTimestampType"; "NONE" on 0.8)
OldMessage = tuple[int, bytes | None, bytes | None, int, int, str]


class OldMessageReader(_LineJvm):
    """``kafka.message.ByteBufferMessageSet`` of an old client (harness ``LegacyMessageSets``):
    0.10.2.2 (``jars`` "legacy") or 0.8.2.2 ("legacy082"), shallow CRCs then the deep
    iterator with ``ensureValid``, as the old Scala consumer reads a fetch response."""

    def __init__(self, jars: str) -> None:
        super().__init__("LegacyMessageSets", jars)

    def read(self, message_set: bytes) -> tuple[int, int, list[OldMessage]]:
        """(valid bytes, shallow entries, messages); RuntimeError if the reader throws."""
        status, *fields = self.ask(message_set.hex() or ".").split("\t")
        if status != "OK":
            raise RuntimeError(f"{self.name} on {self.proc.args[3]}: {fields}")
        out = []
        for item in fields[2:]:
            offset, key, value, magic, ts, ts_type = item.split(",")
            out.append((int(offset), _unhex(key), _unhex(value), int(magic), int(ts), ts_type))
        return int(fields[0]), int(fields[1]), out


def _unhex(field: str) -> bytes | None:
    return None if field == "-" else bytes.fromhex(field)


class KafkaDownConvert(_LineJvm):
    """Kafka 3.9's ``MemoryRecords.downConvert`` (harness ``KafkaDownConvert``, "kafka"
    classpath): what a 3.9 broker sends a Fetch v0-v3 client for the same batches."""

    def __init__(self) -> None:
        super().__init__("KafkaDownConvert", "kafka")

    def convert(self, records: bytes, magic: int, first_offset: int) -> bytes:
        status, _, rest = self.ask(f"{magic} {first_offset} {records.hex()}").partition(" ")
        if status != "OK":
            raise RuntimeError(f"Kafka's downConvert failed: {rest}")
        return bytes.fromhex(rest)


class KafkaMessages4(_LineJvm):
    """Kafka 4's generated request/response classes (harness ``KafkaMessages4``, "kafka4"
    classpath): the bytes Kafka writes for a message's JSON form, and the JSON form of
    bytes Kafka reads."""

    def __init__(self) -> None:
        super().__init__("KafkaMessages4", "kafka4")

    def write(self, message: str, version: int, fields: dict) -> bytes:
        case = {"message": message, "version": version, "fields": fields}
        answer = json.loads(self.ask(json.dumps(case)))
        if "error" in answer:
            raise RuntimeError(f"Kafka cannot write {case}: {answer['error']}")
        return bytes.fromhex(answer["hex"])

    def read(self, message: str, version: int, data: bytes) -> dict:
        """Kafka's JSON form of ``data``; RuntimeError when Kafka cannot read it whole."""
        case = {"message": message, "version": version, "hex": data.hex()}
        answer = json.loads(self.ask(json.dumps(case)))
        if "error" in answer:
            raise RuntimeError(f"Kafka cannot read {message} v{version}: {answer['error']}")
        return answer["fields"]
