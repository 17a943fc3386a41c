"""Record converters of the legacy gateway (flow F6): pure functions, no I/O.

``down_convert``: record batches (magic 2) from a broker's Fetch response -> the message set
(magic 0 or 1) an old client's Fetch v0-v3 expects. ``up_convert``: an old client's Produce
v0-v2 message set -> one record batch (magic 2) to produce upstream.

Sources (Apache Kafka, read at 3.9.0 unless said): ``RecordsUtil.downConvert`` and
``convertRecordBatch`` (control batches dropped, zstd refused, one converted batch per source
batch with its codec, base offset = first kept record), ``MemoryRecordsBuilder``
(``appendLegacyRecord``: magic 1 inner offsets relative to that base, LogAppendTime written
into every message; ``writeLegacyCompressedWrapperHeader``: wrapper offset = last offset,
timestamp = max timestamp or the log append time), ``LegacyRecord.computeAttributes``,
``LazyDownConversionRecords`` (sizing), ``CompletedFetch.nextFetchedRecord`` (read_committed),
and the old readers, 0.10.2.2 ``ByteBufferMessageSet`` / 0.8.2.2 ``ConsumerIterator``.

Where this differs from a 3.9 broker, on purpose:

* aborted transactional records are dropped (3.9 serves v0-v3 fetches READ_UNCOMMITTED; the
  gateway fetches READ_COMMITTED and filters as the Java consumer does);
* records before the fetch offset are dropped from compressed batches too (3.9 keeps them
  there; old consumers skip them anyway, and we recompress either way);
* when the first message does not fit ``max_bytes`` and the request has no KIP-74
  ``min_one_message`` (v0-v2), its first ``max_bytes`` bytes are returned, as 0.8-0.10
  brokers returned a cut log slice: old consumers then report that the fetch size is too
  small (3.x sends nothing, and the old consumer spins silently).

For the server: fetch upstream READ_COMMITTED with a version that always returns the first
batch whole (v4+; KIP-74) and pass its ``aborted_transactions``; the message set can come
out larger than the batches (34 bytes a message of magic 1 against ~10 a v2 record), so the
tail is cut at ``max_bytes`` and the client's next fetch resumes after the last message.
Errors: :class:`UnsupportedCompression` -> UNSUPPORTED_COMPRESSION_TYPE (what 3.9 answered
v0-v3 fetches of zstd data); :class:`ConversionError` from ``up_convert`` -> CORRUPT_MESSAGE
(also for an empty message set), from ``down_convert`` the upstream sent bytes that are not
record batches (a broker bug: UNKNOWN_SERVER_ERROR).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from kafka.record.default_records import DefaultRecordBatchBuilder

from bridge.gateway import messages
from bridge.gateway.codecs import (
    NONE,
    ZSTD,
    ConversionError,
    UnsupportedCompression,
    compress,
    decompress,
)
from bridge.gateway.records import Batch, Transactions, abort_marker, batches, parse_records

__all__ = [
    "ConversionError",
    "UnsupportedCompression",
    "UpConverted",
    "down_convert",
    "up_convert",
    "MAX_UNCOMPRESSED",
]

#: largest decompressed batch or wrapper accepted (a bound against decompression bombs)
MAX_UNCOMPRESSED = 128 * 1024 * 1024
_APPEND_TIME = messages.TIMESTAMP_TYPE


@dataclass(frozen=True)
class UpConverted:
    """One record batch (magic 2, base offset 0, no producer id) and its record count."""

    records: bytes
    count: int


class _Output:
    """The response's message set, at most ``max_bytes`` (see the module doc for the first
    message that does not fit)."""

    def __init__(self, max_bytes: int, min_one_message: bool) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.room = max(0, max_bytes)
        self.min_one = min_one_message
        self.full = False

    def add_whole(self, parts: Sequence[bytes], size: int) -> None:
        """A wrapper or verbatim entry: all of it or, as the first message, whole or cut."""
        if self.size + size <= self.room:
            self.parts.extend(parts)
            self.size += size
            return
        if not self.parts:
            data = b"".join(parts)
            self.parts.append(data if self.min_one else data[: self.room])
        self.full = True

    def add_records(self, records: Sequence[messages.Record], magic: int, attributes: int):
        parts, used, written = messages.encode(records, magic, attributes, 0, self.room - self.size)
        self.parts.extend(parts)
        self.size += used
        if written < len(records):
            if not self.parts:
                first, size, _ = messages.encode(records[:1], magic, attributes, 0, float("inf"))
                self.add_whole(first, size)
            self.full = True


def down_convert(
    records: bytes | memoryview | None,
    *,
    magic: int,
    fetch_offset: int,
    max_bytes: int,
    aborted: Sequence[tuple[int, int]] = (),
    min_one_message: bool = False,
    max_uncompressed: int = MAX_UNCOMPRESSED,
) -> bytes:
    """Record batches (magic 2, as a broker's Fetch response carries them, possibly ending in
    a partial batch, which is ignored) -> a legacy message set of ``magic`` 0 or 1 (Fetch
    v0/v1 -> 0, v2/v3 -> 1). ``aborted``: the response's aborted transactions as
    (producer_id, first_offset). Raises :class:`UnsupportedCompression` for a zstd batch
    (the server answers UNSUPPORTED_COMPRESSION_TYPE), :class:`ConversionError` for bytes
    that are not record batches."""
    if magic not in (0, 1):
        raise ConversionError(f"cannot down-convert to magic {magic} (0 or 1)")
    buf = bytes(records or b"")  # a null records field is no record
    out = _Output(max_bytes, min_one_message)
    txns = Transactions(aborted)
    try:
        for batch in batches(buf):
            if out.full:
                break
            if batch.magic < 2:
                _legacy_batch(out, buf, batch, magic, fetch_offset, max_uncompressed)
                continue
            marker = batch.control and abort_marker(
                batch, *_records_of(buf, batch, max_uncompressed)
            )
            if txns.skip(batch, marker) or batch.last_offset < fetch_offset:
                continue
            if batch.codec == ZSTD:
                raise UnsupportedCompression(
                    f"batch at offset {batch.base_offset} is zstd-compressed: message format "
                    f"v{magic} cannot carry it"
                )
            data, start, end = _records_of(buf, batch, max_uncompressed)
            kept = _parse(batch, data, start, end, fetch_offset, magic)
            if not kept:
                continue
            if batch.codec == NONE:
                attributes = _APPEND_TIME if magic and batch.append_time else 0
                out.add_records(kept, magic, attributes)
            else:
                out.add_whole(*_wrap(kept, batch, magic))
    except (struct.error, OverflowError):  # offsets or timestamps past int64 (fuzzing found it)
        raise ConversionError("an offset or timestamp does not fit 64 bits") from None
    return b"".join(out.parts)


def _records_of(buf: bytes, batch: Batch, limit: int) -> tuple[bytes, int, int]:
    """The batch's records section: (buffer, start, end), decompressed if need be."""
    start = batch.pos + batch.header_size
    if batch.codec == NONE:
        return buf, start, batch.end
    data = decompress(batch.codec, buf[start : batch.end], 2, limit)
    return data, 0, len(data)


