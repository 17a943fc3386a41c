"""Stages 2-5 on Spark: the two stores side by side, per-group verdicts, commit activity.

The ZooKeeper snapshot's nodes become per-partition offsets and per-group facts
(:func:`zk_tables`); they are joined with stage 1's compacted Kafka side and the log-end
offsets (:func:`compare`); each audited group's rows go to the one decision,
:func:`bridge.audit.verdict.decide`, through ``applyInPandas`` (:func:`verdict_tables`);
:func:`activity_table` counts Kafka commits per group over time. Everything here builds
DataFrames; the job (:mod:`bridge.audit.pipeline`) decides what is written and when.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from bridge.audit.decode import TOMBSTONE
from bridge.audit.verdict import GroupFacts, PartitionState, decide

if TYPE_CHECKING:  # pyspark is an optional dependency (the audit extra)
    import pandas as pd
    from pyspark.sql import Column, DataFrame


def zk_tables(snap: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Per-partition ZooKeeper offsets and per-group ZooKeeper facts from a snapshot."""
    from pyspark.sql import functions as F

    offsets = snap.where((F.col("kind") == "offset") & F.col("partition").isNotNull()).select(
        "group",
        "topic",
        "partition",
        F.col("offset").alias("zk_offset"),
        F.col("error").alias("zk_error"),
        F.col("mtime").alias("zk_last_commit_ms"),
        F.when(
            F.col("mtime") > F.col("ctime"),
            F.col("data_version") / ((F.col("mtime") - F.col("ctime")) / 60000.0),
        ).alias("zk_commits_per_min"),
    )
    in_group = snap.where(F.col("group").isNotNull())
    is_group = F.col("kind") == "group"
    # an old consumer's registration; not the bridge's mirror of a Kafka member
    # (``<group>_~~<member id>``, zkpaths.mirror_ids), which is a member of the Kafka group
    mirrored = F.col("consumer_id").startswith(F.concat(F.col("group"), F.lit("_~~")))
    old_consumer = (F.col("kind") == "consumer") & F.col("error").isNull() & ~mirrored
    facts = in_group.groupBy("group").agg(
        F.max(is_group).alias("in_zookeeper"),
        F.max(F.when(is_group, F.col("writable"))).alias("zk_writable"),
        F.max(F.when(is_group, F.col("note"))).alias("zk_not_writable"),
        F.count(F.when(old_consumer, 1)).alias("zk_consumers"),
        F.collect_list(F.col("error")).alias("zk_bad_nodes"),
    )
    return offsets, facts


def compare(
    zk_offsets: DataFrame, kafka_offsets: DataFrame, log_ends: DataFrame, log_ends_known: bool
) -> DataFrame:
    """The per-partition table: both stores side by side, difference, lag."""
    from pyspark.sql import functions as F

    keys = ["group", "topic", "partition"]
    parts = zk_offsets.join(kafka_offsets, keys, "full_outer").join(
        log_ends, ["topic", "partition"], "left"
    )
    if not log_ends_known:
        parts = parts.withColumn("log_end_offset", F.lit(None).cast("bigint"))
    zk, kafka, end = F.col("zk_offset"), F.col("kafka_offset"), F.col("log_end_offset")
    effective = F.greatest(F.coalesce(zk, F.lit(-1)), F.coalesce(kafka, F.lit(-1)))
    return parts.select(
        *keys,
        "zk_offset",
        "kafka_offset",
        (kafka - zk).alias("difference"),
        "log_end_offset",
        F.when(zk >= 0, end - zk).alias("zk_lag"),
        F.when(kafka >= 0, end - kafka).alias("kafka_lag"),
        F.when(effective >= 0, end - effective).alias("lag"),
        "zk_last_commit_ms",
        "kafka_last_commit_ms",
        "zk_commits_per_min",
        "kafka_commits_per_min",
        F.coalesce(F.col("kafka_commits"), F.lit(0)).alias("kafka_commits"),
        F.coalesce(F.col("kafka_deleted"), F.lit(False)).alias("kafka_deleted"),
        "zk_error",
        "kafka_error",
        "kafka_metadata",
    )


