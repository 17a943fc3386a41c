"""``/brokers/topics/<t>/partitions/<p>/state``: leader, ISR and epochs of one partition.

The node is persistent (Kafka's docs call it ephemeral; the code never made it so).
storm-kafka reads ``leader`` from it and fails on ``-1``, so the bridge should avoid writing
leaderless states where it can; the codec itself accepts ``-1`` as Kafka does.
``leader_recovery_state`` (3.2+) is written by Kafka only while a partition is RECOVERING
(1); ``None`` means the key is absent, i.e. RECOVERED.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from zkpaths._decode import INT32_MAX, INT32_MIN, MAX_NODE_BYTES, Decoder
from zkpaths.codecs._json import dumps

PARTITION_STATE_VERSIONS = (1,)
#: LeaderRecoveryState values: RECOVERED, RECOVERING
LEADER_RECOVERY_STATES = (0, 1)

# The order Kafka writes the keys in (checked against kafka_2.13-3.9.1; 2.12 builds agree).
_KEY_ORDER = (
    "controller_epoch",
    "leader",
    "version",
    "leader_recovery_state",
    "leader_epoch",
    "isr",
)


@dataclass(frozen=True)
class PartitionState:
    """A partition's leader, its epoch, the ISR and the controller epoch.

    ``leader`` is ``-1`` when there is none and ``-2`` while the topic is being deleted.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    version: int = 1
    leader_recovery_state: int | None = None

    def __post_init__(self) -> None:
        isr: Sequence[int] = self.isr
        object.__setattr__(self, "isr", tuple(isr))


def encode_partition_state(state: PartitionState) -> bytes:
    """The JSON for ``state``; :class:`ValueError` naming the bad field."""
    if state.version not in PARTITION_STATE_VERSIONS:
        raise ValueError(f"partition state is written as v1, not v{state.version}")
    _int(state.leader, "leader", INT32_MIN)
    _int(state.leader_epoch, "leader_epoch", INT32_MIN)
    _int(state.controller_epoch, "controller_epoch", INT32_MIN)
    for broker in state.isr:
        _int(broker, "isr element", INT32_MIN)
    doc: dict[str, Any] = {
        "controller_epoch": state.controller_epoch,
        "leader": state.leader,
        "version": state.version,
        "leader_epoch": state.leader_epoch,
        "isr": list(state.isr),
    }
    if state.leader_recovery_state is not None:
        if state.leader_recovery_state not in LEADER_RECOVERY_STATES:
            raise ValueError(f"leader_recovery_state {state.leader_recovery_state!r} is not 0 or 1")
        doc["leader_recovery_state"] = state.leader_recovery_state
    return dumps({key: doc[key] for key in _KEY_ORDER if key in doc})


def _int(value: object, name: str, lo: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= INT32_MAX:
        raise ValueError(f"{name} must be an int in {lo}..{INT32_MAX}, got {value!r}")


def decode_partition_state(
    data: bytes, *, path: str | None = None, limit: int = MAX_NODE_BYTES
) -> PartitionState:
    """A partition's state from its node data; only raises CodecError."""
    d = Decoder("partition state", data, path, limit)
    obj = d.json_object()
    version = d.version(obj, PARTITION_STATE_VERSIONS)
    leader = d.integer(d.require(obj, "leader"), "leader")
    leader_epoch = d.integer(d.require(obj, "leader_epoch"), "leader_epoch")
    isr = d.int_list(d.require(obj, "isr"), "isr")
    controller_epoch = d.integer(d.require(obj, "controller_epoch"), "controller_epoch")
    recovery = obj.get("leader_recovery_state")
    if recovery is not None:
        recovery = d.integer(recovery, "leader_recovery_state")
        if recovery not in LEADER_RECOVERY_STATES:
            d.fail(f"leader_recovery_state {recovery} is not 0 (RECOVERED) or 1 (RECOVERING)")
    return PartitionState(leader, leader_epoch, isr, controller_epoch, version, recovery)
