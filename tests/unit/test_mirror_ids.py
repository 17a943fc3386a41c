"""Mirrored ids keep Kafka's member order, so legacy range == Kafka range."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkpaths import java_sort_key, kafka_range_assign, legacy_range_assign
from zkpaths.errors import ZkLayoutError
from zkpaths.mirror_ids import (
    escape_id,
    mirrored_consumer_id,
    mirrored_thread_id,
    parse_mirrored,
    unescape_id,
)

G = "orders"

# any text, plus ids shaped like Kafka's (client id, '-', uuid) and prefix-heavy alphabets
ids = st.one_of(
    st.text(min_size=1, max_size=12),
    st.text(alphabet="a-!.~/ 0\u00e9\U0001f600", min_size=1, max_size=8),
    st.builds(lambda c, u: f"{c}-{u}", st.text(max_size=8), st.uuids().map(str)),
)
#: a member: (member id, group.instance.id or None)
members = st.tuples(ids, st.one_of(st.none(), ids))


def cmp(a, b) -> int:
    return (a > b) - (a < b)


def kafka_order(a: tuple[str, str | None], b: tuple[str, str | None]) -> int:
    """Kafka's range member order: static members first by instance id, then member id."""
    (ma, ia), (mb, ib) = a, b
    if ia is not None and ib is not None:
        return cmp(java_sort_key(ia), java_sort_key(ib))
    if ia is not None or ib is not None:
        return -1 if ia is not None else 1
    return cmp(java_sort_key(ma), java_sort_key(mb))


def test_kafka_shaped_ids_stay_readable():
    mid = "consumer-orders-1-2f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
    want = "orders_~~consumer.-orders.-1.-2f0c1a2b.-3c4d.-4e5f.-8a9b.-0c1d2e3f4a5b"
    assert mirrored_consumer_id(G, mid) == want
    assert mirrored_thread_id(G, mid) == want + "-0"
    assert mirrored_consumer_id(G, mid, "billing-1") == "orders_billing.-1"


def test_separator_case_that_breaks_naive_ids():
    # Kafka: "a" < "a!"; naive thread ids "a-0" > "a!-0"; mirrored ones agree with Kafka
    assert "a-0" > "a!-0"
    assert mirrored_thread_id(G, "a") < mirrored_thread_id(G, "a!")


@settings(max_examples=1500)
@given(members, members)
def test_thread_id_order_equals_kafka_member_order(a, b):
    ta, tb = mirrored_thread_id(G, *a), mirrored_thread_id(G, *b)
    expected = kafka_order(a, b)
    if expected == 0:
        return  # same instance id: Kafka forbids two live members with it
    assert cmp(java_sort_key(ta), java_sort_key(tb)) == expected


@settings(max_examples=300)
@given(
    st.lists(members, min_size=1, max_size=6, unique_by=lambda m: m[1] or m[0]), st.integers(1, 20)
)
def test_legacy_range_over_mirrored_ids_equals_kafka_range(group_members, n_partitions):
    group_members = [m for m in group_members if m[1] is None or m[1] != m[0]]
    ids_ = {m[0] for m in group_members}
    if len(ids_) != len(group_members):
        return
    subs = {mid: ["t"] for mid, _ in group_members}
    instance = {mid: iid for mid, iid in group_members if iid is not None}
    kafka = kafka_range_assign(subs, {"t": n_partitions}, group_instance_ids=instance)
    threads = {mirrored_thread_id(G, mid, instance.get(mid)): mid for mid, _ in group_members}
    legacy = legacy_range_assign({"t": list(threads)}, {"t": n_partitions})
    assert {tp: threads[t] for tp, t in legacy.items()} == dict(kafka)


def test_dynamic_members_sort_after_every_old_consumer_thread():
    old = f"{G}_host-1700000000000-abcdef01-3"
    assert old < mirrored_thread_id(G, "\x00")
    assert old < mirrored_thread_id(G, "~~~~")


@settings(max_examples=500)
@given(ids, st.one_of(st.none(), ids))
def test_round_trip_and_legal_znode_name(mid, iid):
    cid = mirrored_consumer_id(G, mid, iid)
    assert parse_mirrored(G, cid) == (("instance", iid) if iid else ("member", mid))
    assert unescape_id(escape_id(mid)) == mid
    assert "/" not in cid and cid not in (".", "..")
    assert all(0x20 <= ord(c) <= 0x7E for c in cid[len(G) :])


@pytest.mark.parametrize("bad", ["", "a\x01", ".x", "~12", "é"])
def test_foreign_ids_are_rejected(bad):
    with pytest.raises(ZkLayoutError):
        unescape_id(bad)
    with pytest.raises(ZkLayoutError):
        parse_mirrored(G, "other_" + bad)
