"""What the bridge knows of Kafka at one moment: plain data, no client objects.

Flows decide from these snapshots alone, which keeps the decisions pure and testable:
``bridge.decide`` imports these types and nothing of the Kafka edge that reads them
(``cluster.py``, ``groups.py``, ``proxy.py``), so no decision imports a network client.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zkpaths import TopicPartition


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


@dataclass(frozen=True)
class MemberView:
    """One member of a Kafka group as DescribeGroups (classic group) or
    ConsumerGroupDescribe (``consumer`` group, KIP-848) shows it (flow F2 mirrors it)."""

    member_id: str
    client_id: str
    client_host: str
    #: subscribed topics; None when the member's metadata could not be decoded
    topics: tuple[str, ...] | None
    #: assigned partitions per topic; None when the assignment could not be decoded
    assignment: dict[str, tuple[int, ...]] | None
    #: static membership (KIP-345): the member's group.instance.id
    group_instance_id: str | None = None
    #: ``consumer`` groups only (None in classic groups): what the broker wants the member
    #: to own once it has revoked what moves away; ``assignment`` is what it owns now
    target_assignment: dict[str, tuple[int, ...]] | None = None
    #: ``consumer`` groups only: the epoch the member reconciled to
    member_epoch: int | None = None
    #: ``consumer`` groups only: the member's subscription pattern (RE2J), if any
    topic_regex: str | None = None
    #: ``consumer`` groups only: "consumer" (ConsumerGroupHeartbeat) or "classic"
    #: (JoinGroup/SyncGroup, e.g. a bridge proxy), "unknown" before Kafka 4.0's v1 answer
    member_type: str | None = None


#: ListGroups' group types (v5, KIP-848) the bridge reads: a ``consumer`` group's members
#: use ConsumerGroupHeartbeat (and classic members may join it), the broker assigns
CLASSIC, CONSUMER = "classic", "consumer"
#: a classic group whose leader's SyncGroup is being stored: Stable once the append completes
COMPLETING_REBALANCE = "CompletingRebalance"


@dataclass(frozen=True)
class ListedGroup:
    """One group as ListGroups lists it."""

    protocol_type: str  # "consumer" for consumer groups of either type, "" offsets only
    group_type: str = CLASSIC  # brokers before 4.0 (ListGroups < v5) have classic only
    state: str | None = None


@dataclass(frozen=True)
class GroupView:
    """One consumer group of either type, with its committed offsets (F2/F3): a classic
    group as DescribeGroups shows it, a ``consumer`` group as ConsumerGroupDescribe does."""

    group_id: str
    state: str
    protocol_type: str
    #: classic: the chosen assignor (protocol); consumer: the server-side assignor
    protocol: str | None
    members: tuple[MemberView, ...] = ()
    #: committed offsets (the next offset to consume) per partition
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    #: set when the group could not be read; the group is then left as it is in ZooKeeper
    error: str | None = None
    group_type: str = CLASSIC
    #: ``consumer`` groups only: bumped on every membership or subscription change
    group_epoch: int | None = None
    #: ``consumer`` groups only: the group epoch the target assignment was computed at
    assignment_epoch: int | None = None


@dataclass(frozen=True)
class KafkaMember:
    """A member of a generation as its JoinGroup response lists it to the leader (a bridge
    proxy or a new consumer): what the hand-over gate computes the range assignment from."""

    member_id: str
    group_instance_id: str | None
    topics: tuple[str, ...]


@dataclass(frozen=True)
class JoinedGeneration:
    """A generation whose join phase completed: its members and their range assignment."""

    generation_id: int
    members: tuple[KafkaMember, ...]
    assignment: dict[TopicPartition, str]  # partition -> member id
