"""Round trips for every record kind and version, and the decoder's only failure mode.

Whatever bytes arrive - random, or a valid record cut short or with a byte changed - the
decoders return a value or raise :class:`RecordError`; nothing else may escape, since the
audit counts bad records instead of dying on them.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

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
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    decode_value,
    encode_key,
    encode_value,
)
from bridge.audit.wire import RecordError

I32 = st.integers(-(2**31), 2**31 - 1)
I64 = st.integers(-(2**63), 2**63 - 1)
# any Unicode text UTF-8 can carry (no lone surrogates), short enough for an int16 length
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
BLOB = st.binary(max_size=40)
TAGS = st.dictionaries(st.integers(0, 2**20), st.binary(max_size=8), max_size=3).map(
    lambda d: tuple(sorted(d.items()))
)
PARTS = st.lists(st.tuples(TEXT, st.lists(I32, max_size=5).map(tuple)), max_size=4).map(tuple)

keys = st.one_of(
    st.builds(OffsetCommitKey, TEXT, TEXT, I32, st.sampled_from([0, 1])),
    st.builds(GroupMetadataKey, TEXT),
)


@st.composite
def offset_values(draw) -> OffsetCommitValue:
    v = draw(st.integers(0, 4))
    return OffsetCommitValue(
        draw(I64),
        draw(TEXT),
        draw(I64),
        v,
        leader_epoch=draw(I32) if v >= 3 else -1,
        expire_timestamp=draw(I64) if v == 1 else -1,
        tagged_fields=draw(TAGS) if v >= 4 else (),
    )


@st.composite
def members(draw, version: int) -> MemberMetadata:
    return MemberMetadata(
        draw(TEXT),
        draw(TEXT),
        draw(TEXT),
        draw(I32),
        draw(BLOB),
        draw(BLOB),
        rebalance_timeout=draw(I32) if version >= 1 else -1,
        group_instance_id=draw(st.none() | TEXT) if version >= 3 else None,
        tagged_fields=draw(TAGS) if version >= 4 else (),
    )


@st.composite
def group_values(draw) -> GroupMetadataValue:
    v = draw(st.integers(0, 4))
    return GroupMetadataValue(
        draw(TEXT),
        draw(I32),
        draw(st.none() | TEXT),
        draw(st.none() | TEXT),
        tuple(draw(st.lists(members(v), max_size=3))),
        v,
        current_state_timestamp=draw(I64) if v >= 2 else -1,
        tagged_fields=draw(TAGS) if v >= 4 else (),
    )


@st.composite
def subscriptions(draw) -> Subscription:
    v = draw(st.integers(0, 3))
    return Subscription(
        tuple(draw(st.lists(TEXT, max_size=4))),
        draw(st.none() | BLOB),
        draw(PARTS) if v >= 1 else (),
        draw(I32) if v >= 2 else -1,
        draw(st.none() | TEXT) if v >= 3 else None,
        v,
    )


assignments = st.builds(Assignment, PARTS, st.none() | BLOB, st.integers(0, 3))


@given(keys)
def test_keys_round_trip(key) -> None:
    assert decode_key(encode_key(key)) == key


@given(offset_values())
def test_offset_commit_values_round_trip(value: OffsetCommitValue) -> None:
    data = encode_value(value)
    assert decode_value(OffsetCommitKey("g", "t", 0), data) == value


@given(group_values())
def test_group_metadata_values_round_trip(value: GroupMetadataValue) -> None:
    data = encode_value(value)
    assert decode_value(GroupMetadataKey("g"), data) == value


@given(subscriptions())
def test_subscriptions_round_trip(sub: Subscription) -> None:
    assert decode_subscription(encode_subscription(sub)) == sub


@given(assignments)
def test_assignments_round_trip(asg: Assignment) -> None:
    assert decode_assignment(encode_assignment(asg)) == asg


DECODERS = (
    decode_key,
    decode_offset_commit_value,
    decode_group_metadata_value,
    decode_subscription,
    decode_assignment,
)


def _only_record_errors(data: bytes) -> None:
    for decode in DECODERS:
        try:
            decode(data)
        except RecordError:
            pass


@settings(max_examples=1500)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_only_raise_record_error(data: bytes) -> None:
    _only_record_errors(data)


@settings(max_examples=1500)
@given(st.binary(max_size=40))
def test_arbitrary_bytes_behind_every_version_prefix(tail: bytes) -> None:
    for version in range(-1, 7):
        _only_record_errors(version.to_bytes(2, "big", signed=True) + tail)


@st.composite
def damaged(draw) -> bytes:
    """A valid encoding of some record, then truncated, extended or with one byte changed."""
    data = draw(
        st.one_of(
            keys.map(encode_key),
            offset_values().map(encode_value),
            group_values().map(encode_value),
            subscriptions().map(encode_subscription),
            assignments.map(encode_assignment),
        )
    )
    how = draw(st.sampled_from(["cut", "flip", "extend"]))
    if how == "cut":
        return data[: draw(st.integers(0, max(0, len(data) - 1)))]
    if how == "extend":
        return data + draw(st.binary(min_size=1, max_size=8))
    if not data:
        return data
    i = draw(st.integers(0, len(data) - 1))
    return data[:i] + bytes([draw(st.integers(0, 255))]) + data[i + 1 :]


@settings(max_examples=1500)
@given(damaged())
def test_damaged_records_only_raise_record_error(data: bytes) -> None:
    _only_record_errors(data)
