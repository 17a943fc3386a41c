"""Mirrored ids keep Kafka's member order, so legacy range == Kafka range."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkpaths.errors import ZkLayoutError
from zkpaths.mirror_ids import (
    java_order_key,
    member_id_of,
    mirrored_consumer_id,
    mirrored_thread_id,
)

# any text, plus ids shaped like Kafka's (client id, '-', uuid) and prefix-heavy alphabets
ids = st.one_of(
    st.text(min_size=1, max_size=12),
    st.text(alphabet="a-!.~/ 0\u00e9\U0001f600", min_size=1, max_size=8),
    st.builds(lambda c, u: f"{c}-{u}", st.text(max_size=8), st.uuids().map(str)),
).filter(lambda s: s not in (".",))


def test_kafka_shaped_ids_stay_readable():
    mid = "consumer-orders-1-2f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
    want = "consumer.-orders.-1.-2f0c1a2b.-3c4d.-4e5f.-8a9b.-0c1d2e3f4a5b"
    assert mirrored_consumer_id(mid) == want
    assert mirrored_thread_id(mid).endswith(".-0c1d2e3f4a5b-0")


def test_separator_case_that_breaks_naive_ids():
    # Kafka: "a" < "a!"; naive thread ids "a-0" > "a!-0"; mirrored ones agree with Kafka
    assert "a-0" > "a!-0"
    assert mirrored_thread_id("a") < mirrored_thread_id("a!")


@settings(max_examples=1000)
@given(ids, ids)
def test_thread_id_order_equals_member_id_order(a, b):
    kafka = (java_order_key(a) > java_order_key(b)) - (java_order_key(a) < java_order_key(b))
    ta, tb = mirrored_thread_id(a), mirrored_thread_id(b)
    legacy = (java_order_key(ta) > java_order_key(tb)) - (java_order_key(ta) < java_order_key(tb))
    assert kafka == legacy


@settings(max_examples=500)
@given(ids)
def test_round_trip_and_legal_znode_name(mid):
    cid = mirrored_consumer_id(mid)
    assert member_id_of(cid) == mid
    assert "/" not in cid and cid not in (".", "..")
    assert all(0x20 <= ord(c) <= 0x7E for c in cid)


@pytest.mark.parametrize("bad", ["", "a\x01", ".x", "~12", "é"])
def test_foreign_ids_are_rejected(bad):
    with pytest.raises(ZkLayoutError):
        member_id_of(bad)
