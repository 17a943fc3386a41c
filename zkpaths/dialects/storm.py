"""storm-kafka's ``KafkaSpout`` offsets: ``<zkRoot>/<spout id>/partition_<n>``.

The spout (``PartitionManager.commit`` in storm-kafka 1.x) keeps one node per partition,
written with json-simple from an ordered map::

    {"topology":{"id":"<storm id>","name":"<topology name>"},"offset":<n>,"partition":<p>,
     "broker":{"host":"<leader host>","port":<leader port>},"topic":"<topic>"}

``offset`` is ``lastCompletedOffset()``: the first emitted offset not yet acked, or the next
offset to emit when nothing is pending; that is, the next offset to process, the same
meaning as a Kafka committed offset. On restart the spout reads only ``topology.id`` and
``offset``; it ignores the node (starting at ``startOffsetTime``) when either is missing or
of the wrong type, when ``ignoreZkOffsets`` is set and the topology id differs, and when
the offset is ``<= 0`` or more than ``maxOffsetBehind`` behind the log end. ``broker`` is the
partition's leader when the spout last committed: informational only.

Pure: no I/O. Decoding raises only :class:`~zkpaths.errors.CodecError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from zkpaths._decode import INT32_MAX, INT64_MAX, MAX_NODE_BYTES, Decoder
from zkpaths.errors import ZkPathError
from zkpaths.names import topic_problem

PARTITION_PREFIX = "partition_"
_PARTITION = re.compile(r"partition_(0|[1-9][0-9]{0,9})")


@dataclass(frozen=True)
class SpoutOffset:
    """One ``partition_<n>`` node of a KafkaSpout."""

    offset: int
    partition: int
    topic: str
    topology_id: str
    topology_name: str | None = None
    broker_host: str | None = None
    broker_port: int | None = None


def spout_path(zk_root: str, spout_id: str) -> str:
    """``<zkRoot>/<spout id>``: the parent of the spout's partition nodes."""
    if not zk_root.startswith("/") or (zk_root != "/" and zk_root.endswith("/")):
        raise ZkPathError(zk_root, "zkRoot must be an absolute path without a trailing '/'")
    if not spout_id or "/" in spout_id or spout_id in (".", ".."):
        raise ZkPathError(spout_id, "a spout id must be one non-empty path element")
    return f"{zk_root.rstrip('/')}/{spout_id}"


def partition_path(zk_root: str, spout_id: str, partition: int) -> str:
    """``<zkRoot>/<spout id>/partition_<n>`` (``Partition.getId()``)."""
    if not 0 <= partition <= INT32_MAX:
        raise ZkPathError(str(partition), "a partition is an int32 >= 0")
    return f"{spout_path(zk_root, spout_id)}/{PARTITION_PREFIX}{partition}"


def parse_partition_name(name: str) -> int | None:
    """The partition of a ``partition_<n>`` child name; None for any other child."""
    m = _PARTITION.fullmatch(name)
    if m is None or int(m.group(1)) > INT32_MAX:
        return None
    return int(m.group(1))


def decode_spout_offset(
    data: bytes, *, path: str | None = None, limit: int = MAX_NODE_BYTES
) -> SpoutOffset:
    """A partition node as the spout wrote it; CodecError for anything the spout itself
    would not resume from (so the bridge never copies an offset the spout ignores)."""
    d = Decoder("storm spout offset", data, path, limit)
    obj = d.json_object()
    topology = d.obj(d.require(obj, "topology"), "topology")
    topology_id = d.string(d.require(topology, "id"), "topology.id")
    name = d.optional_string(topology.get("name"), "topology.name")
    offset = d.integer(d.require(obj, "offset"), "offset", 0, INT64_MAX)
    partition = d.integer(d.require(obj, "partition"), "partition", 0, INT32_MAX)
    topic = d.string(d.require(obj, "topic"), "topic")
    if topic_problem(topic):
        d.fail(f"topic: {topic_problem(topic)}")
    host: str | None = None
    port: int | None = None
    if obj.get("broker") is not None:
        broker = d.obj(obj["broker"], "broker")
        host = d.optional_string(broker.get("host"), "broker.host")
        if broker.get("port") is not None:
            port = d.integer(broker["port"], "broker.port", -1, 65535)
    return SpoutOffset(offset, partition, topic, topology_id, name, host, port)


def encode_spout_offset(node: SpoutOffset) -> bytes:
    """The node as the spout writes it: json-simple's compact form, keys in its order."""
    topology = f'{{"id":{_string(node.topology_id)},"name":{_string(node.topology_name)}}}'
    broker = f'{{"host":{_string(node.broker_host)},"port":{_number(node.broker_port)}}}'
    return (
        f'{{"topology":{topology},"offset":{node.offset},"partition":{node.partition},'
        f'"broker":{broker},"topic":{_string(node.topic)}}}'
    ).encode()


def _number(value: int | None) -> str:
    return "null" if value is None else str(value)


def _string(value: str | None) -> str:
    """``JSONValue.escape`` of json-simple 1.1: '/' and C0/C1/U+2000-U+20FF escaped, upper hex."""
    if value is None:
        return "null"
    out: list[str] = []
    for ch in value:
        if ch in _SHORT:
            out.append(_SHORT[ch])
        elif ch <= "\x1f" or "\x7f" <= ch <= "\x9f" or "\u2000" <= ch <= "\u20ff":
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


_SHORT = {
    '"': '\\"',
    "\\": "\\\\",
    "/": "\\/",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
