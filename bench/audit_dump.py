"""The synthetic ``__consumer_offsets`` dump ``bench/audit.py`` times the audit on: what
``zk-bridge audit dump`` writes, with every record kind and version the audit decodes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bridge.audit.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)
from bridge.audit.dump import (
    DUMP_FORMAT,
    DUMP_VERSION,
    RECORD_SCHEMA,
    RECORDS_PARQUET,
    write_log_end_offsets,
)
from bridge.audit.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_key,
    encode_value,
)
from zkpaths import TopicPartition, coordinator_partition

#: the first commit time of the dump (ms)
T0 = 1_700_000_000_000
GROUPS = 1000
PARTITIONS = 50  # of __consumer_offsets


def _v3_values(offsets: np.ndarray, stamps: np.ndarray) -> pa.Array:
    """Offset commit values v3 (empty metadata, epoch 7) for many records at once."""
    dt = np.dtype([("v", ">i2"), ("o", ">i8"), ("e", ">i4"), ("m", ">i2"), ("t", ">i8")])
    rows = np.zeros(len(offsets), dtype=dt)
    rows["v"], rows["o"], rows["e"], rows["m"], rows["t"] = 3, offsets, 7, 0, stamps
    width = dt.itemsize
    offs = np.arange(0, (len(offsets) + 1) * width, width, dtype=np.int32)
    return pa.Array.from_buffers(
        pa.binary(), len(offsets), [None, pa.py_buffer(offs), pa.py_buffer(rows.tobytes())]
    )


def _variety(rng: np.random.Generator, key: OffsetCommitKey, offset: int, ts: int) -> bytes:
    """Other value versions, built with the encoder."""
    version = int(rng.choice([0, 1, 2, 4]))
    v = OffsetCommitValue(
        offset,
        "meta" if version != 4 else "flexible",
        ts,
        version,
        leader_epoch=7 if version >= 3 else -1,
        expire_timestamp=ts + 86_400_000 if version == 1 else -1,
    )
    return encode_value(v)


def _group_value(rng: np.random.Generator, group: str, topics: list[str], ts: int) -> bytes:
    members = []
    for m in range(int(rng.integers(1, 4))):
        sub = encode_subscription(Subscription(tuple(topics), None, (), 5, None, 3))
        parts = tuple((t, tuple(range(m, 5, 3))) for t in topics)
        members.append(
            MemberMetadata(
                f"consumer-{m}-{group}",
                f"client-{m}",
                "/10.0.0.1",
                45000,
                sub,
                encode_assignment(Assignment(parts)),
                300000,
                None,
            )
        )
    version = int(rng.choice([3, 4]))
    value = GroupMetadataValue(
        "consumer", 5, "range", members[0].member_id, tuple(members), version, ts
    )
    return encode_value(value)


def _keys(keys: int) -> tuple[list[OffsetCommitKey], list[str], np.ndarray]:
    """``keys`` offset-commit keys over GROUPS groups, the topics, and each key's partition."""
    per_group = max(1, keys // GROUPS)
    topics = [f"topic-{t}" for t in range(max(1, per_group // 10))]
    key_list = []
    key_part = []
    for g in range(GROUPS):
        group = f"bench-group-{g:04d}"
        for i in range(per_group):
            key_list.append(OffsetCommitKey(group, topics[i % len(topics)], i // len(topics)))
            key_part.append(coordinator_partition(group, PARTITIONS))
    return key_list, topics, np.array(key_part, dtype=np.int32)


def _offsets_in_partitions(part: np.ndarray) -> np.ndarray:
    """Each record's offset: its position in its partition, in record order."""
    order = np.argsort(part, kind="stable")
    offsets = np.empty(len(part), dtype=np.int64)
    counts = np.bincount(part, minlength=PARTITIONS)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    offsets[order] = np.arange(len(part)) - np.repeat(starts, counts)
    return offsets


def _with_specials(
    rng: np.random.Generator,
    key_list: list[OffsetCommitKey],
    topics: list[str],
    idx: np.ndarray,
    commit: np.ndarray,
    stamps: np.ndarray,
    keys_col: pa.Array,
) -> tuple[pa.Array, pa.Array]:
    """Keys and values, about 2% of them something else than a v3 commit: older and newer
    value versions, tombstones, group metadata and KIP-848 records."""
    special = np.flatnonzero(rng.random(len(idx)) < 0.02)
    values = _v3_values(commit, stamps)
    if not len(special):
        return keys_col, values
    keys_py = keys_col.to_pylist()
    vals_py = values.to_pylist()
    for j in special:
        r = rng.random()
        k = key_list[idx[j]]
        if r < 0.55:
            vals_py[j] = _variety(rng, k, int(commit[j]), int(stamps[j]))
        elif r < 0.75:
            vals_py[j] = None  # tombstone: offset expired or deleted
        elif r < 0.95:
            keys_py[j] = encode_key(GroupMetadataKey(k.group))
            vals_py[j] = _group_value(rng, k.group, topics[:2], int(stamps[j]))
        else:
            version = int(rng.integers(3, 9))  # KIP-848 records
            keys_py[j] = version.to_bytes(2, "big") + encode_key(GroupMetadataKey(k.group))[2:]
            vals_py[j] = b"\x00\x00" + b"\x01" * 20
    return pa.array(keys_py, pa.binary()), pa.array(vals_py, pa.binary())


def _write_dump(path: Path, table: pa.Table, ends: dict[TopicPartition, int], seed: int) -> None:
    """The records, log ends and manifest as ``zk-bridge audit dump`` writes them."""
    path.mkdir(parents=True, exist_ok=True)
    # row groups as `zk-bridge audit dump` writes them (100k records): Spark splits by them
    pq.write_table(table, path / RECORDS_PARQUET, row_group_size=100_000)
    write_log_end_offsets(path, ends)
    manifest = {
        "format": DUMP_FORMAT,
        "version": DUMP_VERSION,
        "records_file": RECORDS_PARQUET,
        "source": f"synthetic (bench.audit, seed {seed})",
        "created_ms": int(time.time() * 1000),
        "records": table.num_rows,
        "tombstones": int(table.column("value").null_count),
        "log_end_offsets": len(ends),
    }
    (path / "manifest.json").write_text(json.dumps(manifest, indent=2))


def generate(path: Path, records: int, keys: int, seed: int = 6) -> None:
    """Write a synthetic dump of ``records`` records to directory ``path``."""
    rng = np.random.default_rng(seed)
    key_list, topics, key_part_arr = _keys(keys)
    key_bytes = pa.array([encode_key(k) for k in key_list], pa.binary())
    n = records
    idx = rng.integers(0, len(key_list), n)
    stamps = T0 + np.sort(rng.integers(0, 6 * 3_600_000, n))
    # per-record position in its partition = offset; commit offsets grow with time per key
    part = key_part_arr[idx]
    offsets = _offsets_in_partitions(part)
    commit = (stamps - T0) // 1000
    keys_col = key_bytes.take(pa.array(idx))
    keys_col, values = _with_specials(rng, key_list, topics, idx, commit, stamps, keys_col)
    table = pa.table(
        {
            "partition": pa.array(part, pa.int32()),
            "offset": pa.array(offsets, pa.int64()),
            "timestamp": pa.array(stamps, pa.int64()),
            "key": keys_col,
            "value": values,
        },
        schema=RECORD_SCHEMA,
    )
    per_group = max(1, keys // GROUPS)
    end = int(commit.max()) + 1000
    ends = {TopicPartition(t, p): end for t in topics for p in range(per_group)}
    _write_dump(path, table, ends, seed)
