"""The audit's file formats and pure helpers: dumps, snapshot ACL rules, the HTML report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from kazoo.security import make_acl, make_digest_acl

from bridge.audit import dump, report, snapshot
from bridge.audit.dump import DumpError, RawRecord
from bridge.audit.records import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value
from bridge.audit.verdict import BLOCKED, READY_TO_FINALIZE, READY_TO_MIGRATE

RECORDS = [
    RawRecord(3, 0, 1_700_000_000_000, encode_key(OffsetCommitKey("g", "t", 0)), None),
    RawRecord(
        3,
        1,
        1_700_000_001_000,
        encode_key(OffsetCommitKey("g", "t", 0)),
        encode_value(OffsetCommitValue(5, "", 1_700_000_001_000)),
    ),
    RawRecord(7, 0, 1_700_000_002_000, b"\x00\x09garbage", b"\xff"),
]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_dump_round_trip(tmp_path: Path, fmt: str) -> None:
    ends = {("t", 0): 10, ("t", 1): 0}
    manifest = dump.write_dump(tmp_path, iter(RECORDS), ends, fmt=fmt, source="test")
    assert manifest["records"] == 3 and manifest["tombstones"] == 1
    assert dump.read_manifest(tmp_path)["records_file"] == manifest["records_file"]
    assert [r for batch in dump.iter_dump(tmp_path, batch_rows=2) for r in batch] == RECORDS
    assert dump.read_log_end_offsets(tmp_path) == ends


def test_an_empty_dump_is_still_a_valid_dump(tmp_path: Path) -> None:
    manifest = dump.write_dump(tmp_path, iter([]), {}, fmt="parquet")
    assert manifest["records"] == 0
    assert list(dump.iter_dump(tmp_path)) == []


def test_dump_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(DumpError, match="not a directory"):
        dump.read_manifest(tmp_path / "missing")
    with pytest.raises(DumpError, match="manifest.json is missing"):
        dump.read_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(DumpError, match="not an offsets dump manifest"):
        dump.read_manifest(tmp_path)
    with pytest.raises(DumpError, match="unknown dump format"):
        dump.write_dump(tmp_path / "x", iter([]), {}, fmt="csv")


# -- snapshot: who may write ----------------------------------------------------------------


def test_acl_grants_world_and_the_authenticated_user() -> None:
    world_rw = [make_acl("world", "anyone", all=True)]
    world_ro = [make_acl("world", "anyone", read=True)]
    alice = [make_digest_acl("alice", "secret", all=True)]
    anon = snapshot.identities(None, None)
    assert snapshot.acl_grants(world_rw, snapshot.Permissions.WRITE, anon)
    assert not snapshot.acl_grants(world_ro, snapshot.Permissions.WRITE, anon)
    assert not snapshot.acl_grants(alice, snapshot.Permissions.WRITE, anon)
    as_alice = snapshot.identities("digest", "alice")
    assert snapshot.acl_grants(alice, snapshot.Permissions.CREATE, as_alice)
    assert not snapshot.acl_grants(
        alice, snapshot.Permissions.WRITE, snapshot.identities("digest", "bob")
    )


@pytest.mark.parametrize(
    ("path", "kind", "fields", "error"),
    [
        ("/consumers/g", "group", {"group": "g"}, None),
        ("/consumers/g/ids/c-1", "consumer", {"group": "g", "consumer_id": "c-1"}, None),
        ("/consumers/g/owners/t/3", "owner", {"topic": "t", "partition": 3}, None),
        ("/consumers/g/offsets/t/3", "offset", {"topic": "t", "partition": 3}, None),
        ("/consumers/g/offsets/t/x", "offset", {"topic": "t", "partition": None}, "partition 'x'"),
        ("/consumers/g/offsets/t/01", "offset", {"partition": None}, "canonical"),
        ("/brokers/ids/2", "broker", {"broker_id": 2}, None),
        ("/brokers/topics/t", "topic", {"topic": "t"}, None),
    ],
)
def test_snapshot_rows_take_names_from_paths_and_flag_bad_ones(path, kind, fields, error) -> None:
    row = snapshot._classify(path)
    assert row.kind == kind
    for name, value in fields.items():
        assert getattr(row, name) == value
    assert (row.error is None) if error is None else (error in row.error)


def test_snapshot_files_round_trip(tmp_path: Path) -> None:
    rows = [
        snapshot.NodeRow("group", "/consumers/g", group="g", writable=True, mtime=5),
        snapshot.NodeRow("offset", "/consumers/g/offsets/t/0", "g", "t", 0, offset=7),
        snapshot.NodeRow("offset", "/consumers/g/offsets/t/1", "g", "t", 1, error="bad"),
    ]
    for fmt in ("jsonl", "parquet"):
        out = tmp_path / fmt
        snapshot.write(out, rows, {"format": snapshot.SNAPSHOT_FORMAT, "version": 1}, fmt)
        assert snapshot.read_rows(out) == rows
    with pytest.raises(snapshot.SnapshotError, match="does not exist"):
        snapshot.read_manifest(tmp_path / "nope")
    with pytest.raises(snapshot.SnapshotError, match="is not a snapshot"):
        snapshot.read_manifest(tmp_path)


# -- the report -------------------------------------------------------------------------------


def _group(name: str, verdict: str, **kw) -> dict:
    base = {
        "group": name,
        "verdict": verdict,
        "reasons": [f"why {name}"],
        "notes": [],
        "partitions": 2,
        "zk_partitions": 2,
        "kafka_partitions": 1,
        "equal_partitions": 1,
        "diverged_partitions": 0,
        "total_difference": 0,
        "zk_lag": 10,
        "kafka_lag": 4,
        "lag": 4,
        "zk_last_commit_ms": 1_700_000_000_000,
        "kafka_last_commit_ms": None,
    }
    return base | kw


def test_report_is_self_contained_and_shows_every_group() -> None:
    groups = [
        _group("alpha", READY_TO_FINALIZE),
        _group("<script>alert(1)</script>", BLOCKED, total_difference=-30, diverged_partitions=2),
        _group("gamma", READY_TO_MIGRATE, total_difference=12, diverged_partitions=1),
    ]
    parts = [
        {"group": "alpha", "topic": "t", "partition": 0, "zk_offset": 1, "kafka_offset": 1},
        {"group": "gamma", "topic": "t", "partition": 1, "zk_offset": 5, "kafka_deleted": True},
    ]
    versions = [
        {
            "key_kind": "offset_commit",
            "key_version": 1,
            "value_kind": "offset_commit",
            "value_version": 3,
            "records": 10,
            "known": True,
        },
        {
            "key_kind": "unknown",
            "key_version": 5,
            "value_kind": "unknown",
            "value_version": 0,
            "records": 2,
            "known": False,
        },
    ]
    activity = [
        {"group": "alpha", "bucket_start_ms": 1_700_000_000_000, "commits": 3},
        {"group": "gamma", "bucket_start_ms": 1_700_000_060_000, "commits": 1},
    ]
    summary = {
        "verdicts": {READY_TO_FINALIZE: 1, BLOCKED: 1, READY_TO_MIGRATE: 1},
        "activity_bucket_ms": 60_000,
        "records": 12,
        "unknown_version_records": 2,
    }
    html = report.render(summary, groups, parts, versions, activity)
    # nothing fetched from anywhere: no scripts, stylesheets or remote URLs
    assert "<script" not in html and "<link" not in html
    assert not re.search(r"(src|href)=['\"]?(https?:)?//", html)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    for g in ("alpha", "gamma"):
        assert f"<b>{g}</b>" in html
    for plot in ("lag", "divergence", "activity"):
        svg = re.search(rf'<svg id="plot-{plot}".*?</svg>', html, re.S)
        assert svg and svg.group(0).count("<rect") >= 2, plot
    # most urgent first
    assert (
        html.index("&lt;script&gt;alert(1)")
        < html.index("<b>gamma</b>")
        < html.index("<b>alpha</b>")
    )
    assert "Kafka offset deleted (tombstone)" in html


def test_report_caps_groups_but_says_so() -> None:
    groups = [_group(f"g{i:03d}", READY_TO_MIGRATE) for i in range(30)]
    html = report.render({"verdicts": {}}, groups, [], [], [], limit=10)
    assert "<b>g009</b>" in html and "<b>g010</b>" not in html
    assert "20 more groups are in groups.parquet only." in html
