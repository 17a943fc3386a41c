"""Stage 1 on Spark: ``__consumer_offsets`` records -> compacted offsets, groups, versions.

Records are first grouped by their raw key bytes and value version prefix - Spark only
compares bytes here, natively, with fixed-width aggregates - keeping the count, first/last
timestamp and the position of the latest record of each pair. A second read of the records
then picks out those latest records (a broadcast join below :data:`BROADCAST_KEYS` pairs:
only they leave the scan) and spreads them over the cores by the group id bytes of their
key; one ``mapInArrow`` worker per partition decodes and compacts them
(:mod:`bridge.audit.decode`) as the group coordinator would load them. Every record is
counted by key and value version; versions the decoder does not know are counted, never
fatal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bridge.audit import next_gen
from bridge.audit.decode import DECODED_SCHEMA, TOMBSTONE, _decode_batches

if TYPE_CHECKING:  # pyspark is an optional dependency (the audit extra)
    from pyspark.sql import Column, DataFrame

#: a record's position, ``partition * 2**40 + offset``: unique, and ordered like the log
#: within a partition (a group's records all live in one partition)
ORDER_SHIFT = 1 << 40
#: below this many distinct key/version pairs, the latest records are picked out of the
#: records as they stream past a broadcast copy of the aggregates (no shuffle of the
#: records); above it, with a shuffle join
BROADCAST_KEYS = 2_000_000
#: at most this many pairs per decoding task, which holds all of them until they are compacted
PAIRS_PER_TASK = 200_000


def _order(partition: str = "partition", offset: str = "offset") -> Column:
    """A record's position (:data:`ORDER_SHIFT`) from its partition and offset columns."""
    from pyspark.sql import functions as F

    return F.col(partition).cast("long") * F.lit(ORDER_SHIFT) + F.col(offset)


def aggregate_raw(src: DataFrame) -> DataFrame:
    """Stage 1a: per (raw key bytes, value version prefix): count, time span, latest position.

    Only fixed-width aggregates, so Spark's hash aggregation handles billions of records
    without sorting; nothing is decoded yet.
    """
    from pyspark.sql import functions as F

    return (
        src.withColumn("order", _order())
        .groupBy("key", F.substring("value", 1, 2).alias("vhead"))
        .agg(
            F.count(F.lit(1)).alias("records"),
            F.min("timestamp_ms").alias("first_ts"),
            F.max("timestamp_ms").alias("last_ts"),
            F.max("order").alias("latest_order"),
        )
    )


def group_bytes() -> Column:
    """The group id's bytes in a raw key (its length prefix included), found by the JVM.

    Every classic key - offset commit v0 and v1, group metadata v2 - and every key of a
    next-generation group's records (3-8) is its version or record type (int16) and then the
    group id (int16 length + UTF-8), so all keys of one group share these bytes, whatever
    their kind and version. For other keys they are just some bytes of the key.
    """
    from pyspark.sql import functions as F

    length = F.conv(F.hex(F.substring("key", 3, 2)), 16, 10).cast("int")
    return F.substring("key", F.lit(3), F.lit(2) + length)


