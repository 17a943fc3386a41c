"""Every znode of Kafka's legacy ZooKeeper layout: build a path, or parse one back.

Builders validate each name they are given, so the bridge can never write a path a legacy
reader would misparse; :func:`parse_path` turns a path into a typed description, so code
reacting to a watch does not split strings by hand. ``parse_path(p).path == p`` for every
path it accepts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from zkpaths.errors import ZkPathError
from zkpaths.names import id_problem, node_name_problem, parse_id, topic_problem

BROKERS = "/brokers"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
BROKER_SEQID = "/brokers/seqid"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CLUSTER = "/cluster"
CLUSTER_ID = "/cluster/id"
CONSUMERS = "/consumers"


def _check(path: str, *problems: str | None) -> str:
    for problem in problems:
        if problem is not None:
            raise ZkPathError(path, problem)
    return path


def _group(group: str) -> str | None:
    return node_name_problem(group, "group")


# -- builders ------------------------------------------------------------------------------


def broker_path(broker_id: int) -> str:
    """``/brokers/ids/<id>``: a broker's ephemeral registration."""
    return _check(f"{BROKER_IDS}/{broker_id}", id_problem(broker_id, "broker id"))


def topic_path(topic: str) -> str:
    """``/brokers/topics/<t>``: the topic's replica assignment."""
    return _check(f"{BROKER_TOPICS}/{topic}", topic_problem(topic))


def partitions_path(topic: str) -> str:
    """``/brokers/topics/<t>/partitions``: parent of one node per partition."""
    return _check(f"{BROKER_TOPICS}/{topic}/partitions", topic_problem(topic))


def partition_path(topic: str, partition: int) -> str:
    """``/brokers/topics/<t>/partitions/<p>``."""
    return _check(
        f"{BROKER_TOPICS}/{topic}/partitions/{partition}",
        topic_problem(topic),
        id_problem(partition, "partition"),
    )


def partition_state_path(topic: str, partition: int) -> str:
    """``/brokers/topics/<t>/partitions/<p>/state``: leader, ISR and epochs."""
    return partition_path(topic, partition) + "/state"


def consumer_group_path(group: str) -> str:
    """``/consumers/<g>``."""
    return _check(f"{CONSUMERS}/{group}", _group(group))


def consumer_ids_path(group: str) -> str:
    """``/consumers/<g>/ids``: the old consumers' registry; its children trigger rebalances."""
    return consumer_group_path(group) + "/ids"


def consumer_id_path(group: str, consumer_id: str) -> str:
    """``/consumers/<g>/ids/<consumer id>``: one old consumer's registration."""
    return _check(
        f"{CONSUMERS}/{group}/ids/{consumer_id}",
        _group(group),
        node_name_problem(consumer_id, "consumer id"),
    )


def owners_path(group: str) -> str:
    """``/consumers/<g>/owners``."""
    return consumer_group_path(group) + "/owners"


def topic_owners_path(group: str, topic: str) -> str:
    """``/consumers/<g>/owners/<t>``."""
    return _check(f"{CONSUMERS}/{group}/owners/{topic}", _group(group), topic_problem(topic))


def owner_path(group: str, topic: str, partition: int) -> str:
    """``/consumers/<g>/owners/<t>/<p>``: ephemeral claim holding the owner's thread id."""
    return _check(
        f"{CONSUMERS}/{group}/owners/{topic}/{partition}",
        _group(group),
        topic_problem(topic),
        id_problem(partition, "partition"),
    )


def offsets_path(group: str) -> str:
    """``/consumers/<g>/offsets``."""
    return consumer_group_path(group) + "/offsets"


def topic_offsets_path(group: str, topic: str) -> str:
    """``/consumers/<g>/offsets/<t>``."""
    return _check(f"{CONSUMERS}/{group}/offsets/{topic}", _group(group), topic_problem(topic))


def offset_path(group: str, topic: str, partition: int) -> str:
    """``/consumers/<g>/offsets/<t>/<p>``: the next offset to consume, as decimal text."""
    return _check(
        f"{CONSUMERS}/{group}/offsets/{topic}/{partition}",
        _group(group),
        topic_problem(topic),
        id_problem(partition, "partition"),
    )


