"""Error codes as old clients know them.

A 0.8.2 client knows the codes up to 20 and nothing newer; 0.9 added up to 31 (group and
authorization errors), 0.10.0 up to 35, 0.10.1 up to 43 (``Errors.java`` / ``ErrorMapping.scala`` at
those tags). A code the asking client's
generation does not know is mapped to the nearest one it does: the leadership errors Kafka
added later (fenced/unknown leader epoch, storage error, offset not yet available) become
NOT_LEADER_FOR_PARTITION, which every old client answers by refreshing metadata and
retrying; record errors become CORRUPT_MESSAGE; anything else UNKNOWN.
"""

from __future__ import annotations

NONE = 0
UNKNOWN = -1
OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
NOT_LEADER_FOR_PARTITION = 6
REQUEST_TIMED_OUT = 7
REPLICA_NOT_AVAILABLE = 9
MESSAGE_TOO_LARGE = 10
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
UNSUPPORTED_VERSION = 35
KAFKA_STORAGE_ERROR = 56
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
UNSUPPORTED_COMPRESSION_TYPE = 76
OFFSET_NOT_AVAILABLE = 78
INVALID_RECORD = 87

#: the newest code each client generation knows, by the version of the request it sent
GENERATION_MAX = {"0.8.2": 20, "0.9": 31, "0.10.0": 35, "0.10.1": 43}

#: a partition whose leader may have moved: refresh metadata and try the new leader
LEADERSHIP = frozenset(
    {
        LEADER_NOT_AVAILABLE,
        NOT_LEADER_FOR_PARTITION,
        REPLICA_NOT_AVAILABLE,
        KAFKA_STORAGE_ERROR,
        FENCED_LEADER_EPOCH,
        UNKNOWN_LEADER_EPOCH,
        OFFSET_NOT_AVAILABLE,
        UNKNOWN_TOPIC_OR_PARTITION,
    }
)
#: the group coordinator moved or is loading: find it again
COORDINATOR = frozenset({COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR})

_NEAREST = {
    KAFKA_STORAGE_ERROR: NOT_LEADER_FOR_PARTITION,
    FENCED_LEADER_EPOCH: NOT_LEADER_FOR_PARTITION,
    UNKNOWN_LEADER_EPOCH: NOT_LEADER_FOR_PARTITION,
    OFFSET_NOT_AVAILABLE: NOT_LEADER_FOR_PARTITION,
    UNSUPPORTED_COMPRESSION_TYPE: CORRUPT_MESSAGE,
    INVALID_RECORD: CORRUPT_MESSAGE,
}

# request api key -> {version: generation}: the oldest client generation that sends it
_GENERATION = {
    0: {0: "0.8.2", 1: "0.9", 2: "0.10.0"},  # Produce
    1: {0: "0.8.2", 1: "0.9", 2: "0.10.0", 3: "0.10.1"},  # Fetch
    2: {0: "0.8.2", 1: "0.10.1"},  # ListOffsets
    3: {0: "0.8.2", 1: "0.10.0", 2: "0.10.1", 3: "0.10.1"},  # Metadata
    8: {0: "0.8.2", 1: "0.8.2", 2: "0.9"},  # OffsetCommit
    11: {0: "0.9", 1: "0.10.1"},  # JoinGroup
    12: {0: "0.9"},  # Heartbeat
    13: {0: "0.9"},  # LeaveGroup
    14: {0: "0.9"},  # SyncGroup
}


def for_client(code: int, api_key: int, version: int) -> int:
    """``code`` as the client that sent ``api_key`` v``version`` understands it."""
    if code == NONE:
        return code
    generation = _GENERATION.get(api_key, {}).get(version, "0.8.2")
    if -1 <= code <= GENERATION_MAX[generation]:
        return code
    nearest = _NEAREST.get(code, UNKNOWN)
    return nearest if nearest <= GENERATION_MAX[generation] else UNKNOWN
