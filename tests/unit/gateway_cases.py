"""Random fetch responses for the converters' tests, written with kafka-python's own builder.

A case is a partition's log as a broker would return it: record batches (magic 2) built
with ``DefaultRecordBatchBuilder``, some compressed, some LogAppendTime, some transactional
with commit/abort markers (control batches), and the ground truth the converters must keep:
which records a read_committed consumer sees. Only the header fields the builder cannot set
(base offset, LogAppendTime, the control bit) are written over, with the CRC-32C redone.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.util import calc_crc32c

CODECS = (0, 1, 2, 3)  # none, gzip, snappy, lz4


@dataclass(frozen=True)
class Rec:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    timestamp_type: int = 0


@dataclass
class Log:
    """The batches' bytes and what a read_committed consumer returns from them."""

    data: bytes = b""
    visible: list[Rec] = field(default_factory=list)
    aborted: list[tuple[int, int]] = field(default_factory=list)
    codecs: dict[int, int] = field(default_factory=dict)  # offset -> codec of its batch
    next_offset: int = 0


def batch_bytes(
    base_offset: int,
    records: list[tuple[int, int, bytes | None, bytes | None]],
    codec: int = 0,
    *,
    producer_id: int = -1,
    transactional: bool = False,
    control: bool = False,
    append_time: int | None = None,
    headers: list[tuple[str, bytes | None]] | None = None,
) -> bytes:
    """A v2 batch: ``records`` = (offset delta, timestamp, key, value), each with
    ``headers`` (which message formats 0 and 1 cannot carry)."""
    builder = DefaultRecordBatchBuilder(
        2, codec, transactional, producer_id, 0 if producer_id >= 0 else -1,
        0 if producer_id >= 0 else -1, 1 << 30,
    )  # fmt: skip
    for delta, ts, key, value in records:
        builder.append(delta, timestamp=ts, key=key, value=value, headers=headers or [])
    data = bytearray(builder.build())
    struct.pack_into(">q", data, 0, base_offset)
    attributes = struct.unpack_from(">h", data, 21)[0]
    if control:
        attributes |= 0x20
    if append_time is not None:
        attributes |= 0x08
        struct.pack_into(">q", data, 35, append_time)
    struct.pack_into(">h", data, 21, attributes)
    struct.pack_into(">I", data, 17, calc_crc32c(bytes(data[21:])))
    return bytes(data)


def actual_codec(data: bytes) -> int:
    """The codec the builder used (it sends a batch uncompressed when that is smaller)."""
    return DefaultRecordBatch(data).compression_type


blobs = st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=200, max_size=600))
timestamps = st.integers(0, 2**41)
HEADERS = [[], [("h", b"x")], [("a", None), ("b" * 200, b"y" * 300)] + [("c", b"")] * 70]
record_lists = st.lists(st.tuples(timestamps, blobs, blobs), min_size=1, max_size=6)


@st.composite
def logs(draw, max_batches: int = 6) -> Log:
    """A log of plain and transactional batches (producers 7 and 8), every transaction
    ended by its marker, offsets with gaps (compaction) now and then."""
    log = Log(next_offset=draw(st.integers(0, 2**40)))
    open_txn: dict[int, int] = {}  # producer id -> first offset
    txn_records: dict[int, list[Rec]] = {}
    parts = []
    for _ in range(draw(st.integers(0, max_batches))):
        kind = draw(st.sampled_from(["plain", "plain", "txn7", "txn8", "end7", "end8"]))
        if kind.startswith("end"):
            pid = int(kind[3])
            if pid in open_txn:
                parts.append(_marker(log, pid, draw(st.booleans()), open_txn, txn_records))
            continue
        pid = int(kind[3]) if kind.startswith("txn") else -1
        recs = draw(record_lists)
        gaps = [draw(st.sampled_from([1, 1, 1, 2, 5])) for _ in recs]
        deltas = [sum(gaps[:i]) for i in range(len(recs))]
        codec = draw(st.sampled_from(CODECS))
        append_time = draw(st.one_of(st.none(), timestamps))
        data = batch_bytes(
            log.next_offset,
            [(d, ts, k, v) for d, (ts, k, v) in zip(deltas, recs, strict=True)],
            codec,
            producer_id=pid,
            transactional=pid >= 0,
            append_time=append_time,
            headers=draw(st.sampled_from(HEADERS)),
        )
        codec = actual_codec(data)
        rows = [
            Rec(
                log.next_offset + d,
                ts if append_time is None else append_time,
                k,
                v,
                0 if append_time is None else 1,
            )
            for d, (ts, k, v) in zip(deltas, recs, strict=True)
        ]
        for r in rows:
            log.codecs[r.offset] = codec
        if pid >= 0:
            open_txn.setdefault(pid, log.next_offset)
            txn_records.setdefault(pid, []).extend(rows)
        else:
            log.visible.extend(rows)
        log.next_offset += deltas[-1] + 1
        parts.append(data)
    for pid in sorted(open_txn):
        parts.append(_marker(log, pid, draw(st.booleans()), open_txn, txn_records))
    log.data = b"".join(parts)
    log.visible.sort(key=lambda r: r.offset)
    log.aborted = draw(st.permutations(log.aborted))
    return log


def _marker(log: Log, pid: int, commit: bool, open_txn: dict, txn_records: dict) -> bytes:
    first = open_txn.pop(pid)
    rows = txn_records.pop(pid)
    if commit:
        log.visible.extend(rows)
    else:
        log.aborted.append((pid, first))
    key = struct.pack(">hh", 0, 1 if commit else 0)
    data = batch_bytes(
        log.next_offset,
        [(0, 1, key, struct.pack(">hi", 0, 3))],
        producer_id=pid,
        transactional=True,
        control=True,
    )
    log.next_offset += 1
    return data
