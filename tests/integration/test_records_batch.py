"""Storage-mode records of many new groups written in batches (issue 14, cold start)."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient

from bridge.decide.migration import StorageMode
from bridge.zookeeper import records
from bridge.zookeeper.fence import claim_epoch
from bridge.zookeeper.records import create_record, create_records, read_records
from bridge.zookeeper.writer import FencedWriter, Ledger

pytestmark = pytest.mark.integration

ROOT = "/kzb"


def test_records_of_many_groups_in_few_transactions(zk: KazooClient, monkeypatch):
    writer = FencedWriter(zk, claim_epoch(zk, f"{ROOT}/epoch", "t"), Ledger(ROOT))
    # a record someone created already, in the second batch: that batch goes group by group
    create_record(writer, ROOT, "g0250", StorageMode.DUAL, "operator", 1)
    commits: list[int] = []
    apply_own = writer.apply_own
    monkeypatch.setattr(writer, "apply_own", lambda ops: (commits.append(1), apply_own(ops)))
    modes = {f"g{i:04d}": StorageMode.KAFKA for i in range(450)}
    made = create_records(writer, ROOT, modes, "bridge (inferred)", 2)
    assert set(made) == set(modes) - {"g0250"}
    got = read_records(zk, ROOT)
    assert {g for g, (r, _) in got.items() if r.mode is StorageMode.KAFKA} == set(modes) - {"g0250"}
    assert got["g0250"][0].mode is StorageMode.DUAL  # an existing record is never replaced
    batches = -(-450 // records.RECORDS_PER_BATCH)
    # one transaction per batch, and one per group of the refused batch
    assert len(commits) == batches + records.RECORDS_PER_BATCH
