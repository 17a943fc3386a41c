"""The old consumers' nodes: registrations under /ids, owners and offsets."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.golden import load
from zkpaths import (
    BLACK_LIST,
    STATIC,
    WHITE_LIST,
    CodecError,
    ConsumerRegistration,
    UnknownVersionError,
    decode_consumer_registration,
    decode_offset,
    decode_owner,
    encode_consumer_registration,
    encode_offset,
    encode_owner,
)

# ZookeeperConsumerConnector.registerConsumerInZK, 0.10.2.2 (a real consumer, run by
# scripts/golden_vectors.py; its timestamp fixed): tests/golden/legacy_consumer.json
V010 = load("legacy_consumer")["registrations"]["static, one topic"]["json"].encode()
# 0.8.0: Utils.mergeJsonFields of sorted fields, TopicCount.dbString with spaces
V080 = (
    b'{ "pattern":"static", "subscription":{ "t": 1 }, "timestamp":"1400000000000", "version":1 }'
)
V080_WILDCARD = (
    b'{ "pattern":"white_list", "subscription":{ "foo.*" : 2 }, '
    b'"timestamp":"1400000000000", "version":1 }'
)
# kafka-node HighLevelConsumer: white_list with plain topic names
KAFKA_NODE = (
    b'{"version":1,"subscription":{"t1": 1, "t2": 1},"pattern":"white_list",'
    b'"timestamp":"1500000000000"}'
)


def test_0_10_golden_vector_both_ways() -> None:
    reg = decode_consumer_registration(V010)
    assert reg == ConsumerRegistration({"t": 1}, STATIC, 1500000000000)
    assert not reg.is_wildcard
    assert encode_consumer_registration(reg) == V010


def test_0_8_0_spaced_json() -> None:
    assert decode_consumer_registration(V080) == ConsumerRegistration(
        {"t": 1}, STATIC, 1400000000000
    )
    wildcard = decode_consumer_registration(V080_WILDCARD)
    assert wildcard == ConsumerRegistration({"foo.*": 2}, WHITE_LIST, 1400000000000)
    assert wildcard.is_wildcard


def test_kafka_node_registration() -> None:
    reg = decode_consumer_registration(KAFKA_NODE)
    assert reg.pattern == WHITE_LIST
    assert reg.subscription == {"t1": 1, "t2": 1}
    assert list(reg.subscription) == ["t1", "t2"]  # order kept: the old consumer uses the first


def test_multi_topic_static_keeps_order_and_encodes_compactly() -> None:
    reg = ConsumerRegistration({"b": 2, "a": 3}, STATIC, 5)
    data = encode_consumer_registration(reg)
    assert data == b'{"version":1,"subscription":{"b":2,"a":3},"pattern":"static","timestamp":"5"}'
    assert list(decode_consumer_registration(data).subscription) == ["b", "a"]


def test_wildcard_regex_is_escaped_as_the_0_10_consumer_does() -> None:
    reg = ConsumerRegistration({'a\\d+/"x"\u0085': 1}, BLACK_LIST, 9)
    data = encode_consumer_registration(reg)
    assert b'"a\\\\d+\\/\\"x\\"\\u0085":1' in data
    assert decode_consumer_registration(data) == reg


def test_timestamp_optional_and_tolerated_as_number() -> None:
    reg = decode_consumer_registration(b'{"version":1,"subscription":{"t":1},"pattern":"static"}')
    assert reg.timestamp_ms is None
    assert encode_consumer_registration(reg) == (
        b'{"version":1,"subscription":{"t":1},"pattern":"static"}'
    )
    numeric = decode_consumer_registration(V010.replace(b'"1500000000000"', b"1500000000000"))
    assert numeric.timestamp_ms == 1500000000000
    quoted_version = decode_consumer_registration(V010.replace(b'"version":1', b'"version":"1"'))
    assert quoted_version.version == 1


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"mytopic", "not valid JSON"),  # pykafka writes the raw topic name
        (b"", "data is empty"),  # kafka-node creates the node before setting its data
        (V010.replace(b'"version":1', b'"version":2'), "unknown version 2"),
        (V010.replace(b'"static"', b'"regex"'), "unknown pattern 'regex'"),
        (V010.replace(b'"pattern":"static",', b""), "missing 'pattern'"),
        (V010.replace(b'{"t":1}', b"[]"), "subscription must be an object"),
        (V010.replace(b'{"t":1}', b'{"t":0}'), "stream count 0"),
        (V010.replace(b'{"t":1}', b'{"t":true}'), "must be an integer"),
        (V010.replace(b'{"t":1}', b'{"t":"1"}'), "must be an integer"),
        (V010.replace(b'{"t":1}', b'{"t":1000000}'), "outside 1..10000"),
        (V010.replace(b'{"t":1}', b'{"bad topic":1}'), "static subscription"),
        (V010.replace(b'"1500000000000"', b'"yesterday"'), "timestamp"),
    ],
)
def test_registration_rejects(data: bytes, needle: str) -> None:
    with pytest.raises(CodecError) as info:
        decode_consumer_registration(data, path="/consumers/g/ids/c")
    assert needle in str(info.value)
    assert "consumer registration at /consumers/g/ids/c" in str(info.value)


def test_registration_unknown_version_error_type() -> None:
    with pytest.raises(UnknownVersionError):
        decode_consumer_registration(V010.replace(b'"version":1', b'"version":0'))


def test_registration_encoder_rejects() -> None:
    with pytest.raises(ValueError, match="pattern"):
        encode_consumer_registration(ConsumerRegistration({"t": 1}, "regex"))
    with pytest.raises(ValueError, match="stream count"):
        encode_consumer_registration(ConsumerRegistration({"t": 0}))
    with pytest.raises(ValueError, match="static subscription"):
        encode_consumer_registration(ConsumerRegistration({"a b": 1}))
    with pytest.raises(ValueError, match="empty regex"):
        encode_consumer_registration(ConsumerRegistration({"": 1}, WHITE_LIST))


topic_names = st.from_regex(r"[a-zA-Z0-9._-]{1,30}", fullmatch=True).filter(
    lambda t: t not in (".", "..")
)
regexes = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20)
streams = st.integers(1, 10_000)
timestamps = st.none() | st.integers(0, 2**63 - 1)


@st.composite
def registrations(draw: st.DrawFn) -> ConsumerRegistration:
    pattern = draw(st.sampled_from([STATIC, WHITE_LIST, BLACK_LIST]))
    keys = topic_names if pattern == STATIC else regexes
    subscription = draw(st.dictionaries(keys, streams, max_size=4))
    return ConsumerRegistration(subscription, pattern, draw(timestamps))


@settings(max_examples=300)
@given(registrations())
def test_registration_round_trip(reg: ConsumerRegistration) -> None:
    data = encode_consumer_registration(reg)
    got = decode_consumer_registration(data)
    assert got == reg
    assert list(got.subscription) == list(reg.subscription)
    assert list(json.loads(data))[:3] == ["version", "subscription", "pattern"]


# -- owners ------------------------------------------------------------------------------------


def test_owner() -> None:
    thread = "g_host-1500000000000-1a2b3c4d-0"
    assert encode_owner(thread) == thread.encode()
    assert decode_owner(thread.encode()) == thread
    with pytest.raises(CodecError, match="partition owner at /consumers/g/owners/t/0"):
        decode_owner(b"", path="/consumers/g/owners/t/0")
    with pytest.raises(CodecError, match="not UTF-8"):
        decode_owner(b"\xc3\x28")
    with pytest.raises(ValueError):
        encode_owner("")


@settings(max_examples=200)
@given(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1))
def test_owner_round_trip(thread: str) -> None:
    assert decode_owner(encode_owner(thread)) == thread


# -- offsets -----------------------------------------------------------------------------------


def test_offset() -> None:
    assert encode_offset(42) == b"42"
    assert decode_offset(b"42") == 42
    assert decode_offset(b"0") == 0
    assert decode_offset(b"-1") == -1  # the old consumer's "no offset"
    assert decode_offset(b"9223372036854775807") == 2**63 - 1


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"abc",
        b"-2",
        b"--1",
        b"+5",
        b" 5",
        b"5\n",
        b"1.5",
        b"1e3",
        b"9223372036854775808",
        b"1" * 30,
        b"\xff",
        b"\xd9\xa3",
    ],  # the last is an Arabic-Indic digit, int() would take it
)
def test_offset_rejects(data: bytes) -> None:
    with pytest.raises(CodecError, match="committed offset at /consumers/g/offsets/t/0"):
        decode_offset(data, path="/consumers/g/offsets/t/0")


def test_offset_huge_value_is_rejected_by_size_without_quoting_it_all() -> None:
    with pytest.raises(CodecError) as info:
        decode_offset(b"9" * 1_000_000)
    assert len(str(info.value)) < 300


def test_offset_encoder_rejects() -> None:
    for bad in (-2, True, 2**63, "5"):
        with pytest.raises(ValueError):
            encode_offset(bad)  # type: ignore[arg-type]


@settings(max_examples=300)
@given(st.integers(-1, 2**63 - 1))
def test_offset_round_trip(offset: int) -> None:
    assert decode_offset(encode_offset(offset)) == offset


def _reference_offset(data: bytes) -> int | None:
    """The old consumer's offset node, as Kafka's ZkUtils reads it (``toLong`` of the
    text; -1 is its "no offset"), None where that is not an offset."""
    if re.fullmatch(rb"-1|[0-9]{1,19}", data) and int(data) <= 2**63 - 1:
        return int(data)
    return None


@settings(max_examples=1500)
@given(
    st.one_of(
        st.integers(-3, 2**64).map(lambda n: str(n).encode()),
        st.text("0123456789-+ é", max_size=22).map(str.encode),
        st.binary(max_size=22),
    )
)
def test_offset_agrees_with_the_reference(data: bytes) -> None:
    """Plain digits take a shorter way than the checked one: same answers, same refusals."""
    expected = _reference_offset(data)
    if expected is None:
        with pytest.raises(CodecError):
            decode_offset(data)
    else:
        assert decode_offset(data) == expected
