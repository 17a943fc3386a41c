"""Kafka's own Java consumer 4.x in a next-generation group (KIP-848), as a child process.

``NextGenConsumer.java`` (in ``harness/``) is compiled once against the cached ``kafka4``
classpath (Maven Central, ``bridge/jars/poms/kafka4``) and speaks the legacy harness's
stdout protocol, plus one ``ASSIGNMENT <wall_ms> <member> <t:p,...|->`` line each time the
partitions it owns change, so tests compare its own view with the bridge's mirror.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bridge.devstack.legacy import ConsumerProcess, harness_classpath
from bridge.devstack.stack import _java

HARNESS = Path(__file__).with_name("harness") / "NextGenConsumer.java"


@dataclass(frozen=True)
class Owned:
    """One ``ASSIGNMENT`` line: what the consumer owned from ``wall_ms`` on."""

    wall_ms: int
    member_id: str
    partitions: frozenset[tuple[str, int]]


def parse_assignment(line: str) -> Owned:
    """``ASSIGNMENT <wall_ms> <member> <t:p,...|->``; topics may hold ``:``, partitions not."""
    _, wall, member, parts = line.split(" ", 3)
    owned = set()
    if parts != "-":
        for tp in parts.split(","):
            topic, _, p = tp.rpartition(":")
            owned.add((topic, int(p)))
    return Owned(int(wall), member, frozenset(owned))


class NextGenConsumerProcess(ConsumerProcess):
    """One JVM running ``KafkaConsumer`` with ``group.protocol=consumer`` (by default);
    ``revoke_delay_ms`` makes its revocation callback that slow (the broker waits for it)."""

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topics: list[str],
        *,
        client_id: str = "next-gen-consumer",
        props: dict[str, str] | None = None,
        protocol: str = "consumer",
        revoke_delay_ms: int = 0,
        log: Path | None = None,
    ) -> None:
        argv = [
            _java(),
            "-Xmx128m",
            "-cp",
            harness_classpath(HARNESS, "kafka4"),
            "NextGenConsumer",
            "--bootstrap-server",
            bootstrap,
            "--group",
            group,
            "--client-id",
            client_id,
            "--protocol",
            protocol,
            "--revoke-delay-ms",
            str(revoke_delay_ms),
        ]
        for t in topics:
            argv += ["--topic", t]
        for k, v in (props or {}).items():
            argv += ["--prop", f"{k}={v}"]
        super().__init__(argv, log)

    def assignments(self) -> list[Owned]:
        """Every ownership change the consumer printed, oldest first."""
        return [parse_assignment(x) for x in list(self.lines) if x.startswith("ASSIGNMENT ")]

    def owned(self) -> Owned | None:
        """What it owns now, by its own account (None before its first line)."""
        seen = self.assignments()
        return seen[-1] if seen else None
