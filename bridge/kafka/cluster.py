"""Reads the Kafka cluster's metadata into a ``ClusterView`` (the I/O edge of flow F1)."""

from __future__ import annotations

import base64
import logging
import time
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.errors import KafkaError, UnknownTopicOrPartitionError
from kafka.protocol.metadata import MetadataRequest

from bridge.kafka.calls import KafkaCallTimeout, admin_call
from bridge.kafka.views import BrokerView, ClusterView, PartitionView, TopicView
from zkpaths import TopicPartition

#: ``read_cluster``'s requests made beside its own (each call is bounded in ``admin_call``)
_ASIDE = ThreadPoolExecutor(2, thread_name_prefix="cluster-read")

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


async def _listed_by(admin: KafkaAdminClient, names: list[str], node: int) -> set[str]:
    """The ``names`` broker ``node``'s own copy of the metadata still lists."""
    request = MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names],
        allow_auto_topic_creation=False,
    )
    response = await admin._manager.send(request, node_id=node)
    gone = UnknownTopicOrPartitionError.errno
    return {t.name for t in response.topics if t.error_code != gone}


def still_listed(
    admin: KafkaAdminClient, names: Iterable[str], broker_ids: Iterable[int]
) -> set[str]:
    """Which of ``names`` some live broker still lists: every broker applies a topic's
    deletion on its own time, so a topic missing from one answer is gone only once each
    broker says it does not know it. A broker that cannot be asked counts as listing them
    all (its nodes are kept, never deleted on a guess)."""
    wanted = sorted(set(names))
    listed: set[str] = set()
    for node in sorted(set(broker_ids)):
        try:
            listed |= admin_call(
                admin, "Metadata", admin._manager.run, _listed_by, admin, wanted, node
            )
        except KafkaError as exc:
            log.debug("broker %s not asked whether %s are gone: %s", node, wanted, exc)
            return set(wanted)
        if len(listed) == len(wanted):
            break
    return listed


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


class Quorum:
    """The KRaft metadata quorum's leader (the active controller) and its epoch.

    DescribeQuorum is answered by the active controller, so while the quorum is lost it goes
    unanswered for the call's whole bound, tick after tick, and the other flow waits behind
    it (seen while the last broker of a stack shut down). After a call went unanswered the
    last leader read stands, and DescribeQuorum is asked again only after ``backoff_s``."""

    def __init__(self, backoff_s: float = 30.0) -> None:
        self.backoff_s = backoff_s
        self.last: tuple[int, int] | None = None
        self._retry_at = 0.0

    def read(self, admin: KafkaAdminClient) -> tuple[int, int] | None:
        """(leader id, leader epoch), or None when the cluster does not say (not KRaft,
        or locked down): then Metadata's controller id is used."""
        now = time.monotonic()
        if now < self._retry_at:
            return self.last
        try:
            quorum = admin_call(admin, "DescribeQuorum", admin.describe_metadata_quorum)
            part = quorum["topics"][0]["partitions"][0]
            self.last = (part["leader_id"], part["leader_epoch"])
        except KafkaCallTimeout:
            self._retry_at = now + self.backoff_s
            log.debug("metadata quorum did not answer; asked again in %.0fs", self.backoff_s)
        except Exception as exc:  # noqa: BLE001 - a non-KRaft or locked-down cluster
            log.debug("metadata quorum not readable (%s); using Metadata's controller id", exc)
            return None
        return self.last


def read_cluster(
    admin: KafkaAdminClient, security_protocol: str = "PLAINTEXT", quorum: Quorum | None = None
) -> ClusterView:
    """One consistent-enough snapshot: brokers, active controller, every topic's partitions.
    The three requests are made at once: one after the other, the registry flow held the
    flows' one thread for three round trips every poll (11 % of it in ``bench.fleet``'s old
    consumers' phase, py-spy), and every commit waiting with it."""
    asked_cluster = _ASIDE.submit(admin_call, admin, "DescribeCluster", admin.describe_cluster)
    asked_leader = _ASIDE.submit((quorum or Quorum()).read, admin)
    described = describe_topics(admin)
    cluster = asked_cluster.result()
    brokers = _brokers(cluster, security_protocol)
    controller_id, controller_epoch = cluster.get("controller_id", -1), 0
    leader = asked_leader.result()
    if leader is not None:
        controller_id, controller_epoch = leader
    topics: dict[str, TopicView] = {}
    unsettled: set[str] = set()
    for t in described:
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


def partition_leaders(
    admin: KafkaAdminClient, topics: Iterable[str]
) -> dict[TopicPartition, tuple[str, int]]:
    """The leader's host and port per partition of ``topics`` (leaderless ones left out)."""
    brokers = read_brokers(admin)
    out: dict[TopicPartition, tuple[str, int]] = {}
    for t in describe_topics(admin, sorted(set(topics))):
        for p in t.get("partitions") or []:
            b = brokers.get(p.get("leader_id", -1))
            if b is not None:
                out[TopicPartition(t["name"], p["partition_index"])] = (b.host, b.port)
    return out


#: the broker's heartbeat interval for consumer-protocol (KIP-848) members
CONSUMER_HEARTBEAT = "group.consumer.heartbeat.interval.ms"


def consumer_heartbeat_interval_ms(admin: KafkaAdminClient) -> int | None:
    """How often the brokers ask consumer-protocol members to heartbeat (one live broker's
    ``group.consumer.heartbeat.interval.ms``, a cluster-wide setting); None when no broker
    says (a Kafka before 3.7, or an error, logged)."""
    try:
        brokers = read_brokers(admin)
        if not brokers:
            return None
        resource = ConfigResource(
            ConfigResourceType.BROKER, str(min(brokers)), {CONSUMER_HEARTBEAT: None}
        )
        answer = admin_call(
            admin, "DescribeConfigs", admin.describe_configs, [resource], False, "all"
        )
        entry = next(iter(answer.get("broker", {}).values()), {}).get(CONSUMER_HEARTBEAT)
        return int(entry["value"]) if entry and entry.get("value") else None
    except (KafkaError, KafkaCallTimeout, ValueError, KeyError) as exc:
        log.warning("cannot read %s from the brokers: %s", CONSUMER_HEARTBEAT, exc)
        return None
