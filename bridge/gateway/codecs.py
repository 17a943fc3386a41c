"""Compression codecs of legacy message sets and record batches, for the gateway's converters.

kafka-python's :mod:`kafka.codec` does the work where it fits (xerial-framed snappy, LZ4
frames without linked blocks); this module adds what it lacks:

* gzip at Kafka's default level (``Deflater.DEFAULT_COMPRESSION`` = 6, Kafka 3.9
  ``GzipCompression``), not kafka-python's 9, which is several times slower;
* LZ4 frames exactly as Kafka writes them (``Lz4BlockOutputStream``, 3.9): 64 KB independent
  blocks, no content size, no content checksum (FLG 0x60, BD 0x40), so 0.10 readers that
  refuse a content-size field read them; for magic 0 the frame descriptor checksum is the
  pre-KIP-57 one 0.8.x clients check (``KafkaLZ4BlockInputStream.readHeader`` in 0.8.2.2
  hashes the magic number too: ``hash(header, 0, 6)``), for magic 1 the correct one;
* decompression bounded by ``limit`` bytes (a produce request is foreign input: a 1 MB gzip
  message may claim a gigabyte), and every codec failure as one :class:`ConversionError`.
"""

from __future__ import annotations

import zlib

import lz4.frame
import xxhash
from kafka import codec as kcodec

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

#: Kafka's level for gzip when none is configured (java.util.zip.Deflater's default)
GZIP_LEVEL = 6
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
#: the frame descriptor Kafka writes: version 01, independent blocks (FLG); 64 KB blocks (BD)
_LZ4_DESCRIPTOR = b"\x60\x40"
#: pre-KIP-57 header checksum: second byte of xxh32 over magic number + descriptor
#: LZ4 cannot expand more than ~255x (a match length grows by 255 per extra byte); frames
#: that declare no content size (Kafka's never do) are bounded by this
_LZ4_MAX_RATIO = 256
_LZ4_BROKEN_HC = (xxhash.xxh32_intdigest(_LZ4_MAGIC + _LZ4_DESCRIPTOR) >> 8) & 0xFF


class ConversionError(ValueError):
    """Bytes the gateway cannot convert; ``str()`` names what is wrong in one line."""


class UnsupportedCompression(ConversionError):
    """A codec the target format cannot carry (zstd in magic 0/1: old brokers answered
    UNSUPPORTED_COMPRESSION_TYPE), or one this gateway does not know."""


def lz4_header_checksum(descriptor: bytes, broken: bool) -> int:
    """The LZ4 frame descriptor checksum byte; ``broken`` = the 0.8/0.9 clients' variant."""
    data = _LZ4_MAGIC + descriptor if broken else descriptor
    return (xxhash.xxh32_intdigest(data) >> 8) & 0xFF


def compress(codec: int, data: bytes, magic: int) -> bytes:
    """``data`` compressed as Kafka's producer/broker writes it for message format ``magic``."""
    if codec == GZIP:
        return _gzip(data)
    if codec == SNAPPY:
        return kcodec.snappy_encode(data)
    if codec == LZ4:
        framed = kcodec.lz4_encode(
            data,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            content_checksum=False,
            store_size=False,
        )
        if magic == 0:
            return framed[:6] + bytes((_LZ4_BROKEN_HC,)) + framed[7:]
        return framed
    raise UnsupportedCompression(f"cannot compress with codec {NAMES.get(codec, codec)}")


def _gzip(data: bytes) -> bytes:
    """Java's GZIPOutputStream's bytes: zlib's, but the header's OS byte "unknown" (255)."""
    c = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)
    out = c.compress(data) + c.flush()
    return out[:9] + b"\xff" + out[10:]


def decompress(codec: int, data: bytes, magic: int, limit: int) -> bytes:
    """Decompress a wrapper's value (magic 0/1) or a batch's records (magic 2), at most
    ``limit`` bytes; any failure is a :class:`ConversionError` naming the codec."""
    name = NAMES.get(codec, str(codec))
    try:
        if codec == GZIP:
            out = _gunzip(data, limit)
        elif codec == SNAPPY:
            out = kcodec.snappy_decode(bytes(data))
        elif codec == LZ4:
            out = _unlz4(bytes(data), magic, limit)
        else:
            raise UnsupportedCompression(f"unknown compression codec {name}")
    except ConversionError:
        raise
    except Exception as exc:  # zlib.error, lz4's RuntimeError, cramjam's errors, struct.error
        raise ConversionError(f"{name} data does not decompress: {type(exc).__name__}") from None
    if len(out) > limit:
        raise ConversionError(f"{name} data decompresses to more than {limit} bytes")
    return out


def _gunzip(data: bytes, limit: int) -> bytes:
    """Gzip members one after another (Java's GZIPInputStream reads concatenated members)."""
    parts, total, rest = [], 0, bytes(data)
    while rest:
        d = zlib.decompressobj(31)
        part = d.decompress(rest, limit - total + 1)
        total += len(part)
        parts.append(part)
        if total > limit:
            break
        if not d.eof:
            raise ConversionError("gzip data ends early")
        rest = d.unused_data
    return b"".join(parts)


def _unlz4(data: bytes, magic: int, limit: int) -> bytes:
    if magic == 0 and len(data) >= 7 and data[:4] == _LZ4_MAGIC:
        # Kafka reads magic 0 frames ignoring the descriptor checksum (both variants are
        # in the wild); liblz4 checks it, so the correct one is written over it first
        end = 7 + (8 if data[4] & 0x08 else 0) + (4 if data[4] & 0x01 else 0)
        if len(data) >= end:
            hc = lz4_header_checksum(data[4 : end - 1], broken=False)
            data = data[: end - 1] + bytes((hc,)) + data[end:]
    if len(data) >= 14 and _lz4_bounded(data, limit):
        # cannot exceed the limit: the fast call (a max_length makes python-lz4 allocate
        # that much up front, ~15x slower on a 16 KB batch)
        return lz4.frame.decompress(data)
    d = lz4.frame.LZ4FrameDecompressor()
    out = d.decompress(data, max_length=limit + 1)
    if len(out) <= limit and not d.eof:
        raise ConversionError("lz4 frame ends early")
    return out


def _lz4_bounded(frame: bytes, limit: int) -> bool:
    """Whether the frame cannot decompress past ``limit``: its declared content size (which
    liblz4 enforces; kafka-python writes it, Kafka does not) or 256 x its length."""
    if frame[4] & 0x08:
        return int.from_bytes(frame[6:14], "little") <= limit
    return len(frame) * _LZ4_MAX_RATIO <= limit
