"""The legacy gateway's converters against kafka-python's own record classes.

Inputs are built with ``DefaultRecordBatchBuilder`` / ``LegacyRecordBatchBuilder`` from
random records (``gateway_cases``); outputs are read back with ``MemoryRecords`` /
``LegacyRecordBatch`` / ``DefaultRecordBatch`` and compared with the records generated,
minus those a read_committed consumer never sees and those before the fetch offset. The
old clients' own reader (0.10.2.2) checks the same in tests/integration.
"""

from __future__ import annotations

import struct
import zlib

import lz4.frame
import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from bridge.gateway import messages
from bridge.gateway.codecs import decompress, lz4_header_checksum
from bridge.gateway.convert import (
    ConversionError,
    UnsupportedCompression,
    down_convert,
    up_convert,
)
from tests.unit.gateway_cases import Log, Rec, batch_bytes, logs, record_lists

PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BIG = 1 << 30


def read_legacy(data: bytes, magic: int) -> tuple[list[Rec], list[int]]:
    """Records of a message set as kafka-python's consumer reads it (deep), every CRC and
    magic checked; and the codec of each shallow entry."""
    out, codecs = [], []
    mr = MemoryRecords(data)
    while mr.has_next():
        entry = mr.next_batch()
        assert entry.magic == magic
        assert entry.validate_crc()
        codecs.append(entry.compression_type)
        for r in entry:
            assert r.validate_crc() and r.magic == magic
            ts_type = r.timestamp_type if magic else 0
            out.append(Rec(r.offset, r.timestamp if magic else -1, r.key, r.value, ts_type))
    return out, codecs


def expected(log: Log, fetch_offset: int, magic: int) -> list[Rec]:
    keep = [r for r in log.visible if r.offset >= fetch_offset]
    if magic == 0:
        keep = [Rec(r.offset, -1, r.key, r.value, 0) for r in keep]
    return keep


def message_size(r: Rec, magic: int) -> int:
    return messages.overhead(magic) + len(r.key or b"") + len(r.value or b"")


@st.composite
def fetches(draw):
    log = draw(logs())
    offsets = [r.offset for r in log.visible] or [log.next_offset]
    fetch_offset = draw(st.sampled_from(offsets)) + draw(st.sampled_from([0, 0, 0, 1, -1]))
    return log, max(0, fetch_offset), draw(st.sampled_from([0, 1]))


@PROPERTY
@given(fetches())
def test_down_convert_keeps_what_a_read_committed_consumer_sees(case):
    log, fetch_offset, magic = case
    out = down_convert(
        log.data, magic=magic, fetch_offset=fetch_offset, max_bytes=BIG, aborted=log.aborted
    )
    got, codecs = read_legacy(out, magic)
    assert got == expected(log, fetch_offset, magic)
    # each compressed source batch is one wrapper with its codec; uncompressed stay plain
    assert sorted(set(codecs) - {0}) == sorted({log.codecs[r.offset] for r in got} - {0})


@PROPERTY
@given(fetches(), st.integers(0, 3000), st.booleans(), st.binary(max_size=30))
def test_max_bytes_cuts_whole_messages_and_partial_batches_are_ignored(
    case, max_bytes, min_one, partial
):
    log, fetch_offset, magic = case
    data = log.data + struct.pack(">qi", 1, 500) + partial  # a cut batch at the end
    out = down_convert(
        data,
        magic=magic,
        fetch_offset=fetch_offset,
        max_bytes=max_bytes,
        aborted=log.aborted,
        min_one_message=min_one,
    )
    want = expected(log, fetch_offset, magic)
    got, _ = read_legacy(out, magic)
    assert got == want[: len(got)]
    whole = MemoryRecords(out).valid_bytes() if out else 0
    if len(out) > max_bytes:  # KIP-74: only the first message (or wrapper), whole
        assert min_one and whole == len(out) and got
        first_codec = log.codecs[got[0].offset]
        assert first_codec or len(got) == 1
    if want and not got:  # the first message does not fit: its first max_bytes bytes
        assert not min_one and len(out) == max_bytes and whole == 0
    if got and len(got) < len(want) and not log.codecs[want[len(got)].offset]:
        # the next plain message would not have fitted
        assert len(out) + message_size(want[len(got)], magic) > max_bytes


