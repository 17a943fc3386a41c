"""Reads the Kafka cluster's metadata into a ``ClusterView`` (the I/O edge of flow F1)."""

from __future__ import annotations

import base64
import logging
import uuid

from kafka import KafkaAdminClient

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
    return _brokers(admin.describe_cluster(), security_protocol)


def read_cluster(admin: KafkaAdminClient, security_protocol: str = "PLAINTEXT") -> ClusterView:
    """One consistent-enough snapshot: brokers, active controller, every topic's partitions."""
    cluster = admin.describe_cluster()
    brokers = _brokers(cluster, security_protocol)
    controller_id, controller_epoch = cluster.get("controller_id", -1), 0
    try:
        quorum = admin.describe_metadata_quorum()
        part = quorum["topics"][0]["partitions"][0]
        controller_id, controller_epoch = part["leader_id"], part["leader_epoch"]
    except Exception as exc:  # noqa: BLE001 - a non-KRaft or locked-down cluster
        log.debug("metadata quorum not readable (%s); using Metadata's controller id", exc)
    topics: dict[str, TopicView] = {}
    unsettled: set[str] = set()
    for t in admin.describe_topics():
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
