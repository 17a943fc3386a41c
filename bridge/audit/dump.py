"""A file dump of ``__consumer_offsets`` and log-end offsets (read through ``bridge.kafka``).

The audit reads the topic through Spark's Kafka source; this module is the other way in: a
dump taken once (``zk-bridge audit dump``) and audited anywhere, offline, or a synthetic dump
for benchmarks. The dump is a directory:

* ``records.parquet`` (Parquet, one file) or ``records.jsonl`` - one row per record of the
  topic: ``partition`` int32, ``offset`` int64, ``timestamp`` int64 (ms since the epoch),
  ``key`` and ``value`` (binary in Parquet; standard base64 text in JSON lines; ``value``
  null for a tombstone);
* ``log_end_offsets.jsonl`` - ``{"topic", "partition", "log_end_offset"}`` per partition of
  every topic of the cluster when the dump was taken (the audit computes lag from it);
* ``manifest.json`` - format name and version, where and when it was taken, counts.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zkpaths import TopicPartition

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
DUMP_FORMAT = "kafka-zk-bridge/offsets-dump"
DUMP_VERSION = 1
RECORDS_PARQUET = "records.parquet"
RECORDS_JSONL = "records.jsonl"
LOG_END_OFFSETS = "log_end_offsets.jsonl"
MANIFEST = "manifest.json"


class DumpError(RuntimeError):
    """A dump cannot be written or read; the message names the file and what is wrong."""


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One record of ``__consumer_offsets`` as stored: the audit decodes it later."""

    partition: int
    offset: int
    timestamp: int
    key: bytes
    value: bytes | None


# -- Kafka -------------------------------------------------------------------------------------


def read_offsets_topic(
    bootstrap_servers: str, *, timeout_s: float = 60.0, **client_options: Any
) -> Iterator[RawRecord]:
    """Every record of ``__consumer_offsets`` up to the end offsets seen at the start,
    committed data only, read by :func:`bridge.kafka.offsets_log.read_to_end`. Raises
    :class:`DumpError` when the topic does not exist or the end is not reached within
    ``timeout_s`` of no progress.
    """
    from bridge.kafka.offsets_log import OffsetsLogError, read_to_end

    try:
        for row in read_to_end(bootstrap_servers, timeout_s=timeout_s, **client_options):
            yield RawRecord(*row)
    except OffsetsLogError as exc:
        raise DumpError(str(exc)) from None


def log_end_offsets(admin, topics: Iterable[str] | None = None) -> dict[TopicPartition, int]:
    """Log-end offsets of every partition of ``topics`` (all non-internal topics if None).

    Topics that no longer exist are left out: the audit reports their offsets as pointing at
    a missing partition rather than guessing an end.
    """
    from bridge.kafka.offsets import topic_log_ends

    return topic_log_ends(admin, topics)


# -- files -------------------------------------------------------------------------------------


def _b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode("ascii")


