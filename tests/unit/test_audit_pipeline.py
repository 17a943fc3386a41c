"""The audit's per-partition decode and compaction (the ``mapInArrow`` body), without Spark.

``tests/integration/test_audit_compaction.py`` runs the same through Spark ``local[2]``.
"""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa
import pytest

from bridge.audit import next_gen
from bridge.audit.decode import (
    COMPACTED_AWAY,
    DECODED_ARROW,
    _decode_batches,
    compact_rows,
    decode_row,
)
from bridge.audit.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_key,
    encode_value,
)

K1 = encode_key(OffsetCommitKey("g", "t", 0, 1))
K0 = encode_key(OffsetCommitKey("g", "t", 0, 0))  # the same partition, key v0
KG = encode_key(GroupMetadataKey("g"))


def _commit(offset: int, version: int = 3) -> bytes:
    return encode_value(OffsetCommitValue(offset, f"m{offset}", 1000 + offset, version))


def _pairs(*pairs: tuple) -> list[pa.RecordBatch]:
    """(key, value or None, records, first_ts, last_ts, partition, offset), one batch each."""
    out = []
    for key, value, n, first, last, part, offset in pairs:
        vhead = None if value is None else value[:2]
        out.append(
            pa.RecordBatch.from_pydict(
                {
                    "latest_partition": pa.array([part], pa.int32()),
                    "latest_offset": pa.array([offset], pa.int64()),
                    "latest_ts": pa.array([last], pa.int64()),
                    "latest_value": pa.array([value], pa.binary()),
                    "key": pa.array([key], pa.binary()),
                    "vhead": pa.array([vhead], pa.binary()),
                    "records": pa.array([n], pa.int64()),
                    "first_ts": pa.array([first], pa.int64()),
                    "last_ts": pa.array([last], pa.int64()),
                }
            )
        )
    return out


def _run(*pairs: tuple) -> list[dict]:
    batches = list(_decode_batches(iter(_pairs(*pairs))))
    assert all(b.schema == DECODED_ARROW for b in batches)
    return [r for b in batches for r in b.to_pylist()]


def test_the_latest_pair_of_a_partition_is_kept_across_key_and_value_versions() -> None:
    rows = _run(
        (K1, _commit(10), 4, 100, 400, 3, 40),
        (K0, _commit(20, 1), 2, 150, 500, 3, 50),  # key v0, the latest record of all
        (K1, None, 1, 450, 450, 3, 45),  # a tombstone in between
        (K1, _commit(5, 0), 1, 50, 50, 3, 5),
    )
    kept = [r for r in rows if r["kept"]]
    assert len(kept) == 1
    k = kept[0]
    assert (k["key_version"], k["value_version"], k["commit_offset"]) == (0, 1, 20)
    assert (k["kafka_commits"], k["kafka_tombstones"]) == (7, 1)
    assert (k["kafka_first_commit_ts"], k["kafka_last_record_ts"]) == (50, 500)
    # the other pairs are counted with their versions, their values never read
    others = [r for r in rows if not r["kept"]]
    assert {(r["value_kind"], r["value_version"]) for r in others} == {
        ("offset_commit", 3),
        ("tombstone", None),
        ("offset_commit", 0),
    }
    assert all(r["commit_offset"] is None and r["kafka_commits"] is None for r in others)


def test_a_tombstone_last_is_kept_and_a_later_partition_wins() -> None:
    rows = _run(
        (K1, _commit(10), 3, 100, 300, 2, 900),
        (K1, None, 1, 200, 200, 3, 1),  # partition 3 orders after partition 2
    )
    (k,) = [r for r in rows if r["kept"]]
    assert k["value_kind"] == "tombstone"
    assert (k["kafka_commits"], k["kafka_tombstones"]) == (3, 1)
    assert k["kafka_first_commit_ts"] == 100


def test_groups_are_compacted_apart_from_their_offsets() -> None:
    members = GroupMetadataValue("consumer", 7, None, None, (), 3, 123)
    rows = _run(
        (KG, encode_value(members), 2, 10, 20, 1, 8),
        (KG, None, 1, 30, 30, 1, 3),
        (K1, _commit(1), 1, 5, 5, 1, 1),
    )
    kept = {r["key_kind"]: r for r in rows if r["kept"]}
    assert kept.keys() == {"group_metadata", "offset_commit"}
    g = kept["group_metadata"]
    assert (g["value_kind"], g["generation"], g["members"]) == ("group_metadata", 7, 0)
    assert g["kafka_commits"] is None  # counts are for offset commits


