"""Broker registrations, topic assignments and partition states against Kafka 3.9's own
``kafka.zk`` ZNode encoders and decoders, on generated values (one JVM per session).

Kafka writes each value; our encoder must write the same bytes (the topic JSON: the same
document) and our decoder must read Kafka's bytes back as the value. Kafka's decoder must
also read what our encoder writes as the value. Needs the jars and javac
(``scripts/setup.sh``), not the servers.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.integration.jvm_reference import KafkaMessages
from tests.unit.test_zkpaths_codecs_broker import registrations
from tests.unit.test_zkpaths_codecs_topic import assignments
from zkpaths import (
    BrokerRegistration,
    PartitionState,
    TopicAssignment,
    decode_broker,
    decode_partition_state,
    decode_topic,
    encode_broker,
    encode_partition_state,
    encode_topic,
    parse_endpoint,
)

pytestmark = pytest.mark.integration
PROPERTY = settings(max_examples=200, deadline=None)


@pytest.fixture(scope="module")
def kafka() -> KafkaMessages:
    ref = KafkaMessages()
    yield ref
    ref.close()


def znode(kafka: KafkaMessages, request: dict) -> dict:
    answer = json.loads(kafka.ask(json.dumps({"kind": "znode"} | request)))
    if "error" in answer:
        raise AssertionError(f"Kafka refused {request}: {answer['error']}")
    return answer


_ESCAPE = re.compile(
    r"\\(?:u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})|u([0-9a-f]{4})|(.))", re.IGNORECASE
)


def _our_escaping(match: re.Match) -> str:
    high, low, unit, other = match.groups()
    if high:
        return chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + (int(low, 16) - 0xDC00))
    if unit:
        return f"\\u{unit.lower()}"
    return match.group(0)


def assert_same_json(ours: bytes, kafkas: str, *, exact: bool = True) -> None:
    """Byte for byte, but for two escaping choices of Kafka 3.9's Jackson 2.16, which are
    normalised first: it writes control characters as ``\\u001F`` where we write
    ``\\u001f``, and characters beyond the BMP as escaped surrogate pairs where we write UTF-8.
    With ``exact=False``, the same document, key order included."""
    if exact:
        assert ours == _ESCAPE.sub(_our_escaping, kafkas).encode()
    else:
        assert json.loads(ours) == json.loads(kafkas)
        assert list(json.loads(ours)) == list(json.loads(kafkas))


def broker_fields(reg: BrokerRegistration) -> dict:
    """The registration as Kafka's ``BrokerInfo`` holds it (what its decoder returns)."""
    endpoints = [parse_endpoint(e) for e in reg.endpoints]
    return {
        "id": reg.broker_id,
        "version": reg.version,
        "jmx_port": reg.jmx_port,
        "rack": reg.rack,
        "endpoints": [
            [e.listener, reg.security_protocol(e.listener), e.host, e.port] for e in endpoints
        ],
        "features": {k: [v["min_version"], v["max_version"]] for k, v in reg.features.items()},
    }


@PROPERTY
@given(reg=registrations())
def test_broker_registration_is_kafkas(kafka, reg: BrokerRegistration):
    fields = broker_fields(reg)
    written = znode(kafka, {"znode": "broker", "encode": fields | {"timestamp": reg.timestamp_ms}})
    # Kafka lists two or more features in a hash map's order, we in the registration's
    assert_same_json(encode_broker(reg), written["json"], exact=len(reg.features) < 2)
    assert decode_broker(reg.broker_id, written["json"].encode()) == reg
    read = znode(
        kafka, {"znode": "broker", "id": reg.broker_id, "decode": encode_broker(reg).decode()}
    )
    assert read["decoded"] == fields


def topic_fields(a: TopicAssignment) -> dict:
    return {
        str(p): {
            "replicas": list(r),
            "adding": list(a.adding_replicas.get(p, ())),
            "removing": list(a.removing_replicas.get(p, ())),
        }
        for p, r in a.partitions.items()
    }


@PROPERTY
@given(a=assignments())
def test_topic_assignment_is_kafkas(kafka, a: TopicAssignment):
    parts = topic_fields(a)
    written = znode(
        kafka,
        {
            "znode": "topic",
            "encode": {
                "topic_id": a.topic_id,
                "partitions": {p: v["replicas"] for p, v in parts.items()},
                "adding": {p: v["adding"] for p, v in parts.items()},
                "removing": {p: v["removing"] for p, v in parts.items()},
            },
        },
    )
    as_v3 = TopicAssignment(a.partitions, a.adding_replicas, a.removing_replicas, a.topic_id, 3)
    assert decode_topic(written["json"].encode()) == as_v3
    assert json.loads(encode_topic(as_v3)) == json.loads(written["json"])
    read = znode(kafka, {"znode": "topic", "decode": encode_topic(a).decode()})
    assert read["decoded"] == {"topic_id": a.topic_id, "partitions": parts}


states = st.builds(
    PartitionState,
    leader=st.integers(-1, 2**31 - 1),
    leader_epoch=st.integers(0, 2**31 - 1),
    isr=st.lists(st.integers(0, 2**31 - 1), max_size=5).map(tuple),
    controller_epoch=st.integers(0, 2**31 - 1),
    leader_recovery_state=st.sampled_from([None, 1]),
)


@PROPERTY
@given(state=states)
def test_partition_state_is_kafkas(kafka, state: PartitionState):
    fields = {
        "leader": state.leader,
        "leader_epoch": state.leader_epoch,
        "isr": list(state.isr),
        "leader_recovery_state": state.leader_recovery_state or 0,
        "controller_epoch": state.controller_epoch,
    }
    written = znode(kafka, {"znode": "state", "encode": fields})
    assert encode_partition_state(state) == written["json"].encode()
    assert decode_partition_state(written["json"].encode()) == state
    read = znode(kafka, {"znode": "state", "decode": encode_partition_state(state).decode()})
    assert read["decoded"] == fields
