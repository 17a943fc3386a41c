"""``/brokers/topics/<t>``: a topic's replica assignment, versions 1 to 3.

v1 is ``{"version":1,"partitions":{"0":[1,2]}}``; v2 adds ``adding_replicas`` and
``removing_replicas`` (partition -> replicas, only partitions being reassigned); v3 (2.8+)
adds ``topic_id``. Every legacy reader (0.8-0.11 consumers, storm-kafka, kafka-node) reads
only the keys of ``partitions`` and ignores the rest, so the encoder writes what Kafka 3.9
writes: version 3, with empty ``adding_replicas``/``removing_replicas`` maps and
``topic_id`` only when known. That keeps a node the bridge wrote readable by a ZooKeeper-mode
Kafka (which would otherwise lose the topic id) and by every old client.

Top-level keys come in the order Kafka 3.9 writes them (checked against
``kafka_2.13-3.9.1``); partitions are written in numeric order, where Kafka uses hash-map
order, which no reader depends on.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from zkpaths._decode import INT32_MAX, INT32_MIN, MAX_NODE_BYTES, Decoder
from zkpaths.codecs._json import dumps

TOPIC_VERSIONS = (1, 2, 3)

_PARTITION_KEY = re.compile(r"[0-9]{1,10}")
_TOPIC_ID = re.compile(r"[A-Za-z0-9_-]{22}(==)?")

Replicas = tuple[int, ...]


@dataclass(frozen=True)
class TopicAssignment:
    """Replicas per partition, and the reassignment in progress if any.

    ``adding_replicas``/``removing_replicas`` hold only partitions with a non-empty list.
    ``topic_id`` is Kafka's topic uuid in its url-safe base64 spelling.
    """

    partitions: dict[int, Replicas] = field(hash=False)
    adding_replicas: dict[int, Replicas] = field(default_factory=dict, hash=False)
    removing_replicas: dict[int, Replicas] = field(default_factory=dict, hash=False)
    topic_id: str | None = None
    version: int = 3

    def __post_init__(self) -> None:
        for name in ("partitions", "adding_replicas", "removing_replicas"):
            value: Mapping[int, Sequence[int]] = getattr(self, name)
            object.__setattr__(self, name, {p: tuple(r) for p, r in value.items()})


def is_topic_id(text: object) -> bool:
    """Whether ``text`` is a topic id Kafka's ``Uuid.fromString`` accepts."""
    if not isinstance(text, str) or not _TOPIC_ID.fullmatch(text):
        return False
    try:
        return len(base64.urlsafe_b64decode(text[:22] + "==")) == 16
    except (binascii.Error, ValueError):  # pragma: no cover - the regex already guards
        return False


# -- encode ------------------------------------------------------------------------------------


def encode_topic(assignment: TopicAssignment) -> bytes:
    """The JSON for ``assignment``, at ``assignment.version`` (3 unless set otherwise).

    Nothing the assignment holds is dropped: v2+ always carry the two reassignment maps, v1
    carries them only when non-empty, and ``topic_id`` is written whenever it is known
    (Kafka reads every key whatever the version says). Raises :class:`ValueError` naming
    the bad field.
    """
    version = assignment.version
    if version not in TOPIC_VERSIONS:
        raise ValueError(f"topic assignments are written as v1-v3, not v{version}")
    if assignment.topic_id is not None and not is_topic_id(assignment.topic_id):
        raise ValueError(f"topic id {assignment.topic_id!r} is not a base64 uuid")
    doc: dict[str, Any] = {"partitions": _replica_map(assignment.partitions, "partitions")}
    if assignment.topic_id is not None:
        doc["topic_id"] = assignment.topic_id
    for name in ("adding_replicas", "removing_replicas"):
        extra = {p: r for p, r in getattr(assignment, name).items() if r}
        unknown = sorted(set(extra) - set(assignment.partitions))
        if unknown:
            raise ValueError(f"{name} names partitions {unknown} that the topic lacks")
        if version >= 2 or extra:
            doc[name] = _replica_map(extra, name)
    if version == 1:  # the 0.8-2.3 writers put the version first
        return dumps({"version": 1, **doc})
    doc["version"] = version
    return dumps(doc)


def _replica_map(replicas: Mapping[int, Replicas], name: str) -> dict[str, list[int]]:
    for partition, brokers in replicas.items():
        if isinstance(partition, bool) or not isinstance(partition, int):
            raise ValueError(f"{name}: partition {partition!r} is not an int")
        if not 0 <= partition <= INT32_MAX:
            raise ValueError(f"{name}: partition {partition} is outside 0..{INT32_MAX}")
        for broker in brokers:
            if isinstance(broker, bool) or not isinstance(broker, int):
                raise ValueError(
                    f"{name}: replica {broker!r} of partition {partition} is not an int"
                )
            if not INT32_MIN <= broker <= INT32_MAX:
                raise ValueError(
                    f"{name}: replica {broker} of partition {partition} is not an int32"
                )
    return {str(p): list(replicas[p]) for p in sorted(replicas)}


# -- decode ------------------------------------------------------------------------------------


def decode_topic(
    data: bytes, *, path: str | None = None, limit: int = MAX_NODE_BYTES
) -> TopicAssignment:
    """A topic's assignment from its node data; only raises CodecError."""
    d = Decoder("topic assignment", data, path, limit)
    obj = d.json_object()
    version = d.version(obj, TOPIC_VERSIONS)
    # Kafka treats a missing "partitions" as a topic without partitions; so do we.
    partitions = _decode_replica_map(d, obj.get("partitions", {}), "partitions")
    moves: dict[str, dict[int, Replicas]] = {}
    for name in ("adding_replicas", "removing_replicas"):
        found = _decode_replica_map(d, obj.get(name, {}), name)
        unknown = sorted(set(found) - set(partitions))
        if unknown:
            d.fail(f"{name} names partitions {unknown} that are not in partitions")
        moves[name] = {p: r for p, r in found.items() if r}
    topic_id = d.optional_string(obj.get("topic_id"), "topic_id")
    if topic_id is not None and not is_topic_id(topic_id):
        d.fail(f"topic_id {topic_id!r} is not a base64 uuid")
    return TopicAssignment(
        partitions, moves["adding_replicas"], moves["removing_replicas"], topic_id, version
    )


def _decode_replica_map(d: Decoder, raw: Any, name: str) -> dict[int, Replicas]:
    result: dict[int, Replicas] = {}
    for key, replicas in d.obj(raw, name).items():
        if not _PARTITION_KEY.fullmatch(key) or int(key) > INT32_MAX:
            d.fail(f"{name} key {key[:20]!r} is not a partition number")
        partition = int(key)
        if partition in result:
            d.fail(f"{name} lists partition {partition} twice")
        result[partition] = d.int_list(replicas, f"{name} of partition {partition}")
    return result
