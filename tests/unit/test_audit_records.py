"""The ``__consumer_offsets`` decoder against bytes built by hand from Kafka 3.9's schemas.

Every golden vector below is spelled out field by field from the JSON message definitions
(``group-coordinator/src/main/resources/common/message/{OffsetCommit,GroupMetadata}{Key,
Value}.json`` and ``clients/.../ConsumerProtocol{Subscription,Assignment}.json`` at 3.9):
classic strings are an int16 length then UTF-8, nullable ones ``ffff`` when null; bytes an
int32 length; arrays an int32 count; flexible versions use unsigned varint length + 1 and end
every struct with tagged fields. Each vector is decoded, and re-encoded to the same bytes.
"""

from __future__ import annotations

import pytest

from bridge.audit.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from bridge.audit.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownKey,
    UnknownValue,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    decode_value,
    encode_key,
    encode_value,
    summarize_group,
    value_kind,
    value_version,
)
from bridge.audit.wire import RecordError
from zkpaths import CodecError


def h(*parts: str) -> bytes:
    """Hex chunks (spaces allowed) joined: one chunk per field keeps vectors readable."""
    return bytes.fromhex("".join(p.replace(" ", "") for p in parts))


GROUP = "0005 67726f7570"  # "group"
TOPIC = "0005 746f706963"  # "topic"
TS = "0000018bcfe56800"  # 1700000000000
TS2 = "0000018bd50bc400"  # 1700086400000 (one day later)

# -- keys ---------------------------------------------------------------------------------------

KEYS = {
    "offset commit key v0": (
        h("0000", GROUP, TOPIC, "00000007"),
        OffsetCommitKey("group", "topic", 7, 0),
    ),
    "offset commit key v1": (
        h("0001", GROUP, TOPIC, "0000002a"),
        OffsetCommitKey("group", "topic", 42, 1),
    ),
    "offset commit key v1, unicode": (
        h("0001", "0004 67c3a97a", "0001 74", "00000000"),  # "géz", "t"
        OffsetCommitKey("géz", "t", 0, 1),
    ),
    "group metadata key v2": (h("0002", GROUP), GroupMetadataKey("group", 2)),
    "group metadata key v2, empty group": (h("0002", "0000"), GroupMetadataKey("", 2)),
}


@pytest.mark.parametrize("name", KEYS)
def test_golden_keys(name: str) -> None:
    data, key = KEYS[name]
    assert decode_key(data) == key
    assert encode_key(key) == data


@pytest.mark.parametrize("version", [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 100, -1, -32768])
def test_newer_and_unknown_key_versions_are_recognised_not_parsed(version: int) -> None:
    # KIP-848 ConsumerGroupMetadataKey v3 is "version, group id": only the version is read
    data = version.to_bytes(2, "big", signed=True) + h(GROUP)
    key = decode_key(data)
    assert key == UnknownKey(version)
    assert key.kind == "unknown"
    assert decode_value(key, h("0000 0102")) == UnknownValue("unknown", 0)
    assert decode_value(key, None) is None
    assert decode_value(key, b"\x01") == UnknownValue("unknown", -1)


def test_newer_key_names_for_reports() -> None:
    assert UnknownKey(3).name == "ConsumerGroupMetadataKey"
    assert UnknownKey(11).name == "ShareGroupMetadataKey"
    assert UnknownKey(42).name == "key v42"


# -- offset commit values -------------------------------------------------------------------------

