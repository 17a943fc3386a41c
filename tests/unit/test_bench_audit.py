"""``bench.audit``'s one-process baseline and its output comparison, without Spark.

The benchmark's verdict on Spark's outputs is only as good as the baseline they are compared
with and the comparison itself: the baseline must equal a plain record-by-record reading of
an awkward dump (the one ``tests/integration/test_audit_compaction.py`` checks Spark
against), and a changed, missing, extra or doubled row must be reported.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from bench.audit import baseline, differences
from bridge.audit import dump
from tests.integration.test_audit_compaction import expected, records


def test_the_baseline_equals_reading_the_records_one_by_one(tmp_path: Path) -> None:
    recs = records(seed=5, n=4000)
    dump.write_dump(tmp_path, recs, {}, batch_rows=1000)
    _, got = baseline(tmp_path)
    want = expected(recs)
    assert got["offsets"].keys() == want["offsets"].keys()
    for k, w in want["offsets"].items():
        g = {n: v for n, v in got["offsets"][k].items() if n not in ("group", "topic", "partition")}
        assert g.pop("kafka_commits_per_min") == pytest.approx(w["kafka_commits_per_min"]), k
        assert g == {n: v for n, v in w.items() if n != "kafka_commits_per_min"}, k
    groups = {g: {n: v for n, v in r.items() if n != "group"} for g, r in got["groups"].items()}
    assert groups == want["groups"]
    assert {k: n for k, (n, _) in got["versions"].items()} == want["versions"]
    known = {k: known for k, (_, known) in got["versions"].items()}
    assert not any(known[k] for k in known if "unknown" in k or "undecodable" in k)
    assert known[("offset_commit", 0, "tombstone", None)]


def test_every_kind_of_difference_is_reported(tmp_path: Path) -> None:
    recs = records(seed=6, n=1000)
    dump.write_dump(tmp_path, recs, {}, batch_rows=1000)
    _, want = baseline(tmp_path)
    assert differences(copy.deepcopy(want), want) == []
    got = copy.deepcopy(want)
    some = next(iter(got["offsets"]))
    got["offsets"][some]["kafka_offset"] = (got["offsets"][some]["kafka_offset"] or 0) + 1
    del got["groups"][next(iter(got["groups"]))]
    got["versions"][("extra", 0, "extra", 0)] = (1, False)
    found = differences(got, want)
    assert len(found) == 3
    assert found[0].startswith("offsets: 1 rows different")
    assert found[1].startswith("groups: 1 rows missing")
    assert found[2].startswith("versions: 1 rows extra")