def _parse(
    batch: Batch, data: bytes, start: int, end: int, fetch_offset: int, magic: int
) -> list[messages.Record]:
    try:
        records = parse_records(batch, data, start, end)
    except (IndexError, struct.error):
        raise ConversionError(
            f"records of the batch at offset {batch.base_offset} are truncated"
        ) from None
    if records and records[0][0] < fetch_offset:
        records = [r for r in records if r[0] >= fetch_offset]
    if magic == 0:
        records = [(o, -1, k, v) for o, _, k, v in records]
    return records


def _wrap(kept: list[messages.Record], batch: Batch, magic: int) -> tuple[tuple[bytes, bytes], int]:
    """One compressed wrapper message around ``kept``, with the batch's codec."""
    append_time = magic and batch.append_time
    attributes = _APPEND_TIME if append_time else 0
    base = kept[0][0] if magic else 0
    parts, _, _ = messages.encode(kept, magic, attributes, base, float("inf"))
    value = compress(batch.codec, b"".join(parts), magic)
    if not magic:
        timestamp = -1
    elif append_time:
        timestamp = batch.max_timestamp
    else:
        timestamp = max([r[1] for r in kept])
    head, value = messages.wrapper(kept[-1][0], magic, batch.codec | attributes, timestamp, value)
    return (head, value), len(head) + len(value)


def _legacy_batch(
    out: _Output, buf: bytes, batch: Batch, magic: int, fetch_offset: int, limit: int
) -> None:
    """A magic 0/1 entry in the log (written before the upgrade): kept as it is when the
    client reads its magic, as ``RecordsUtil.downConvert`` does; magic 1 -> 0 re-encoded."""
    entry = buf[batch.pos : batch.end]
    if batch.magic <= magic:
        out.add_whole((entry,), len(entry))
        return
    pairs = list(messages.read(entry, 1, limit))
    kept = [(o, -1, k, v) for _, (o, _, k, v) in pairs if o >= fetch_offset]
    if not kept:
        return
    codec = pairs[0][0]
    if codec == NONE:
        out.add_records(kept, 0, 0)
        return
    parts, _, _ = messages.encode(kept, 0, 0, 0, float("inf"))
    head, value = messages.wrapper(kept[-1][0], 0, codec, -1, compress(codec, b"".join(parts), 0))
    out.add_whole((head, value), len(head) + len(value))


def up_convert(
    message_set: bytes, *, magic: int, max_uncompressed: int = MAX_UNCOMPRESSED
) -> UpConverted:
    """A Produce v0-v2 message set (messages of magic 0..``magic``, possibly compressed
    wrappers) -> one record batch (magic 2) with every record's key, value and timestamp
    (-1 for magic 0: NO_TIMESTAMP) and the codec of the first compressed wrapper.

    Every message's and inner message's CRC, magic and sizes are checked, as the broker's
    ``LogValidator`` does; an empty message set or a partial message at the end is a
    :class:`ConversionError` (a broker trims a partial one silently: the client would
    believe it was written). kafka-python's ``DefaultRecordBatchBuilder`` writes the batch;
    it sends a batch uncompressed when compressing does not make it smaller."""
    if magic not in (0, 1):
        raise ConversionError(f"cannot up-convert message format v{magic} (0 or 1)")
    if not message_set:
        raise ConversionError("empty message set")
    pairs = list(messages.read(bytes(message_set), magic, max_uncompressed))
    codec = next((c for c, _ in pairs if c != NONE), NONE)
    size = len(message_set) + 61 + 21 * len(pairs)
    builder = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, max(size, 1 << 20))
    for i, (_, (_, timestamp, key, value)) in enumerate(pairs):
        builder.append(i, timestamp=timestamp, key=key, value=value, headers=[])
    return UpConverted(bytes(builder.build()), len(pairs))