VERDICT_SCHEMA = (
    "group STRING, verdict STRING, reasons ARRAY<STRING>, notes ARRAY<STRING>, "
    "can_migrate BOOLEAN, can_finalize BOOLEAN, can_roll_back BOOLEAN"
)


def _none(v: Any) -> Any:
    """pandas' missing values (NaN, NA, NaT) as None."""
    try:
        import pandas as pd

        return None if v is None or pd.isna(v) else v
    except (TypeError, ValueError):  # arrays
        return v


def _verdict_pandas(pdf: pd.DataFrame) -> pd.DataFrame:
    """applyInPandas body: one group's rows (partitions + facts) in, its verdict out."""
    import pandas as pd

    v = decide(facts_from_rows(pdf.to_dict("records")))
    return pd.DataFrame(
        [
            {
                "group": v.group,
                "verdict": v.verdict,
                "reasons": list(v.reasons),
                "notes": list(v.notes),
                "can_migrate": v.can_migrate,
                "can_finalize": v.can_finalize,
                "can_roll_back": v.can_roll_back,
            }
        ]
    )


def facts_from_rows(rows: list[dict[str, Any]]) -> GroupFacts:
    """GroupFacts from one group's joined rows (facts repeated on every partition row)."""
    first = rows[0]
    parts = []
    for r in rows:
        if _none(r.get("topic")) is None or _none(r.get("partition")) is None:
            continue
        parts.append(
            PartitionState(
                topic=r["topic"],
                partition=int(r["partition"]),
                zk_offset=_int(r.get("zk_offset")),
                zk_error=_none(r.get("zk_error")),
                kafka_offset=_int(r.get("kafka_offset")),
                kafka_deleted=bool(_none(r.get("kafka_deleted")) or False),
                kafka_error=_none(r.get("kafka_error")),
                log_end=_int(r.get("log_end_offset")),
            )
        )
    bad = first.get("zk_bad_nodes")
    bad_nodes = tuple(b for b in (list(bad) if bad is not None else []) if b)
    writable = _none(first.get("zk_writable"))
    return GroupFacts(
        group=first["group"],
        partitions=tuple(sorted(parts, key=lambda p: (p.topic, p.partition))),
        zk_bad_nodes=bad_nodes,
        zk_writable=None if writable is None else bool(writable),
        zk_not_writable=_none(first.get("zk_not_writable")),
        zk_consumers=_int(first.get("zk_consumers")) or 0,
        kafka_members=_int(first.get("kafka_members")) or 0,
        kafka_group_type=_none(first.get("kafka_group_type")),
        log_ends_known=bool(first.get("log_ends_known", True)),
    )


def _int(v: Any) -> int | None:
    v = _none(v)
    return None if v is None else int(v)


def _group_numbers(parts: DataFrame) -> DataFrame:
    """Per group: partitions in either store, how many agree, the differences, lags, rates."""
    from pyspark.sql import functions as F

    is_equal = F.col("zk_offset") == F.col("kafka_offset")
    return parts.groupBy("group").agg(
        F.count(F.lit(1)).alias("partitions"),
        F.count("zk_offset").alias("zk_partitions"),
        F.count("kafka_offset").alias("kafka_partitions"),
        F.count(F.when(is_equal, 1)).alias("equal_partitions"),
        F.count(F.when(~is_equal, 1)).alias("diverged_partitions"),
        F.max(F.abs("difference")).alias("max_abs_difference"),
        F.sum("difference").alias("total_difference"),
        F.sum("zk_lag").alias("zk_lag"),
        F.sum("kafka_lag").alias("kafka_lag"),
        F.sum("lag").alias("lag"),
        F.max("zk_last_commit_ms").alias("zk_last_commit_ms"),
        F.max("kafka_last_commit_ms").alias("kafka_last_commit_ms"),
        F.sum("kafka_commits").alias("kafka_commits"),
        F.sum("kafka_commits_per_min").alias("kafka_commits_per_min"),
    )


