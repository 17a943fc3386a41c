"""Stage 1's Python side: decode (raw key, value version) pairs and compact them.

This is what runs in the Python workers (the ``mapInArrow`` body of
:func:`bridge.audit.compaction.decode_latest`), so it imports neither pyspark nor the
job's other modules - a worker of a real cluster loads only this, the decoders
(:mod:`bridge.audit.records`, and kafka-python's structs for the next-generation groups'
records, :mod:`bridge.audit.next_gen`) and pyarrow. It is also what the unit tests and the fuzzer
exercise without a JVM.

Each distinct raw key is decoded once, each pair's value version read from its 2-byte
prefix, and only the values of the rows compaction keeps are decoded: the Python cost grows
with the number of distinct keys, not with the number of commits.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from bridge.audit import next_gen
from bridge.audit.next_gen import ConsumerGroupKey
from bridge.audit.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    Key,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownValue,
    decode_key,
    decode_value,
    summarize_group,
    value_kind,
    value_version,
)
from bridge.audit.wire import RecordError

#: key and value kinds of the decoded table (besides the record kinds of records.py)
TOMBSTONE = "tombstone"
UNDECODABLE = "undecodable"

DECODED_SCHEMA = (
    "key BINARY, key_kind STRING, key_version INT, group STRING, topic STRING, partition INT, "
    "value_kind STRING, value_version INT, records BIGINT, first_ts BIGINT, last_ts BIGINT, "
    "latest_partition INT, latest_offset BIGINT, latest_ts BIGINT, "
    "commit_offset BIGINT, commit_timestamp BIGINT, commit_metadata STRING, "
    "leader_epoch INT, expire_timestamp BIGINT, "
    "protocol_type STRING, protocol STRING, generation INT, members INT, "
    "member_topics ARRAY<STRING>, error STRING, "
    # next-generation (consumer-type) groups' records: the member a record is about (for a
    # regular-expression record, type 16, the pattern)
    "member_id STRING, "
    # set by the compaction (see compact_rows)
    "kept BOOLEAN, kafka_commits BIGINT, kafka_tombstones BIGINT, "
    "kafka_first_commit_ts BIGINT, kafka_last_record_ts BIGINT"
)


def key_fields(key: bytes) -> tuple[dict[str, Any], Key | None]:
    """A raw key's decoded fields, and the key (None when undecodable)."""
    try:
        k = decode_key(key)
    except RecordError as exc:
        return {"key_kind": UNDECODABLE, "value_kind": UNDECODABLE, "error": str(exc)}, None
    out: dict[str, Any] = {"key_kind": k.kind, "key_version": k.version}
    if isinstance(k, OffsetCommitKey | GroupMetadataKey | ConsumerGroupKey):
        out["group"] = k.group
    if isinstance(k, ConsumerGroupKey):
        out["member_id"] = k.member_id
    if isinstance(k, OffsetCommitKey):
        out["topic"], out["partition"] = k.topic, k.partition
    return out, k


def pair_fields(
    fields: dict[str, Any], k: Key | None, vhead: bytes | None
) -> tuple[dict[str, Any], Key | None]:
    """A (raw key, value version) pair's fields from its :func:`key_fields`, values unread.

    The second item is the key when the pair's values are for :func:`value_fields` to read,
    else None (undecodable key or version, tombstone, version this decoder does not know).
    """
    out = dict(fields)
    if k is None:
        return out, None
    if vhead is None:
        out["value_kind"] = TOMBSTONE
        return out, None
    version, error = _value_version(bytes(vhead))
    if error is not None:
        out["value_kind"], out["error"] = UNDECODABLE, error
        return out, None
    out["value_version"] = version
    out["value_kind"] = value_kind(k, version)
    if out["value_kind"] == "unknown":
        return out, None
    return out, k


@functools.lru_cache(maxsize=256)
def _value_version(vhead: bytes) -> tuple[int | None, str | None]:
    """:func:`value_version` of a value's first two bytes, or its error (few distinct)."""
    try:
        return value_version(vhead), None
    except RecordError as exc:
        return None, str(exc)