OFFSET_VALUES = {
    "v0": (
        h("0000", "000000000000002a", "0002 6d64", TS),
        OffsetCommitValue(42, "md", 1700000000000, 0),
    ),
    "v1 (expire timestamp after the commit timestamp)": (
        h("0001", "000000000000002a", "0000", TS, TS2),
        OffsetCommitValue(42, "", 1700000000000, 1, expire_timestamp=1700086400000),
    ),
    "v1, no expiry": (
        h("0001", "0000000000000000", "0000", TS, "ffffffffffffffff"),
        OffsetCommitValue(0, "", 1700000000000, 1),
    ),
    "v2": (
        h("0002", "7fffffffffffffff", "0001 78", TS),
        OffsetCommitValue(2**63 - 1, "x", 1700000000000, 2),
    ),
    "v3 (leader epoch before the metadata)": (
        h("0003", "00000000000003e8", "00000005", "0002 6d64", TS),
        OffsetCommitValue(1000, "md", 1700000000000, 3, leader_epoch=5),
    ),
    "v3, epoch unknown": (
        h("0003", "00000000000003e8", "ffffffff", "0000", TS),
        OffsetCommitValue(1000, "", 1700000000000, 3),
    ),
    "v4 flexible: compact metadata, no tagged fields": (
        h("0004", "00000000000003e8", "00000005", "03 6d64", TS, "00"),
        OffsetCommitValue(1000, "md", 1700000000000, 4, leader_epoch=5),
    ),
    "v4 flexible with tagged fields": (
        h("0004", "00000000000003e8", "00000005", "01", TS, "02", "00 02 abcd", "05 00"),
        OffsetCommitValue(
            1000, "", 1700000000000, 4, leader_epoch=5, tagged_fields=((0, b"\xab\xcd"), (5, b""))
        ),
    ),
}


@pytest.mark.parametrize("name", OFFSET_VALUES)
def test_golden_offset_commit_values(name: str) -> None:
    data, value = OFFSET_VALUES[name]
    key = OffsetCommitKey("g", "t", 0)
    assert decode_value(key, data) == value
    assert decode_offset_commit_value(data) == value
    assert encode_value(value) == data
    assert value_version(data) == value.version
    assert value_kind(key, value.version) == "offset_commit"


def test_offset_commit_v4_metadata_longer_than_127_bytes_uses_a_two_byte_varint() -> None:
    meta = "m" * 200  # length + 1 = 201 = 0xc9 -> varint c9 01
    data = h("0004", "0000000000000001", "ffffffff", "c901") + b"m" * 200 + h(TS, "00")
    assert decode_offset_commit_value(data) == OffsetCommitValue(1, meta, 1700000000000, 4)
    assert encode_value(OffsetCommitValue(1, meta, 1700000000000, 4)) == data


@pytest.mark.parametrize("version", [5, 6, 100, -1])
def test_newer_offset_commit_value_versions_are_counted_not_parsed(version: int) -> None:
    data = version.to_bytes(2, "big", signed=True) + b"\x00" * 30
    assert decode_value(OffsetCommitKey("g", "t", 0), data) == UnknownValue(
        "offset_commit", version
    )
    assert value_kind(OffsetCommitKey("g", "t", 0), version) == "unknown"


def test_tombstones_are_none_for_every_key_kind() -> None:
    assert decode_value(OffsetCommitKey("g", "t", 0), None) is None
    assert decode_value(GroupMetadataKey("g"), None) is None


# -- consumer protocol ----------------------------------------------------------------------------

SUBSCRIPTIONS = {
    "v0": (
        h("0000", "00000002", "0001 61", "0001 62", "ffffffff"),
        Subscription(("a", "b"), None, version=0),
    ),
    "v0 with user data": (
        h("0000", "00000001", "0001 61", "00000002 0102"),
        Subscription(("a",), b"\x01\x02", version=0),
    ),
    "v1 owned partitions": (
        h(
            "0001",
            "00000001",
            "0001 61",
            "ffffffff",
            "00000001",
            "0001 61",
            "00000002 00000000 00000003",
        ),
        Subscription(("a",), None, (("a", (0, 3)),), version=1),
    ),
    "v2 generation": (
        h("0002", "00000001", "0001 61", "ffffffff", "00000000", "00000009"),
        Subscription(("a",), None, (), 9, version=2),
    ),
    "v3 rack": (
        h("0003", "00000001", "0001 61", "ffffffff", "00000000", "ffffffff", "0002 7231"),
        Subscription(("a",), None, (), -1, "r1", version=3),
    ),
    "v3 no rack": (
        h("0003", "00000000", "ffffffff", "00000000", "00000002", "ffff"),
        Subscription((), None, (), 2, None, version=3),
    ),
}

