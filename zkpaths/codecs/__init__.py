"""Encoders and decoders for the data of every legacy znode, one module per family."""

from zkpaths._decode import MAX_NODE_BYTES
from zkpaths.codecs.broker import (
    BROKER_VERSIONS,
    BrokerRegistration,
    decode_broker,
    encode_broker,
)
from zkpaths.codecs.consumer import (
    BLACK_LIST,
    MAX_STREAMS,
    PATTERNS,
    STATIC,
    WHITE_LIST,
    ConsumerRegistration,
    decode_consumer_registration,
    decode_offset,
    decode_owner,
    encode_consumer_registration,
    encode_offset,
    encode_owner,
)
from zkpaths.codecs.controller import (
    ControllerRegistration,
    decode_cluster_id,
    decode_controller,
    decode_controller_epoch,
    encode_cluster_id,
    encode_controller,
    encode_controller_epoch,
)
from zkpaths.codecs.endpoints import SECURITY_PROTOCOLS, Endpoint, parse_endpoint
from zkpaths.codecs.state import PartitionState, decode_partition_state, encode_partition_state
from zkpaths.codecs.topic import TopicAssignment, decode_topic, encode_topic, is_topic_id

__all__ = [
    "BLACK_LIST",
    "BROKER_VERSIONS",
    "MAX_NODE_BYTES",
    "MAX_STREAMS",
    "PATTERNS",
    "SECURITY_PROTOCOLS",
    "STATIC",
    "WHITE_LIST",
    "BrokerRegistration",
    "ConsumerRegistration",
    "ControllerRegistration",
    "Endpoint",
    "PartitionState",
    "TopicAssignment",
    "decode_broker",
    "decode_cluster_id",
    "decode_consumer_registration",
    "decode_controller",
    "decode_controller_epoch",
    "decode_offset",
    "decode_owner",
    "decode_partition_state",
    "decode_topic",
    "encode_broker",
    "encode_cluster_id",
    "encode_consumer_registration",
    "encode_controller",
    "encode_controller_epoch",
    "encode_offset",
    "encode_owner",
    "encode_partition_state",
    "encode_topic",
    "is_topic_id",
    "parse_endpoint",
]