def decode_latest(
    src: DataFrame, raw: DataFrame, keys: int, again: DataFrame | None = None
) -> DataFrame:
    """Stage 1b: each pair's latest record picked out of the records, decoded and compacted.

    ``raw`` is :func:`aggregate_raw` of ``src``, materialized, and ``keys`` its row count,
    which picks the join: while the pairs are few, a broadcast copy of them sits beside the
    second read of the records and only the latest records leave it - the records are not
    shuffled; past :data:`BROADCAST_KEYS`, a shuffle join. The latest records are then
    spread over the cores by group id (:func:`group_bytes`), so that one ``mapInArrow``
    worker holds every pair of a group: it decodes them and compacts them
    (:func:`compact_rows`), and no aggregation is left to do after the decoder. ``again``:
    rows to decode besides (the pairs :func:`decode_and_compact` found no latest record for).
    """
    from pyspark.sql import functions as F

    latest = src.select(
        _order().alias("latest_order"),
        F.col("partition").alias("latest_partition"),
        F.col("offset").alias("latest_offset"),
        F.col("timestamp_ms").alias("latest_ts"),
        F.col("value").alias("latest_value"),
    )
    pairs = F.broadcast(raw) if keys < BROADCAST_KEYS else raw.hint("merge")
    rows = latest.join(pairs, "latest_order").drop("latest_order")
    if again is not None:
        rows = rows.unionByName(again)
    # as many tasks as cores, more when a task would hold too many pairs
    tasks = max(src.sparkSession.sparkContext.defaultParallelism, -(-keys // PAIRS_PER_TASK))
    return rows.repartition(tasks, group_bytes()).mapInArrow(_decode_batches, DECODED_SCHEMA)


def _not_found(raw: DataFrame, decoded: DataFrame) -> DataFrame:
    """The pairs of ``raw`` that ``decoded`` has no row for, with no latest record."""
    from pyspark.sql import functions as F

    found = decoded.select(_order("latest_partition", "latest_offset").alias("latest_order"))
    return raw.join(found, "latest_order", "left_anti").select(
        "key",
        "vhead",
        "records",
        "first_ts",
        "last_ts",
        F.lit(None).cast("int").alias("latest_partition"),
        F.lit(None).cast("bigint").alias("latest_offset"),
        F.lit(None).cast("bigint").alias("latest_ts"),
        F.lit(None).cast("binary").alias("latest_value"),
    )


def compact_offsets(decoded: DataFrame) -> DataFrame:
    """Stage 1c: the latest offset commit per (group, topic, partition); tombstone = deleted.

    The rows :func:`compact_rows` kept, with the counts it made over all of the key's pairs.
    """
    from pyspark.sql import functions as F

    kept = decoded.where((F.col("key_kind") == "offset_commit") & F.col("kept"))
    ok = (F.col("value_kind") == "offset_commit") & F.col("error").isNull()
    unknown = F.col("value_kind") == "unknown"
    span_min = (F.col("kafka_last_record_ts") - F.col("kafka_first_commit_ts")) / 60000.0
    return kept.select(
        "group",
        "topic",
        "partition",
        F.when(ok, F.col("commit_offset")).alias("kafka_offset"),
        (F.col("value_kind") == TOMBSTONE).alias("kafka_deleted"),
        F.when(
            unknown,
            F.format_string("offset commit value v%d is newer than this decoder", "value_version"),
        )
        .otherwise(F.col("error"))
        .alias("kafka_error"),
        F.when(ok, F.col("commit_timestamp")).alias("kafka_last_commit_ms"),
        F.col("commit_metadata").alias("kafka_metadata"),
        "kafka_commits",
        "kafka_tombstones",
        F.when(span_min > 0, (F.col("kafka_commits") - 1) / span_min).alias(
            "kafka_commits_per_min"
        ),
    )


def compact_groups(decoded: DataFrame) -> DataFrame:
    """Stage 1d: each group as its last records leave it (members, protocol, type).

    A classic group: its last metadata record (a tombstone: removed). A next-generation
    (``consumer``-type) group: its records kept by :func:`compact_rows` - the group epoch
    record (a tombstone or none: removed) and one member metadata record per member that
    has not left (members, their topics, the server assignor). A group converted from one
    type to the other has the old type's records removed, so its live type is picked.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    kept = decoded.where((F.col("key_kind") == "group_metadata") & F.col("kept"))
    classic = kept.select(
        "group",
        (F.col("value_kind") == TOMBSTONE).alias("kafka_group_removed"),
        F.col("protocol_type").alias("kafka_protocol_type"),
        F.col("protocol").alias("kafka_protocol"),
        F.col("generation").alias("kafka_generation"),
        F.coalesce(F.col("members"), F.lit(0)).alias("kafka_members"),
        F.col("member_topics").alias("kafka_member_topics"),
        F.lit(next_gen.CLASSIC).alias("kafka_group_type"),
    )
    records = decoded.where((F.col("key_kind") == next_gen.KIND) & F.col("kept"))
    live = F.col("value_kind") == next_gen.KIND
    epoch = live & (F.col("key_version") == next_gen.METADATA)
    member = live & (F.col("key_version") == next_gen.MEMBER_METADATA)
    consumer = records.groupBy("group").agg(
        (F.count(F.when(epoch, 1)) == 0).alias("kafka_group_removed"),
        F.lit("consumer").alias("kafka_protocol_type"),
        F.max(F.when(member, F.col("protocol"))).alias("kafka_protocol"),
        F.max(F.when(epoch, F.col("generation"))).alias("kafka_generation"),
        F.count(F.when(member, 1)).alias("kafka_members"),
        F.array_sort(
            F.array_distinct(F.flatten(F.collect_list(F.when(member, F.col("member_topics")))))
        ).alias("kafka_member_topics"),
        F.lit(next_gen.CONSUMER).alias("kafka_group_type"),
    )
    # the live type first; a group live in both (never written so) reads as consumer-type
    order = Window.partitionBy("group").orderBy("kafka_group_removed", F.desc("kafka_group_type"))
    both = classic.unionByName(consumer).withColumn("_pick", F.row_number().over(order))
    return both.where(F.col("_pick") == 1).drop("_pick")


def record_versions(decoded: DataFrame) -> DataFrame:
    """Records counted by key and value version; ``known`` is False for what is not decoded.

    ``pairs`` is how many (raw key, value version) pairs there were.
    """
    from pyspark.sql import functions as F

    known_keys = F.col("key_kind").isin("offset_commit", "group_metadata", next_gen.KIND)
    known_values = F.col("value_kind").isin(
        "offset_commit", "group_metadata", next_gen.KIND, TOMBSTONE
    )
    return (
        decoded.groupBy("key_kind", "key_version", "value_kind", "value_version")
        .agg(F.sum("records").alias("records"), F.count(F.lit(1)).alias("pairs"))
        .withColumn("known", known_keys & known_values)
    )


@dataclass
class Compacted:
    """Stage 1's results; ``raw`` and ``decoded`` are cached until :meth:`unpersist`."""

    raw: DataFrame
    decoded: DataFrame
    #: distinct (raw key, value version) pairs
    keys: int
    #: :func:`record_versions`, as dicts (without ``pairs``)
    versions: list[dict[str, Any]]

    @property
    def records(self) -> int:
        return sum(v["records"] for v in self.versions)

    @property
    def offsets(self) -> DataFrame:
        return compact_offsets(self.decoded)

    @property
    def groups(self) -> DataFrame:
        return compact_groups(self.decoded)

    def unpersist(self) -> None:
        self.decoded.unpersist()
        self.raw.unpersist()


def decode_and_compact(src: DataFrame) -> Compacted:
    """Stage 1 on ``src`` (the pipeline's five columns): two queries.

    The raw aggregation is materialized and counted (the count picks the join); then
    collecting the version counts reads the records a second time, decodes and compacts
    (:func:`decode_latest`) and keeps the result for the later stages. Were a pair's latest
    record gone by the second read (a Kafka source is persisted and a dump does not change,
    so it is not), the counts would show fewer pairs than the aggregation: the job is then
    redone with such pairs as undecodable ("compacted away") rather than lost or read as
    tombstones.
    """
    raw = aggregate_raw(src).cache()
    keys = raw.count()
    decoded = decode_latest(src, raw, keys).cache()
    rows = [r.asDict() for r in record_versions(decoded).collect()]
    if sum(r["pairs"] for r in rows) != keys:
        redone = decode_latest(src, raw, keys, again=_not_found(raw, decoded)).cache()
        rows = [r.asDict() for r in record_versions(redone).collect()]
        decoded.unpersist()
        decoded = redone
    for r in rows:
        del r["pairs"]
    return Compacted(raw, decoded, keys, rows)