#: columns of the ``groups`` table passed as they are
_VERDICT_COLUMNS = ("verdict", "reasons", "notes", "can_migrate", "can_finalize", "can_roll_back")
#: columns of the ``groups`` table, in order: a name, or (name, default when null), or
#: (name, None) for the count of a list column
_GROUP_COLUMNS: tuple[str | tuple[str, Any], ...] = (
    ("partitions", 0),
    ("zk_partitions", 0),
    ("kafka_partitions", 0),
    ("equal_partitions", 0),
    ("diverged_partitions", 0),
    "max_abs_difference",
    "total_difference",
    "zk_lag",
    "kafka_lag",
    "lag",
    "zk_last_commit_ms",
    "kafka_last_commit_ms",
    ("kafka_commits", 0),
    "kafka_commits_per_min",
    ("in_zookeeper", False),
    "zk_writable",
    ("zk_consumers", 0),
    ("zk_bad_nodes", None),
    "kafka_protocol_type",
    "kafka_group_type",
    "kafka_protocol",
    "kafka_generation",
    ("kafka_members", 0),
    ("kafka_group_removed", False),
)


def _group_column(spec: str | tuple[str, Any]) -> Column:
    """One column of the ``groups`` table from its :data:`_GROUP_COLUMNS` entry."""
    from pyspark.sql import functions as F

    if isinstance(spec, str):
        return F.col(spec)
    name, default = spec
    if default is None:
        return F.size(F.coalesce(name, F.array())).alias(name)
    return F.coalesce(name, F.lit(default)).alias(name)


def verdict_tables(
    zk_offsets: DataFrame,
    zk_facts: DataFrame,
    kafka_offsets: DataFrame,
    kafka_groups: DataFrame,
    log_ends: DataFrame,
    ends_known: bool,
) -> tuple[DataFrame, DataFrame]:
    """The audit's ``partitions`` and ``groups`` tables (stage 4), not yet computed.

    A group is audited when ZooKeeper has it or Kafka holds offsets for it; a Kafka group
    that never committed (or whose offsets are all deleted) has nothing to migrate. The
    partitions table is cached: both tables are computed from it.
    """
    from pyspark.sql import functions as F

    all_parts = compare(zk_offsets, kafka_offsets, log_ends, ends_known)
    live_kafka = all_parts.where(
        F.col("kafka_offset").isNotNull() | F.col("kafka_error").isNotNull()
    ).select("group")
    audited = zk_facts.select("group").union(live_kafka).distinct()
    facts = (
        audited.join(zk_facts, "group", "left")
        .join(kafka_groups, "group", "left")
        .withColumn("log_ends_known", F.lit(ends_known))
    )
    parts = all_parts.join(audited, "group", "left_semi").cache()
    joined = facts.join(parts, "group", "left")
    verdicts = joined.groupBy("group").applyInPandas(_verdict_pandas, VERDICT_SCHEMA)
    groups = (
        verdicts.join(facts, "group")
        .join(_group_numbers(parts), "group", "left")
        .select("group", *_VERDICT_COLUMNS, *(_group_column(c) for c in _GROUP_COLUMNS))
        .orderBy("group")
    )
    return parts, groups


def activity_table(
    src: DataFrame, decoded: DataFrame, buckets: int
) -> tuple[DataFrame | None, int]:
    """Kafka commits per group and time bucket (stage 5), and the bucket width in ms.

    ``decoded`` is stage 1's table, of the audited groups only. ``buckets`` buckets span
    their first to last commit; the table is None when they have no commits. A second pass
    over the records of ``src``: only records under keys that hold commits are counted.
    """
    from pyspark.sql import functions as F

    commit_keys = decoded.where(
        (F.col("key_kind") == "offset_commit") & (F.col("value_kind") != TOMBSTONE)
    )
    span = commit_keys.agg(F.min("first_ts").alias("t0"), F.max("last_ts").alias("t1")).first()
    t0 = span["t0"]
    if t0 is None:
        return None, 0
    bucket_ms = max(1000, math.ceil((span["t1"] - t0 + 1) / buckets))
    keymap = commit_keys.select("key", "group").distinct()
    bucket = F.floor((F.col("timestamp_ms") - t0) / bucket_ms) * bucket_ms + t0
    act = (
        src.where(F.col("value").isNotNull())
        .join(keymap, "key")
        .groupBy("group", bucket.alias("bucket_start_ms"))
        .agg(F.count(F.lit(1)).alias("commits"))
        .orderBy("group", "bucket_start_ms")
    )
    return act, bucket_ms
