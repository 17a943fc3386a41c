"""The next-generation group records of ``__consumer_offsets`` as the audit reads them
(``bridge.audit.next_gen``: kafka-python structs from the bridge's JSON schemas) against
Kafka 4's own generated record classes (``KafkaMessages4`` harness, one JVM for the module):
the audit decodes Kafka's bytes to the same fields, and Kafka reads the audit's bytes whole
and to the same fields, for every record type, over generated records."""

from __future__ import annotations

import base64
import re
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge.audit import next_gen
from bridge.audit.next_gen import ConsumerGroupKey
from bridge.audit.records import decode_key, decode_value
from tests.integration.jvm_reference import KafkaMessages4

pytestmark = pytest.mark.integration

GENERATED = "org.apache.kafka.coordinator.group.generated."
text = st.text(max_size=10)
nullable = st.none() | text
int8 = st.integers(-(2**7), 2**7 - 1)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)


def _dicts(**fields: Any) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries(fields)


def _partitions(epochs: bool) -> st.SearchStrategy[list]:
    extra = {"assignment_epochs": st.none() | st.lists(int32, max_size=3)} if epochs else {}
    return st.lists(
        _dicts(topic_id=st.uuids(), partitions=st.lists(int32, max_size=4), **extra), max_size=3
    )


VALUES = {
    next_gen.METADATA: _dicts(epoch=int32, metadata_hash=int64),
    next_gen.PARTITION_METADATA: _dicts(
        topics=st.lists(
            _dicts(
                topic_id=st.uuids(),
                topic_name=text,
                num_partitions=int32,
                partition_metadata=st.lists(
                    _dicts(partition=int32, racks=st.lists(text, max_size=2)), max_size=2
                ),
            ),
            max_size=3,
        )
    ),
    next_gen.MEMBER_METADATA: _dicts(
        instance_id=nullable,
        rack_id=nullable,
        client_id=text,
        client_host=text,
        subscribed_topic_names=st.lists(text, max_size=3),
        subscribed_topic_regex=nullable,
        rebalance_timeout_ms=int32,
        server_assignor=nullable,
        # tag 0, ClassicMemberMetadata, is not read (see the schema): Kafka's, skipped
    ),
    next_gen.TARGET_METADATA: _dicts(assignment_epoch=int32, assignment_timestamp=int64),
    next_gen.TARGET_MEMBER: _dicts(topic_partitions=_partitions(epochs=False)),
    next_gen.CURRENT_ASSIGNMENT: _dicts(
        member_epoch=int32,
        previous_member_epoch=int32,
        state=int8,
        assigned_partitions=_partitions(epochs=True),
        partitions_pending_revocation=_partitions(epochs=True),
    ),
    next_gen.REGULAR_EXPRESSION: _dicts(
        topics=st.lists(text, max_size=3), resolved_version=int64, timestamp=int64
    ),
}


@pytest.fixture(scope="module")
def kafka():
    ref = KafkaMessages4()
    yield ref
    ref.close()


#: the bridge's names for fields Kafka names otherwise (kafka-python reserves ``version``)
KAFKA_NAMES = {"resolved_version": "version"}


def _camel(name: str) -> str:
    if name in KAFKA_NAMES:
        return KAFKA_NAMES[name]
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


#: tagged fields whose default is null: Kafka's JSON form leaves them out when null
NULL_TAGGED = {"assignment_epochs"}


def kafka_json(value: Any) -> Any:
    """The JSON form Kafka's generated ``JsonConverter`` reads: camelCase names, uuids as
    Kafka's ``Uuid.toString()`` (URL-safe base64 without padding), bytes as base64."""
    if isinstance(value, dict):  # a null tagged field is left out, as Kafka writes it
        return {
            _camel(k): kafka_json(v)
            for k, v in value.items()
            if not (v is None and k in NULL_TAGGED)
        }
    if isinstance(value, list):
        return [kafka_json(v) for v in value]
    if isinstance(value, uuid.UUID):
        return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


def build(cls: Any, fields: dict, schema: list[dict] | None = None) -> Any:
    """The audit's ``ApiData`` of ``cls`` holding ``fields`` (nested structs built too)."""
    kwargs = {}
    for f in schema if schema is not None else cls.json["fields"]:
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", f["name"]).lower()
        value = fields[snake]
        if "fields" in f and value is not None:
            inner = getattr(cls, f["type"].removeprefix("[]"))
            if f["type"].startswith("[]"):
                value = [build(inner, v, f["fields"]) for v in value]
            else:
                value = build(inner, value, f["fields"])
        kwargs[snake] = value
    return cls(**kwargs)


