"""Strict, bounded decoding shared by every codec: bytes in, typed values or CodecError out.

Kafka's own readers (Jackson, ``to[Int]``) refuse floats and booleans where ints belong and
refuse JSON that is not an object; these helpers do the same, and also bound the input size
and refuse anything Python would otherwise let through (NaN, duplicate keys, lone
surrogates), so no decoder can raise anything but :class:`CodecError`.
"""

from __future__ import annotations

import json
import re
from typing import Any, NoReturn

from zkpaths.errors import CodecError, UnknownVersionError

#: largest node data a decoder accepts; ZooKeeper's own default limit (jute.maxbuffer) is 1 MiB
MAX_NODE_BYTES = 1024 * 1024

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

_DIGITS = re.compile(r"[0-9]{1,19}")


def _no_constants(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"duplicate key {key!r}")
        obj[key] = value
    return obj


def _has_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def type_name(value: Any) -> str:
    """JSON's name for the type of a decoded value, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


class Decoder:
    """Decoding of one node's data, remembering what and where it is for every error."""

    def __init__(self, what: str, data: object, path: str | None, limit: int) -> None:
        self.what = what
        self.path = path
        if data is None:
            data = b""
        if isinstance(data, bytearray | memoryview):
            data = bytes(data)
        if not isinstance(data, bytes):
            self.data = b""
            self.fail(f"expected bytes, got {type(data).__name__}")
        self.data: bytes = data
        if len(data) > limit:
            self.fail(f"data is {len(data)} bytes, more than the {limit}-byte limit")

    def fail(self, reason: str) -> NoReturn:
        raise CodecError(self.what, reason, path=self.path, data=self.data)

    def unknown_version(self, version: object, known: tuple[object, ...]) -> NoReturn:
        raise UnknownVersionError(self.what, version, known, path=self.path, data=self.data)

    def text(self) -> str:
        """The data as UTF-8 text; empty data is an error (no legacy writer leaves it empty)."""
        if not self.data:
            self.fail("data is empty")
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.fail(f"not UTF-8 ({exc.reason} at byte {exc.start})")

    def json_object(self) -> dict[str, Any]:
        """The data as one JSON object."""
        text = self.text()
        try:
            value = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
        except RecursionError:
            self.fail("JSON nested too deeply")
        except ValueError as exc:  # JSONDecodeError, huge ints, our hooks
            self.fail(f"not valid JSON ({exc})")
        if not isinstance(value, dict):
            self.fail(f"expected a JSON object, got {type_name(value)}")
        if _has_lone_surrogate(value):
            self.fail("JSON contains a lone UTF-16 surrogate escape")
        return value

    # -- typed fields -----------------------------------------------------------------------

    def require(self, obj: dict[str, Any], key: str) -> Any:
        if key not in obj:
            self.fail(f"missing {key!r}")
        return obj[key]

    def integer(self, value: Any, field: str, lo: int = INT32_MIN, hi: int = INT32_MAX) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(f"{field} must be an integer, got {type_name(value)} {_short(value)}")
        if not lo <= value <= hi:
            self.fail(f"{field} {_short(value)} is outside {lo}..{hi}")
        return value

    def string(self, value: Any, field: str) -> str:
        if not isinstance(value, str):
            self.fail(f"{field} must be a string, got {type_name(value)} {_short(value)}")
        return value

    def optional_string(self, value: Any, field: str) -> str | None:
        return None if value is None else self.string(value, field)

    def obj(self, value: Any, field: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(f"{field} must be an object, got {type_name(value)} {_short(value)}")
        return value

    def int_list(self, value: Any, field: str) -> tuple[int, ...]:
        if not isinstance(value, list):
            self.fail(f"{field} must be an array, got {type_name(value)} {_short(value)}")
        return tuple(self.integer(v, f"{field} element") for v in value)

    def timestamp(self, value: Any, field: str = "timestamp") -> int:
        """Epoch milliseconds, written by Kafka as a decimal string; numbers are tolerated."""
        if isinstance(value, str):
            if not _DIGITS.fullmatch(value) or int(value) > INT64_MAX:
                self.fail(f"{field} {_short(value)} is not a decimal number of milliseconds")
            return int(value)
        return self.integer(value, field, 0, INT64_MAX)

    def version(self, obj: dict[str, Any], known: tuple[int, ...]) -> int:
        """The ``version`` field, which must be one of ``known``."""
        value = self.require(obj, "version")
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(f"version must be an integer, got {type_name(value)} {_short(value)}")
        if value not in known:
            self.unknown_version(value, known)
        return value


def _short(value: Any, limit: int = 40) -> str:
    """A bounded rendering of a decoded value; containers are summarised, never dumped."""
    if isinstance(value, list):
        return f"[...{len(value)} items]"
    if isinstance(value, dict):
        return f"{{...{len(value)} keys}}"
    if isinstance(value, str):
        text = json.dumps(value[:limit], ensure_ascii=True)
        return text if len(value) <= limit else text[:-1] + '..."'
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**limit:
        return f"<{value.bit_length()}-bit number>"
    return json.dumps(value)
