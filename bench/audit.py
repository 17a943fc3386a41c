"""Decode + compaction throughput of the audit: Spark ``local[2]`` against plain Python.

    python -m bench.audit [--records 1000000 5000000] [--keys 50000] [--repeat 3]

For each size a synthetic ``__consumer_offsets`` dump (Parquet, the format ``zk-bridge audit
dump`` writes) is generated once under ``.bench/``: ``--keys`` (group, topic, partition) keys
of 1000 groups, commits spread over them, every group's records in its coordinator partition
with increasing offsets, and a mix like a real topic's - offset commit values v3 mostly, v1
(with expiry), v0, v2 and flexible v4, group metadata v3/v4 with consumer-protocol members,
tombstones, and records of the newer protocol's key versions 3-8.

Both sides produce the same thing: the latest offset per (group, topic, partition)
respecting tombstones, each group's last metadata, and the record count per key/value
version. The baseline is one Python process reading the dump with pyarrow and decoding
every record with :mod:`bridge.audit.records` into a dict. The Spark side is the pipeline's
stage 1, :func:`bridge.audit.compaction.decode_and_compact` (the raw aggregation, then the
latest records decoded and compacted, the version counts collected), and the sizes of its
offsets and groups tables read back; timed from reading the dump to the last row out. The
JVM start is timed apart, and one untimed run per size warms it up. Each side runs
``--repeat`` times per size and the best run counts (on a shared machine the least
disturbed one). Printed: records/s for both, the ratio, and how the cost per record changes
from the smallest to the largest size (1.0 = linear growth).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
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
    iter_dump,
    write_log_end_offsets,
)
from bridge.audit.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from bridge.audit.wire import RecordError
from zkpaths import coordinator_partition

ROOT = Path(__file__).resolve().parents[1]
GROUPS = 1000
PARTITIONS = 50  # of __consumer_offsets
T0 = 1_700_000_000_000


# -- the synthetic dump -------------------------------------------------------------------------


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


def generate(path: Path, records: int, keys: int, seed: int = 6) -> None:
    """Write a synthetic dump of ``records`` records to directory ``path``."""
    rng = np.random.default_rng(seed)
    per_group = max(1, keys // GROUPS)
    topics = [f"topic-{t}" for t in range(max(1, per_group // 10))]
    key_list = []
    key_part = []
    for g in range(GROUPS):
        group = f"bench-group-{g:04d}"
        for i in range(per_group):
            key_list.append(OffsetCommitKey(group, topics[i % len(topics)], i // len(topics)))
            key_part.append(coordinator_partition(group, PARTITIONS))
    key_bytes = pa.array([encode_key(k) for k in key_list], pa.binary())
    key_part_arr = np.array(key_part, dtype=np.int32)

    n = records
    idx = rng.integers(0, len(key_list), n)
    stamps = T0 + np.sort(rng.integers(0, 6 * 3_600_000, n))
    # per-record position in its partition = offset; commit offsets grow with time per key
    part = key_part_arr[idx]
    order = np.argsort(part, kind="stable")
    offsets = np.empty(n, dtype=np.int64)
    counts = np.bincount(part, minlength=PARTITIONS)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    offsets[order] = np.arange(n) - np.repeat(starts, counts)
    commit = (stamps - T0) // 1000
    keys_col = key_bytes.take(pa.array(idx))

    # about 2% of records are something else than a v3 commit
    special = np.flatnonzero(rng.random(n) < 0.02)
    values = _v3_values(commit, stamps)
    if len(special):
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
        keys_col, values = pa.array(keys_py, pa.binary()), pa.array(vals_py, pa.binary())

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
    path.mkdir(parents=True, exist_ok=True)
    # row groups as `zk-bridge audit dump` writes them (100k records): Spark splits by them
    pq.write_table(table, path / RECORDS_PARQUET, row_group_size=100_000)
    ends = {(t, p): int(commit.max()) + 1000 for t in topics for p in range(per_group)}
    write_log_end_offsets(path, ends)
    manifest = {
        "format": DUMP_FORMAT,
        "version": DUMP_VERSION,
        "records_file": RECORDS_PARQUET,
        "source": f"synthetic (bench.audit, seed {seed})",
        "created_ms": int(time.time() * 1000),
        "records": n,
        "tombstones": int(table.column("value").null_count),
        "log_end_offsets": len(ends),
    }
    (path / "manifest.json").write_text(json.dumps(manifest, indent=2))


# -- the two sides ------------------------------------------------------------------------------


def baseline(path: Path) -> tuple[float, dict]:
    """One Python process: decode every record, keep the latest per key in a dict."""
    t = time.perf_counter()
    latest: dict[tuple[str, str, int], tuple[int, int, object]] = {}
    groups: dict[str, tuple[int, int, object]] = {}
    versions: Counter = Counter()
    errors = 0
    for batch in iter_dump(path):
        for r in batch:
            try:
                k = decode_key(r.key)
                v = decode_value(k, r.value)
            except RecordError:
                errors += 1
                continue
            versions[(k.kind, k.version, getattr(v, "version", None))] += 1
            order = (r.partition, r.offset)
            if isinstance(k, OffsetCommitKey):
                tp = (k.group, k.topic, k.partition)
                if tp not in latest or latest[tp][:2] < order:
                    latest[tp] = (*order, v)
            elif isinstance(k, GroupMetadataKey):
                if k.group not in groups or groups[k.group][:2] < order:
                    groups[k.group] = (*order, v)
    live = sum(1 for x in latest.values() if x[2] is not None)
    took = time.perf_counter() - t
    return took, {"keys": len(latest), "live": live, "groups": len(groups), "errors": errors}


def spark_side(spark, path: Path) -> tuple[float, dict]:
    """The pipeline's stage 1 on a dump, forced to completion."""
    from pyspark.sql import functions as F

    from bridge.audit.compaction import decode_and_compact
    from bridge.audit.sources import dump_source

    t = time.perf_counter()
    src = dump_source(spark, path)
    # decodes and compacts, keeps the result and collects the version counts
    stage1 = decode_and_compact(src)
    # the compactions' sizes, read back in one query
    offsets = stage1.offsets.agg(
        F.count(F.lit(1)).alias("keys"), F.count("kafka_offset").alias("live")
    )
    counts = offsets.crossJoin(stage1.groups.agg(F.count(F.lit(1)).alias("groups"))).first()
    took = time.perf_counter() - t
    stage1.unpersist()
    return took, {k: counts[k] for k in ("keys", "live", "groups")}