def absent_as_read(value: Any) -> Any:
    """``value`` as kafka-python reads it back: a null tagged array is left out of the bytes
    and read as its type's empty value (Kafka reads null). The audit reads neither."""
    if isinstance(value, dict):
        return {
            k: [] if v is None and k == "assignment_epochs" else absent_as_read(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [absent_as_read(v) for v in value]
    return value


def strip_null(value: Any) -> Any:
    """Kafka's JSON form without the null tagged fields (Kafka's own leaves them out)."""
    tagged = {_camel(k) for k in NULL_TAGGED}
    if isinstance(value, dict):
        return {k: strip_null(v) for k, v in value.items() if not (v is None and k in tagged)}
    if isinstance(value, list):
        return [strip_null(v) for v in value]
    return value


def plain(value: Any) -> Any:
    """An ``ApiData`` as nested dicts and lists, for comparison with the generated fields."""
    if hasattr(value, "to_dict"):
        value = value.to_dict(json=False)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


#: a classic member's protocols (ConsumerGroupMemberMetadata's tag 0), as Kafka writes them
#: for a classic member of a consumer-type group (one of the bridge's proxies, say)
CLASSIC_MEMBER = st.none() | _dicts(
    session_timeout_ms=int32,
    supported_protocols=st.lists(
        _dicts(name=text, metadata=st.binary(max_size=8)), min_size=1, max_size=2
    ),
)


@given(
    record=st.sampled_from(sorted(VALUES)).flatmap(lambda t: st.tuples(st.just(t), VALUES[t])),
    classic=CLASSIC_MEMBER,
)
def test_values_agree_with_kafka(kafka, record, classic):
    record_type, fields = record
    name = GENERATED + next_gen.RECORD_TYPES[record_type] + "Value"
    extra = {}
    if record_type == next_gen.MEMBER_METADATA and classic is not None:
        extra = {"classicMemberMetadata": kafka_json(classic)}  # skipped by the audit
    theirs = kafka.write(name, 0, kafka_json(fields) | extra)
    # Kafka's bytes (after the version Kafka's serde writes before them), read by the audit
    key = ConsumerGroupKey(record_type, "g", "m" if record_type in next_gen.PER_MEMBER else None)
    decoded = decode_value(key, b"\x00\x00" + theirs)
    assert plain(decoded) == absent_as_read(fields)
    # the audit's bytes: read whole by Kafka, to the same fields as its own
    ours = next_gen.encode_value(record_type, build(next_gen.VALUES[record_type], fields))
    assert ours[:2] == b"\x00\x00"
    # (kafka-python writes a null tagged array as a tag holding null, Kafka leaves the tag
    # out: both read as null)
    kafka_own = kafka.read(name, 0, theirs)
    kafka_own.pop("classicMemberMetadata", None)  # the audit's bytes never hold tag 0
    assert strip_null(kafka.read(name, 0, ours[2:])) == strip_null(kafka_own)


def test_a_member_record_of_a_real_4_4_broker_decodes():
    """A consumer-protocol member's record as a Kafka 4.4.0 broker wrote it: its tag 0
    (ClassicMemberMetadata) holds the byte 0 for null, which kafka-python's nested nullable
    structs would not read (seen in test_next_gen_groups)."""
    value = bytes.fromhex("00000000056e672d310b2f3132372e302e302e3102027401000493e00001000100")
    v = decode_value(ConsumerGroupKey(5, "g", "m"), value)
    assert (v.client_id, v.client_host, list(v.subscribed_topic_names)) == (
        "ng-1",
        "/127.0.0.1",
        ["t"],
    )
    assert (v.subscribed_topic_regex, v.rebalance_timeout_ms, v.server_assignor) == (
        "",
        300_000,
        None,
    )


@given(record_type=st.sampled_from(sorted(next_gen.RECORD_TYPES)), group=text, member=text)
def test_keys_agree_with_kafka(kafka, record_type, group, member):
    with_member = record_type in next_gen.PER_MEMBER
    key = ConsumerGroupKey(record_type, group, member if with_member else None)
    second = "regularExpression" if record_type == next_gen.REGULAR_EXPRESSION else "memberId"
    fields = {"groupId": group} | ({second: member} if with_member else {})
    name = GENERATED + next_gen.RECORD_TYPES[record_type] + "Key"
    theirs = kafka.write(name, 0, fields)
    ours = next_gen.encode_key(key)
    # the key's first two bytes are the record type (Kafka's CoordinatorRecordType id)
    assert ours == record_type.to_bytes(2, "big") + theirs
    assert decode_key(ours) == key
