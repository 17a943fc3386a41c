"""Records of ``__consumer_offsets`` -> the follower's events (pure part of offsets_log)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bridge.audit.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_key,
    encode_value,
)
from bridge.kafka.offsets_log import GroupChanged, OffsetCommitted, record_event
from zkpaths import TopicPartition


def _commit(group: str, topic: str, p: int, offset: int, version: int = 3) -> tuple[bytes, bytes]:
    key = encode_key(OffsetCommitKey(group, topic, p))
    return key, encode_value(OffsetCommitValue(offset, "", 1, version))


def test_offset_commit_and_its_tombstone():
    key, value = _commit("g", "t", 3, 42)
    assert record_event(key, value) == (OffsetCommitted("g", TopicPartition("t", 3), 42), None)
    assert record_event(key, None) == (OffsetCommitted("g", TopicPartition("t", 3), None), None)


@given(
    group=st.text(min_size=1, max_size=20),
    topic=st.text(min_size=1, max_size=20),
    partition=st.integers(0, 2**31 - 1),
    offset=st.integers(0, 2**63 - 1),
    version=st.sampled_from([0, 1, 2, 3, 4]),
)
def test_every_commit_value_version_gives_its_offset(group, topic, partition, offset, version):
    key, value = _commit(group, topic, partition, offset, version)
    event, skipped = record_event(key, value)
    assert skipped is None
    assert event == OffsetCommitted(group, TopicPartition(topic, partition), offset)


def test_group_metadata_and_its_tombstone():
    key = encode_key(GroupMetadataKey("g"))
    value = encode_value(GroupMetadataValue("consumer", 3, "range", None))
    assert record_event(key, value) == (GroupChanged("g"), None)
    assert record_event(key, None) == (GroupChanged("g", deleted=True), None)


def test_unknown_value_version_skipped_but_group_read_again():
    key = encode_key(OffsetCommitKey("g", "t", 0))
    event, skipped = record_event(key, b"\x00\x63" + b"\x00" * 20)
    assert event == GroupChanged("g")
    assert skipped is not None and "v99" in skipped.message


def test_next_generation_group_records_name_their_group():
    # ConsumerGroupMemberMetadataKey (v5): group id then member id, classic strings
    key = b"\x00\x05" + b"\x00\x02gg" + b"\x00\x01m"
    assert record_event(key, b"\x00\x00") == (GroupChanged("gg"), None)


def test_unknown_key_and_bad_bytes_skipped_with_a_reason():
    event, skipped = record_event(b"\x00\x2a\x00\x01x", b"\x00\x00")
    assert event is None and skipped is not None and "key v42" in skipped.message
    event, skipped = record_event(b"\x00\x01\x00\x05ab", b"")  # truncated commit key
    assert event is None and skipped is not None and "undecodable key" in skipped.message
    event, skipped = record_event(None, b"")
    assert event is None and skipped is not None
    share = b"\x00\x0b\x00\x01s"  # ShareGroupMetadataKey: not mirrored, nothing to report
    assert record_event(share, b"\x00\x00") == (None, None)


def test_bad_value_under_a_known_key_reads_the_group_again():
    key = encode_key(OffsetCommitKey("g", "t", 0))
    event, skipped = record_event(key, b"\x00\x03\x00")
    assert event == GroupChanged("g") and skipped is not None
