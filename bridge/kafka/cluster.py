"""Reads the Kafka cluster's metadata into a ``ClusterView`` (the I/O edge of flow F1)."""

from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import Iterable

from kafka import KafkaAdminClient

from bridge.kafka.calls import admin_call
from bridge.kafka.views import BrokerView, ClusterView, PartitionView, TopicView

log = logging.getLogger(__name__)


def topic_id_b64(value: str | uuid.UUID | None) -> str | None:
    """Kafka spells topic ids as url-safe base64 without padding in ZooKeeper."""
    if value is None:
        return None
    u = value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    if u.int == 0:
        return None
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def _brokers(cluster: dict, security_protocol: str) -> dict[int, BrokerView]:
    return {
        b["broker_id"]: BrokerView(
            broker_id=b["broker_id"],
            host=b["host"],
            port=b["port"],
            rack=b.get("rack"),
            security_protocol=security_protocol,
        )
        for b in cluster["brokers"]
        if not b.get("is_fenced")
    }


def read_brokers(
    admin: KafkaAdminClient, security_protocol: str = "PLAINTEXT"
) -> dict[int, BrokerView]:
    """The live brokers with their endpoints on the listener ``admin`` is connected to
    (Kafka answers Metadata/DescribeCluster with the endpoints of the asking listener)."""
    return _brokers(admin_call(admin, "DescribeCluster", admin.describe_cluster), security_protocol)


def describe_topics(admin: KafkaAdminClient, topics: list[str] | None = None) -> list[dict]:
    """Metadata of ``topics`` (every topic when None), as kafka-python's admin answers it."""
    return admin_call(admin, "Metadata", admin.describe_topics, topics)


def partition_counts(
    admin: KafkaAdminClient, topics: Iterable[str] | None = None
) -> dict[str, int]:
    """How many partitions each topic has (every topic, or those of ``topics`` that exist);
    a topic Kafka answers for with an error or no partitions (being created) is left out."""
    names = None if topics is None else sorted(set(topics))
    if names == []:
        return {}
    return {
        t["name"]: len(t["partitions"])
        for t in describe_topics(admin, names)
        if t.get("error_code", 0) == 0 and t["partitions"]
    }


def read_cluster(admin: KafkaAdminClient, security_protocol: str = "PLAINTEXT") -> ClusterView:
    """One consistent-enough snapshot: brokers, active controller, every topic's partitions."""
    cluster = admin_call(admin, "DescribeCluster", admin.describe_cluster)
    brokers = _brokers(cluster, security_protocol)
    controller_id, controller_epoch = cluster.get("controller_id", -1), 0
    try:
        quorum = admin_call(admin, "DescribeQuorum", admin.describe_metadata_quorum)
        part = quorum["topics"][0]["partitions"][0]
        controller_id, controller_epoch = part["leader_id"], part["leader_epoch"]
    except Exception as exc:  # noqa: BLE001 - a non-KRaft or locked-down cluster
        log.debug("metadata quorum not readable (%s); using Metadata's controller id", exc)
    topics: dict[str, TopicView] = {}
    unsettled: set[str] = set()
    for t in describe_topics(admin):
        if t.get("error_code", 0) != 0 or not t["partitions"]:
            unsettled.add(t["name"])  # mirrored (or kept) once Kafka's metadata settles
            continue
        parts = {
            p["partition_index"]: PartitionView(
                leader=p["leader_id"],
                leader_epoch=max(p.get("leader_epoch", 0), 0),
                replicas=tuple(p["replica_nodes"]),
                isr=tuple(p["isr_nodes"]),
            )
            for p in t["partitions"]
        }
        topics[t["name"]] = TopicView(
            name=t["name"],
            topic_id=topic_id_b64(t.get("topic_id")),
            partitions=parts,
            internal=bool(t.get("is_internal")),
        )
    return ClusterView(
        cluster_id=cluster.get("cluster_id"),
        controller_id=controller_id if controller_id is not None else -1,
        controller_epoch=controller_epoch,
        brokers=brokers,
        topics=topics,
        unsettled=frozenset(unsettled),
    )
