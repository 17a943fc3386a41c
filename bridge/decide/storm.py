"""A storm-kafka spout's offsets reconciled by its group's storage mode (pure).

The spout keeps its offsets in its own nodes (``zkpaths.dialects.storm``) and commits
nothing to Kafka; the bridge treats those nodes as the group's ZooKeeper store and the
Kafka group named in the config as its Kafka store, with the same modes and the same
forward-only rule (I2) as an old consumer group (:func:`bridge.decide.migration.reconcile`).
A node the bridge writes is the spout's own JSON, so a restarted spout resumes from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace

from bridge.decide.migration import Offsets, StorageMode, reconcile
from zkpaths import TopicPartition
from zkpaths.dialects.storm import SpoutOffset, encode_spout_offset, partition_path

#: topology named in a node the bridge creates for a partition the spout never committed
BRIDGE_TOPOLOGY = "kafka-zk-bridge"


@dataclass(frozen=True)
class SpoutWrite:
    """One partition node to write: ``version`` None creates it, else sets at that version."""

    path: str
    data: bytes
    version: int | None


@dataclass
class SpoutPlan:
    writes: list[SpoutWrite] = field(default_factory=list)
    to_kafka: dict[TopicPartition, int] = field(default_factory=dict)
    #: per partition (zookeeper, kafka) as this plan leaves them, -1 for none: the sync answer
    after: dict[TopicPartition, tuple[int, int]] = field(default_factory=dict)


def spout_plan(
    mode: StorageMode,
    spout: tuple[str, str],
    nodes: Mapping[TopicPartition, tuple[SpoutOffset, int]],
    kafka: Mapping[TopicPartition, int] | None,
    kafka_writers: AbstractSet[TopicPartition] | None,
    leaders: Mapping[TopicPartition, tuple[str, int]],
    bad: AbstractSet[TopicPartition] = frozenset(),
) -> SpoutPlan:
    """The writes that bring the spout's nodes (``(zk_root, spout_id)``; per partition the
    decoded node and its version) and the Kafka group to what ``mode`` says.

    ``kafka`` is None when Kafka could not be read (nothing goes there); ``kafka_writers``
    are partitions a live Kafka member commits itself (None: unknown), never committed
    over; ``leaders`` the current leader per partition, for the node's informational
    ``broker`` field. A partition whose node is ``bad`` (reported by the reader) is left
    alone in both stores, and shown to the gates as having no ZooKeeper offset, so a
    step waits until the node is fixed."""
    zk = {tp: n.offset for tp, (n, _v) in nodes.items() if tp not in bad}
    known = {tp: o for tp, o in (kafka or {}).items() if tp not in bad}
    rec = reconcile(mode, {tp: Offsets(zk.get(tp), known.get(tp)) for tp in set(zk) | set(known)})
    out = SpoutPlan()
    if kafka is not None and kafka_writers is not None:
        out.to_kafka = {tp: o for tp, o in rec.to_kafka.items() if tp not in kafka_writers}
    template = _template(nodes)
    for tp, offset in sorted(rec.to_zk.items()):
        host, port = leaders.get(tp, (None, None))
        if tp in nodes:
            node, version = nodes[tp]
            node = replace(node, offset=offset)
        else:
            node, version = replace(template, offset=offset, partition=tp.partition), None
            node = replace(node, topic=tp.topic)
        if host is not None:
            node = replace(node, broker_host=host, broker_port=port)
        out.writes.append(
            SpoutWrite(partition_path(*spout, tp.partition), encode_spout_offset(node), version)
        )
    for tp in set(zk) | set(known):
        out.after[tp] = (
            max(zk.get(tp, -1), rec.to_zk.get(tp, -1)),
            max(known.get(tp, -1), out.to_kafka.get(tp, -1)),
        )
    for tp in bad:
        out.after[tp] = (-1, (kafka or {}).get(tp, -1))
    return out


def _template(nodes: Mapping[TopicPartition, tuple[SpoutOffset, int]]) -> SpoutOffset:
    """A new node names the topology the spout's other nodes name, else the bridge (the
    spout reads the topology id back only with ``ignoreZkOffsets``, to ignore the node)."""
    for _tp, (node, _version) in sorted(nodes.items()):
        return node
    return SpoutOffset(0, 0, "", BRIDGE_TOPOLOGY, BRIDGE_TOPOLOGY)
