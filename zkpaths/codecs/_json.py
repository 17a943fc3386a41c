"""Writing JSON the way legacy Kafka code does: compact, keys in a fixed order, UTF-8."""

from __future__ import annotations

import json
from typing import Any


def dumps(obj: dict[str, Any]) -> bytes:
    """Compact JSON (no spaces), keys in ``obj``'s order, non-ASCII written as UTF-8."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode(
        "utf-8"
    )


def legacy_escape(text: str) -> str:
    """``CoreUtils.JSONEscapeString`` (0.10): the escaping the old consumer applied to a regex.

    Unlike Python's json module it escapes '/' and the C1 control characters, and writes
    every other character literally.
    """
    out: list[str] = []
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "/":
            out.append("\\/")
        elif ch in _SHORT:
            out.append(_SHORT[ch])
        elif ch <= "\x1f" or "\x7f" <= ch <= "\x9f":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


_SHORT = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
