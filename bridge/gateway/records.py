"""Reading record batches (magic 2) as a Fetch response carries them, for down-conversion.

kafka-python's ``DefaultRecordBatch`` reads the same format (the tests use it as the
reference), but it copies each batch into a ``bytearray`` and builds a record object per
record; here the records are parsed in one loop straight from the response bytes into
(offset, timestamp, key, value) tuples, keys and values as memoryview slices: the one copy
is the final join of the message set (copying each 1 KB value out cost ~1 us a record in
allocations and cold memory, 40 % of the uncompressed conversion). Layout (Kafka 3.9
``DefaultRecordBatch``, ``DefaultRecord``)::

    baseOffset int64 | length int32 | partitionLeaderEpoch int32 | magic int8 | crc uint32
    | attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 | maxTimestamp int64
    | producerId int64 | producerEpoch int16 | baseSequence int32 | records count int32
    record: length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
    | key (varint length, -1 = null) | value (likewise) | headers count varint, headers

The batch CRC-32C is not checked: the bytes come from a broker, which checked it when the
batch was produced (a Kafka 3.9 broker does not check it when down-converting either).
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Iterator, Sequence

from bridge.gateway.codecs import ConversionError
from bridge.gateway.messages import MIN_SIZE, Record

_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = _HEADER.size  # 61
_HEAD = struct.Struct(">qiib")  # base offset, length, leader epoch, magic
#: the smallest record: length, attributes, timestamp and offset deltas, key, value, headers
_MIN_RECORD = 7


class Batch:
    """One entry of the response: a v2 batch's header, or a legacy message's position."""

    __slots__ = (
        "pos",
        "end",
        "magic",
        "base_offset",
        "last_offset",
        "attributes",
        "codec",
        "first_timestamp",
        "max_timestamp",
        "producer_id",
        "count",
        "header_size",
    )

    @property
    def append_time(self) -> bool:
        return bool(self.attributes & 0x08)

    @property
    def transactional(self) -> bool:
        return bool(self.attributes & 0x10)

    @property
    def control(self) -> bool:
        return bool(self.attributes & 0x20)


def batches(buf: bytes) -> Iterator[Batch]:
    """The whole entries of ``buf``; a partial one at the end ends the iteration (a broker
    cuts its response at the fetch's max bytes)."""
    pos, n = 0, len(buf)
    while n - pos >= _HEAD.size:
        base_offset, length, _, magic = _HEAD.unpack_from(buf, pos)
        end = pos + 12 + length
        if length < MIN_SIZE[0]:  # Kafka's ByteBufferLogInputStream: size, then partial
            raise ConversionError(f"entry length {length} at offset {base_offset} is too small")
        if end > n:
            return
        if magic not in (0, 1, 2):
            raise ConversionError(f"unknown magic {magic} in the entry at offset {base_offset}")
        if length < (HEADER_SIZE - 12 if magic == 2 else MIN_SIZE[magic]):
            raise ConversionError(f"entry length {length} at offset {base_offset} is too small")
        b = Batch()
        b.pos, b.end, b.magic, b.base_offset = pos, end, magic, base_offset
        if magic == 2:
            h = _HEADER.unpack_from(buf, pos)
            b.attributes, b.first_timestamp, b.max_timestamp = h[5], h[7], h[8]
            b.last_offset = base_offset + h[6]
            b.producer_id, b.count = h[9], h[12]
            b.codec = b.attributes & 0x07
            b.header_size = HEADER_SIZE
        yield b
        pos = end


class Transactions:
    """The read_committed filter of the Java consumer (``CompletedFetch``, Kafka 3.9): an
    aborted transaction (producer id, first offset) applies from its first offset to that
    producer's abort marker; a transactional batch of a producer with an open aborted
    transaction is dropped; control batches are never returned."""

    def __init__(self, aborted: Sequence[tuple[int, int]]) -> None:
        self._pending = [(first, pid) for pid, first in aborted]
        heapq.heapify(self._pending)
        self._aborting: set[int] = set()

    def skip(self, batch: Batch, abort_marker: bool = False) -> bool:
        """Whether ``batch`` is dropped; ``abort_marker``: it is a control batch whose first
        record is an ABORT marker."""
        if batch.producer_id >= 0:
            while self._pending and self._pending[0][0] <= batch.last_offset:
                self._aborting.add(heapq.heappop(self._pending)[1])
            if abort_marker:
                self._aborting.discard(batch.producer_id)
            elif batch.transactional and batch.producer_id in self._aborting:
                return True
        return batch.control


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint/varlong (at most 10 bytes) -> (value, next position)."""
    result, shift = 0, 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise ConversionError("varint longer than 10 bytes")


def parse_records(batch: Batch, buf: bytes, pos: int, end: int) -> list[Record]:
    """Every record of ``batch`` from ``buf[pos:end]`` (its records section, decompressed):
    (offset, timestamp, key, value). Timestamps of a LogAppendTime batch are its max
    timestamp. Raises ConversionError (or IndexError at the end of ``buf``) on bad bytes."""
    count = batch.count
    if count < 0 or count > (end - pos) // _MIN_RECORD:
        raise ConversionError(
            f"batch at offset {batch.base_offset} claims {count} records in {end - pos} bytes"
        )
    base, first_ts = batch.base_offset, batch.first_timestamp
    fixed_ts = batch.max_timestamp if batch.append_time else None
    varint = _varint
    view = memoryview(buf)  # key and value slices without a copy; joined once, at the end
    out = []
    add = out.append
    for _ in range(count):
        b = buf[pos]
        if b < 0x80:
            length, pos = (b >> 1) ^ -(b & 1), pos + 1
        elif buf[pos + 1] < 0x80:  # two bytes: records of 64 B to 8 KB
            b = (b & 0x7F) | (buf[pos + 1] << 7)
            length, pos = (b >> 1) ^ -(b & 1), pos + 2
        else:
            length, pos = varint(buf, pos)
        start = pos
        pos += 1  # attributes: unused
        b = buf[pos]
        ts_delta, pos = ((b >> 1) ^ -(b & 1), pos + 1) if b < 0x80 else varint(buf, pos)
        b = buf[pos]
        off_delta, pos = ((b >> 1) ^ -(b & 1), pos + 1) if b < 0x80 else varint(buf, pos)
        b = buf[pos]
        n, pos = ((b >> 1) ^ -(b & 1), pos + 1) if b < 0x80 else varint(buf, pos)
        if n < 0:
            key = None
        else:
            key, pos = view[pos : pos + n], pos + n
        b = buf[pos]
        if b < 0x80:
            n, pos = (b >> 1) ^ -(b & 1), pos + 1
        elif buf[pos + 1] < 0x80:
            b = (b & 0x7F) | (buf[pos + 1] << 7)
            n, pos = (b >> 1) ^ -(b & 1), pos + 2
        else:
            n, pos = varint(buf, pos)
        if n < 0:
            value = None
        else:
            value, pos = view[pos : pos + n], pos + n
        # headers: dropped (v0/v1 cannot carry them)
        pos = _skip_headers(buf, pos) if buf[pos] else pos + 1
        if pos - start != length or pos > end:
            raise ConversionError(
                f"record of length {length} in the batch at offset {base} is malformed"
            )
        add((base + off_delta, first_ts + ts_delta if fixed_ts is None else fixed_ts, key, value))
    if pos != end:
        raise ConversionError(f"{end - pos} bytes after the last record of the batch at {base}")
    return out


def _skip_headers(buf: bytes, pos: int) -> int:
    count, pos = _varint(buf, pos)
    if count < 0 or count > len(buf) - pos:
        raise ConversionError(f"record claims {count} headers")
    for _ in range(count):
        n, pos = _varint(buf, pos)
        if n < 0:
            raise ConversionError("record header with a null key")
        pos += n
        n, pos = _varint(buf, pos)
        pos += max(n, 0)
    return pos


def abort_marker(batch: Batch, buf: bytes, pos: int, end: int) -> bool:
    """Whether a control batch's first record is an ABORT marker (key: version int16,
    type int16; 0 = ABORT, 1 = COMMIT)."""
    try:
        records = parse_records(batch, buf, pos, end)
    except (IndexError, struct.error):
        raise ConversionError(f"control batch at offset {batch.base_offset} is truncated") from None
    if not records or records[0][2] is None or len(records[0][2]) < 4:
        raise ConversionError(f"control batch at offset {batch.base_offset} has no marker key")
    return struct.unpack_from(">h", records[0][2], 2)[0] == 0