ASSIGNMENTS = {
    "v0": (
        h("0000", "00000001", "0001 61", "00000002 00000000 00000001", "ffffffff"),
        Assignment((("a", (0, 1)),), None, version=0),
    ),
    "v1 user data": (
        h("0001", "00000000", "00000001 ff"),
        Assignment((), b"\xff", version=1),
    ),
    "v3": (
        h("0003", "00000002", "0001 61", "00000000", "0001 62", "00000001 00000004", "ffffffff"),
        Assignment((("a", ()), ("b", (4,))), None, version=3),
    ),
}


@pytest.mark.parametrize("name", SUBSCRIPTIONS)
def test_golden_subscriptions(name: str) -> None:
    data, sub = SUBSCRIPTIONS[name]
    assert decode_subscription(data) == sub
    assert encode_subscription(sub) == data


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_golden_assignments(name: str) -> None:
    data, asg = ASSIGNMENTS[name]
    assert decode_assignment(data) == asg
    assert encode_assignment(asg) == data


def test_newer_consumer_protocol_versions_are_read_with_the_newest_layout() -> None:
    # Kafka's contract: later versions only append; readers ignore what they do not know
    sub = h("0004", "00000001", "0001 61", "ffffffff", "00000000", "00000001", "ffff", "deadbeef")
    assert decode_subscription(sub) == Subscription(("a",), None, (), 1, None, version=4)
    asg = h("0007", "00000000", "ffffffff", "0102")
    assert decode_assignment(asg) == Assignment((), None, version=7)


def test_known_consumer_protocol_versions_refuse_trailing_bytes() -> None:
    with pytest.raises(RecordError, match="trailing"):
        decode_subscription(h("0000", "00000000", "ffffffff", "00"))


# -- group metadata values ------------------------------------------------------------------------

SUB = SUBSCRIPTIONS["v1 owned partitions"][0]
ASG = ASSIGNMENTS["v0"][0]
SUB_LEN = f"{len(SUB):08x}"
ASG_LEN = f"{len(ASG):08x}"
MEMBER = "0002 6d31"  # "m1"
CLIENT = "0002 6331"  # "c1"
HOST = "0009 2f31302e302e302e31"  # "/10.0.0.1"
CONSUMER = "0008 636f6e73756d6572"  # "consumer"
RANGE = "0005 72616e6765"  # "range"


def member(version: int, **kw: object) -> MemberMetadata:
    return MemberMetadata(
        "m1",
        "c1",
        "/10.0.0.1",
        30000,
        SUB,
        ASG,
        rebalance_timeout=300000 if version >= 1 else -1,
        group_instance_id=kw.get("instance"),  # type: ignore[arg-type]
    )


