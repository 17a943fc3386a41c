"""Consumer ids, thread ids and wildcard subscriptions of the old consumer."""

from __future__ import annotations

from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkpaths import (
    BLACK_LIST,
    STATIC,
    WHITE_LIST,
    ConsumerRegistration,
    LegacyFormatError,
    ThreadId,
    TopicFilter,
    ZkLayoutError,
    make_configured_consumer_id,
    make_consumer_id,
    normalise_regex,
    parse_consumer_id,
    parse_thread_id,
    registration_filter,
    registration_thread_ids,
    thread_id,
    thread_ids_per_topic,
    uuid_prefix,
)
from zkpaths.topicfilter import INTERNAL_TOPICS_0_11

# Long.toHexString(uuid.getMostSignificantBits()).substring(0, 8), as printed by a JVM
UUID_VECTORS = [
    ("f1234567-89ab-4cde-8000-000000000000", "f1234567"),
    ("0abcdef0-1234-4567-89ab-cdef01234567", "abcdef01"),  # Java drops the leading zero
    ("00000000-1234-4567-89ab-cdef01234567", "12344567"),
]


@pytest.mark.parametrize(("uuid", "prefix"), UUID_VECTORS)
def test_uuid_prefix(uuid: str, prefix: str) -> None:
    assert uuid_prefix(UUID(uuid)) == prefix


def test_uuid_prefix_too_short_is_refused_like_java() -> None:
    with pytest.raises(ValueError, match="too few"):
        uuid_prefix(UUID("00000000-0000-0000-89ab-cdef01234567"))


def test_make_consumer_id() -> None:
    uuid = UUID("f1234567-89ab-4cde-8000-000000000000")
    cid = make_consumer_id("group", "host-1.example", 1500000000000, uuid)
    assert cid == "group_host-1.example-1500000000000-f1234567"
    parts = parse_consumer_id("group", cid)
    assert parts.generated
    assert (parts.hostname, parts.timestamp_ms, parts.uuid8) == (
        "host-1.example",
        1500000000000,
        "f1234567",
    )


def test_configured_consumer_id() -> None:
    cid = make_configured_consumer_id("group", "worker-a")
    assert cid == "group_worker-a"
    parts = parse_consumer_id("group", cid)
    assert not parts.generated
    assert parts.suffix == "worker-a"


def test_parse_consumer_id_of_another_group() -> None:
    with pytest.raises(LegacyFormatError, match="does not start with 'g_'") as info:
        parse_consumer_id("g", "other_host-1-12345678")
    assert isinstance(info.value, ZkLayoutError)
    with pytest.raises(LegacyFormatError):
        parse_consumer_id("g", "g_")


def test_thread_ids() -> None:
    assert thread_id("g_c", 3) == "g_c-3"
    assert parse_thread_id("g_host-1-1500000000000-f1234567-10") == ThreadId(
        "g_host-1-1500000000000-f1234567", 10
    )
    assert str(ThreadId("g_c", 0)) == "g_c-0"
    assert parse_thread_id("g_c--1") == ThreadId("g_c-", 1)  # split at the last '-'
    for bad in ("nodash", "-1", "g_c-", "g_c-01", "g_c-x", "g_c-+1"):
        with pytest.raises(LegacyFormatError, match="thread id"):
            parse_thread_id(bad)
    with pytest.raises(ValueError):
        thread_id("g_c", -1)


@settings(max_examples=300)
@given(st.text(min_size=1), st.integers(0, 10**6))
def test_thread_id_round_trip(consumer_id: str, n: int) -> None:
    assert parse_thread_id(thread_id(consumer_id, n)) == ThreadId(consumer_id, n)


def test_thread_ids_per_topic_share_thread_numbers() -> None:
    # TopicCount.makeConsumerThreadIdsPerTopic: one thread serves every topic with n > its index
    assert thread_ids_per_topic("g_c", {"a": 2, "b": 3}) == {
        "a": ("g_c-0", "g_c-1"),
        "b": ("g_c-0", "g_c-1", "g_c-2"),
    }
    with pytest.raises(ValueError, match="topic 'a'"):
        thread_ids_per_topic("g_c", {"a": 0})


def test_registration_thread_ids_static_ignores_topic_list() -> None:
    reg = ConsumerRegistration({"t": 2}, STATIC)
    assert registration_thread_ids("g_c", reg, ["other"]) == {"t": ("g_c-0", "g_c-1")}


def test_registration_thread_ids_wildcard() -> None:
    topics = ["orders", "orders-eu", "audit", "__consumer_offsets", "__transaction_state"]
    white = ConsumerRegistration({"orders.*": 2}, WHITE_LIST)
    assert registration_thread_ids("g_c", white, topics) == {
        "orders": ("g_c-0", "g_c-1"),
        "orders-eu": ("g_c-0", "g_c-1"),
    }
    black = ConsumerRegistration({"orders.*": 1}, BLACK_LIST)
    # 0.10.2.2 knows only __consumer_offsets as internal
    assert list(registration_thread_ids("g_c", black, topics)) == ["audit", "__transaction_state"]
    assert list(
        registration_thread_ids("g_c", black, topics, internal_topics=INTERNAL_TOPICS_0_11)
    ) == ["audit"]
    everything = ConsumerRegistration({".*": 1}, WHITE_LIST)
    got = registration_thread_ids("g_c", everything, topics, exclude_internal_topics=False)
    assert "__consumer_offsets" in got


def test_empty_wildcard_subscription_counts_as_static() -> None:
    reg = ConsumerRegistration({}, WHITE_LIST)
    assert registration_filter(reg) is None
    assert registration_thread_ids("g_c", reg, ["t"]) == {}


def test_kafka_node_white_list_uses_first_topic_as_regex() -> None:
    reg = ConsumerRegistration({"t1": 1, "t2": 1}, WHITE_LIST)
    assert registration_thread_ids("g_c", reg, ["t1", "t2", "t10"]) == {"t1": ("g_c-0",)}


@pytest.mark.parametrize(
    ("raw", "regex"),
    [
        ("a,b", "a|b"),
        (' "foo.*" ', "foo.*"),
        ("'a', 'b'", "a'|'b"),  # only the outermost quotes go, as in Kafka
        ("x y", "xy"),
        ("\t.*\n", ".*"),
    ],
)
def test_normalise_regex(raw: str, regex: str) -> None:
    assert normalise_regex(raw) == regex
    assert TopicFilter(WHITE_LIST, raw).regex == regex


def test_topic_filter_matches_whole_names() -> None:
    f = TopicFilter(WHITE_LIST, "orders")
    assert f.allows("orders")
    assert not f.allows("orders-eu")  # String.matches, not find


def test_topic_filter_rejects_bad_input() -> None:
    with pytest.raises(LegacyFormatError, match="does not compile"):
        TopicFilter(WHITE_LIST, "(unclosed")
    with pytest.raises(LegacyFormatError, match="not a wildcard pattern"):
        TopicFilter(STATIC, ".*")
