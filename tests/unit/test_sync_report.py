"""The forced-sync answer's format (bridge.zookeeper.sync.SyncReport), both ways."""

from __future__ import annotations

import json

import pytest

from bridge.zookeeper.sync import SyncReport
from zkpaths import TopicPartition


def test_a_report_reads_back_as_written():
    report = SyncReport(
        "abc123",
        1_700_000_000_000,
        {TopicPartition("orders", 0): (40, -1), TopicPartition("a.b-c_d", 12): (-1, 7)},
    )
    data = report.encode()
    assert json.loads(data)["offsets"] == {"a.b-c_d/12": [-1, 7], "orders/0": [40, -1]}
    assert SyncReport.decode(data) == report


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"[]",
        b'{"request": "x", "at_ms": 1}',
        b'{"request": "x", "at_ms": 1, "offsets": {"t": [1, 2]}}',
    ],
)
def test_a_node_that_is_no_report_is_refused(data):
    with pytest.raises(ValueError):
        SyncReport.decode(data)