@PROPERTY
@given(fetches())
def test_down_convert_without_the_aborted_list_keeps_aborted_records(case):
    """read_uncommitted, as a 3.9 broker serves v0-v3: only control batches go."""
    log, _, magic = case
    out = down_convert(log.data, magic=magic, fetch_offset=0, max_bytes=BIG)
    got, _ = read_legacy(out, magic)
    assert len(got) >= len(log.visible)
    if log.aborted:
        assert len(got) > len(log.visible)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [1, 2, 3])
def test_compressed_batch_becomes_one_wrapper_like_kafka_writes_it(magic, codec):
    recs = [(i, 1_700_000_000_000 + i, b"k", b"value %d " % i * 20) for i in range(50)]
    src = batch_bytes(100, recs, codec)
    out = down_convert(src, magic=magic, fetch_offset=110, max_bytes=BIG)
    entries = list(MemoryRecords(out))
    assert len(entries) == 1
    wrapper = entries[0]
    assert wrapper.compression_type == codec and wrapper.base_offset == 149  # last offset
    if magic:
        assert wrapper._timestamp == 1_700_000_000_049  # max timestamp (CreateTime)
    inner = [r.offset for r in wrapper]
    assert inner == list(range(110, 150))


def _wrapper_value(out: bytes, magic: int) -> bytes:
    key_at = 12 + (14 if magic == 0 else 22) - 8
    assert struct.unpack_from(">i", out, key_at)[0] == -1  # null key
    (n,) = struct.unpack_from(">i", out, key_at + 4)
    return out[key_at + 8 : key_at + 8 + n]


@pytest.mark.parametrize("magic", [0, 1])
def test_lz4_frame_header_checksum_is_the_one_each_magic_expects(magic):
    src = batch_bytes(0, [(i, 5, None, b"x" * 300) for i in range(10)], 3)
    value = _wrapper_value(down_convert(src, magic=magic, fetch_offset=0, max_bytes=BIG), magic)
    assert value[:4] == b"\x04\x22\x4d\x18" and value[4:6] == b"\x60\x40"  # Kafka's FLG, BD
    # 0.8.2.2 KafkaLZ4BlockInputStream.readHeader: hash(header, 0, 6) - the magic number too
    broken = (xxhash.xxh32_intdigest(value[0:6]) >> 8) & 0xFF
    correct = (xxhash.xxh32_intdigest(value[4:6]) >> 8) & 0xFF
    assert value[6] == (broken if magic == 0 else correct)
    if magic == 1:  # liblz4 checks the descriptor checksum
        assert lz4.frame.decompress(value)


@pytest.mark.parametrize("magic", [0, 1])
def test_log_append_time_is_carried_by_magic_1(magic):
    src = batch_bytes(7, [(0, 5, b"k", b"v"), (1, 6, None, None)], append_time=99)
    src += batch_bytes(9, [(0, 5, b"k", b"v" * 100), (1, 6, None, b"w" * 100)], 1, append_time=98)
    out = down_convert(src, magic=magic, fetch_offset=0, max_bytes=BIG)
    got, _ = read_legacy(out, magic)
    if magic:
        assert [(r.timestamp, r.timestamp_type) for r in got] == [(99, 1), (99, 1), (98, 1)] * 1 + [
            (98, 1)
        ]
    assert [(r.key, r.value) for r in got] == [
        (b"k", b"v"), (None, None), (b"k", b"v" * 100), (None, b"w" * 100)
    ]  # fmt: skip


