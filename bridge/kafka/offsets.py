"""Where each partition's log starts and ends (ListOffsets), for lag, resets and the audit.

One function for the bridge, its commands and the audit dump (they had three, with three
retry policies): bounded, retried by ``calls.retrying`` (a topic created a moment ago has
a leader the metadata does not name yet).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from kafka import KafkaAdminClient
from kafka import TopicPartition as KafkaTP
from kafka.admin import OffsetSpec

from bridge.kafka.calls import admin_call, bound_s, retrying
from bridge.kafka.cluster import partition_counts
from zkpaths import TopicPartition

Spec = Literal["earliest", "latest"]


def log_offsets(
    admin: KafkaAdminClient,
    tps: Iterable[TopicPartition],
    spec: Spec = "latest",
    read_committed: bool = False,
) -> dict[TopicPartition, int]:
    """The earliest or latest (log-end) offset of each partition in ``tps``; with
    ``read_committed`` the latest is the last stable offset (before open transactions)."""
    want = {
        KafkaTP(t, p): OffsetSpec.EARLIEST if spec == "earliest" else OffsetSpec.LATEST
        for t, p in tps
    }
    if not want:
        return {}
    isolation = "read_committed" if read_committed else "read_uncommitted"
    list_offsets = admin.list_partition_offsets
    for attempt in retrying(admin, attempts=10, within_s=3 * bound_s(admin)):
        with attempt:
            got = admin_call(admin, "ListOffsets", list_offsets, want, isolation)
    return {TopicPartition(tp.topic, tp.partition): o.offset for tp, o in got.items()}


def log_ends(admin: KafkaAdminClient, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
    """The log-end offset of each partition in ``tps``."""
    return log_offsets(admin, tps, "latest")


def topic_log_ends(
    admin: KafkaAdminClient, topics: Iterable[str] | None = None
) -> dict[TopicPartition, int]:
    """The log-end offset of every partition of ``topics`` (every non-internal topic if
    None); a topic that no longer exists is left out."""
    if topics is None:
        names = [t for t in admin.list_topics() if not t.startswith("__")]
    else:
        names = sorted(set(topics))
    counts = partition_counts(admin, names)
    return log_ends(admin, [TopicPartition(t, p) for t, n in counts.items() for p in range(n)])
