"""The consumer protocol's subscription and assignment blobs (``protocol_type`` "consumer").

Group metadata records carry each member's subscription and assignment as opaque bytes; for
consumer groups these are ``ConsumerProtocolSubscription`` v0-3 and
``ConsumerProtocolAssignment`` v0-3 (classic encoding, never flexible):

* subscription: ``version i16, topics [string], user_data nullable bytes``, v1+
  ``owned_partitions [{topic, partitions [i32]}]``, v2+ ``generation_id i32``, v3+
  ``rack_id nullable string``;
* assignment: ``version i16, assigned_partitions [{topic, partitions [i32]}], user_data``.

Kafka's contract for these blobs is forward compatible: a newer version only appends fields,
and readers parse it with the newest layout they know, ignoring the rest. The decoder does the
same (and keeps the declared version), so a newer client never makes a group undecodable.
Pure, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from bridge.audit.wire import Reader, Writer

#: the newest versions whose layout is known; newer ones are read with this layout
SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 3

#: topic -> partitions, in wire order
TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class Subscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: TopicPartitions = ()
    generation_id: int = -1
    rack_id: str | None = None
    version: int = SUBSCRIPTION_VERSION


@dataclass(frozen=True, slots=True)
class Assignment:
    partitions: TopicPartitions
    user_data: bytes | None = None
    version: int = ASSIGNMENT_VERSION


def _read_topic_partitions(r: Reader, field: str) -> TopicPartitions:
    out = []
    for _ in range(r.array_len(field, 6)):
        topic = r.string(f"{field} topic")
        parts = tuple(r.int32() for _ in range(r.array_len(f"{field} partitions", 4)))
        out.append((topic, parts))
    return tuple(out)


def _write_topic_partitions(w: Writer, tps: TopicPartitions, field: str) -> None:
    w.array_len(len(tps), field)
    for topic, parts in tps:
        w.string(topic, f"{field} topic")
        w.array_len(len(parts), f"{field} partitions")
        for p in parts:
            w.int32(p, f"{field} partition")


def _version(r: Reader) -> int:
    version = r.int16()
    if version < 0:
        r.fail(f"negative version {version}")
    return version


def decode_subscription(data: bytes) -> Subscription:
    """A member's subscription; raises only :class:`RecordError`."""
    r = Reader(bytes(data), "consumer protocol subscription")
    version = _version(r)
    topics = tuple(r.string("topic") for _ in range(r.array_len("topics", 2)))
    user_data = r.nullable_bytes("user_data")
    owned: TopicPartitions = ()
    generation_id, rack_id = -1, None
    if version >= 1:
        owned = _read_topic_partitions(r, "owned_partitions")
    if version >= 2:
        generation_id = r.int32()
    if version >= 3:
        rack_id = r.nullable_string("rack_id")
    if version <= SUBSCRIPTION_VERSION:
        r.end()
    return Subscription(topics, user_data, owned, generation_id, rack_id, version)


def encode_subscription(s: Subscription) -> bytes:
    """The blob a consumer of ``s.version`` sends; ValueError names a bad field."""
    if not 0 <= s.version <= SUBSCRIPTION_VERSION:
        raise ValueError(f"subscription version {s.version} is not 0..{SUBSCRIPTION_VERSION}")
    w = Writer().int16(s.version).array_len(len(s.topics), "topics")
    for t in s.topics:
        w.string(t, "topic")
    w.bytes_(s.user_data, "user_data", nullable=True)
    if s.version >= 1:
        _write_topic_partitions(w, s.owned_partitions, "owned_partitions")
    elif s.owned_partitions:
        raise ValueError("owned_partitions needs subscription v1+")
    if s.version >= 2:
        w.int32(s.generation_id, "generation_id")
    if s.version >= 3:
        w.string(s.rack_id, "rack_id", nullable=True)
    elif s.rack_id is not None:
        raise ValueError("rack_id needs subscription v3+")
    return w.getvalue()


def decode_assignment(data: bytes) -> Assignment:
    """A member's assignment; raises only :class:`RecordError`."""
    r = Reader(bytes(data), "consumer protocol assignment")
    version = _version(r)
    partitions = _read_topic_partitions(r, "assigned_partitions")
    user_data = r.nullable_bytes("user_data")
    if version <= ASSIGNMENT_VERSION:
        r.end()
    return Assignment(partitions, user_data, version)


def encode_assignment(a: Assignment) -> bytes:
    """The blob the group leader sends for one member; ValueError names a bad field."""
    if not 0 <= a.version <= ASSIGNMENT_VERSION:
        raise ValueError(f"assignment version {a.version} is not 0..{ASSIGNMENT_VERSION}")
    w = Writer().int16(a.version)
    _write_topic_partitions(w, a.partitions, "assigned_partitions")
    w.bytes_(a.user_data, "user_data", nullable=True)
    return w.getvalue()
