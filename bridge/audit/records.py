"""The records of ``__consumer_offsets``: every key and value version, decoded and encoded.

One decoder for the whole project (the audit pipeline, the benchmark baseline, any bridge
code that reads the topic). Layouts, from Kafka 3.9's ``group-coordinator`` message schemas
(``OffsetCommitKey/Value``, ``GroupMetadataKey/Value``); every key and value starts with an
int16 version:

========================  ======  =============================================================
record                    ver     fields
========================  ======  =============================================================
offset commit key         0, 1    group, topic, partition i32
offset commit value       0       offset i64, metadata, commit_timestamp i64
                          1       offset, metadata, commit_timestamp, expire_timestamp i64
                          2       offset, metadata, commit_timestamp
                          3       offset, leader_epoch i32, metadata, commit_timestamp
                          4       v3, flexible (compact strings, tagged fields)
group metadata key        2       group
group metadata value      0-4     protocol_type, generation i32, protocol?, leader?,
                                  current_state_timestamp i64 (v2+), members[]: member_id,
                                  group_instance_id? (v3+), client_id, client_host,
                                  rebalance_timeout i32 (v1+), session_timeout i32,
                                  subscription bytes, assignment bytes; v4 flexible
========================  ======  =============================================================

(``?`` = nullable.) A key whose value is null is a tombstone: offsets expired or deleted, or
the group removed. Keys 3-8 and 16 are a next-generation consumer group's records (KIP-848),
decoded by :mod:`bridge.audit.next_gen` (kind ``consumer_group``). Other key versions (share
and streams groups) and value versions past the table are newer than this code: they
decode to :class:`UnknownKey` / :class:`UnknownValue`, which callers count by version, so a
newer cluster never stops an audit. Bytes that are not what they claim raise
:class:`RecordError` and nothing else. Pure, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bridge.audit import next_gen
from bridge.audit.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
)
from bridge.audit.wire import Reader, RecordError, TaggedFields, Writer

OFFSET_COMMIT_KEY_VERSIONS = (0, 1)
GROUP_METADATA_KEY_VERSIONS = (2,)
OFFSET_COMMIT_VALUE_VERSIONS = (0, 1, 2, 3, 4)
GROUP_METADATA_VALUE_VERSIONS = (0, 1, 2, 3, 4)
#: the first flexible value version, for both value types
FLEXIBLE_FROM = 4

#: names of the key versions Kafka 3.9 defines past the classic ones (for reports only)
NEWER_KEY_NAMES = {
    3: "ConsumerGroupMetadataKey",
    4: "ConsumerGroupPartitionMetadataKey",
    5: "ConsumerGroupMemberMetadataKey",
    6: "ConsumerGroupTargetAssignmentMetadataKey",
    7: "ConsumerGroupTargetAssignmentMemberKey",
    8: "ConsumerGroupCurrentMemberAssignmentKey",
    9: "ShareGroupPartitionMetadataKey",
    10: "ShareGroupMemberMetadataKey",
    11: "ShareGroupMetadataKey",
    16: "ConsumerGroupRegularExpressionKey",
}

Kind = Literal["offset_commit", "group_metadata", "consumer_group", "unknown"]


# -- keys --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int
    version: int = 1

    kind = "offset_commit"


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str
    version: int = 2

    kind = "group_metadata"


@dataclass(frozen=True, slots=True)
class UnknownKey:
    """A key of a version this decoder does not read; only the version is known."""

    version: int

    kind = "unknown"

    @property
    def name(self) -> str:
        return NEWER_KEY_NAMES.get(self.version, f"key v{self.version}")


Key = OffsetCommitKey | GroupMetadataKey | next_gen.ConsumerGroupKey | UnknownKey


def decode_key(data: bytes) -> Key:
    """A record key; raises only :class:`RecordError` (for truncated or malformed bytes)."""
    r = Reader(bytes(data), "__consumer_offsets key")
    version = r.int16()
    if version in OFFSET_COMMIT_KEY_VERSIONS:
        r.what = f"offset commit key v{version}"
        key: Key = OffsetCommitKey(r.string("group"), r.string("topic"), r.int32(), version)
    elif version in GROUP_METADATA_KEY_VERSIONS:
        r.what = f"group metadata key v{version}"
        key = GroupMetadataKey(r.string("group"), version)
    elif version in next_gen.RECORD_TYPES:
        return next_gen.decode_key(data)  # type: ignore[return-value]
    else:
        return UnknownKey(version)
    r.end()
    return key


def encode_key(key: OffsetCommitKey | GroupMetadataKey) -> bytes:
    """The key bytes Kafka writes; ValueError for a version or field out of range."""
    w = Writer()
    if isinstance(key, OffsetCommitKey):
        if key.version not in OFFSET_COMMIT_KEY_VERSIONS:
            raise ValueError(f"offset commit keys are v0 or v1, not v{key.version}")
        w.int16(key.version).string(key.group, "group").string(key.topic, "topic")
        w.int32(key.partition, "partition")
    elif isinstance(key, GroupMetadataKey):
        if key.version not in GROUP_METADATA_KEY_VERSIONS:
            raise ValueError(f"group metadata keys are v2, not v{key.version}")
        w.int16(key.version).string(key.group, "group")
    else:
        raise ValueError(f"cannot encode {type(key).__name__}")
    return w.getvalue()


# -- values ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    metadata: str
    commit_timestamp: int
    version: int = 3
    #: v3+; -1 when unknown (and always -1 before v3)
    leader_epoch: int = -1
    #: v1 only; -1 otherwise
    expire_timestamp: int = -1
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    client_id: str
    client_host: str
    session_timeout: int
    subscription: bytes
    assignment: bytes
    #: v1+; -1 before
    rebalance_timeout: int = -1
    #: v3+ (static membership); None before
    group_instance_id: str | None = None
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    members: tuple[MemberMetadata, ...] = ()
    version: int = 3
    #: v2+; -1 before
    current_state_timestamp: int = -1
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class UnknownValue:
    """A value of a version this decoder does not read (under a key it does read)."""

    kind: Kind
    version: int


#: a next-generation group record's value is its schema's ``ApiData`` (``next_gen``)
Value = OffsetCommitValue | GroupMetadataValue | UnknownValue | object | None


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue | UnknownValue:
    """An offset commit value of any version; newer versions come back as UnknownValue."""
    r = Reader(bytes(data), "offset commit value")
    version = r.int16()
    if version not in OFFSET_COMMIT_VALUE_VERSIONS:
        return UnknownValue("offset_commit", version)
    r.what = f"offset commit value v{version}"
    flexible = version >= FLEXIBLE_FROM
    offset = r.int64()
    leader_epoch = r.int32() if version >= 3 else -1
    metadata = r.compact_string("metadata") if flexible else r.string("metadata")
    commit_timestamp = r.int64()
    expire_timestamp = r.int64() if version == 1 else -1
    tagged = r.tagged_fields() if flexible else ()
    r.end()
    return OffsetCommitValue(
        offset, metadata, commit_timestamp, version, leader_epoch, expire_timestamp, tagged
    )


def encode_offset_commit_value(v: OffsetCommitValue) -> bytes:
    """The value bytes of ``v.version``; fields that version lacks must hold their default."""
    if v.version not in OFFSET_COMMIT_VALUE_VERSIONS:
        raise ValueError(f"offset commit values are v0..v4, not v{v.version}")
    if v.version < 3 and v.leader_epoch != -1:
        raise ValueError(f"leader_epoch needs v3+, not v{v.version}")
    if v.version != 1 and v.expire_timestamp != -1:
        raise ValueError(f"expire_timestamp exists only in v1, not v{v.version}")
    flexible = v.version >= FLEXIBLE_FROM
    if not flexible and v.tagged_fields:
        raise ValueError(f"tagged fields need a flexible version, not v{v.version}")
    w = Writer().int16(v.version).int64(v.offset, "offset")
    if v.version >= 3:
        w.int32(v.leader_epoch, "leader_epoch")
    if flexible:
        w.compact_string(v.metadata, "metadata")
    else:
        w.string(v.metadata, "metadata")
    w.int64(v.commit_timestamp, "commit_timestamp")
    if v.version == 1:
        w.int64(v.expire_timestamp, "expire_timestamp")
    if flexible:
        w.tagged_fields(v.tagged_fields)
    return w.getvalue()


def _read_member(r: Reader, version: int) -> MemberMetadata:
    flexible = version >= FLEXIBLE_FROM
    string = r.compact_string if flexible else r.string
    member_id = string("member_id")
    instance_id = None
    if version >= 3:
        f = r.compact_nullable_string if flexible else r.nullable_string
        instance_id = f("group_instance_id")
    client_id = string("client_id")
    client_host = string("client_host")
    rebalance_timeout = r.int32() if version >= 1 else -1
    session_timeout = r.int32()
    blob = r.compact_bytes if flexible else r.bytes_
    subscription = blob("subscription")
    assignment = blob("assignment")
    tagged = r.tagged_fields() if flexible else ()
    return MemberMetadata(
        member_id,
        client_id,
        client_host,
        session_timeout,
        subscription,
        assignment,
        rebalance_timeout,
        instance_id,
        tagged,
    )


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue | UnknownValue:
    """A group metadata value of any version; newer versions come back as UnknownValue."""
    r = Reader(bytes(data), "group metadata value")
    version = r.int16()
    if version not in GROUP_METADATA_VALUE_VERSIONS:
        return UnknownValue("group_metadata", version)
    r.what = f"group metadata value v{version}"
    flexible = version >= FLEXIBLE_FROM
    if flexible:
        protocol_type = r.compact_string("protocol_type")
        generation = r.int32()
        protocol = r.compact_nullable_string("protocol")
        leader = r.compact_nullable_string("leader")
    else:
        protocol_type = r.string("protocol_type")
        generation = r.int32()
        protocol = r.nullable_string("protocol")
        leader = r.nullable_string("leader")
    state_ts = r.int64() if version >= 2 else -1
    # smallest member: ids/hosts empty (2 bytes each classic, 1 flexible), timeouts, blobs
    if flexible:
        count = r.compact_array_len("members", 3 + 4 + 2 + 1)
    else:
        count = r.array_len("members", 6 + 4 + 8)
    members = tuple(_read_member(r, version) for _ in range(count))
    tagged = r.tagged_fields() if flexible else ()
    r.end()
    return GroupMetadataValue(
        protocol_type, generation, protocol, leader, members, version, state_ts, tagged
    )


def encode_group_metadata_value(v: GroupMetadataValue) -> bytes:
    """The value bytes of ``v.version``; fields that version lacks must hold their default."""
    if v.version not in GROUP_METADATA_VALUE_VERSIONS:
        raise ValueError(f"group metadata values are v0..v4, not v{v.version}")
    if v.version < 2 and v.current_state_timestamp != -1:
        raise ValueError(f"current_state_timestamp needs v2+, not v{v.version}")
    flexible = v.version >= FLEXIBLE_FROM
    if not flexible and v.tagged_fields:
        raise ValueError(f"tagged fields need a flexible version, not v{v.version}")
    w = Writer().int16(v.version)
    if flexible:
        w.compact_string(v.protocol_type, "protocol_type").int32(v.generation, "generation")
        w.compact_string(v.protocol, "protocol", nullable=True)
        w.compact_string(v.leader, "leader", nullable=True)
    else:
        w.string(v.protocol_type, "protocol_type").int32(v.generation, "generation")
        w.string(v.protocol, "protocol", nullable=True)
        w.string(v.leader, "leader", nullable=True)
    if v.version >= 2:
        w.int64(v.current_state_timestamp, "current_state_timestamp")
    if flexible:
        w.compact_array_len(len(v.members), "members")
    else:
        w.array_len(len(v.members), "members")
    for m in v.members:
        _write_member(w, m, v.version)
    if flexible:
        w.tagged_fields(v.tagged_fields)
    return w.getvalue()


def _write_member(w: Writer, m: MemberMetadata, version: int) -> None:
    flexible = version >= FLEXIBLE_FROM
    if version < 1 and m.rebalance_timeout != -1:
        raise ValueError(f"rebalance_timeout needs v1+, not v{version}")
    if version < 3 and m.group_instance_id is not None:
        raise ValueError(f"group_instance_id needs v3+, not v{version}")
    if not flexible and m.tagged_fields:
        raise ValueError(f"tagged fields need a flexible version, not v{version}")
    string = w.compact_string if flexible else w.string
    string(m.member_id, "member_id")
    if version >= 3:
        string(m.group_instance_id, "group_instance_id", nullable=True)
    string(m.client_id, "client_id")
    string(m.client_host, "client_host")
    if version >= 1:
        w.int32(m.rebalance_timeout, "rebalance_timeout")
    w.int32(m.session_timeout, "session_timeout")
    if flexible:
        w.compact_bytes(m.subscription, "subscription").compact_bytes(m.assignment, "assignment")
        w.tagged_fields(m.tagged_fields)
    else:
        w.bytes_(m.subscription, "subscription").bytes_(m.assignment, "assignment")


def decode_value(key: Key, data: bytes | None) -> Value:
    """The value under ``key``: None for a tombstone, UnknownValue for what is not read."""
    if data is None:
        return None
    if isinstance(key, OffsetCommitKey):
        return decode_offset_commit_value(data)
    if isinstance(key, GroupMetadataKey):
        return decode_group_metadata_value(data)
    if isinstance(key, next_gen.ConsumerGroupKey):
        version = value_version(data)
        if version not in next_gen.VALUE_VERSIONS:
            return UnknownValue(next_gen.KIND, version)
        return next_gen.decode_value(key.record_type, data)
    # values under keys this decoder does not read are counted, never parsed
    head = bytes(data[:2])
    version = int.from_bytes(head, "big", signed=True) if len(head) == 2 else -1
    return UnknownValue("unknown", version)


def value_version(data: bytes) -> int:
    """The version a value declares (its first two bytes), without reading the rest."""
    return Reader(bytes(data[:2]), "__consumer_offsets value").int16()


def value_kind(key: Key, version: int) -> Kind:
    """What a value of ``version`` under ``key`` is: its key's kind, or "unknown"."""
    if isinstance(key, OffsetCommitKey) and version in OFFSET_COMMIT_VALUE_VERSIONS:
        return "offset_commit"
    if isinstance(key, GroupMetadataKey) and version in GROUP_METADATA_VALUE_VERSIONS:
        return "group_metadata"
    if isinstance(key, next_gen.ConsumerGroupKey) and version in next_gen.VALUE_VERSIONS:
        return next_gen.KIND
    return "unknown"


