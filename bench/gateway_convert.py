"""Throughput of the legacy gateway's converters (issue 13), printed figures only.

    python -m bench.gateway_convert [--mb 32] [--record-size 1024] [--batch-kb 16] [--reps 3]

Builds a log of ``--mb`` MB of record batches (magic 2) of ``--record-size``-byte values in
``--batch-kb`` KB batches (the Java producer's default ``batch.size``), uncompressed and lz4,
then times ``down_convert`` to magic 1 (Fetch v2/v3) and magic 0 (Fetch v0/v1) in chunks of
1 MB (an old consumer's default ``fetch.message.max.bytes``), and ``up_convert`` of the
message sets back. MB/s counts the bytes of the source records (key + value) per CPU second
of the converting thread (process time here, thread CPU time in the JVM), single core.

``--reference`` also times the same down-conversion through kafka-python's own record
classes (``DefaultRecordBatch`` iteration + ``LegacyRecordBatchBuilder``), the path the fast
one replaced; ``--kafka`` times Kafka 3.9's own (``MemoryRecords.downConvert``, what a 3.9
broker runs for a Fetch v0-v3) on the same fetches in a JVM (harness ``DownConvertBench``,
"kafka" classpath; best of ``--reps`` after the JIT warmed up on the first).
``measure`` is reusable by ``bench/gateway``.
"""

from __future__ import annotations

import argparse
import os
import random
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable
from functools import partial

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from bridge.gateway.convert import down_convert, up_convert

FETCH_BYTES = 1024 * 1024


def build_log(total: int, record_size: int, batch_bytes: int, codec: int) -> tuple[bytes, int]:
    """Record batches of ``total`` bytes of values (half random, half repeated text, so lz4
    has something to do): (log bytes, records)."""
    rng = random.Random(1)
    text = b"legacy gateway " * (record_size // 15 + 1)
    per_batch = max(1, batch_bytes // record_size)
    parts, offset, count = [], 0, 0
    while count * record_size < total:
        builder = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 30)
        for i in range(per_batch):
            half = rng.randbytes(record_size // 2)
            value = half + text[: record_size - len(half)]
            builder.append(
                i, timestamp=1_700_000_000_000 + count, key=None, value=value, headers=[]
            )
            count += 1
        data = bytearray(builder.build())
        struct.pack_into(">q", data, 0, offset)
        offset += per_batch
        parts.append(bytes(data))
    return b"".join(parts), count


def chunks(log: bytes, size: int) -> list[tuple[bytes, int]]:
    """The log cut as a broker answers fetches of ``size`` bytes: (bytes, fetch offset),
    each ending in a partial batch the next one starts with."""
    out, pos = [], 0
    while pos < len(log):
        piece = log[pos : pos + size]
        mr = MemoryRecords(piece)
        first = struct.unpack_from(">q", piece, 0)[0]
        valid = mr.valid_bytes() or len(piece)
        out.append((piece, first))
        pos += valid
    return out


def reference_down_convert(records: bytes, magic: int) -> bytes:
    """kafka-python's classes only: one legacy message set per batch, uncompressed."""
    out = bytearray()
    mr = MemoryRecords(records)
    while mr.has_next():
        batch = mr.next_batch()
        builder = LegacyRecordBatchBuilder(magic, 0, 1 << 30)
        for r in batch:
            builder.append(r.offset, timestamp=r.timestamp, key=r.key, value=r.value)
        out += builder.build()
    return bytes(out)


def _rate(fn: Callable[[], object], payload: int, reps: int) -> tuple[float, float]:
    best = float("inf")
    for _ in range(reps):
        t = time.process_time()  # CPU seconds: the machine is shared, wall time is noise
        fn()
        best = min(best, time.process_time() - t)
    return payload / best / 1e6, best


def kafka_rate(fetches: list[tuple[bytes, int]], magic: int, payload: int, reps: int) -> float:
    """MB/s of Kafka 3.9's ``MemoryRecords.downConvert`` over ``fetches`` (one JVM)."""
    from bridge.devstack.legacy import HARNESS, harness_classpath
    from bridge.devstack.stack import _java

    with tempfile.NamedTemporaryFile(suffix=".fetches") as f:
        for piece, offset in fetches:
            f.write(struct.pack(">qi", offset, len(piece)) + piece)
        f.flush()
        cp = harness_classpath(HARNESS.with_name("DownConvertBench.java"), "kafka")
        argv = [_java(), "-Xmx1g", "-cp", cp, "DownConvertBench", f.name, str(magic)]
        res = subprocess.run(
            argv + [str(reps + 2), str(payload)], capture_output=True, text=True, check=True
        )
    return float(res.stdout.split()[1])


def _down(fetches: list[tuple[bytes, int]], magic: int) -> list[bytes]:
    return [
        down_convert(piece, magic=magic, fetch_offset=offset, max_bytes=1 << 30)
        for piece, offset in fetches
    ]


def _up(sets: list[bytes]) -> list:
    return [up_convert(s, magic=1) for s in sets]


def _reference(fetches: list[tuple[bytes, int]], magic: int) -> list[bytes]:
    return [reference_down_convert(piece, magic) for piece, _ in fetches]


def measure(
    mb: int = 32,
    record_size: int = 1024,
    batch_kb: int = 16,
    reps: int = 3,
    reference: bool = False,
    kafka: bool = False,
) -> list[tuple[str, float, float]]:
    """(label, MB/s, records/s) of each conversion."""
    results = []
    for codec, name in ((0, "uncompressed"), (3, "lz4")):
        log, count = build_log(mb * 1_000_000, record_size, batch_kb * 1024, codec)
        fetches = chunks(log, FETCH_BYTES)
        payload = count * record_size
        for magic in (1, 0):
            rate, secs = _rate(partial(_down, fetches, magic), payload, reps)
            results.append((f"down_convert {name} -> magic {magic}", rate, count / secs))
            if magic == 1:
                rate, secs = _rate(partial(_up, _down(fetches, 1)), payload, reps)
                results.append((f"up_convert {name} magic 1 -> v2", rate, count / secs))
            if reference and codec == 0:
                rate, secs = _rate(partial(_reference, fetches, magic), payload, reps)
                results.append((f"  kafka-python classes -> magic {magic}", rate, count / secs))
            if kafka:
                rate = kafka_rate(fetches, magic, payload, reps)
                results.append(
                    (f"  Kafka 3.9 downConvert -> magic {magic}", rate, rate * 1e6 / record_size)
                )
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=int, default=32)
    ap.add_argument("--record-size", type=int, default=1024)
    ap.add_argument("--batch-kb", type=int, default=16)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--reference", action="store_true", help="kafka-python's classes too")
    ap.add_argument("--kafka", action="store_true", help="Kafka 3.9's downConvert too (JVM)")
    args = ap.parse_args(argv)
    print(
        f"{args.mb} MB of {args.record_size}-byte records in {args.batch_kb} KB batches, "
        f"1 MB fetches, best of {args.reps}, one core (pid {os.getpid()})"
    )
    for label, rate, per_s in measure(
        args.mb, args.record_size, args.batch_kb, args.reps, args.reference, args.kafka
    ):
        print(f"{label:<42} {rate:8.1f} MB/s {per_s:12,.0f} records/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
