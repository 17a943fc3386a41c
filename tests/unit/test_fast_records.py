"""The follower's one-pass decoders of offset commit records (``bridge.audit.fast_records``)
against the checked decoders of ``bridge.audit.records`` and the encoder.

Whatever the bytes (valid records of every kind and version, damaged ones, random ones),
a one-pass answer is exactly the checked decoder's, and where the checked decoder fails
or answers another kind, the one-pass decoder gives None (the caller then takes the
checked path, which names what is wrong).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.audit.fast_records import offset_commit_key, offset_commit_value
from bridge.audit.records import (
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_offset_commit_value,
    encode_key,
    encode_value,
)
from bridge.audit.wire import RecordError
from tests.unit.test_audit_records_properties import damaged, keys, offset_values


def _checked(decode, data: bytes):
    try:
        return decode(data)
    except RecordError:
        return None


def _agrees(data: bytes) -> None:
    key, checked_key = offset_commit_key(data), _checked(decode_key, data)
    if key is not None:
        assert key == checked_key
    value, checked_value = offset_commit_value(data), _checked(decode_offset_commit_value, data)
    if value is not None:
        assert value == checked_value


@given(keys)
def test_every_offset_commit_key_in_one_pass(key) -> None:
    fast = offset_commit_key(encode_key(key))
    assert fast == (key if isinstance(key, OffsetCommitKey) else None)


@given(offset_values())
def test_every_classic_offset_commit_value_in_one_pass(value: OffsetCommitValue) -> None:
    fast = offset_commit_value(encode_value(value))
    assert fast == (value if value.version < 4 else None)  # v4 (flexible): checked path


@settings(max_examples=1500)
@given(damaged())
def test_damaged_records_agree_with_the_checked_decoders(data: bytes) -> None:
    _agrees(data)


@settings(max_examples=1500)
@given(st.binary(max_size=60))
def test_random_bytes_agree_with_the_checked_decoders(data: bytes) -> None:
    for version in (0, 1, 2, 3):
        _agrees(version.to_bytes(2, "big") + data)
    _agrees(data)


def test_bad_utf8_is_left_to_the_checked_decoder() -> None:
    """A group name that is not UTF-8: None here, and the checked decoder names it."""
    data = bytearray(encode_key(OffsetCommitKey("gé", "t", 0, 1)))
    data[5] = 0xFF  # the second byte of 'é'
    assert offset_commit_key(bytes(data)) is None
    assert _checked(decode_key, bytes(data)) is None
