"""A full read asks Kafka in chunks of CHUNK_GROUPS groups: one OffsetFetch of 10,000 groups
x 100 partitions was not answered within its bound, and every full read failed, again and
again, for five minutes."""

from __future__ import annotations

import threading
import time

import pytest
from kafka.errors import KafkaError

from bridge.kafka import groups
from bridge.kafka.views import GroupView


def test_offsets_and_descriptions_are_asked_in_chunks(monkeypatch):
    asked: list[tuple[str, int]] = []

    def fetch(admin, request):
        asked.append(("OffsetFetch", len(request)))
        return {g: {} for g in request}

    def describe(admin, ids, types=None):
        asked.append(("DescribeGroups", len(ids)))
        return {g: GroupView(g, "Empty", "consumer", None) for g in ids}

    monkeypatch.setattr(groups, "fetch_offsets", fetch)
    monkeypatch.setattr(groups, "describe_groups", describe)
    names = [f"g{i:05d}" for i in range(2 * groups.CHUNK_GROUPS + 7)]
    views = groups.read_groups(None, names)  # type: ignore[arg-type]
    assert sorted(views) == names and all(v.error is None for v in views.values())
    sizes = [groups.CHUNK_GROUPS, groups.CHUNK_GROUPS, 7]
    # each kind in order (the offsets are fetched while the groups are described)
    for kind in ("DescribeGroups", "OffsetFetch"):
        assert [n for k, n in asked if k == kind] == sizes
    asked.clear()
    assert set(groups.read_offsets(None, names[:3])) == set(names[:3])  # type: ignore[arg-type]
    assert asked == [("OffsetFetch", 3)]  # a small read is one call, as before


def test_a_failed_describe_waits_for_the_fetch_beside_it(monkeypatch):
    """The offsets are fetched on another thread while the groups are described; when the
    describe fails, the read returns (raises) only once the fetch is over too, so no call
    of a tick's read outlives it."""
    fetched = threading.Event()

    def fetch(admin, request):
        time.sleep(0.2)
        fetched.set()
        return {g: {} for g in request}

    def describe(admin, ids, types=None):
        raise KafkaError("no coordinator")

    monkeypatch.setattr(groups, "fetch_offsets", fetch)
    monkeypatch.setattr(groups, "describe_groups", describe)
    with pytest.raises(KafkaError, match="no coordinator"):
        groups.read_groups(None, ["a", "b"])  # type: ignore[arg-type]
    assert fetched.is_set()
