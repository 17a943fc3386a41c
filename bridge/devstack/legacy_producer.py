"""The real Java producer of Kafka 0.10.2.2, driven through a harness.

``LegacyProducer.java`` (in ``harness/``) is compiled once against the cached legacy
classpath (kafka-clients 0.10.2.2 is on it); ``produce_legacy`` runs it to completion and
parses its stdout protocol (``SENT <i> <topic> <partition> <offset> <timestamp>`` ...).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from bridge.devstack.legacy import HARNESS, harness_classpath
from bridge.devstack.stack import _java

PRODUCER_HARNESS = HARNESS.with_name("LegacyProducer.java")


@dataclass(frozen=True)
class Produced:
    """Message ``index`` as the broker (or whatever answered the producer) acknowledged it."""

    index: int
    topic: str
    partition: int
    offset: int
    timestamp: int


@dataclass
class ProduceRun:
    returncode: int
    acked: list[Produced] = field(default_factory=list)
    #: ``(index, exception text)``; index -1: the producer itself failed
    errors: list[tuple[int, str]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def message(prefix: str, index: int) -> tuple[bytes, bytes]:
    """The key and value the harness sends as message ``index``."""
    return f"{prefix}-k{index}".encode(), f"{prefix}-v{index}".encode()


def produce_legacy(
    bootstrap: str,
    topic: str,
    count: int,
    *,
    prefix: str = "m",
    partition: int | None = None,
    compression: str = "none",
    acks: str = "all",
    timestamp_base: int | None = None,
    props: dict[str, str] | None = None,
    log: Path | None = None,
    timeout: float = 180,
    value_bytes: int = 0,
    quiet: bool = False,
) -> ProduceRun:
    """Send ``count`` messages (``message(prefix, i)``) with the 0.10.2.2 producer.

    ``value_bytes`` pads each value to that size; ``quiet`` (benchmarks) prints one STATS line
    instead of a SENT line per acknowledgement, so ``acked`` stays empty."""
    argv = [_java(), "-Xmx256m", "-cp", harness_classpath(PRODUCER_HARNESS), "LegacyProducer"]
    argv += ["--bootstrap-servers", bootstrap, "--topic", topic, "--count", str(count)]
    argv += ["--prefix", prefix, "--compression", compression, "--acks", acks]
    if partition is not None:
        argv += ["--partition", str(partition)]
    if timestamp_base is not None:
        argv += ["--timestamp-base", str(timestamp_base)]
    if value_bytes:
        argv += ["--value-bytes", str(value_bytes)]
    if quiet:
        argv += ["--quiet", "true"]
    for key, value in (props or {}).items():
        argv += ["--prop", f"{key}={value}"]
    with (log or Path("/dev/null")).open("ab") as err:
        res = subprocess.run(argv, stdout=subprocess.PIPE, stderr=err, text=True, timeout=timeout)
    run = ProduceRun(res.returncode, lines=res.stdout.splitlines())
    for line in run.lines:
        if line.startswith("SENT "):
            _, i, t, p, off, ts = line.split(" ")
            run.acked.append(Produced(int(i), t, int(p), int(off), int(ts)))
        elif line.startswith("ERROR "):
            _, i, text = (line.split(" ", 2) + [""])[:3]
            run.errors.append((int(i), text))
    return run
