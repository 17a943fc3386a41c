"""Kafka's message encoding, both flavours, as a bounded reader and a writer. Pure, no I/O.

Classic fields: int16/int32/int64 big-endian; string = int16 length + UTF-8 (nullable: -1);
bytes = int32 length (nullable: -1); array = int32 count (nullable: -1). Flexible versions
(KIP-482): compact string/bytes/array = unsigned varint of length + 1 (0 is null), and every
struct ends with tagged fields (varint count, then varint tag, varint size, data each).

The reader checks every length against what is left before it slices, so arbitrary bytes
can only ever produce :class:`RecordError`; it never allocates more than the input's size.
"""

from __future__ import annotations

import struct
from typing import NoReturn

from zkpaths.errors import CodecError

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

INT16_MIN, INT16_MAX = -(2**15), 2**15 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UINT32_MAX = 2**32 - 1

#: tagged fields of a flexible struct, kept raw so a record re-encodes to the same bytes
TaggedFields = tuple[tuple[int, bytes], ...]


class RecordError(CodecError):
    """Bytes that are not a valid record of the kind and version they claim.

    A :class:`zkpaths.CodecError`, so callers that contain bad foreign input per item (the
    audit counts them) catch one type for ZooKeeper nodes and Kafka records alike.
    """


class Reader:
    """Sequential, bounds-checked reading of one key, value or consumer-protocol blob."""

    __slots__ = ("data", "pos", "what")

    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def fail(self, reason: str) -> NoReturn:
        raise RecordError(self.what, f"{reason} (at byte {self.pos})", data=self.data)

    def _need(self, n: int) -> None:
        if n > len(self.data) - self.pos:
            self.fail(f"needs {n} more bytes, {len(self.data) - self.pos} left")

    @property
    def remaining(self) -> int:
        return len(self.data) - self.pos

    # -- fixed width ---------------------------------------------------------------------------

    def int16(self) -> int:
        self._need(2)
        (v,) = _I16.unpack_from(self.data, self.pos)
        self.pos += 2
        return v

    def int32(self) -> int:
        self._need(4)
        (v,) = _I32.unpack_from(self.data, self.pos)
        self.pos += 4
        return v

    def int64(self) -> int:
        self._need(8)
        (v,) = _I64.unpack_from(self.data, self.pos)
        self.pos += 8
        return v

    def uvarint(self) -> int:
        """An unsigned varint of at most 5 bytes (Kafka's ``readUnsignedVarint``)."""
        value = shift = 0
        for _ in range(5):
            self._need(1)
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                if value > UINT32_MAX:
                    self.fail("varint is larger than 32 bits")
                return value
            shift += 7
        self.fail("varint is longer than 5 bytes")

    # -- classic -------------------------------------------------------------------------------

    def _utf8(self, n: int, field: str) -> str:
        self._need(n)
        raw = self.data[self.pos : self.pos + n]
        self.pos += n
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.pos -= n - exc.start
            self.fail(f"{field} is not UTF-8 ({exc.reason})")

    def nullable_string(self, field: str) -> str | None:
        n = self.int16()
        if n == -1:
            return None
        if n < 0:
            self.fail(f"{field} has negative length {n}")
        return self._utf8(n, field)

    def string(self, field: str) -> str:
        s = self.nullable_string(field)
        if s is None:
            self.fail(f"{field} is null but not nullable")
        return s

    def nullable_bytes(self, field: str) -> bytes | None:
        n = self.int32()
        if n == -1:
            return None
        if n < 0:
            self.fail(f"{field} has negative length {n}")
        self._need(n)
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def bytes_(self, field: str) -> bytes:
        b = self.nullable_bytes(field)
        if b is None:
            self.fail(f"{field} is null but not nullable")
        return b

    def array_len(self, field: str, min_item: int) -> int:
        """A non-null array's count, refused when the bytes left cannot hold that many."""
        n = self.int32()
        if n < 0:
            self.fail(f"{field} has {'null' if n == -1 else 'negative'} count {n}")
        if n * min_item > self.remaining:
            self.fail(f"{field} claims {n} items, only {self.remaining} bytes left")
        return n

    # -- flexible ------------------------------------------------------------------------------

    def _compact_len(self, field: str) -> int | None:
        n = self.uvarint()
        return None if n == 0 else n - 1

    def compact_nullable_string(self, field: str) -> str | None:
        n = self._compact_len(field)
        if n is None:
            return None
        if n > INT16_MAX:
            self.fail(f"{field} is {n} bytes, longer than a string may be")
        return self._utf8(n, field)

    def compact_string(self, field: str) -> str:
        s = self.compact_nullable_string(field)
        if s is None:
            self.fail(f"{field} is null but not nullable")
        return s

    def compact_bytes(self, field: str) -> bytes:
        n = self._compact_len(field)
        if n is None:
            self.fail(f"{field} is null but not nullable")
        self._need(n)
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def compact_array_len(self, field: str, min_item: int) -> int:
        n = self._compact_len(field)
        if n is None:
            self.fail(f"{field} is null but not nullable")
        if n * min_item > self.remaining:
            self.fail(f"{field} claims {n} items, only {self.remaining} bytes left")
        return n

    def tagged_fields(self) -> TaggedFields:
        """A flexible struct's tagged fields, raw; tags must be strictly increasing."""
        count = self.uvarint()
        if count > self.remaining // 2:
            self.fail(f"{count} tagged fields cannot fit in {self.remaining} bytes")
        fields: list[tuple[int, bytes]] = []
        last = -1
        for _ in range(count):
            tag = self.uvarint()
            if tag <= last:
                self.fail(f"tagged field {tag} after {last}: tags must increase")
            size = self.uvarint()
            self._need(size)
            fields.append((tag, self.data[self.pos : self.pos + size]))
            self.pos += size
            last = tag
        return tuple(fields)

    def end(self) -> None:
        """Refuse trailing bytes: every known version is read to its last byte."""
        if self.pos != len(self.data):
            self.fail(f"{len(self.data) - self.pos} trailing bytes")