def test_unknown_and_undecodable_keys_are_counted_never_kept() -> None:
    share = (12).to_bytes(2, "big") + KG[2:]  # a share group's key: not read
    rows = _run(
        (share, b"\x00\x00abc", 3, 1, 2, 1, 1),
        (K1[:-1], _commit(1), 2, 1, 2, 1, 2),
        (K1, b"\x00", 1, 1, 1, 1, 3),  # a value too short for its version
    )
    by_kind = {r["key_kind"]: r for r in rows}
    assert by_kind["unknown"]["key_version"] == 12 and not by_kind["unknown"]["kept"]
    assert by_kind["undecodable"]["value_kind"] == "undecodable"
    assert not by_kind["undecodable"]["kept"]
    oc = by_kind["offset_commit"]
    assert oc["kept"] and oc["value_kind"] == "undecodable" and oc["error"]
    assert oc["kafka_commits"] == 1


def test_next_generation_records_are_compacted_per_type_and_member() -> None:
    """KIP-848 records: one kept per (record type, member), the later of two pairs; a
    member's tombstone kept means it left; undecodable values are kept with their error."""
    records = dict((k.record_type, (k, v)) for k, v in next_gen.examples("g"))
    key, meta = records[next_gen.MEMBER_METADATA]
    other = next_gen.encode_key(replace(key, member_id="m-2"))
    member = next_gen.encode_value(key.record_type, meta)
    epoch_key, epoch = records[next_gen.METADATA]
    rows = _run(
        (next_gen.encode_key(key), member, 4, 1, 2, 1, 10),
        (next_gen.encode_key(key), None, 1, 3, 3, 1, 11),  # m-1 left
        (other, member, 1, 1, 1, 1, 5),
        (next_gen.encode_key(epoch_key), next_gen.encode_value(3, epoch), 2, 1, 4, 1, 12),
        (next_gen.encode_key(records[8][0]), b"\x00\x00\x01", 1, 1, 1, 1, 13),
    )
    kept = [r for r in rows if r["kept"]]
    assert {r["key_kind"] for r in rows} == {next_gen.KIND}
    by = {(r["key_version"], r["member_id"]): r for r in kept}
    assert set(by) == {(5, "m-1"), (5, "m-2"), (3, None), (8, "m-1")}
    assert by[(5, "m-1")]["value_kind"] == "tombstone"
    assert (by[(5, "m-2")]["members"], by[(5, "m-2")]["member_topics"]) == (1, ["orders"])
    assert by[(5, "m-2")]["protocol"] == "uniform"
    assert (by[(3, None)]["generation"], by[(3, None)]["group"]) == (7, "g")
    assert by[(8, "m-1")]["value_kind"] == next_gen.KIND and by[(8, "m-1")]["error"]
    assert all(r["kafka_commits"] is None for r in kept)  # counts are for offset commits


def test_a_pair_whose_latest_record_was_not_found() -> None:
    rows = _run(
        (K1, None, 2, 10, 20, None, None),
        (K0, _commit(3), 1, 5, 5, 1, 9),
    )
    lost = next(r for r in rows if r["latest_partition"] is None)
    assert (lost["value_kind"], lost["error"]) == ("undecodable", COMPACTED_AWAY)
    # a pair with a position beats one without, whichever comes first
    (k,) = [r for r in rows if r["kept"]]
    assert k["commit_offset"] == 3
    assert k["kafka_commits"] == 3  # the lost pair's records count as commits
    only_lost = _run((K1, None, 2, 10, 20, None, None))
    assert only_lost[0]["kept"] and only_lost[0]["error"] == COMPACTED_AWAY


@pytest.mark.parametrize("value", [None, b"\x00", b"\x00\x03", _commit(7), _commit(7, 4)])
def test_kept_rows_decode_as_decode_row(value) -> None:
    (row,) = _run((K1, value, 1, 1, 1, 1, 1))
    want = decode_row(K1, None if value is None else value[:2], value)
    assert {n: row[n] for n in want} == want


def test_compact_rows_keeps_the_greatest_position() -> None:
    rows = [decode_row(K1, v[:2], v) for v in (_commit(1), _commit(2, 2))]
    for r in rows:
        r |= {"records": 1, "first_ts": 1, "last_ts": 2}
    compact_rows(rows, [(0, 5), (0, 4)])
    assert rows[0].get("kept") and not rows[1].get("kept")
    assert rows[0]["kafka_commits"] == 2