def offset_paths(group: str, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """:func:`offset_path` of each (topic, partition), keyed by it: the group and each topic
    checked once, not once per partition (a group's hundred offsets at every commit)."""
    dirs: dict[str, str] = {}
    out: dict[tuple[str, int], str] = {}
    for key in partitions:
        topic, partition = key
        base = dirs.get(topic)
        if base is None or id_problem(partition, "partition") is not None:
            out[key] = offset_path(group, topic, partition)  # raises naming the node
            dirs[topic] = out[key].rsplit("/", 1)[0]
        else:
            out[key] = f"{base}/{partition}"
    return out


# -- typed descriptions ----------------------------------------------------------------------


@dataclass(frozen=True)
class BrokersPath:
    @property
    def path(self) -> str:
        return BROKERS


@dataclass(frozen=True)
class BrokerIdsPath:
    @property
    def path(self) -> str:
        return BROKER_IDS


@dataclass(frozen=True)
class BrokerIdPath:
    broker_id: int

    @property
    def path(self) -> str:
        return broker_path(self.broker_id)


@dataclass(frozen=True)
class TopicsPath:
    @property
    def path(self) -> str:
        return BROKER_TOPICS


@dataclass(frozen=True)
class TopicPath:
    topic: str

    @property
    def path(self) -> str:
        return topic_path(self.topic)


@dataclass(frozen=True)
class PartitionsPath:
    topic: str

    @property
    def path(self) -> str:
        return partitions_path(self.topic)


@dataclass(frozen=True)
class PartitionPath:
    topic: str
    partition: int

    @property
    def path(self) -> str:
        return partition_path(self.topic, self.partition)


@dataclass(frozen=True)
class PartitionStatePath:
    topic: str
    partition: int

    @property
    def path(self) -> str:
        return partition_state_path(self.topic, self.partition)


@dataclass(frozen=True)
class BrokerSeqIdPath:
    @property
    def path(self) -> str:
        return BROKER_SEQID


@dataclass(frozen=True)
class ControllerPath:
    @property
    def path(self) -> str:
        return CONTROLLER


@dataclass(frozen=True)
class ControllerEpochPath:
    @property
    def path(self) -> str:
        return CONTROLLER_EPOCH


@dataclass(frozen=True)
class ClusterPath:
    @property
    def path(self) -> str:
        return CLUSTER


@dataclass(frozen=True)
class ClusterIdPath:
    @property
    def path(self) -> str:
        return CLUSTER_ID


@dataclass(frozen=True)
class ConsumersPath:
    @property
    def path(self) -> str:
        return CONSUMERS


@dataclass(frozen=True)
class ConsumerGroupPath:
    group: str

    @property
    def path(self) -> str:
        return consumer_group_path(self.group)


@dataclass(frozen=True)
class ConsumerIdsPath:
    group: str

    @property
    def path(self) -> str:
        return consumer_ids_path(self.group)


@dataclass(frozen=True)
class ConsumerIdPath:
    group: str
    consumer_id: str

    @property
    def path(self) -> str:
        return consumer_id_path(self.group, self.consumer_id)


@dataclass(frozen=True)
class OwnersPath:
    group: str

    @property
    def path(self) -> str:
        return owners_path(self.group)


@dataclass(frozen=True)
class TopicOwnersPath:
    group: str
    topic: str

    @property
    def path(self) -> str:
        return topic_owners_path(self.group, self.topic)


@dataclass(frozen=True)
class OwnerPath:
    group: str
    topic: str
    partition: int

    @property
    def path(self) -> str:
        return owner_path(self.group, self.topic, self.partition)


@dataclass(frozen=True)
class OffsetsPath:
    group: str

    @property
    def path(self) -> str:
        return offsets_path(self.group)


@dataclass(frozen=True)
class TopicOffsetsPath:
    group: str
    topic: str

    @property
    def path(self) -> str:
        return topic_offsets_path(self.group, self.topic)


@dataclass(frozen=True)
class OffsetPath:
    group: str
    topic: str
    partition: int

    @property
    def path(self) -> str:
        return offset_path(self.group, self.topic, self.partition)


ZkPath = (
    BrokersPath
    | BrokerIdsPath
    | BrokerIdPath
    | TopicsPath
    | TopicPath
    | PartitionsPath
    | PartitionPath
    | PartitionStatePath
    | BrokerSeqIdPath
    | ControllerPath
    | ControllerEpochPath
    | ClusterPath
    | ClusterIdPath
    | ConsumersPath
    | ConsumerGroupPath
    | ConsumerIdsPath
    | ConsumerIdPath
    | OwnersPath
    | TopicOwnersPath
    | OwnerPath
    | OffsetsPath
    | TopicOffsetsPath
    | OffsetPath
)

_FIXED: dict[str, ZkPath] = {
    BROKERS: BrokersPath(),
    BROKER_IDS: BrokerIdsPath(),
    BROKER_TOPICS: TopicsPath(),
    BROKER_SEQID: BrokerSeqIdPath(),
    CONTROLLER: ControllerPath(),
    CONTROLLER_EPOCH: ControllerEpochPath(),
    CLUSTER: ClusterPath(),
    CLUSTER_ID: ClusterIdPath(),
    CONSUMERS: ConsumersPath(),
}


# -- parsing -----------------------------------------------------------------------------------


def parse_path(path: str) -> ZkPath:
    """What ``path`` is in the legacy layout; :class:`ZkPathError` if it is not part of it."""
    if not isinstance(path, str):
        raise ZkPathError(repr(path), f"a path must be a string, not {type(path).__name__}")
    fixed = _FIXED.get(path)
    if fixed is not None:
        return fixed
    if not path.startswith("/") or path.endswith("/"):
        raise ZkPathError(path, "a path starts with '/' and does not end with one")
    parts = path[1:].split("/")
    if parts[0] == "brokers" and len(parts) >= 3:
        if parts[1] == "ids" and len(parts) == 3:
            return BrokerIdPath(_parse_number(path, parts[2], "broker id"))
        if parts[1] == "topics":
            return _parse_topic_path(path, parts[2:])
    if parts[0] == "consumers" and len(parts) >= 2:
        return _parse_consumer_path(path, parts[1:])
    raise ZkPathError(path, "not a node of Kafka's legacy layout")


def _parse_number(path: str, text: str, kind: str) -> int:
    value = parse_id(text)
    if value is None:
        raise ZkPathError(path, f"{kind} {text!r} is not a canonical number in 0..2147483647")
    return value


def _parse_topic(path: str, text: str) -> str:
    _check(path, topic_problem(text))
    return text


def _parse_topic_path(path: str, rest: list[str]) -> ZkPath:
    topic = _parse_topic(path, rest[0])
    if len(rest) == 1:
        return TopicPath(topic)
    if rest[1] == "partitions":
        if len(rest) == 2:
            return PartitionsPath(topic)
        partition = _parse_number(path, rest[2], "partition")
        if len(rest) == 3:
            return PartitionPath(topic, partition)
        if len(rest) == 4 and rest[3] == "state":
            return PartitionStatePath(topic, partition)
    raise ZkPathError(path, "not a node of Kafka's legacy layout")


def _parse_consumer_path(path: str, rest: list[str]) -> ZkPath:
    group = rest[0]
    _check(path, _group(group))
    if len(rest) == 1:
        return ConsumerGroupPath(group)
    kind, tail = rest[1], rest[2:]
    if kind == "ids":
        if not tail:
            return ConsumerIdsPath(group)
        if len(tail) == 1:
            _check(path, node_name_problem(tail[0], "consumer id"))
            return ConsumerIdPath(group, tail[0])
    elif kind in ("owners", "offsets"):
        if not tail:
            return OwnersPath(group) if kind == "owners" else OffsetsPath(group)
        topic = _parse_topic(path, tail[0])
        if len(tail) == 1:
            return (
                TopicOwnersPath(group, topic)
                if kind == "owners"
                else TopicOffsetsPath(group, topic)
            )
        if len(tail) == 2:
            partition = _parse_number(path, tail[1], "partition")
            if kind == "owners":
                return OwnerPath(group, topic, partition)
            return OffsetPath(group, topic, partition)
    raise ZkPathError(path, "not a node of Kafka's legacy layout")
