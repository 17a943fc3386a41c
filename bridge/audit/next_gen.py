"""The next-generation consumer group records of ``__consumer_offsets`` (KIP-848). Pure.

Kafka 3.7+ coordinators write a ``consumer``-type group as records of their own beside the
offset commits: the group's epoch, its members (who, what they subscribe to), the target
assignment (what the broker wants each member to own) and each member's current
assignment (what it owns now). A key starts with the record type, then the group id (and
the member id, or the pattern); a value starts with its version, 0 in every Kafka release
so far. The layouts are kafka-python 3 ``ApiData`` structs generated from Kafka's JSON
schemas of those records (``bridge/audit/schemas``), as ``bridge.kafka.messages`` does for
ConsumerGroupDescribe.

========================================  ====  ==========================================
record (type)                             key   value v0
========================================  ====  ==========================================
ConsumerGroupMetadata (3)                 g     epoch; metadata hash (tag 0, 4.1+)
ConsumerGroupPartitionMetadata (4)        g     subscribed topics: id, name, partitions
ConsumerGroupMemberMetadata (5)           g, m  instance, rack, client id/host, subscribed
                                                topics and pattern, rebalance timeout,
                                                server assignor (tag 0, a classic member's
                                                protocols, is skipped: see its schema)
ConsumerGroupTargetAssignmentMetadata (6) g     assignment epoch, timestamp (tag 0)
ConsumerGroupTargetAssignmentMember (7)   g, m  target partitions per topic id
ConsumerGroupCurrentMemberAssignment (8)  g, m  member and previous epoch, state, owned and
                                                pending-revocation partitions per topic id
ConsumerGroupRegularExpression (16, 4.0+) g, re  the topics pattern ``re`` resolved to, the
                                                metadata version and time it was resolved
========================================  ====  ==========================================

A key's second part (``m`` or ``re``) is :attr:`ConsumerGroupKey.member_id`: what the record
is about within its group, which is what the coordinator compacts it under. Bytes that are
not what they claim raise :class:`RecordError` and nothing else.
"""

from __future__ import annotations

import io
import types
from dataclasses import dataclass
from typing import Any

from kafka.protocol.api_data import ApiData

from bridge.audit import schemas
from bridge.audit.wire import Reader, RecordError, Writer

#: record type -> record name (the key and value schemas are ``<name>Key``/``<name>Value``)
RECORD_TYPES = {
    3: "ConsumerGroupMetadata",
    4: "ConsumerGroupPartitionMetadata",
    5: "ConsumerGroupMemberMetadata",
    6: "ConsumerGroupTargetAssignmentMetadata",
    7: "ConsumerGroupTargetAssignmentMember",
    8: "ConsumerGroupCurrentMemberAssignment",
    16: "ConsumerGroupRegularExpression",
}
METADATA, PARTITION_METADATA, MEMBER_METADATA = 3, 4, 5
TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT = 6, 7, 8
REGULAR_EXPRESSION = 16
#: the record types whose key names a member (or, for 16, a pattern) after the group
PER_MEMBER = (MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT, REGULAR_EXPRESSION)
#: the value versions Kafka defines for every one of them
VALUE_VERSIONS = (0,)
#: the kind of their keys and values in the audit's tables
KIND = "consumer_group"
#: group types (ListGroups v5's words), as the audit's ``groups`` table names them
CLASSIC, CONSUMER = "classic", "consumer"


def _message(name: str) -> type[ApiData]:
    return types.new_class(name, (ApiData,), {"load_json": schemas})


KEYS: dict[int, type[ApiData]] = {t: _message(f"{n}Key") for t, n in RECORD_TYPES.items()}
VALUES: dict[int, type[ApiData]] = {t: _message(f"{n}Value") for t, n in RECORD_TYPES.items()}


@dataclass(frozen=True, slots=True)
class ConsumerGroupKey:
    """The key of a next-generation group record: its type, group and, for a member's
    records, the member it is about (for a regular-expression record: the pattern)."""

    record_type: int
    group: str
    member_id: str | None = None

    kind = KIND

    @property
    def version(self) -> int:
        """What the key's first two bytes say: the record type."""
        return self.record_type

    @property
    def name(self) -> str:
        return RECORD_TYPES[self.record_type] + "Key"


def _decode(cls: type[ApiData], data: bytes, what: str) -> Any:
    """``data`` read whole as ``cls`` at version 0; anything else is a RecordError."""
    buf = io.BytesIO(data)
    try:
        msg = cls.decode(buf, version=0, header=False)
    except Exception as exc:  # kafka-python raises struct.error, ValueError, ...
        reason = f"{type(exc).__name__}: {exc}"[:200]  # kafka-python's words, bounded
        raise RecordError(what, reason, data=data) from None
    left = len(data) - buf.tell()
    if left:
        raise RecordError(what, f"{left} bytes left over", data=data)
    return msg