def value_fields(k: Key, value: bytes | None) -> dict[str, Any]:
    """The decoded fields of a value under key ``k`` (an ``error`` when it does not decode)."""
    try:
        v = decode_value(k, value)
    except RecordError as exc:
        return {"error": str(exc)}
    if isinstance(v, OffsetCommitValue):
        return {
            "commit_offset": v.offset,
            "commit_timestamp": v.commit_timestamp,
            "commit_metadata": v.metadata,
            "leader_epoch": v.leader_epoch,
            "expire_timestamp": v.expire_timestamp,
        }
    if isinstance(v, GroupMetadataValue):
        s = summarize_group(v)
        out: dict[str, Any] = {
            "protocol_type": s.protocol_type,
            "protocol": s.protocol,
            "generation": s.generation,
            "members": s.members,
            "member_topics": list(s.topics),
        }
        if s.bad_members:
            out["error"] = "; ".join(s.bad_members)[:2000]
        return out
    if isinstance(k, ConsumerGroupKey) and v is not None and not isinstance(v, UnknownValue):
        return next_gen.summary(k.record_type, v)
    return {}


def decode_row(key: bytes, vhead: bytes | None, latest_value: bytes | None) -> dict[str, Any]:
    """Decoded fields of one (raw key, value version) group and its latest value."""
    out, k = pair_fields(*key_fields(key), vhead)
    if k is not None:
        out |= value_fields(k, latest_value)
    return out


def compaction_key(row: dict[str, Any]) -> tuple[Any, ...] | None:
    """What the group coordinator compacts a decoded row under; None for other keys."""
    if row["key_kind"] == "offset_commit":
        return ("offset_commit", row["group"], row["topic"], row["partition"])
    if row["key_kind"] == "group_metadata":
        return ("group_metadata", row["group"])
    if row["key_kind"] == next_gen.KIND:  # per group and record type, and member
        return (next_gen.KIND, row["group"], row["key_version"], row.get("member_id"))
    return None


def compact_rows(rows: list[dict[str, Any]], positions: list[tuple[int, int] | None]) -> None:
    """Compact decoded rows in place, as the group coordinator loads the topic.

    ``rows`` are :func:`decode_row` results, one per (raw key, value version) pair with its
    ``records``, ``first_ts`` and ``last_ts``, and ``positions[i]`` is (partition, offset) of
    the latest record of ``rows[i]`` (None when it was not found). Per (group, topic,
    partition) of the offset commit keys, per group of the group metadata keys and per (group,
    record type, member) of a next-generation group's records, the row
    whose latest record comes last in the log gets ``kept=True`` - a tombstone kept means
    deleted - and, for offset commits, the counts over all of the key's rows: records that
    are commits and tombstones, first commit and last commit time. A pair with no position
    never beats one with a position. Every row of one key must be in ``rows``.
    """
    # per compaction key: [row kept, its position, commits, tombstones, first, last]
    state: dict[tuple[Any, ...], list[Any]] = {}
    for i, row in enumerate(rows):
        ck = compaction_key(row)
        if ck is None:
            continue
        pos = positions[i]
        st = state.get(ck)
        if st is None:
            st = state[ck] = [i, pos, 0, 0, None, None]
        elif pos is not None and (st[1] is None or st[1] < pos):
            st[0], st[1] = i, pos
        if ck[0] != "offset_commit":
            continue
        if row["value_kind"] == TOMBSTONE:
            st[3] += row["records"]
        else:
            st[2] += row["records"]
            if st[4] is None or row["first_ts"] < st[4]:
                st[4] = row["first_ts"]
            if st[5] is None or row["last_ts"] > st[5]:
                st[5] = row["last_ts"]
    for ck, (i, _, commits, tombstones, first, last) in state.items():
        row = rows[i]
        row["kept"] = True
        if ck[0] == "offset_commit":
            row["kafka_commits"], row["kafka_tombstones"] = commits, tombstones
            row["kafka_first_commit_ts"], row["kafka_last_record_ts"] = first, last


COMPACTED_AWAY = "the latest record was compacted away while the audit read it"


