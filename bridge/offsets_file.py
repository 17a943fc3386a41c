"""The ``ExportZkOffsets`` line format, parsed strictly and written back (pure, no I/O).

One line per partition, ``/consumers/<g>/offsets/<t>/<p>:<offset>``, as Kafka's
``ExportZkOffsets`` writes and ``ImportZkOffsets`` reads. The offset backups that
``zk-bridge offsets reset`` writes are in this format too, so anything parsed here must be
checked *before* a single offset is written: every problem is collected with its line
number (never just the first), and the caller writes nothing unless the list is empty.

Rules, and where they differ from ``ImportZkOffsets``:

* the file ends at the first empty (or blank) line, as ``ImportZkOffsets`` stops there; any
  non-empty line after it is *ignored*, and the result says so, so that the caller can warn
  instead of silently dropping half a file;
* path and offset are split at the **last** ``':'``: a Kafka group id may contain ``':'``
  (a topic or partition cannot), and ``ImportZkOffsets``' split at every ``':'`` would
  misread such a line;
* surrounding whitespace and a Windows ``\\r`` are ignored; the path must be exactly an
  offset node of the legacy layout (checked by :func:`zkpaths.parse_path`);
* the offset is a decimal number in ``0..2**63-1``. **-1 is refused**, like every negative
  number: Kafka uses it for "no committed offset", and writing it would make a consumer fall
  back to ``auto.offset.reset``, which no restore should do silently (leave the line out);
* the same partition twice is an error naming both lines (the second would silently win);
* with a group filter, a line of another group is an error, not skipped: a backup of the
  wrong group must not be half applied.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from zkpaths import (
    GroupPartition,
    OffsetPath,
    TopicPartition,
    ZkPathError,
    offset_path,
    parse_path,
)

INT64_MAX = 2**63 - 1

LINE_FORMAT = "/consumers/<group>/offsets/<topic>/<partition>:<offset>"

_DECIMAL = re.compile(r"[0-9]+")
_SIGNED = re.compile(r"[+-][0-9]+")


@dataclass(frozen=True, order=True)
class OffsetEntry:
    """One partition's committed offset: the next offset the group will consume."""

    group: str
    topic: str
    partition: int
    offset: int

    @property
    def path(self) -> str:
        """The offset node, ``/consumers/<g>/offsets/<t>/<p>`` (validated)."""
        return offset_path(self.group, self.topic, self.partition)

    @property
    def key(self) -> GroupPartition:
        return GroupPartition(self.group, self.topic, self.partition)


@dataclass(frozen=True)
class LineError:
    """A bad line, printed as ``FILE:LINE: reason`` like a compiler error."""

    source: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.reason}"


@dataclass(frozen=True)
class ParsedLine:
    line: int
    entry: OffsetEntry


@dataclass
class ParsedFile:
    source: str
    lines: list[ParsedLine] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)
    #: the line number of the empty line that ended the file, if any
    stopped_at: int | None = None
    #: non-empty lines after ``stopped_at``, which are not read (as ImportZkOffsets does)
    ignored: int = 0

    @property
    def entries(self) -> list[OffsetEntry]:
        return [p.entry for p in self.lines]

    @property
    def ok(self) -> bool:
        return not self.errors


def format_line(entry: OffsetEntry) -> str:
    """``/consumers/<g>/offsets/<t>/<p>:<offset>``; ValueError for what import would refuse."""
    try:
        path = entry.path
    except ZkPathError as exc:
        raise ValueError(str(exc)) from None
    if not 0 <= entry.offset <= INT64_MAX:
        raise ValueError(f"{path}: offset {entry.offset} is outside 0..{INT64_MAX}")
    return f"{path}:{entry.offset}"


def format_entries(entries: Iterable[OffsetEntry]) -> str:
    """The whole file, one line per partition sorted by group, topic, partition number."""
    return "".join(format_line(e) + "\n" for e in sorted(entries))


def _offset_problem(text: str) -> str | None:
    if not text:
        return "no offset after ':'"
    if _DECIMAL.fullmatch(text):
        if int(text) > INT64_MAX:
            return f"offset {text} is larger than {INT64_MAX}"
        return None
    if text == "-1":
        return (
            "offset -1 means 'no committed offset' and is not imported "
            "(the consumer would fall back to auto.offset.reset); remove the line"
        )
    if _SIGNED.fullmatch(text) and text.startswith("-"):
        return f"offset {text} is negative"
    return f"offset {_quote(text)} is not a decimal number"


