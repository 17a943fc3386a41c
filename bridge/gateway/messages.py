"""Legacy messages (magic 0 and 1) written and read with struct and zlib.crc32.

kafka-python's ``LegacyRecordBatchBuilder`` writes the same bytes but costs a type check, a
buffer resize and a ``pack_into`` per field per message; writing straight into a list of
parts is several times faster on the fetch path (measured in ``bench/gateway_convert.py``;
the tests compare both). The layout is Kafka's ``LegacyRecord`` (3.9)::

    offset int64 | size int32 | crc uint32 | magic int8 | attributes int8
    | timestamp int64 (magic 1 only) | key bytes (int32 length, -1 = null) | value bytes

The CRC (zlib's CRC-32) covers magic to the end. Attributes: codec in bits 0-2, bit 3 the
timestamp type (magic 1; LogAppendTime = 1).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from zlib import crc32

from bridge.gateway.codecs import (
    NAMES,
    ZSTD,
    ConversionError,
    UnsupportedCompression,
    decompress,
)

#: offset, size, crc - the part before what the CRC covers
_PREFIX = struct.Struct(">qiI")
_HEAD0 = struct.Struct(">bbi")  # magic, attributes, key length
_HEAD1 = struct.Struct(">bbqi")  # magic, attributes, timestamp, key length
_NOKEY0 = struct.Struct(">bbii")  # ... key length -1, value length
_NOKEY1 = struct.Struct(">bbqii")
_I32 = struct.Struct(">i")
_ENTRY = struct.Struct(">qiIbb")
_Q = struct.Struct(">q")
_NULL = b"\xff\xff\xff\xff"
LOG_OVERHEAD = 12
#: size field of the smallest message: crc, magic, attributes, key and value lengths
MIN_SIZE = {0: 14, 1: 22}
TIMESTAMP_TYPE = 0x08

#: (offset, timestamp, key, value); timestamp -1 where there is none
Blob = bytes | memoryview
Record = tuple[int, int, Blob | None, Blob | None]


def overhead(magic: int) -> int:
    """Bytes of one message besides its key and value, offset and size included."""
    return LOG_OVERHEAD + MIN_SIZE[magic]


def encode(
    records: Sequence[Record], magic: int, attributes: int, base: int, room: float
) -> tuple[list[bytes], int, int]:
    """Messages for ``records`` (offsets minus ``base``) while they fit in ``room`` bytes:
    (parts to join, bytes used, records written)."""
    parts: list[bytes] = []
    add = parts.append
    used = 0
    fixed = overhead(magic)
    head0, head1, prefix, i32 = _HEAD0.pack, _HEAD1.pack, _PREFIX.pack, _I32.pack
    nokey0, nokey1 = _NOKEY0.pack, _NOKEY1.pack
    written = 0
    for offset, timestamp, key, value in records:
        klen = -1 if key is None else len(key)
        vlen = -1 if value is None else len(value)
        size = fixed + (klen if klen > 0 else 0) + (vlen if vlen > 0 else 0)
        if used + size > room:
            break
        if klen < 0:  # the common case: no key, one header struct up to the value
            head = (
                nokey1(1, attributes, timestamp, -1, vlen)
                if magic
                else nokey0(0, attributes, -1, vlen)
            )
            crc = crc32(head)
            add(prefix(offset - base, size - LOG_OVERHEAD, crc32(value, crc) if vlen > 0 else crc))
            add(head)
        else:
            head = head1(1, attributes, timestamp, klen) if magic else head0(0, attributes, klen)
            tail = i32(vlen)
            crc = crc32(tail, crc32(key, crc32(head)))
            if vlen > 0:
                crc = crc32(value, crc)
            add(prefix(offset - base, size - LOG_OVERHEAD, crc))
            add(head)
            add(key)
            add(tail)
        if vlen > 0:
            add(value)
        used += size
        written += 1
    return parts, used, written


def wrapper(
    offset: int, magic: int, attributes: int, timestamp: int, value: bytes
) -> tuple[bytes, bytes]:
    """A compressed wrapper message (null key) around ``value``, as two parts."""
    head = _HEAD1.pack(1, attributes, timestamp, -1) if magic else _HEAD0.pack(0, attributes, -1)
    tail = _I32.pack(len(value))
    crc = crc32(value, crc32(tail, crc32(head)))
    size = MIN_SIZE[magic] + len(value)
    return _PREFIX.pack(offset, size, crc) + head + tail, value


# -- reading ---------------------------------------------------------------------------------


def _bytes_at(buf: memoryview, pos: int, end: int, what: str) -> tuple[memoryview | None, int]:
    if pos + 4 > end:
        raise ConversionError(f"message ends inside its {what} length")
    (n,) = _I32.unpack_from(buf, pos)
    pos += 4
    if n == -1:
        return None, pos
    if n < 0 or pos + n > end:
        raise ConversionError(f"{what} length {n} does not fit the message")
    return buf[pos : pos + n], pos + n


def _entries(buf: bytes, max_magic: int, at: int = 0) -> Iterator[tuple]:
    """Shallow entries (offset, magic, attributes, timestamp, key, value); CRC and sizes
    checked; a partial entry at the end is an error (``at`` names positions in errors)."""
    pos, n = 0, len(buf)
    view = memoryview(buf)  # slices without copies
    while pos < n:
        if n - pos < LOG_OVERHEAD:
            raise ConversionError(f"partial message at byte {at + pos} ({n - pos} bytes left)")
        offset, size = struct.unpack_from(">qi", buf, pos)
        end = pos + LOG_OVERHEAD + size
        if size < MIN_SIZE[0]:
            raise ConversionError(f"message size {size} at byte {at + pos} is below the minimum")
        if end > n:
            raise ConversionError(
                f"partial message at byte {at + pos} (size {size}, {n - pos - 12} bytes left)"
            )
        crc, magic, attributes = struct.unpack_from(">Ibb", buf, pos + 12)
        if magic not in (0, 1) or magic > max_magic:
            raise ConversionError(f"magic {magic} at byte {at + pos} (at most {max_magic} here)")
        if size < MIN_SIZE[magic]:
            raise ConversionError(f"message size {size} at byte {at + pos} is below the minimum")
        if crc32(view[pos + 16 : end]) != crc:
            raise ConversionError(f"CRC mismatch in the message at offset {offset}")
        p = pos + 18
        timestamp = -1
        if magic:
            (timestamp,) = _Q.unpack_from(buf, p)
            p += 8
        key, p = _bytes_at(view, p, end, "key")
        value, p = _bytes_at(view, p, end, "value")
        if p != end:
            raise ConversionError(f"{end - p} bytes after the value of the message at {offset}")
        yield offset, magic, attributes, timestamp, key, value
        pos = end


def read(buf: bytes, max_magic: int, limit: int) -> Iterator[tuple[int, Record]]:
    """Deep iteration as Kafka's ``AbstractLegacyRecordBatch`` does: (wrapper codec, record)
    with absolute offsets (magic 1 inner offsets are relative to the last one) and the
    wrapper's timestamp where it is LogAppendTime."""
    for offset, magic, attributes, timestamp, key, value in _entries(buf, max_magic):
        codec = attributes & 0x07
        if codec == 0:
            yield 0, (offset, timestamp, key, value)
            continue
        if codec == ZSTD:
            raise UnsupportedCompression("zstd cannot be carried by message format v0/v1")
        if codec not in NAMES:
            raise ConversionError(f"unknown compression codec {codec} at offset {offset}")
        if value is None:
            raise ConversionError(f"compressed message at offset {offset} has a null value")
        inner = list(_entries(decompress(codec, value, magic, limit), magic))
        if not inner:
            raise ConversionError(f"compressed message at offset {offset} is empty")
        shift = offset - inner[-1][0] if magic else 0
        append_time = magic and attributes & TIMESTAMP_TYPE
        for i_offset, i_magic, i_attributes, i_timestamp, i_key, i_value in inner:
            if i_magic != magic:
                raise ConversionError(f"inner magic {i_magic} in a magic {magic} wrapper")
            if i_attributes & 0x07:
                raise ConversionError(f"nested compression in the wrapper at offset {offset}")
            ts = timestamp if append_time else i_timestamp
            yield codec, (i_offset + shift, ts, i_key, i_value)
