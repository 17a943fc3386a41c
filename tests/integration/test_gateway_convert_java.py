"""``down_convert``'s message sets read by the old clients' own reader: 0.10.2.2's
``kafka.message.ByteBufferMessageSet`` (magic 0 and 1) and 0.8.2.2's (magic 0), deep
iteration with every CRC checked, as the old Scala consumer reads a fetch response (one JVM
per reader and session, harness ``LegacyMessageSets``); and against Kafka 3.9's own
down-conversion (``MemoryRecords.downConvert``, harness ``KafkaDownConvert``), byte for
byte. Inputs are random logs written with kafka-python's ``DefaultRecordBatchBuilder``
(``tests/unit/gateway_cases``): codecs, LogAppendTime, transactions with aborts, control
batches, offsets with gaps, record headers.

What the old clients require of the LZ4 frame header of magic 0 (KIP-57): 0.8.2.2 checks the
old, wrong descriptor checksum and refuses the correct one; 0.10.2.2 ignores it for magic 0
and checks the correct one for magic 1 - both shown below. Needs the jars and javac
(``scripts/setup.sh``); no Kafka.
"""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.memory_records import MemoryRecords

from bridge.gateway.codecs import lz4_header_checksum
from bridge.gateway.convert import down_convert
from tests.integration.jvm_reference import KafkaDownConvert, OldMessageReader
from tests.unit.gateway_cases import Log, batch_bytes, logs

pytestmark = pytest.mark.integration

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TYPES = {0: "CreateTime", 1: "LogAppendTime"}


@pytest.fixture(scope="module")
def reader010() -> OldMessageReader:
    ref = OldMessageReader("legacy")
    yield ref
    ref.close()


@pytest.fixture(scope="module")
def reader082() -> OldMessageReader:
    ref = OldMessageReader("legacy082")
    yield ref
    ref.close()


def expected(log: Log, fetch_offset: int, magic: int, version: str) -> list[tuple]:
    rows = []
    for r in log.visible:
        if r.offset < fetch_offset:
            continue
        if version == "0.8.2.2":
            ts, ts_type = -1, "NONE"
        elif magic == 0:
            ts, ts_type = -1, "NoTimestampType"
        else:
            ts, ts_type = r.timestamp, TYPES[r.timestamp_type]
        rows.append((r.offset, r.key, r.value, magic, ts, ts_type))
    return rows


@PROPERTY
@given(
    logs(),
    st.sampled_from([0, 1]),
    st.integers(0, 4),
    st.one_of(st.just(1 << 30), st.integers(0, 4000)),
    st.booleans(),
)
def test_old_clients_read_what_the_gateway_converts(
    reader010, reader082, log, magic, skip, max_bytes, min_one
):
    offsets = [r.offset for r in log.visible]
    fetch_offset = offsets[min(skip, len(offsets) - 1)] if offsets else 0
    out = down_convert(
        log.data,
        magic=magic,
        fetch_offset=fetch_offset,
        max_bytes=max_bytes,
        aborted=log.aborted,
        min_one_message=min_one,
    )
    readers = [("0.10.2.2", reader010)] + ([("0.8.2.2", reader082)] if magic == 0 else [])
    for version, reader in readers:
        valid, entries, got = reader.read(out)
        want = expected(log, fetch_offset, magic, version)
        if max_bytes == 1 << 30:
            assert got == want, version
            assert valid == len(out)
        else:  # a prefix; a cut first message is no valid byte: "fetch size too small"
            assert got == want[: len(got)], version
            assert valid == len(out) or (valid == 0 and not got and len(out) == max_bytes)
        assert (entries == 0) == (not got)


def _lz4_message_set(magic: int, broken: bool) -> bytes:
    """A magic ``magic`` lz4 wrapper from down_convert, its frame descriptor checksum made
    the old (``broken``) or the correct one, the message CRC redone."""
    src = batch_bytes(40, [(i, 1000 + i, b"k", b"value" * 30) for i in range(5)], 3)
    out = bytearray(down_convert(src, magic=magic, fetch_offset=0, max_bytes=1 << 30))
    value_at = 12 + (14 if magic == 0 else 22) - 4 + 4  # past the null key and value length
    frame = bytes(out[value_at : value_at + 7])
    assert frame[:4] == b"\x04\x22\x4d\x18"
    out[value_at + 6] = lz4_header_checksum(frame[4:6], broken)
    struct.pack_into(">I", out, 12, zlib.crc32(bytes(out[16:])))
    return bytes(out)


def test_lz4_descriptor_checksum_of_each_magic(reader010, reader082):
    offsets = list(range(40, 45))
    # magic 0: what the gateway writes (the old checksum) is read by 0.8.2.2 and 0.10.2.2
    as_written = down_convert(
        batch_bytes(40, [(i, 1000 + i, b"k", b"value" * 30) for i in range(5)], 3),
        magic=0,
        fetch_offset=0,
        max_bytes=1 << 30,
    )
    assert as_written == _lz4_message_set(0, broken=True)
    for reader in (reader082, reader010):
        assert [m[0] for m in reader.read(as_written)[2]] == offsets
    # ...the correct one is refused by 0.8.2.2 (the negative control), ignored by 0.10.2.2
    with pytest.raises(RuntimeError, match="(?i)descriptor|hash|IOException|checksum"):
        reader082.read(_lz4_message_set(0, broken=False))
    assert [m[0] for m in reader010.read(_lz4_message_set(0, broken=False))[2]] == offsets
    # magic 1: 0.10.2.2 checks the correct checksum and refuses the old one
    assert [m[0] for m in reader010.read(_lz4_message_set(1, broken=False))[2]] == offsets
    with pytest.raises(RuntimeError):
        reader010.read(_lz4_message_set(1, broken=True))


@pytest.fixture(scope="module")
def kafka39() -> KafkaDownConvert:
    ref = KafkaDownConvert()
    yield ref
    ref.close()


def batch_starts(data: bytes) -> list[tuple[int, int]]:
    """(base offset, byte position) of each batch."""
    mr = MemoryRecords(data)
    starts, pos = [], 0
    while mr.has_next():
        batch = mr.next_batch()
        starts.append((batch.base_offset, pos))
        pos += batch.size_in_bytes
    return starts


@settings(PROPERTY, max_examples=100)
@given(logs(), st.sampled_from([0, 1]), st.integers(0, 10))
def test_same_bytes_as_kafka_3_9_down_conversion(kafka39, log, magic, pick):
    """Read uncommitted (no aborted list, as a 3.9 broker serves v0-v3) from a batch's first
    offset (a broker's log read starts at that batch), the converted message set is Kafka's
    byte for byte - plain, gzip and lz4 alike; snappy's compressed bytes may differ (another
    snappy encoder), its messages may not."""
    starts = batch_starts(log.data) or [(0, 0)]
    fetch_offset, pos = starts[pick % len(starts)]
    data = log.data[pos:]
    ours = down_convert(data, magic=magic, fetch_offset=fetch_offset, max_bytes=1 << 30)
    theirs = kafka39.convert(data, magic, fetch_offset)
    if 2 not in log.codecs.values():
        assert ours == theirs
    else:
        assert _entries(ours, magic) == _entries(theirs, magic)


def _entries(data: bytes, magic: int) -> list[tuple]:
    """Each entry's offset, codec, timestamp and type, and its records, as kafka-python reads."""
    out = []
    mr = MemoryRecords(data)
    while mr.has_next():
        e = mr.next_batch()
        assert e.validate_crc()
        records = [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value) for r in e]
        out.append((e.base_offset, e.compression_type, e.timestamp_type, records))
    return out
