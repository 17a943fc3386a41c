"""What the bridge knows of Kafka at one moment: plain data, no client objects.

Flows decide from these snapshots alone, which keeps the decisions pure and testable.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class BrokerView:
    broker_id: int
    host: str
    port: int
    rack: str | None = None
    #: security protocol of the listener the bridge reached the broker on
    security_protocol: str = "PLAINTEXT"


@dataclass(frozen=True)
class PartitionView:
    leader: int  # -1 when the partition has no leader
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class TopicView:
    name: str
    topic_id: str | None  # Kafka's uuid as url-safe base64 (ZooKeeper's own spelling)
    partitions: dict[int, PartitionView] = field(default_factory=dict)
    internal: bool = False


@dataclass(frozen=True)
class ClusterView:
    cluster_id: str | None
    controller_id: int  # active KRaft controller (quorum leader), -1 when unknown
    controller_epoch: int  # KRaft quorum leader epoch, the nearest thing to ZK's epoch
    brokers: dict[int, BrokerView] = field(default_factory=dict)
    topics: dict[str, TopicView] = field(default_factory=dict)
    #: topics the metadata answered for with an error or no partitions (being created, a
    #: broker catching up): their ZooKeeper nodes are left as they are, not deleted
    unsettled: frozenset[str] = frozenset()
    #: live brokers whose endpoint on the legacy listener is not known (yet): their
    #: registration is left as it is, neither rewritten nor deleted
    unsettled_brokers: frozenset[int] = frozenset()