def encode_value(value: OffsetCommitValue | GroupMetadataValue) -> bytes:
    if isinstance(value, OffsetCommitValue):
        return encode_offset_commit_value(value)
    if isinstance(value, GroupMetadataValue):
        return encode_group_metadata_value(value)
    raise ValueError(f"cannot encode {type(value).__name__}")


# -- what the audit needs from a group metadata value ------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """A classic group's state as its last metadata record left it."""

    protocol_type: str
    protocol: str | None
    generation: int
    members: int
    #: topics any member subscribes to (consumer groups; empty for others or undecodable)
    topics: tuple[str, ...]
    #: (topic, partition) -> member id, from the members' assignments
    assigned: tuple[tuple[str, int, str], ...]
    #: members whose subscription/assignment blob could not be read, with the reason
    bad_members: tuple[str, ...] = ()


def summarize_group(value: GroupMetadataValue) -> GroupSummary:
    """Topics, assignment and member count; blobs of non-consumer groups are left opaque."""
    topics: set[str] = set()
    assigned: list[tuple[str, int, str]] = []
    bad: list[str] = []
    if value.protocol_type == "consumer":
        for m in value.members:
            try:
                sub: Subscription = decode_subscription(m.subscription)
                topics.update(sub.topics)
                if m.assignment:  # empty until the member has synced
                    a: Assignment = decode_assignment(m.assignment)
                    assigned += [(t, p, m.member_id) for t, ps in a.partitions for p in ps]
            except RecordError as exc:
                bad.append(f"{m.member_id}: {exc}")
    return GroupSummary(
        value.protocol_type,
        value.protocol,
        value.generation,
        len(value.members),
        tuple(sorted(topics)),
        tuple(sorted(assigned)),
        tuple(bad),
    )