def test_zstd_batches_are_refused_and_control_batches_skipped_first():
    src = bytearray(batch_bytes(0, [(0, 1, None, b"v")]))
    struct.pack_into(">h", src, 21, 4)  # zstd (the CRC-32C is not checked by the gateway)
    with pytest.raises(UnsupportedCompression, match="zstd"):
        down_convert(bytes(src), magic=1, fetch_offset=0, max_bytes=BIG)
    assert down_convert(bytes(src), magic=1, fetch_offset=1, max_bytes=BIG) == b""


def _patched(at: int, fmt: str, value: int) -> bytes:
    data = bytearray(batch_bytes(0, [(0, 1, b"k", b"v" * 20)]) * 2)
    struct.pack_into(fmt, data, at, value)
    return bytes(data)


@pytest.mark.parametrize(
    "bad",
    [
        struct.pack(">qiib", 0, 20, 0, 2) + b"\x00" * 20,  # v2 batch shorter than its header
        struct.pack(">qiib", 0, 60, 0, 7) + b"\x00" * 60,  # unknown magic
        _patched(57, ">i", 2),  # two records claimed, one there
        _patched(61, ">b", 30),  # the record's length is not its size
        _patched(57, ">i", 10**6),  # more records than bytes
    ],
)
def test_bad_batches_are_conversion_errors(bad):
    with pytest.raises(ConversionError):
        down_convert(bad, magic=1, fetch_offset=0, max_bytes=BIG)


@PROPERTY
@given(
    st.lists(st.tuples(record_lists, st.sampled_from([0, 1, 2, 3])), min_size=1, max_size=4),
    st.sampled_from([0, 1]),
)
def test_up_convert_keeps_every_record(sets, magic):
    """Message sets as kafka-python's producer writes them (LegacyRecordBatchBuilder: one
    wrapper per compressed set) -> one v2 batch read back by DefaultRecordBatch."""
    data, want, first_codec = b"", [], 0
    for recs, codec in sets:
        builder = LegacyRecordBatchBuilder(magic, codec, BIG)
        for i, (ts, key, value) in enumerate(recs):
            builder.append(i, timestamp=ts, key=key, value=value)
            want.append((ts if magic else -1, key, value))
        data += bytes(builder.build())
        first_codec = first_codec or codec
    up = up_convert(data, magic=magic)
    batch = DefaultRecordBatch(up.records)
    assert batch.validate_crc() and batch.magic == 2
    assert batch.compression_type in (first_codec, 0)  # kafka-python's builder may fall back
    got = [(r.timestamp, r.key, r.value) for r in batch]
    assert got == want and up.count == len(want)
    assert [r.offset for r in DefaultRecordBatch(up.records)] == list(range(len(want)))


def _legacy_set(magic: int, codec: int = 0) -> bytearray:
    builder = LegacyRecordBatchBuilder(magic, codec, BIG)
    for i in range(3):
        builder.append(i, timestamp=1000 + i, key=b"k%d" % i, value=b"v" * 30)
    return bytearray(builder.build())


def test_up_convert_refuses_corrupt_or_foreign_message_sets():
    good = _legacy_set(1)
    assert up_convert(bytes(good), magic=1).count == 3
    flipped = bytearray(good)
    flipped[40] ^= 1
    with pytest.raises(ConversionError, match="CRC"):
        up_convert(bytes(flipped), magic=1)
    with pytest.raises(ConversionError, match="magic 1"):
        up_convert(bytes(good), magic=0)  # Produce v0/v1 carry magic 0 only
    with pytest.raises(ConversionError, match="empty"):
        up_convert(b"", magic=1)
    with pytest.raises(ConversionError, match="partial"):
        up_convert(bytes(good[:-5]), magic=1)
    zstd = _legacy_set(1, 0)
    zstd[17] = 4  # attributes of the first message: zstd
    end = 12 + struct.unpack_from(">i", zstd, 8)[0]
    struct.pack_into(">I", zstd, 12, zlib.crc32(bytes(zstd[16:end])))
    with pytest.raises(UnsupportedCompression):
        up_convert(bytes(zstd), magic=1)


