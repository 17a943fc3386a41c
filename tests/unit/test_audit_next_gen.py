"""The next-generation group records (KIP-848) through the audit's one decoder: every record
type read back, newer value versions counted, damaged bytes only ever a RecordError. Kafka's
own classes are the reference in tests/integration/test_consumer_group_records_java.py."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge.audit import next_gen
from bridge.audit.decode import decode_row
from bridge.audit.next_gen import ConsumerGroupKey
from bridge.audit.records import UnknownValue, decode_key, decode_value, value_kind
from bridge.audit.wire import RecordError

EXAMPLES = next_gen.examples("g")
ENCODED = [(next_gen.encode_key(k), next_gen.encode_value(k.record_type, v)) for k, v in EXAMPLES]


@pytest.mark.parametrize(("record", "raw"), list(zip(EXAMPLES, ENCODED, strict=True)))
def test_every_record_type_reads_back(record, raw) -> None:
    key, value = record
    k = decode_key(raw[0])
    assert k == key and k.kind == "consumer_group" and k.version == key.record_type
    assert decode_value(k, raw[1]).to_dict(json=False) == value.to_dict(json=False)
    assert decode_value(k, None) is None  # a tombstone: the member left, the group went
    assert value_kind(k, 0) == "consumer_group"


def test_a_newer_value_version_is_counted_not_read() -> None:
    k = ConsumerGroupKey(next_gen.METADATA, "g")
    assert decode_value(k, b"\x00\x01\x00\x00\x00\x07\x00") == UnknownValue("consumer_group", 1)
    assert value_kind(k, 1) == "unknown"


def test_the_audit_row_of_a_member_and_of_the_group() -> None:
    member_key, member = ENCODED[2]
    row = decode_row(member_key, member[:2], member)
    assert (row["group"], row["member_id"], row["key_version"]) == ("g", "m-1", 5)
    assert (row["members"], row["member_topics"], row["protocol"]) == (1, ["orders"], "uniform")
    epoch_key, epoch = ENCODED[0]
    assert decode_row(epoch_key, epoch[:2], epoch)["generation"] == 7
    cut = decode_row(epoch_key, epoch[:2], epoch[:-3])
    assert cut["value_kind"] == "consumer_group" and "ConsumerGroupMetadataValue" in cut["error"]


@given(
    which=st.integers(0, len(ENCODED) - 1),
    cut=st.integers(0, 40),
    flips=st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), max_size=4),
)
def test_damaged_records_raise_only_record_error(which, cut, flips) -> None:
    """Invariant I5: cut short or with bytes changed, a record is read or refused in one
    bounded line, never another exception."""

    def damaged(raw: bytes) -> bytes:
        data = bytearray(raw[: max(0, len(raw) - cut)])
        for at, byte in flips:
            if at < len(data):
                data[at] = byte
        return bytes(data)

    key, value = ENCODED[which]
    for read in (
        lambda: decode_key(damaged(key)),
        lambda: decode_value(EXAMPLES[which][0], damaged(value)),
    ):
        try:
            read()
        except RecordError as exc:
            assert len(str(exc)) < 600