def _quote(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def parse_line(text: str) -> OffsetEntry | str:
    """One non-empty line as an entry, or the reason it is not one."""
    path, colon, offset_text = text.rpartition(":")
    if not colon:
        return f"no ':' in {_quote(text, 80)}: expected {LINE_FORMAT}"
    path, offset_text = path.strip(), offset_text.strip()
    try:
        parsed = parse_path(path)
    except ZkPathError as exc:
        return f"path {_quote(path, 80)}: {exc.reason}"
    if not isinstance(parsed, OffsetPath):
        return (
            f"path {_quote(path, 80)} is not an offset node "
            "/consumers/<group>/offsets/<topic>/<partition>"
        )
    problem = _offset_problem(offset_text)
    if problem:
        return problem
    return OffsetEntry(parsed.group, parsed.topic, parsed.partition, int(offset_text))


def parse(text: str, source: str, groups: Collection[str] | None = None) -> ParsedFile:
    """Every line of ``text`` checked; ``groups`` (if given) are the only groups allowed.

    Lines are split on ``'\\n'`` only: a group id may contain other characters Python
    would treat as line breaks (U+2028, ...), which ZooKeeper accepts in a node name.
    """
    result = ParsedFile(source)
    seen: dict[GroupPartition, int] = {}
    allowed = set(groups) if groups is not None else None
    raw_lines = text.split("\n")
    if raw_lines and raw_lines[-1] == "":
        raw_lines.pop()  # the newline that ends the last line does not start an empty one
    for number, raw in enumerate(raw_lines, start=1):
        line = raw.strip()
        if result.stopped_at is not None:
            result.ignored += bool(line)
            continue
        if not line:
            result.stopped_at = number
            continue
        parsed = parse_line(line)
        if isinstance(parsed, str):
            result.errors.append(LineError(source, number, parsed))
            continue
        if allowed is not None and parsed.group not in allowed:
            wanted = " or ".join(repr(g) for g in sorted(allowed)) or "none"
            result.errors.append(
                LineError(
                    source, number, f"group {parsed.group!r} is not the one expected ({wanted})"
                )
            )
            continue
        first = seen.get(parsed.key)
        if first is not None:
            result.errors.append(
                LineError(
                    source,
                    number,
                    f"{parsed.topic}/{parsed.partition} of group {parsed.group!r} "
                    f"is already on line {first}",
                )
            )
            continue
        seen[parsed.key] = number
        result.lines.append(ParsedLine(number, parsed))
    return result


def check_cluster(parsed: ParsedFile, partitions: Mapping[str, int]) -> list[LineError]:
    """Lines naming a topic Kafka does not have, or a partition beyond its count.

    ``partitions`` maps each existing topic to its number of partitions (0..n-1).
    """
    errors = []
    for p in parsed.lines:
        e = p.entry
        count = partitions.get(e.topic)
        if count is None:
            errors.append(LineError(parsed.source, p.line, f"topic {e.topic!r} does not exist"))
        elif e.partition >= count:
            errors.append(
                LineError(
                    parsed.source,
                    p.line,
                    f"partition {e.partition} of topic {e.topic!r} does not exist "
                    f"(it has {count}: 0..{count - 1})",
                )
            )
    return errors


def beyond_log_end(parsed: ParsedFile, ends: Mapping[TopicPartition, int]) -> list[LineError]:
    """Warnings, not errors: offsets past the log end (a recreated topic?) are still valid."""
    out = []
    for p in parsed.lines:
        e = p.entry
        end = ends.get(e.key.tp)
        if end is not None and e.offset > end:
            out.append(
                LineError(
                    parsed.source,
                    p.line,
                    f"warning: offset {e.offset} is past the log end {end} of "
                    f"{e.topic}/{e.partition}; a consumer will apply auto.offset.reset",
                )
            )
    return out


def select(entries: Iterable[OffsetEntry], groups: Collection[str] | None) -> list[OffsetEntry]:
    """The entries of ``groups`` (all when None or empty), sorted: the export filter."""
    wanted = set(groups or ())
    return sorted(e for e in entries if not wanted or e.group in wanted)


def clamp(offset: int, earliest: int, latest: int) -> tuple[int, str]:
    """``offset`` moved into ``[earliest, latest]``, as kafka-consumer-groups --to-offset does,
    with a note saying why when it moved."""
    if offset < earliest:
        return earliest, f"{offset} is before the earliest offset {earliest}"
    if offset > latest:
        return latest, f"{offset} is past the latest offset {latest}"
    return offset, ""
