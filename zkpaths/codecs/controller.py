"""``/controller``, ``/controller_epoch`` and ``/cluster/id``.

No legacy client reads these; they are written so that tools and monitoring which look
for a controller or a cluster id (and ZooKeeper-mode brokers, should one ever start) find
well-formed values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from zkpaths._decode import INT32_MAX, INT64_MAX, MAX_NODE_BYTES, Decoder
from zkpaths.codecs._json import dumps

CONTROLLER_VERSIONS = (1, 2)

_EPOCH = re.compile(r"[0-9]{1,10}")


@dataclass(frozen=True)
class ControllerRegistration:
    """Who is controller. ``kraft_controller_epoch`` is set only in v2 (Kafka 3.4+).

    A v2 node written by a ZooKeeper-mode controller holds ``-1``; a KRaft controller
    claiming ZooKeeper during migration holds its epoch. ``None`` encodes as v1.
    """

    broker_id: int
    timestamp_ms: int
    kraft_controller_epoch: int | None = None

    @property
    def version(self) -> int:
        return 1 if self.kraft_controller_epoch is None else 2


def encode_controller(reg: ControllerRegistration) -> bytes:
    """``{"version":1,"brokerid":0,"timestamp":"<ms>"}``, plus ``kraftControllerEpoch`` in v2."""
    _int(reg.broker_id, "broker_id", 0, INT32_MAX)
    _int(reg.timestamp_ms, "timestamp_ms", 0, INT64_MAX)
    doc: dict[str, Any] = {
        "version": reg.version,
        "brokerid": reg.broker_id,
        "timestamp": str(reg.timestamp_ms),
    }
    if reg.kraft_controller_epoch is not None:
        _int(reg.kraft_controller_epoch, "kraft_controller_epoch", -1, INT32_MAX)
        doc["kraftControllerEpoch"] = reg.kraft_controller_epoch
    return dumps(doc)


def decode_controller(
    data: bytes, *, path: str | None = "/controller", limit: int = MAX_NODE_BYTES
) -> ControllerRegistration:
    """The controller registration; only raises CodecError."""
    d = Decoder("controller registration", data, path, limit)
    obj = d.json_object()
    d.version(obj, CONTROLLER_VERSIONS)
    broker_id = d.integer(d.require(obj, "brokerid"), "brokerid", 0)
    timestamp_ms = d.timestamp(d.require(obj, "timestamp"))
    epoch = obj.get("kraftControllerEpoch")
    if epoch is not None:
        epoch = d.integer(epoch, "kraftControllerEpoch", -1)
    return ControllerRegistration(broker_id, timestamp_ms, epoch)


def encode_controller_epoch(epoch: int) -> bytes:
    """The controller epoch as Kafka writes it: decimal text."""
    _int(epoch, "controller epoch", 0, INT32_MAX)
    return str(epoch).encode("ascii")


def decode_controller_epoch(
    data: bytes, *, path: str | None = "/controller_epoch", limit: int = MAX_NODE_BYTES
) -> int:
    """The controller epoch; only raises CodecError."""
    d = Decoder("controller epoch", data, path, limit)
    text = d.text()
    if not _EPOCH.fullmatch(text) or int(text) > INT32_MAX:
        d.fail("not a decimal number in 0..2147483647")
    return int(text)


def encode_cluster_id(cluster_id: str) -> bytes:
    """``{"version":"1","id":"..."}``: the version is the *string* "1", as Kafka writes it."""
    if not isinstance(cluster_id, str) or not cluster_id:
        raise ValueError(f"cluster id must be a non-empty string, got {cluster_id!r}")
    return dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(
    data: bytes, *, path: str | None = "/cluster/id", limit: int = MAX_NODE_BYTES
) -> str:
    """The cluster id; tolerates ``"version":1`` as a number. Only raises CodecError."""
    d = Decoder("cluster id", data, path, limit)
    obj = d.json_object()
    version = d.require(obj, "version")
    if not (version == "1" or (type(version) is int and version == 1)):
        d.unknown_version(version, ("1",))
    cluster_id = d.string(d.require(obj, "id"), "id")
    if not cluster_id:
        d.fail("id is empty")
    return cluster_id


def _int(value: object, name: str, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{name} must be an int in {lo}..{hi}, got {value!r}")