def test_up_convert_reads_both_lz4_checksums_of_magic_0():
    """0.8/0.9 producers write the broken descriptor checksum; Kafka ignores it for magic 0."""
    broken = bytes(_legacy_set(0, 3))  # kafka-python writes the old one for magic 0
    assert up_convert(broken, magic=0).count == 3


def test_gzip_bomb_is_refused():
    builder = LegacyRecordBatchBuilder(1, 1, BIG)
    builder.append(0, timestamp=1, key=None, value=b"\x00" * (4 << 20))
    with pytest.raises(ConversionError, match="more than"):
        up_convert(bytes(builder.build()), magic=1, max_uncompressed=1 << 20)


@PROPERTY
@given(record_lists, st.sampled_from([0, 1]))
def test_plain_messages_are_byte_for_byte_kafka_pythons(recs, magic):
    """The struct/zlib writer against kafka-python's LegacyRecordBatchBuilder (the reference
    kept for the fast path)."""
    builder = LegacyRecordBatchBuilder(magic, 0, BIG)
    rows = []
    for i, (ts, key, value) in enumerate(recs):
        builder.append(i + 5, timestamp=ts, key=key, value=value)
        rows.append((i + 5, ts, key, value))
    parts, used, written = messages.encode(rows, magic, 0, 0, float("inf"))
    assert b"".join(parts) == bytes(builder.build())
    assert used == len(b"".join(parts)) and written == len(rows)


def legacy_entries(magic: int, codec: int, base: int, recs: list) -> bytes:
    """Messages as a broker stored them before the upgrade: absolute offsets; a wrapper
    carries its last offset, magic 1 inner offsets relative to the first."""
    builder = LegacyRecordBatchBuilder(magic, codec, BIG)
    for i, (ts, key, value) in enumerate(recs):
        builder.append(i if codec and magic else base + i, timestamp=ts, key=key, value=value)
    data = bytearray(builder.build())
    if codec:
        struct.pack_into(">q", data, 0, base + len(recs) - 1)
    return bytes(data)


@PROPERTY
@given(record_lists, st.sampled_from([0, 1, 2, 3]), st.sampled_from([0, 1]), st.integers(0, 3))
def test_legacy_entries_in_the_log_are_kept_or_converted_to_magic_0(recs, codec, magic, skip):
    """Kafka's downConvert keeps entries whose magic the client reads as they are and
    converts magic 1 for a magic 0 client; v2 batches after them follow."""
    base = 1000
    src = legacy_entries(1, codec, base, recs)
    after = base + len(recs)
    src += batch_bytes(after, [(0, 5, b"k", b"v")])
    skip = min(skip, len(recs))
    out = down_convert(src, magic=magic, fetch_offset=base + skip, max_bytes=BIG)
    got, codecs = read_legacy(out, magic)
    want = [Rec(base + i, ts if magic else -1, k, v) for i, (ts, k, v) in enumerate(recs)] + [
        Rec(after, 5 if magic else -1, b"k", b"v")
    ]
    if magic == 0:  # converted: records before the fetch offset dropped, as for v2 batches
        want = [r for r in want if r.offset >= base + skip]
    assert got == want
    assert codecs[0] == (codec if want[0].offset < after else 0)


@pytest.mark.parametrize("store_size", [True, False])
def test_lz4_bomb_is_refused_with_or_without_a_declared_size(store_size):
    frame = lz4.frame.compress(b"\x00" * (4 << 20), store_size=store_size)
    with pytest.raises(ConversionError, match="more than"):
        decompress(3, frame, 1, 1 << 20)
    assert len(decompress(3, frame, 1, 4 << 20)) == 4 << 20


def test_lz4_frame_lying_about_its_size_is_refused():
    frame = bytearray(lz4.frame.compress(b"a" * 100_000, store_size=True))
    frame[6:14] = (10).to_bytes(8, "little")  # declares 10 bytes
    frame[14] = lz4_header_checksum(bytes(frame[4:14]), broken=False)
    with pytest.raises(ConversionError, match="lz4"):
        decompress(3, bytes(frame), 1, 1 << 20)