class Writer:
    """Builds one blob; every method checks the range of what it writes (ValueError)."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def getvalue(self) -> bytes:
        return b"".join(self.parts)

    @staticmethod
    def _check(value: int, lo: int, hi: int, field: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise ValueError(f"{field} must be an int in {lo}..{hi}, got {value!r}")

    def int16(self, v: int, field: str = "int16") -> Writer:
        self._check(v, INT16_MIN, INT16_MAX, field)
        self.parts.append(_I16.pack(v))
        return self

    def int32(self, v: int, field: str = "int32") -> Writer:
        self._check(v, INT32_MIN, INT32_MAX, field)
        self.parts.append(_I32.pack(v))
        return self

    def int64(self, v: int, field: str = "int64") -> Writer:
        self._check(v, INT64_MIN, INT64_MAX, field)
        self.parts.append(_I64.pack(v))
        return self

    def uvarint(self, v: int, field: str = "varint") -> Writer:
        self._check(v, 0, UINT32_MAX, field)
        out = bytearray()
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
        self.parts.append(bytes(out))
        return self

    @staticmethod
    def _utf8(s: str | None, field: str, nullable: bool) -> bytes | None:
        if s is None:
            if not nullable:
                raise ValueError(f"{field} is not nullable")
            return None
        if not isinstance(s, str):
            raise ValueError(f"{field} must be a string, got {type(s).__name__}")
        raw = s.encode("utf-8")  # a lone surrogate raises UnicodeEncodeError, a ValueError
        if len(raw) > INT16_MAX:
            raise ValueError(f"{field} is {len(raw)} bytes, more than {INT16_MAX}")
        return raw

    def string(self, s: str | None, field: str = "string", nullable: bool = False) -> Writer:
        raw = self._utf8(s, field, nullable)
        if raw is None:
            self.parts.append(_I16.pack(-1))
        else:
            self.parts += (_I16.pack(len(raw)), raw)
        return self

    def bytes_(self, b: bytes | None, field: str = "bytes", nullable: bool = False) -> Writer:
        if b is None:
            if not nullable:
                raise ValueError(f"{field} is not nullable")
            self.parts.append(_I32.pack(-1))
        else:
            self.parts += (_I32.pack(len(b)), bytes(b))
        return self

    def array_len(self, n: int, field: str = "array") -> Writer:
        return self.int32(n, field)

    def compact_string(
        self, s: str | None, field: str = "string", nullable: bool = False
    ) -> Writer:
        raw = self._utf8(s, field, nullable)
        if raw is None:
            return self.uvarint(0)
        self.uvarint(len(raw) + 1)
        self.parts.append(raw)
        return self

    def compact_bytes(self, b: bytes, field: str = "bytes") -> Writer:
        if b is None:
            raise ValueError(f"{field} is not nullable")
        self.uvarint(len(b) + 1)
        self.parts.append(bytes(b))
        return self

    def compact_array_len(self, n: int, field: str = "array") -> Writer:
        return self.uvarint(n + 1, field)

    def tagged_fields(self, fields: TaggedFields) -> Writer:
        tags = [t for t, _ in fields]
        if tags != sorted(set(tags)):
            raise ValueError(f"tagged field tags must be strictly increasing, got {tags}")
        self.uvarint(len(fields))
        for tag, data in fields:
            self.uvarint(tag, "tag").uvarint(len(data), "tag size")
            self.parts.append(bytes(data))
        return self