def _decode_batches(batches: Iterator[Any]) -> Iterator[Any]:
    """mapInArrow body: a partition's pairs in, decoded and compacted rows out.

    Runs in Python workers. The partition holds every pair of its groups (see
    :func:`bridge.audit.compaction.decode_latest`), so it is compacted whole: each distinct
    key is decoded once, each pair's value version read, the rows compacted
    (:func:`compact_rows`), and only the values of the rows compaction keeps are decoded -
    the others are counted, their values never read. Rows go back once all are in.
    """
    import gc

    # the rows held until the partition is in are many small dicts and no cycles: the
    # collector would scan them all over again as they pile up
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield from _decode_partition(batches)
    finally:
        if collecting:
            gc.enable()


#: the columns of a decoding task's input, in the order :func:`_pair_rows` reads them
_PAIR_COLUMNS = (
    "key",
    "vhead",
    "latest_value",
    "latest_partition",
    "latest_offset",
    "records",
    "first_ts",
    "last_ts",
)
#: columns that go out as they came in (the decoder adds the others)
_PASSED = (
    "key",
    "records",
    "first_ts",
    "last_ts",
    "latest_partition",
    "latest_offset",
    "latest_ts",
)


@dataclass
class _Pairs:
    """A decoding task's pairs, read: the input batches with their rows, for the output."""

    batches: list[tuple[Any, list[dict[str, Any]]]] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    #: (partition, offset) of each row's latest record, None when it was not found
    positions: list[tuple[int, int] | None] = field(default_factory=list)
    #: row -> (key, latest value) to decode if compaction keeps the row
    values: dict[int, tuple[Key, bytes | None]] = field(default_factory=dict)


def _pair_rows(batches: Iterator[Any]) -> _Pairs:
    """Every pair's key fields and value version, each distinct key decoded once."""
    pairs = _Pairs()
    rows, positions = pairs.rows, pairs.positions
    keys_seen: dict[bytes, tuple[dict[str, Any], Key | None]] = {}
    for batch in batches:
        cols = [batch.column(n).to_pylist() for n in _PAIR_COLUMNS]
        start = len(rows)
        for key, vhead, value, part, offset, n, first, last in zip(*cols, strict=True):
            known = keys_seen.get(key)
            if known is None:
                known = keys_seen[key] = key_fields(key)
            if part is not None:
                row, k = pair_fields(*known, vhead)
                if k is not None:
                    pairs.values[len(rows)] = (k, value)
                positions.append((part, offset))
            else:
                row, _ = pair_fields(*known, None)
                row["value_kind"] = UNDECODABLE
                row["error"] = COMPACTED_AWAY
                positions.append(None)
            row["records"], row["first_ts"], row["last_ts"] = n, first, last
            rows.append(row)
        pairs.batches.append((batch, rows[start:]))
    return pairs


def _decode_partition(batches: Iterator[Any]) -> Iterator[Any]:
    """:func:`_decode_batches` without the collector switched off."""
    import pyarrow as pa

    pairs = _pair_rows(batches)
    rows = pairs.rows
    compact_rows(rows, pairs.positions)
    for i, (k, value) in pairs.values.items():
        if rows[i].get("kept"):
            rows[i] |= value_fields(k, value)
    made = pa.schema([f for f in DECODED_ARROW if f.name not in _PASSED])
    for batch, part_rows in pairs.batches:
        out = pa.RecordBatch.from_pylist(part_rows, schema=made)
        cols = [batch.column(n) if n in _PASSED else out.column(n) for n in DECODED_ARROW.names]
        yield pa.RecordBatch.from_arrays(cols, schema=DECODED_ARROW)


def _decoded_arrow_schema():
    """:data:`DECODED_SCHEMA` as a pyarrow schema (None where pyarrow is not installed)."""
    try:
        import pyarrow as pa
    except ImportError:
        return None
    t = {
        "BINARY": pa.binary(),
        "STRING": pa.string(),
        "INT": pa.int32(),
        "BIGINT": pa.int64(),
        "ARRAY<STRING>": pa.list_(pa.string()),
        "BOOLEAN": pa.bool_(),
    }
    fields = [f.strip().split(" ", 1) for f in DECODED_SCHEMA.split(", ")]
    return pa.schema([(n, t[ty]) for n, ty in fields])


DECODED_ARROW = _decoded_arrow_schema()
