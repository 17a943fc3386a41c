"""ConsumerGroupDescribe as the bridge defines it (``bridge.kafka.messages``, from Kafka's
JSON schema) against Kafka 4's own generated classes (``KafkaMessages4`` harness, one JVM
for the module): the bridge decodes Kafka's bytes to the same fields, and Kafka reads the
bridge's bytes whole and to the same fields, for every version, over generated groups."""

from __future__ import annotations

import base64
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge.kafka.messages import ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse
from tests.integration.jvm_reference import KafkaMessages4

pytestmark = pytest.mark.integration

R = ConsumerGroupDescribeResponse
VERSIONS = st.sampled_from([0, 1])
text = st.text(max_size=12)
nullable = st.none() | text
int32 = st.integers(-(2**31), 2**31 - 1)


@pytest.fixture(scope="module")
def kafka():
    ref = KafkaMessages4()
    yield ref
    ref.close()


assignments = st.lists(
    st.fixed_dictionaries(
        {
            "topic_id": st.uuids(),
            "topic_name": text,
            "partitions": st.lists(int32, max_size=5),
        }
    ),
    max_size=3,
)
members = st.fixed_dictionaries(
    {
        "member_id": text,
        "instance_id": nullable,
        "rack_id": nullable,
        "member_epoch": int32,
        "client_id": text,
        "client_host": text,
        "subscribed_topic_names": st.lists(text, max_size=3),
        "subscribed_topic_regex": nullable,
        "assignment": assignments,
        "target_assignment": assignments,
        "member_type": st.sampled_from([-1, 0, 1]),
    }
)
groups = st.fixed_dictionaries(
    {
        "error_code": st.sampled_from([0, 15, 16, 30, 69]),
        "error_message": nullable,
        "group_id": text,
        "group_state": st.sampled_from(["Empty", "Assigning", "Reconciling", "Stable", ""]),
        "group_epoch": int32,
        "assignment_epoch": int32,
        "assignor_name": st.sampled_from(["uniform", "range", ""]),
        "members": st.lists(members, max_size=3),
        "authorized_operations": int32,
    }
)
responses = st.fixed_dictionaries(
    {"throttle_time_ms": int32, "groups": st.lists(groups, max_size=3)}
)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


def _uuid_json(u: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def kafka_json(response: dict, version: int = 1) -> dict:
    """The JSON form Kafka's ``ConsumerGroupDescribeResponseDataJsonConverter`` reads (and
    writes: without the fields ``version`` lacks)."""

    def assignment(tps: list[dict]) -> dict:
        return {
            "topicPartitions": [
                {
                    "topicId": _uuid_json(tp["topic_id"]),
                    "topicName": tp["topic_name"],
                    "partitions": tp["partitions"],
                }
                for tp in tps
            ]
        }

    def member(m: dict) -> dict:
        out = {_camel(k): v for k, v in m.items() if "assignment" not in k}
        out["assignment"] = assignment(m["assignment"])
        out["targetAssignment"] = assignment(m["target_assignment"])
        if version < 1:
            del out["memberType"]
        return out

    return {
        "throttleTimeMs": response["throttle_time_ms"],
        "groups": [
            {_camel(k): v for k, v in g.items() if k != "members"}
            | {"members": [member(m) for m in g["members"]]}
            for g in response["groups"]
        ],
    }


def bridge_message(response: dict) -> ConsumerGroupDescribeResponse:
    """The same response built from the bridge's classes."""
    group_cls = R.DescribedGroup
    member_cls = group_cls.Member
    assign_cls = member_cls.Assignment

    def assignment(tps: list[dict]):
        return assign_cls(topic_partitions=[assign_cls.TopicPartitions(**tp) for tp in tps])

    def member(m: dict):
        plain = {k: v for k, v in m.items() if "assignment" not in k}
        return member_cls(
            **plain,
            assignment=assignment(m["assignment"]),
            target_assignment=assignment(m["target_assignment"]),
        )

    return R(
        throttle_time_ms=response["throttle_time_ms"],
        groups=[
            group_cls(
                **{k: v for k, v in g.items() if k != "members"},
                members=[member(m) for m in g["members"]],
            )
            for g in response["groups"]
        ],
    )


def decoded(message) -> dict:
    """A decoded response as plain data, in the generator's shape."""

    def assignment(a) -> list[dict]:
        return [
            {
                "topic_id": tp.topic_id,
                "topic_name": tp.topic_name,
                "partitions": list(tp.partitions),
            }
            for tp in a.topic_partitions
        ]

    def member(m) -> dict:
        return {
            "member_id": m.member_id,
            "instance_id": m.instance_id,
            "rack_id": m.rack_id,
            "member_epoch": m.member_epoch,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "subscribed_topic_names": list(m.subscribed_topic_names),
            "subscribed_topic_regex": m.subscribed_topic_regex,
            "assignment": assignment(m.assignment),
            "target_assignment": assignment(m.target_assignment),
            "member_type": m.member_type,
        }

    return {
        "throttle_time_ms": message.throttle_time_ms,
        "groups": [
            {
                "error_code": g.error_code,
                "error_message": g.error_message,
                "group_id": g.group_id,
                "group_state": g.group_state,
                "group_epoch": g.group_epoch,
                "assignment_epoch": g.assignment_epoch,
                "assignor_name": g.assignor_name,
                "members": [member(m) for m in g.members],
                "authorized_operations": g.authorized_operations,
            }
            for g in message.groups
        ],
    }


def at_version(response: dict, version: int) -> dict:
    """What survives ``version``: v0 has no MemberType (ignorable: dropped, read as -1)."""
    if version >= 1:
        return response
    return response | {
        "groups": [
            g | {"members": [m | {"member_type": -1} for m in g["members"]]}
            for g in response["groups"]
        ]
    }


@given(response=responses, version=VERSIONS)
def test_responses_agree_with_kafka(kafka, response, version):
    name = "ConsumerGroupDescribeResponseData"
    theirs = kafka.write(name, version, kafka_json(response))
    expected = at_version(response, version)
    # Kafka's bytes, read by the bridge
    assert decoded(R.decode(theirs, version=version)) == expected
    # the bridge's bytes: the same as Kafka's, and read back whole by Kafka
    ours = bridge_message(response).encode(version=version)
    assert ours == theirs
    assert kafka.read(name, version, ours) == kafka_json(expected, version)


@given(group_ids=st.lists(text, max_size=4), include=st.booleans(), version=VERSIONS)
def test_requests_agree_with_kafka(kafka, group_ids, include, version):
    fields = {"groupIds": group_ids, "includeAuthorizedOperations": include}
    theirs = kafka.write("ConsumerGroupDescribeRequestData", version, fields)
    ours = ConsumerGroupDescribeRequest(
        group_ids=group_ids, include_authorized_operations=include
    ).encode(version=version)
    assert ours == theirs
    back = ConsumerGroupDescribeRequest.decode(theirs, version=version)
    assert (list(back.group_ids), back.include_authorized_operations) == (group_ids, include)


def test_the_schema_is_kafka_4s(kafka):
    """The bridge's versions are the ones Kafka 4 defines: Kafka refuses the next one."""
    assert ConsumerGroupDescribeResponse.max_version == 1
    assert ConsumerGroupDescribeRequest.API_KEY == ConsumerGroupDescribeResponse.API_KEY == 69
    with pytest.raises(RuntimeError):
        kafka.write("ConsumerGroupDescribeRequestData", 2, {"groupIds": []})
