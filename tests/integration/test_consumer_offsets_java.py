"""The ``__consumer_offsets`` and consumer protocol codecs against Kafka 3.9's own message
classes, on generated records of every version our decoder supports.

Each generated value is handed to Kafka (``OffsetCommitKey``/``Value``,
``GroupMetadataKey``/``Value``, ``ConsumerProtocolSubscription``/``Assignment`` via their
JsonConverter, written by ``MessageUtil.toVersionPrefixedBytes`` in one JVM per session):
our decoder must read Kafka's bytes back as the value, and our encoder must write the same
bytes. The strategies are the round-trip properties' (``test_audit_records_properties``).
Needs the jars and javac (``scripts/setup.sh``), not the servers.
"""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings

from bridge.audit.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from bridge.audit.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from tests.integration.jvm_reference import KafkaMessages
from tests.unit.test_audit_records_properties import (
    assignments,
    group_values,
    keys,
    offset_values,
    subscriptions,
)

pytestmark = pytest.mark.integration
PROPERTY = settings(max_examples=300, deadline=None)


@pytest.fixture(scope="module")
def kafka() -> KafkaMessages:
    ref = KafkaMessages()
    yield ref
    ref.close()


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def tags(fields: tuple[tuple[int, bytes], ...]) -> list:
    return [[tag, data.hex()] for tag, data in fields]


def key_json(key: OffsetCommitKey | GroupMetadataKey) -> tuple[str, dict]:
    if isinstance(key, OffsetCommitKey):
        return "OffsetCommitKey", {
            "group": key.group,
            "topic": key.topic,
            "partition": key.partition,
        }
    return "GroupMetadataKey", {"group": key.group}


def offset_json(v: OffsetCommitValue) -> dict:
    """The fields Kafka's OffsetCommitValue has at ``v.version``."""
    f = {"offset": v.offset, "metadata": v.metadata, "commitTimestamp": v.commit_timestamp}
    if v.version >= 3:
        f["leaderEpoch"] = v.leader_epoch
    if v.version == 1:
        f["expireTimestamp"] = v.expire_timestamp
    return f


def group_json(v: GroupMetadataValue) -> dict:
    """The fields Kafka's GroupMetadataValue (and its members) have at ``v.version``."""
    members = []
    for m in v.members:
        member = {
            "memberId": m.member_id,
            "clientId": m.client_id,
            "clientHost": m.client_host,
            "sessionTimeout": m.session_timeout,
            "subscription": b64(m.subscription),
            "assignment": b64(m.assignment),
        }
        if v.version >= 1:
            member["rebalanceTimeout"] = m.rebalance_timeout
        if v.version >= 3:
            member["groupInstanceId"] = m.group_instance_id
        members.append(member)
    f = {
        "protocolType": v.protocol_type,
        "generation": v.generation,
        "protocol": v.protocol,
        "leader": v.leader,
        "members": members,
    }
    if v.version >= 2:
        f["currentStateTimestamp"] = v.current_state_timestamp
    return f


def partitions_json(parts: tuple[tuple[str, tuple[int, ...]], ...]) -> list[dict]:
    return [{"topic": t, "partitions": list(ps)} for t, ps in parts]


@PROPERTY
@given(key=keys)
def test_keys_are_kafkas(kafka, key):
    message, fields = key_json(key)
    data = kafka.write(message, key.version, fields)
    assert decode_key(data) == key
    assert encode_key(key) == data


@PROPERTY
@given(value=offset_values())
def test_offset_commit_values_are_kafkas(kafka, value: OffsetCommitValue):
    extra = {"tagged": tags(value.tagged_fields)} if value.tagged_fields else {}
    data = kafka.write("OffsetCommitValue", value.version, offset_json(value), **extra)
    assert decode_value(OffsetCommitKey("g", "t", 0), data) == value
    assert encode_value(value) == data


@PROPERTY
@given(value=group_values())
def test_group_metadata_values_are_kafkas(kafka, value: GroupMetadataValue):
    extra = {}
    if value.version >= 4:
        extra["tagged"] = tags(value.tagged_fields)
        extra["member_tagged"] = [tags(m.tagged_fields) for m in value.members]
    data = kafka.write("GroupMetadataValue", value.version, group_json(value), **extra)
    assert decode_value(GroupMetadataKey("g"), data) == value
    assert encode_value(value) == data


@PROPERTY
@given(sub=subscriptions())
def test_subscriptions_are_kafkas(kafka, sub: Subscription):
    fields = {"topics": list(sub.topics), "userData": b64(sub.user_data)}
    if sub.version >= 1:
        fields["ownedPartitions"] = partitions_json(sub.owned_partitions)
    if sub.version >= 2:
        fields["generationId"] = sub.generation_id
    if sub.version >= 3:
        fields["rackId"] = sub.rack_id
    data = kafka.write("ConsumerProtocolSubscription", sub.version, fields)
    assert decode_subscription(data) == sub
    assert encode_subscription(sub) == data


@PROPERTY
@given(asg=assignments)
def test_assignments_are_kafkas(kafka, asg: Assignment):
    fields = {"assignedPartitions": partitions_json(asg.partitions), "userData": b64(asg.user_data)}
    data = kafka.write("ConsumerProtocolAssignment", asg.version, fields)
    assert decode_assignment(data) == asg
    assert encode_assignment(asg) == data
