"""Broker registrations, /brokers/ids/<id>: golden vectors of every version, round trips."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkpaths import (
    BrokerRegistration,
    CodecError,
    UnknownVersionError,
    decode_broker,
    encode_broker,
    parse_endpoint,
)
from zkpaths.codecs.endpoints import Endpoint

V1 = b'{"jmx_port":-1,"timestamp":"1400000000000","host":"h","version":1,"port":9092}'
V2 = (
    b'{"jmx_port":9999,"timestamp":"1450000000000","endpoints":["PLAINTEXT://h2:9092",'
    b'"SSL://h2:9093"],"host":"h2","version":2,"port":9092}'
)
V3 = (
    b'{"jmx_port":-1,"timestamp":"1470000000000","endpoints":["PLAINTEXT://h3:9092"],'
    b'"rack":"dc1","host":"h3","version":3,"port":9092}'
)
# What a 0.10-2.x broker (Scala 2.11/2.12 build) writes, byte for byte.
V4 = (
    b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":'
    b'["PLAINTEXT://host1:9092"],"jmx_port":-1,"host":"host1","timestamp":"1500000000000",'
    b'"port":9092,"version":4}'
)
# What kafka_2.13-3.9.1 BrokerIdZNode.encode writes, byte for byte (timestamp fixed).
V4_39 = (
    b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":'
    b'["PLAINTEXT://host1:9092"],"rack":"dc1","jmx_port":-1,"port":9092,"host":"host1",'
    b'"version":4,"timestamp":"1795306073844"}'
)
V5 = (
    b'{"features":{"metadata.version":{"min_version":1,"max_version":21}},'
    b'"listener_security_protocol_map":{"CLIENT":"PLAINTEXT","REPLICATION":"SSL"},'
    b'"endpoints":["CLIENT://host1:9092","REPLICATION://host1:9093"],"rack":"dc1",'
    b'"jmx_port":9999,"port":9092,"host":"host1","version":5,"timestamp":"1795306073846"}'
)
# The ZkData.scala doc comment's v5, with first_active_version, in another key order.
V5_DOC = (
    b'{"version":5,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",'
    b'"endpoints":["CLIENT://host1:9092","REPLICATION://host1:9093"],"rack":"dc1",'
    b'"listener_security_protocol_map":{"CLIENT":"PLAINTEXT","REPLICATION":"SSL"},'
    b'"features":{"feature":{"min_version":1,"first_active_version":2,"max_version":3}}}'
)


def test_v1() -> None:
    reg = decode_broker(0, V1)
    assert reg == BrokerRegistration(
        broker_id=0,
        host="h",
        port=9092,
        endpoints=("PLAINTEXT://h:9092",),
        jmx_port=-1,
        timestamp_ms=1400000000000,
        version=1,
    )
    assert reg.plaintext_endpoint() == Endpoint("PLAINTEXT", "h", 9092)


def test_v2_without_map_resolves_listeners_named_after_protocols() -> None:
    reg = decode_broker(2, V2)
    assert reg.version == 2
    assert reg.endpoints == ("PLAINTEXT://h2:9092", "SSL://h2:9093")
    assert reg.listener_security_protocol_map == {}
    assert reg.security_protocol("ssl") == "SSL"
    assert reg.jmx_port == 9999
    assert (reg.host, reg.port) == ("h2", 9092)


def test_v3_rack() -> None:
    reg = decode_broker(3, V3)
    assert (reg.version, reg.rack) == (3, "dc1")


def test_v4_of_a_2x_broker() -> None:
    reg = decode_broker(1, V4)
    assert reg == BrokerRegistration(
        broker_id=1,
        host="host1",
        port=9092,
        endpoints=("PLAINTEXT://host1:9092",),
        jmx_port=-1,
        timestamp_ms=1500000000000,
        listener_security_protocol_map={"PLAINTEXT": "PLAINTEXT"},
        version=4,
    )
    assert json.loads(encode_broker(reg)) == json.loads(V4)


def test_v4_bytes_match_kafka_3_9() -> None:
    reg = decode_broker(1, V4_39)
    assert reg.rack == "dc1"
    assert encode_broker(reg) == V4_39
    without_rack = V4_39.replace(b'"rack":"dc1",', b"")
    assert encode_broker(decode_broker(1, without_rack)) == without_rack


def test_v5_bytes_match_kafka_3_9() -> None:
    reg = decode_broker(5, V5)
    assert reg.version == 5
    assert reg.features == {"metadata.version": {"min_version": 1, "max_version": 21}}
    assert reg.security_protocol("CLIENT") == "PLAINTEXT"
    assert reg.security_protocol("replication") == "SSL"
    assert reg.plaintext_endpoint() == Endpoint("CLIENT", "host1", 9092)
    assert encode_broker(reg) == V5


def test_v5_doc_example_keeps_extra_feature_labels() -> None:
    reg = decode_broker(5, V5_DOC)
    assert reg.features == {
        "feature": {"min_version": 1, "first_active_version": 2, "max_version": 3}
    }
    assert (reg.host, reg.port) == ("localhost", 9092)  # as written, not re-derived
    assert decode_broker(5, encode_broker(reg)).features == reg.features


def test_encoder_writes_v4_without_features_by_default() -> None:
    reg = decode_broker(5, V5)
    doc = json.loads(encode_broker(reg, version=4))
    assert doc["version"] == 4 and "features" not in doc
    old = decode_broker(1, V1)  # older versions are upgraded to v4 when written
    assert json.loads(encode_broker(old))["version"] == 4


def test_encoder_host_and_port_come_from_first_plaintext_endpoint() -> None:
    reg = BrokerRegistration(
        broker_id=1,
        host="ignored",
        port=1,
        endpoints=("SSL://a:9093", "INTERNAL://b:9094", "PLAINTEXT://c:9092"),
        listener_security_protocol_map={
            "SSL": "SSL",
            "INTERNAL": "PLAINTEXT",
            "PLAINTEXT": "PLAINTEXT",
        },
        timestamp_ms=5,
    )
    doc = json.loads(encode_broker(reg))
    assert (doc["host"], doc["port"]) == ("b", 9094)
    assert doc["timestamp"] == "5"
    assert "rack" not in doc


def test_encoder_without_plaintext_writes_null_host_and_port_minus_one() -> None:
    reg = BrokerRegistration.from_endpoints(1, ["SSL://a:9093"], timestamp_ms=5)
    assert (reg.host, reg.port) == (None, -1)
    doc = json.loads(encode_broker(reg))
    assert (doc["host"], doc["port"]) == (None, -1)
    assert decode_broker(1, encode_broker(reg)) == reg


def test_ipv6_and_wildcard_endpoints() -> None:
    assert parse_endpoint("PLAINTEXT://[::1]:9092") == Endpoint("PLAINTEXT", "::1", 9092)
    assert str(Endpoint("PLAINTEXT", "::1", 9092)) == "PLAINTEXT://[::1]:9092"
    assert parse_endpoint("plaintext://:9092") == Endpoint("PLAINTEXT", None, 9092)
    assert str(Endpoint("PLAINTEXT", None, 9092)) == "PLAINTEXT://:9092"
    reg = BrokerRegistration.from_endpoints(1, ["PLAINTEXT://[fe80::1%eth0]:9092"])
    assert reg.host == "fe80::1%eth0"
    assert decode_broker(1, encode_broker(reg)) == reg


def test_timestamp_as_number_is_tolerated() -> None:
    data = V1.replace(b'"1400000000000"', b"1400000000000")
    assert decode_broker(0, data).timestamp_ms == 1400000000000


def test_encode_rejects_bad_fields() -> None:
    good = BrokerRegistration.from_endpoints(1, ["PLAINTEXT://h:1"])
    with pytest.raises(ValueError, match="listener 'X'"):
        encode_broker(BrokerRegistration(1, None, -1, ("X://h:1",)))
    with pytest.raises(ValueError, match="jmx_port"):
        encode_broker(BrokerRegistration(**{**good.__dict__, "jmx_port": True}))
    with pytest.raises(ValueError, match="v4 or v5"):
        encode_broker(good, version=2)
    with pytest.raises(ValueError, match="not LISTENER"):
        encode_broker(BrokerRegistration(1, None, -1, ("nonsense",)))
    with pytest.raises(ValueError, match="min_version <= max_version"):
        encode_broker(
            BrokerRegistration(
                **{**good.__dict__, "features": {"f": {"min_version": 2, "max_version": 1}}}
            ),
            version=5,
        )


def _mutate(data: bytes, **changes: object) -> bytes:
    doc = json.loads(data)
    for key, value in changes.items():
        if value is _DROP:
            del doc[key]
        else:
            doc[key] = value
    return json.dumps(doc).encode()


_DROP = object()


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (_mutate(V4, version=99), "unknown version 99"),
        (_mutate(V4, version=0), "unknown version 0"),
        (_mutate(V4, version="4"), "version must be an integer"),
        (_mutate(V4, version=True), "version must be an integer"),
        (_mutate(V4, version=_DROP), "missing 'version'"),
        (_mutate(V1, port="abc"), "port must be an integer"),
        (_mutate(V1, port=9092.0), "port must be an integer"),
        (_mutate(V1, port=True), "port must be an integer"),
        (_mutate(V1, port=2**31), "outside"),
        (_mutate(V1, host=None), "host must be a string"),
        (_mutate(V4, jmx_port=_DROP), "missing 'jmx_port'"),
        (_mutate(V4, timestamp="soon"), "timestamp"),
        (_mutate(V4, timestamp=-5), "timestamp"),
        (_mutate(V4, endpoints="PLAINTEXT://h:1"), "endpoints must be an array"),
        (_mutate(V4, endpoints=["bogus"]), "'bogus' is not LISTENER://host:port"),
        (_mutate(V4, endpoints=["OTHER://h:1"]), "not in listener_security_protocol_map"),
        (_mutate(V4, listener_security_protocol_map={"PLAINTEXT": "TRACE"}), "unknown security"),
        (_mutate(V2, endpoints=["CLIENT://h:1"]), "no security protocol"),
        (_mutate(V4, rack=5), "rack must be a string"),
        (_mutate(V5, features={"f": {"min_version": 1}}), "lacks min_version or max_version"),
        (_mutate(V5, features={"f": {"min_version": 3, "max_version": 1}}), "below min_version"),
        (_mutate(V5, features=[]), "features must be an object"),
        (b"", "data is empty"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[1,2]", "expected a JSON object, got array"),
        (b'{"version":4,', "not valid JSON"),
        (b'{"version":NaN}', "not valid JSON"),
        (b'{"version":4,"version":4}', "duplicate key"),
    ],
)
def test_decode_rejects(data: bytes, needle: str) -> None:
    with pytest.raises(CodecError) as info:
        decode_broker(1, data)
    message = str(info.value)
    assert needle in message
    assert "broker registration at /brokers/ids/1" in message


def test_unknown_version_is_its_own_error() -> None:
    with pytest.raises(UnknownVersionError) as info:
        decode_broker(1, _mutate(V4, version=6))
    assert info.value.version == 6
    assert info.value.known == (1, 2, 3, 4, 5)


def test_errors_quote_only_an_excerpt_of_huge_values() -> None:
    huge = b'{"version":4,"host":"' + b"x" * 500_000 + b'"}'
    with pytest.raises(CodecError) as info:
        decode_broker(1, huge)
    assert len(str(info.value)) < 400
    assert f"({len(huge)} bytes)" in str(info.value)


def test_size_limit() -> None:
    data = V4[:-1] + b',"pad":"' + b" " * (1024 * 1024) + b'"}'
    with pytest.raises(CodecError, match="more than the 1048576-byte limit"):
        decode_broker(1, data)
    with pytest.raises(CodecError, match="more than the 10-byte limit"):
        decode_broker(1, V4, limit=10)


def test_path_in_errors_can_be_given() -> None:
    with pytest.raises(CodecError) as info:
        decode_broker(1, b"x", path="/chroot/brokers/ids/1")
    assert info.value.path == "/chroot/brokers/ids/1"


hosts = st.from_regex(r"[a-z][a-z0-9.-]{0,20}", fullmatch=True)
ports = st.integers(0, 65535)
listeners = st.sampled_from(["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", "CLIENT", "REPL"])


@st.composite
def registrations(draw: st.DrawFn) -> BrokerRegistration:
    names = draw(st.lists(listeners, min_size=1, max_size=4, unique=True))
    endpoints = [f"{n}://{draw(hosts)}:{draw(ports)}" for n in names]
    protocol_map = {n: n for n in names if n not in ("CLIENT", "REPL")}
    protocol_map |= {n: draw(st.sampled_from(["PLAINTEXT", "SSL"])) for n in ("CLIENT", "REPL")}
    version = draw(st.sampled_from([4, 5]))
    features = {}
    if version == 5:
        features = draw(
            st.dictionaries(
                st.text(min_size=1, max_size=10),
                st.tuples(st.integers(0, 50), st.integers(0, 50)).map(
                    lambda lh: {"min_version": min(lh), "max_version": max(lh)}
                ),
                max_size=3,
            )
        )
    return BrokerRegistration.from_endpoints(
        draw(st.integers(0, 2**31 - 1)),
        endpoints,
        listener_security_protocol_map=protocol_map,
        jmx_port=draw(st.integers(-1, 65535)),
        timestamp_ms=draw(st.integers(0, 2**63 - 1)),
        rack=draw(st.none() | st.text(max_size=10)),
        features=features,
        version=version,
    )


@settings(max_examples=300)
@given(registrations())
def test_round_trip(reg: BrokerRegistration) -> None:
    data = encode_broker(reg)
    assert decode_broker(reg.broker_id, data) == reg
    doc = json.loads(data)
    assert isinstance(doc["timestamp"], str)
    assert doc["version"] == reg.version