GROUP_VALUES = {
    "v0": (
        h(
            "0000",
            CONSUMER,
            "00000003",
            RANGE,
            MEMBER,
            "00000001",
            MEMBER,
            CLIENT,
            HOST,
            "00007530",
            SUB_LEN,
            SUB.hex(),
            ASG_LEN,
            ASG.hex(),
        ),
        GroupMetadataValue("consumer", 3, "range", "m1", (member(0),), 0),
    ),
    "v0 empty group: null protocol and leader, no members": (
        h("0000", CONSUMER, "00000004", "ffff", "ffff", "00000000"),
        GroupMetadataValue("consumer", 4, None, None, (), 0),
    ),
    "v1 rebalance timeout": (
        h(
            "0001",
            CONSUMER,
            "00000003",
            RANGE,
            MEMBER,
            "00000001",
            MEMBER,
            CLIENT,
            HOST,
            "000493e0",
            "00007530",
            SUB_LEN,
            SUB.hex(),
            ASG_LEN,
            ASG.hex(),
        ),
        GroupMetadataValue("consumer", 3, "range", "m1", (member(1),), 1),
    ),
    "v2 current state timestamp": (
        h(
            "0002",
            CONSUMER,
            "00000003",
            RANGE,
            MEMBER,
            TS,
            "00000001",
            MEMBER,
            CLIENT,
            HOST,
            "000493e0",
            "00007530",
            SUB_LEN,
            SUB.hex(),
            ASG_LEN,
            ASG.hex(),
        ),
        GroupMetadataValue("consumer", 3, "range", "m1", (member(2),), 2, 1700000000000),
    ),
    "v3 static member": (
        h(
            "0003",
            CONSUMER,
            "00000003",
            RANGE,
            MEMBER,
            TS,
            "00000001",
            MEMBER,
            "0002 6931",
            CLIENT,
            HOST,
            "000493e0",
            "00007530",
            SUB_LEN,
            SUB.hex(),
            ASG_LEN,
            ASG.hex(),
        ),
        GroupMetadataValue(
            "consumer", 3, "range", "m1", (member(3, instance="i1"),), 3, 1700000000000
        ),
    ),
    "v3 dynamic member, empty assignment (not yet synced)": (
        h(
            "0003",
            "0007 636f6e6e656374",
            "00000001",
            "0007 64656661756c74",
            MEMBER,
            TS,
            "00000001",
            MEMBER,
            "ffff",
            CLIENT,
            HOST,
            "000493e0",
            "00007530",
            "00000002 abcd",
            "00000000",
        ),
        GroupMetadataValue(
            "connect",
            1,
            "default",
            "m1",
            (MemberMetadata("m1", "c1", "/10.0.0.1", 30000, b"\xab\xcd", b"", 300000),),
            3,
            1700000000000,
        ),
    ),
    "v4 flexible": (
        h(
            "0004",
            "09 636f6e73756d6572",
            "00000003",
            "06 72616e6765",
            "03 6d31",
            TS,
            "02",  # one member (compact array: count + 1)
            "03 6d31",
            "00",
            "03 6331",
            "0a 2f31302e302e302e31",
            "000493e0",
            "00007530",
            f"{len(SUB) + 1:02x}",
            SUB.hex(),
            f"{len(ASG) + 1:02x}",
            ASG.hex(),
            "00",  # member tagged fields
            "00",  # value tagged fields
        ),
        GroupMetadataValue("consumer", 3, "range", "m1", (member(4),), 4, 1700000000000),
    ),
}


@pytest.mark.parametrize("name", GROUP_VALUES)
def test_golden_group_metadata_values(name: str) -> None:
    data, value = GROUP_VALUES[name]
    assert decode_value(GroupMetadataKey("g"), data) == value
    assert decode_group_metadata_value(data) == value
    assert encode_value(value) == data


def test_group_summary_decodes_consumer_protocol_members() -> None:
    s = summarize_group(GROUP_VALUES["v3 static member"][1])
    assert (s.protocol_type, s.protocol, s.generation, s.members) == ("consumer", "range", 3, 1)
    assert s.topics == ("a",)
    assert s.assigned == (("a", 0, "m1"), ("a", 1, "m1"))
    assert s.bad_members == ()


def test_group_summary_leaves_other_protocols_opaque_and_reports_bad_blobs() -> None:
    other = summarize_group(GROUP_VALUES["v3 dynamic member, empty assignment (not yet synced)"][1])
    assert other.topics == () and other.assigned == () and other.members == 1
    bad = GroupMetadataValue(
        "consumer", 1, "range", "m", (MemberMetadata("m", "c", "h", 1, b"\x00", b""),), 3
    )
    assert "m:" in summarize_group(bad).bad_members[0]


@pytest.mark.parametrize("version", [5, 9, -2])
def test_newer_group_metadata_value_versions_are_counted_not_parsed(version: int) -> None:
    data = version.to_bytes(2, "big", signed=True) + b"\x00"
    assert decode_value(GroupMetadataKey("g"), data) == UnknownValue("group_metadata", version)


# -- malformed input ------------------------------------------------------------------------------

