"""Kafka requests kafka-python 3 does not define, built as it builds its own.

kafka-python 3 makes each request and response class from Kafka's JSON message schema
(``ApiMessage`` with the schema loaded by class name); the classes here do the same with
the schemas in ``bridge.kafka.schemas``. Defining the response class registers it for its
API key, so kafka-python's connection decodes the broker's answer into it.
"""

from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from bridge.kafka import schemas


class ConsumerGroupDescribeRequest(ApiMessage, load_json=schemas):
    """ConsumerGroupDescribe (API key 69, KIP-848): next-generation groups as their
    coordinator sees them: members, subscriptions, current and target assignments, epochs."""


class ConsumerGroupDescribeResponse(ApiMessage, load_json=schemas):
    """The answer to ``ConsumerGroupDescribeRequest``: one ``DescribedGroup`` per group."""


#: ConsumerGroupDescribe's MemberType (v1+, KIP-1099)
MEMBER_TYPES = {-1: "unknown", 0: "classic", 1: "consumer"}

__all__ = ["MEMBER_TYPES", "ConsumerGroupDescribeRequest", "ConsumerGroupDescribeResponse"]
