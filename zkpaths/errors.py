"""The one exception hierarchy of ``zkpaths``.

Callers that read nodes other programs wrote must be able to contain bad input per node
(invariant I5): everything a decoder can raise is a :class:`CodecError`, and every error
names the thing at fault, with a bounded excerpt of the data instead of the whole value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

#: how much of a bad value an error message quotes
EXCERPT_BYTES = 64
#: longest reason a CodecError states: a reason quoting a name or value taken from the data
#: (an endpoint, a listener, a list of partitions) is cut here
REASON_CHARS = 400
#: longest rendering of a bad version (any JSON value) in an UnknownVersionError
VERSION_CHARS = 40


def excerpt(data: bytes, limit: int = EXCERPT_BYTES) -> str:
    """A short, printable quote of ``data``: enough to recognise it, never a huge value."""
    head = data[:limit].decode("utf-8", errors="backslashreplace")
    shown = repr(head)
    if len(data) > limit:
        shown += f"... ({len(data)} bytes)"
    return shown


def bounded(text: str, limit: int) -> str:
    """``text``, or its first ``limit`` characters and how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} chars)"


class ZkLayoutError(Exception):
    """Base of every error this package raises on purpose."""


class ZkPathError(ZkLayoutError):
    """A path, or a name meant to become part of one, is not valid in the legacy layout."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"invalid ZooKeeper path {path!r}: {reason}")


class CodecError(ZkLayoutError):
    """A node's data cannot be decoded as what its path says it holds."""

    def __init__(
        self,
        what: str,
        reason: str,
        *,
        path: str | None = None,
        data: bytes | None = None,
    ) -> None:
        reason = bounded(reason, REASON_CHARS)
        self.what = what
        self.reason = reason
        self.path = path
        self.excerpt = excerpt(data) if data is not None else None
        where = f" at {path}" if path else ""
        quoted = f"; data: {self.excerpt}" if self.excerpt is not None else ""
        super().__init__(f"bad {what}{where}: {reason}{quoted}")


class UnknownVersionError(CodecError):
    """The data declares a format version this package does not know."""

    def __init__(
        self,
        what: str,
        version: object,
        known: Iterable[object],
        *,
        path: str | None = None,
        data: bytes | None = None,
    ) -> None:
        self.version = version
        self.known = tuple(known)
        super().__init__(
            what,
            f"unknown version {bounded(repr(version), VERSION_CHARS)} "
            f"(known: {', '.join(repr(k) for k in self.known)})",
            path=path,
            data=data,
        )


class NoCommonProtocolError(ZkLayoutError):
    """No assignment protocol is supported by every member of a group.

    Kafka's coordinator answers such a join with INCONSISTENT_GROUP_PROTOCOL and no reason;
    this error says which members lack the protocol the rest of the group shares.
    """

    def __init__(
        self,
        best: str | None,
        supporters: int,
        group_size: int,
        lacking: Mapping[str, Sequence[str]],
    ) -> None:
        self.best = best
        self.supporters = supporters
        self.group_size = group_size
        self.lacking = {m: tuple(p) for m, p in lacking.items()}
        who = "; ".join(
            f"member {m!r} supports {list(p) if p else 'no protocol at all'}"
            for m, p in self.lacking.items()
        )
        if best is None:
            message = f"no protocol is supported by every member of the group: {who}"
        else:
            message = (
                f"no protocol is supported by every member of the group: {best!r} is "
                f"supported by {supporters} of {group_size} members, but {who}"
            )
        super().__init__(message)


class LegacyFormatError(ZkLayoutError):
    """A legacy identifier or topic regex (found in ZooKeeper, or given) is malformed."""

    def __init__(self, what: str, value: str, reason: str) -> None:
        self.what = what
        self.value = value
        self.reason = reason
        shown = value if len(value) <= 120 else value[:120] + "..."
        super().__init__(f"bad {what} {shown!r}: {reason}")