def _first(pair: tuple[float, dict]) -> float:
    return pair[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, nargs="+", default=[1_000_000, 5_000_000])
    ap.add_argument("--keys", type=int, default=50_000)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeat", type=int, default=3, help="runs per side and size; best counts")
    ap.add_argument("--dir", type=Path, default=ROOT / ".bench" / "audit")
    args = ap.parse_args()

    from bridge.audit.session import spark_session

    t = time.perf_counter()
    spark = spark_session(args.master, conf={"spark.driver.memory": "4g"})
    print(
        f"Spark session ({args.master}) started in {time.perf_counter() - t:.1f}s; "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (other work skews)"
    )
    # one untimed run per size first: the JVM compiles Spark's hot paths during its first
    # big jobs, which a long audit pays once and a benchmark should not count
    sizes = sorted(args.records)
    paths = {n: args.dir / f"n{n}-k{args.keys}" for n in sizes}
    for n, path in paths.items():
        if not (path / "manifest.json").exists():
            t = time.perf_counter()
            generate(path, n, args.keys)
            print(f"generated {n:,} records in {time.perf_counter() - t:.1f}s ({path})")
    t = time.perf_counter()
    for path in paths.values():
        spark_side(spark, path)
    print(f"warm-up runs on every size took {time.perf_counter() - t:.1f}s (not counted)")

    rows = []
    for n, path in paths.items():
        # best of --repeat for each side: on a shared machine the minimum is the least
        # disturbed run (and both sides are treated alike)
        s_took, s_out = min((spark_side(spark, path) for _ in range(args.repeat)), key=_first)
        b_took, b_out = min((baseline(path) for _ in range(args.repeat)), key=_first)
        same = (s_out["keys"], s_out["live"], s_out["groups"]) == (
            b_out["keys"],
            b_out["live"],
            b_out["groups"],
        )
        rows.append((n, s_took, b_took))
        print(
            f"{n:>10,} records  spark {args.master}: {s_took:7.2f}s {n / s_took:>11,.0f} rec/s  "
            f"python: {b_took:7.2f}s {n / b_took:>11,.0f} rec/s  ratio {b_took / s_took:5.2f}x  "
            f"results agree: {same} ({s_out['keys']} keys, {s_out['live']} live, "
            f"{s_out['groups']} groups)"
        )
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    if len(rows) > 1:
        (n0, s0, b0), (n1, s1, b1) = rows[0], rows[-1]
        grow = n1 / n0
        print(
            f"cost growth {n0:,} -> {n1:,} records (x{grow:.0f}): spark x{s1 / s0:.2f} "
            f"({(s1 / s0) / grow:.2f} of linear), python x{b1 / b0:.2f} "
            f"({(b1 / b0) / grow:.2f} of linear)"
        )
    spark.stop()


if __name__ == "__main__":
    main()