def write_dump(
    directory: Path,
    records: Iterable[RawRecord],
    end_offsets: dict[TopicPartition, int],
    *,
    fmt: str = "parquet",
    source: str = "",
    batch_rows: int = 100_000,
) -> dict[str, Any]:
    """Write a dump directory; returns its manifest. Parquet needs pyarrow (audit extra)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    count = tombstones = 0
    if fmt == "jsonl":
        with (directory / RECORDS_JSONL).open("w") as out:
            for r in records:
                count += 1
                tombstones += r.value is None
                row = {"partition": r.partition, "offset": r.offset, "timestamp": r.timestamp}
                row |= {"key": _b64(r.key), "value": _b64(r.value)}
                out.write(json.dumps(row, separators=(",", ":")) + "\n")
    elif fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        writer = pq.ParquetWriter(directory / RECORDS_PARQUET, RECORD_SCHEMA)
        try:
            cols: dict[str, list] = {n: [] for n in RECORD_SCHEMA.names}
            for r in records:
                count += 1
                tombstones += r.value is None
                cols["partition"].append(r.partition)
                cols["offset"].append(r.offset)
                cols["timestamp"].append(r.timestamp)
                cols["key"].append(r.key)
                cols["value"].append(r.value)
                if len(cols["key"]) >= batch_rows:
                    writer.write_table(pa.table(cols, schema=RECORD_SCHEMA))
                    cols = {n: [] for n in RECORD_SCHEMA.names}
            if cols["key"] or count == 0:
                writer.write_table(pa.table(cols, schema=RECORD_SCHEMA))
        finally:
            writer.close()
    else:
        raise DumpError(f"unknown dump format {fmt!r} (parquet or jsonl)")
    write_log_end_offsets(directory, end_offsets)
    manifest = {
        "format": DUMP_FORMAT,
        "version": DUMP_VERSION,
        "records_file": RECORDS_JSONL if fmt == "jsonl" else RECORDS_PARQUET,
        "source": source,
        "created_ms": int(time.time() * 1000),
        "records": count,
        "tombstones": tombstones,
        "log_end_offsets": len(end_offsets),
    }
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def write_log_end_offsets(directory: Path, end_offsets: dict[TopicPartition, int]) -> None:
    with (Path(directory) / LOG_END_OFFSETS).open("w") as out:
        for (topic, partition), leo in sorted(end_offsets.items()):
            row = {"topic": topic, "partition": partition, "log_end_offset": leo}
            out.write(json.dumps(row) + "\n")


def read_manifest(directory: Path) -> dict[str, Any]:
    """The dump's manifest, checked; DumpError says what is missing or wrong."""
    directory = Path(directory)
    path = directory / MANIFEST
    if not directory.is_dir():
        raise DumpError(f"dump {directory} is not a directory")
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise DumpError(f"{path} is missing: {directory} is not an offsets dump") from None
    except ValueError as exc:
        raise DumpError(f"{path} is not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != DUMP_FORMAT:
        raise DumpError(f"{path} is not an offsets dump manifest (format {DUMP_FORMAT})")
    if manifest.get("version") != DUMP_VERSION:
        raise DumpError(f"{path}: dump version {manifest.get('version')} is not supported")
    if not (directory / manifest.get("records_file", "")).exists():
        raise DumpError(f"{directory}: records file {manifest.get('records_file')} is missing")
    return manifest


def read_log_end_offsets(directory: Path) -> dict[TopicPartition, int]:
    path = Path(directory) / LOG_END_OFFSETS
    out: dict[TopicPartition, int] = {}
    if not path.exists():
        return out
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            tp = TopicPartition(str(row["topic"]), int(row["partition"]))
            out[tp] = int(row["log_end_offset"])
        except (ValueError, KeyError, TypeError) as exc:
            raise DumpError(f"{path}:{n}: bad log-end offset line ({exc})") from None
    return out


def iter_dump(directory: Path, batch_rows: int = 65_536) -> Iterator[list[RawRecord]]:
    """The dump's records in batches, without Spark (the benchmark baseline, tests)."""
    manifest = read_manifest(directory)
    path = Path(directory) / manifest["records_file"]
    if path.name == RECORDS_JSONL:
        batch: list[RawRecord] = []
        with path.open() as f:
            for line in f:
                row = json.loads(line)
                value = row["value"]
                batch.append(
                    RawRecord(
                        row["partition"],
                        row["offset"],
                        row["timestamp"],
                        base64.b64decode(row["key"]),
                        None if value is None else base64.b64decode(value),
                    )
                )
                if len(batch) >= batch_rows:
                    yield batch
                    batch = []
        if batch:
            yield batch
        return
    import pyarrow.parquet as pq

    for rb in pq.ParquetFile(path).iter_batches(batch_size=batch_rows):
        cols = rb.to_pydict()
        yield [
            RawRecord(*row)
            for row in zip(
                cols["partition"],
                cols["offset"],
                cols["timestamp"],
                cols["key"],
                cols["value"],
                strict=True,
            )
        ]


def _record_schema():
    try:
        import pyarrow as pa
    except ImportError:  # the jsonl format works without the audit extra
        return None
    return pa.schema(
        [
            ("partition", pa.int32(), False),
            ("offset", pa.int64(), False),
            ("timestamp", pa.int64(), False),
            ("key", pa.binary(), False),
            ("value", pa.binary(), True),
        ]
    )


RECORD_SCHEMA = _record_schema()