def decode_key(data: bytes) -> ConsumerGroupKey | None:
    """The key of a next-generation group record, None for a key of another type."""
    data = bytes(data)
    record_type = Reader(data, "__consumer_offsets key").int16()
    if record_type not in RECORD_TYPES:
        return None
    what = f"{RECORD_TYPES[record_type]}Key (key v{record_type})"
    msg = _decode(KEYS[record_type], data[2:], what)
    if record_type == REGULAR_EXPRESSION:
        about = msg.regular_expression
    else:
        about = getattr(msg, "member_id", None)
    return ConsumerGroupKey(record_type, msg.group_id, about)


def encode_key(key: ConsumerGroupKey) -> bytes:
    """The key bytes Kafka writes; ValueError for a type without such a key."""
    cls = KEYS.get(key.record_type)
    if cls is None:
        raise ValueError(f"record type {key.record_type} is not a consumer group record")
    fields: dict[str, Any] = {"group_id": key.group}
    if key.record_type == REGULAR_EXPRESSION:
        fields["regular_expression"] = key.member_id
    elif key.record_type in PER_MEMBER:
        fields["member_id"] = key.member_id
    try:
        body = cls(version=0, **fields).encode(header=False)
    except Exception as exc:
        raise ValueError(f"cannot encode {key}: {exc}") from None
    return Writer().int16(key.record_type, "record type").getvalue() + body


def decode_value(record_type: int, data: bytes) -> Any:
    """The value of a record of ``record_type``: the ``ApiData`` of its schema (fields by
    their snake_case names). RecordError for a version Kafka does not define."""
    data = bytes(data)
    name = RECORD_TYPES[record_type]
    version = Reader(data, f"{name}Value").int16()
    if version not in VALUE_VERSIONS:
        raise RecordError(f"{name}Value", f"version {version} is not defined", data=data)
    return _decode(VALUES[record_type], data[2:], f"{name}Value v{version}")


def encode_value(record_type: int, value: Any) -> bytes:
    """``value`` (the type's ``ApiData``) as Kafka writes it, version first."""
    return Writer().int16(0).getvalue() + value.encode(version=0, header=False)


def summary(record_type: int, value: Any) -> dict[str, Any]:
    """What the audit's decoded table keeps of a value, in its columns: the group epoch
    (``generation``), and for a member its subscribed topics, its server assignor
    (``protocol``) and ``members = 1``, so a group's members are counted as in a classic
    group's metadata record."""
    out: dict[str, Any] = {"protocol_type": "consumer"}
    if record_type == METADATA:
        out["generation"] = value.epoch
    elif record_type == MEMBER_METADATA:
        out["members"] = 1
        out["member_topics"] = sorted(set(value.subscribed_topic_names or ()))
        out["protocol"] = value.server_assignor
    elif record_type == CURRENT_ASSIGNMENT:
        out["generation"] = value.member_epoch
    return out


def examples(group: str = "group-1") -> list[tuple[ConsumerGroupKey, Any]]:
    """One record of each type as a two-member group's coordinator writes them (seeds of
    the fuzzer and the tests)."""
    import uuid

    topic_id = uuid.UUID(int=0x5EED)
    v = VALUES

    def parts(cls: Any, ps: list[int], **epochs: Any) -> list[Any]:
        return [cls.TopicPartitions(topic_id=topic_id, partitions=ps, **epochs)]

    tpm = v[PARTITION_METADATA].TopicMetadata
    current = v[CURRENT_ASSIGNMENT]
    return [
        (ConsumerGroupKey(METADATA, group), v[METADATA](epoch=7, metadata_hash=99)),
        (
            ConsumerGroupKey(PARTITION_METADATA, group),
            v[PARTITION_METADATA](
                topics=[
                    tpm(
                        topic_id=topic_id,
                        topic_name="orders",
                        num_partitions=2,
                        partition_metadata=[tpm.PartitionMetadata(partition=0, racks=["r1"])],
                    )
                ]
            ),
        ),
        (
            ConsumerGroupKey(MEMBER_METADATA, group, "m-1"),
            v[MEMBER_METADATA](
                instance_id=None,
                rack_id="r1",
                client_id="c-1",
                client_host="/10.0.0.1",
                subscribed_topic_names=["orders"],
                subscribed_topic_regex=None,
                rebalance_timeout_ms=300_000,
                server_assignor="uniform",
            ),
        ),
        (ConsumerGroupKey(TARGET_METADATA, group), v[TARGET_METADATA](assignment_epoch=7)),
        (
            ConsumerGroupKey(TARGET_MEMBER, group, "m-1"),
            v[TARGET_MEMBER](topic_partitions=parts(v[TARGET_MEMBER], [0, 1])),
        ),
        (
            ConsumerGroupKey(CURRENT_ASSIGNMENT, group, "m-1"),
            current(
                member_epoch=7,
                previous_member_epoch=6,
                state=0,
                assigned_partitions=parts(current, [0], assignment_epochs=[7]),
                partitions_pending_revocation=parts(current, [1], assignment_epochs=None),
            ),
        ),
        (
            ConsumerGroupKey(REGULAR_EXPRESSION, group, "orders-.*"),
            v[REGULAR_EXPRESSION](
                topics=["orders-eu", "orders-us"], resolved_version=42, timestamp=1_700_000_000_000
            ),
        ),
    ]