BAD = {
    "empty key": (decode_key, b""),
    "one-byte key": (decode_key, b"\x00"),
    "truncated partition": (decode_key, h("0001", GROUP, TOPIC, "0000")),
    "key trailing bytes": (decode_key, h("0002", GROUP, "00")),
    "null group in key": (decode_key, h("0001", "ffff", TOPIC, "00000000")),
    "negative string length": (decode_key, h("0002", "fffe")),
    "string longer than data": (decode_key, h("0002", "0010 6161")),
    "non-UTF-8 group": (decode_key, h("0002", "0002 c328")),
    "value too short": (decode_offset_commit_value, h("0003", "0000")),
    "value trailing bytes": (decode_offset_commit_value, h("0002", "00" * 8, "0000", TS, "ff")),
    "null metadata": (decode_offset_commit_value, h("0002", "00" * 8, "ffff", TS)),
    "compact null metadata": (
        decode_offset_commit_value,
        h("0004", "00" * 8, "ffffffff", "00", TS, "00"),
    ),
    "varint longer than 5 bytes": (
        decode_offset_commit_value,
        h("0004", "00" * 8, "ffffffff", "ffffffffff01", TS, "00"),
    ),
    "compact string past 32767": (
        decode_offset_commit_value,
        h("0004", "00" * 8, "ffffffff", "818002", TS, "00"),
    ),
    "tagged fields out of order": (
        decode_offset_commit_value,
        h("0004", "00" * 8, "ffffffff", "01", TS, "02", "05 00", "01 00"),
    ),
    "tagged field size past end": (
        decode_offset_commit_value,
        h("0004", "00" * 8, "ffffffff", "01", TS, "01", "00 09 00"),
    ),
    "member count past end": (
        decode_group_metadata_value,
        h("0000", CONSUMER, "00000001", "ffff", "ffff", "7fffffff"),
    ),
    "null members array": (
        decode_group_metadata_value,
        h("0000", CONSUMER, "00000001", "ffff", "ffff", "ffffffff"),
    ),
    "flexible null members array": (
        decode_group_metadata_value,
        h("0004", "01", "00000001", "00", "00", TS, "00", "00"),
    ),
    "negative bytes length": (
        decode_group_metadata_value,
        h(
            "0000",
            "0000",
            "00000001",
            "ffff",
            "ffff",
            "00000001",
            "0000 0000 0000",
            "00000001",
            "fffffffe",
        ),
    ),
    "subscription with a negative version": (
        decode_subscription,
        h("ffff", "00000000", "ffffffff"),
    ),
    "subscription topic count past end": (decode_subscription, h("0000", "0fffffff")),
    "assignment truncated": (decode_assignment, h("0000", "00000001", "0001 61")),
}


@pytest.mark.parametrize("name", BAD)
def test_malformed_bytes_raise_record_error_naming_the_record(name: str) -> None:
    decoder, data = BAD[name]
    with pytest.raises(RecordError) as err:
        decoder(data)
    assert isinstance(err.value, CodecError)
    assert err.value.excerpt is not None  # a bounded quote of the bad bytes


# -- encoder guards -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        OffsetCommitValue(1, "", 0, 2, leader_epoch=3),
        OffsetCommitValue(1, "", 0, 3, expire_timestamp=5),
        OffsetCommitValue(1, "", 0, 3, tagged_fields=((1, b""),)),
        OffsetCommitValue(1, "", 0, 5),
        OffsetCommitValue(2**63, "", 0, 3),
        GroupMetadataValue("consumer", 1, None, None, (), 1, current_state_timestamp=5),
        GroupMetadataValue("consumer", 1, None, None, (member(1),), 0),
        GroupMetadataValue("consumer", 1, None, None, (member(3, instance="i"),), 2),
        OffsetCommitValue(1, "x" * 40000, 0, 3),
    ],
)
def test_encoder_refuses_fields_the_version_lacks(value: object) -> None:
    with pytest.raises(ValueError):
        encode_value(value)  # type: ignore[arg-type]


def test_encoder_refuses_bad_keys_and_consumer_protocol_fields() -> None:
    with pytest.raises(ValueError):
        encode_key(OffsetCommitKey("g", "t", 0, 2))
    with pytest.raises(ValueError):
        encode_key(GroupMetadataKey("g", 1))
    with pytest.raises(ValueError):
        encode_subscription(Subscription(("a",), None, (("a", (1,)),), version=0))
    with pytest.raises(ValueError):
        encode_subscription(Subscription(("a",), rack_id="r", version=2))
    with pytest.raises(ValueError):
        encode_assignment(Assignment((), version=4))
