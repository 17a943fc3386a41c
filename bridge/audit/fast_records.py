"""The common offset commit records of ``__consumer_offsets`` in one pass each.

The bridge's follower decodes every commit of the cluster (a hundred records for a commit
of a hundred partitions); through the checked :class:`~bridge.audit.wire.Reader` that was
a seventh of the groups flow's main thread in ``bench.fleet``. Here a key (v0, v1) or a
classic value (v0-v3) that is exactly what it claims is unpacked with ``struct`` at once;
anything else (another version, a flexible value, a length that does not add up, bad
UTF-8) gives None, and the caller takes the checked decoder, which says what is wrong.
Same results as :mod:`bridge.audit.records` (its property tests compare them). Pure.
"""

from __future__ import annotations

import struct

from bridge.audit.records import OffsetCommitKey, OffsetCommitValue

_KEY_HEAD = struct.Struct(">hh")  # version, group's length
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_V0_HEAD = struct.Struct(">hqh")  # v0-v2: version, offset, metadata's length
_V3_HEAD = struct.Struct(">hqih")  # v3: version, offset, leader epoch, metadata's length
_V1_TAIL = struct.Struct(">qq")  # v1: commit and expire timestamps


def offset_commit_key(data: bytes) -> OffsetCommitKey | None:
    """An offset commit key v0/v1, or None: not one, or not well formed (the checked
    decoder then says why)."""
    fields = commit_key_fields(data)
    return OffsetCommitKey(*fields) if fields is not None else None


def offset_commit_value(data: bytes) -> OffsetCommitValue | None:
    """An offset commit value v0-v3, or None: another version (v4 is flexible), or not
    well formed (the checked decoder then says why)."""
    fields = commit_value_fields(data)
    return OffsetCommitValue(*fields, ()) if fields is not None else None


def commit_key_fields(data: bytes) -> tuple[str, str, int, int] | None:
    """:func:`offset_commit_key`'s fields (group, topic, partition, version), no object
    made (the follower needs only the event it makes of them)."""
    n = len(data)
    if n < 10:
        return None
    version, group_len = _KEY_HEAD.unpack_from(data, 0)
    topic_at = 4 + group_len
    if version not in (0, 1) or group_len < 0 or topic_at + 2 > n:
        return None
    (topic_len,) = _I16.unpack_from(data, topic_at)
    end = topic_at + 2 + topic_len
    if topic_len < 0 or end + 4 != n:
        return None
    try:
        group = bytes(data[4:topic_at]).decode("utf-8")
        topic = bytes(data[topic_at + 2 : end]).decode("utf-8")
    except UnicodeDecodeError:
        return None
    return group, topic, _I32.unpack_from(data, end)[0], version


def commit_value_fields(data: bytes) -> tuple[int, str, int, int, int, int] | None:
    """:func:`offset_commit_value`'s fields (offset, metadata, commit timestamp, version,
    leader epoch, expire timestamp), no object made."""
    n = len(data)
    if n < 20:  # the shortest: v0 with empty metadata
        return None
    (version,) = _I16.unpack_from(data, 0)
    if version == 3:
        _, offset, leader_epoch, meta_len = _V3_HEAD.unpack_from(data, 0)
        at = _V3_HEAD.size
    elif version in (0, 1, 2):
        _, offset, meta_len = _V0_HEAD.unpack_from(data, 0)
        leader_epoch, at = -1, _V0_HEAD.size
    else:
        return None
    end = at + meta_len
    if meta_len < 0 or end + (16 if version == 1 else 8) != n:
        return None
    try:
        metadata = bytes(data[at:end]).decode("utf-8")
    except UnicodeDecodeError:
        return None
    if version == 1:
        committed, expires = _V1_TAIL.unpack_from(data, end)
    else:
        committed, expires = _I64.unpack_from(data, end)[0], -1
    return offset, metadata, committed, version, leader_epoch, expires
