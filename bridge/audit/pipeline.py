"""The audit job on Spark: ``__consumer_offsets`` + a ZooKeeper snapshot -> per-group verdicts.

Stages (each logs a line when it starts and when it is done):

1. **decode and compact** - the topic is read as a batch (Spark's Kafka source, or a dump).
   Records are first grouped by their raw key bytes and value version prefix - Spark only
   compares bytes here, natively, with fixed-width aggregates - keeping the count,
   first/last timestamp and the position of the latest record of each pair. A second read
   of the records then picks out those latest records (a broadcast join below 2M pairs:
   only they leave the scan) and spreads them over the cores by the group id bytes of
   their key; one ``mapInArrow`` worker per partition decodes each distinct key once with
   the one decoder (:mod:`bridge.audit.records`) and compacts the partition's pairs as the
   group coordinator would load them: the latest record per (group, topic, partition) and
   per group, a tombstone last meaning deleted. Only the records compaction keeps have
   their values decoded, so the Python cost grows with the number of distinct keys, not
   with the billions of commits, and no aggregation is left after the decoder. Every record
   is counted by key and value version; versions the decoder does not know are counted,
   never fatal. A Kafka source is read once and kept (spilling to disk) for later passes.
2. **snapshot** - the ZooKeeper side, as written by ``zk-bridge snapshot``.
3. **log-end offsets** - for every topic either store mentions (kafka-python admin, or the
   dump's ``log_end_offsets.jsonl``).
4. **compare and decide** - per partition: both offsets, their difference, last commit time
   and commit rate per store, lag; per group: the verdict of :mod:`bridge.audit.verdict`
   (applied per group with ``applyInPandas``).
5. **activity** - Kafka commits per group over time (a second pass over the records).
6. **write** - Parquet tables ``partitions``, ``groups``, ``record_versions``, ``activity``,
   ``summary.json`` and the self-contained ``report.html``.
"""

from __future__ import annotations

import atexit
import functools
import glob
import json
import logging
import math
import os
import re
import shutil
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bridge.audit import dump as dumpmod
from bridge.audit import snapshot as snapmod
from bridge.audit.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    Key,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_value,
    summarize_group,
    value_kind,
    value_version,
)
from bridge.audit.verdict import GroupFacts, PartitionState, decide
from bridge.audit.wire import RecordError
from bridge.jars import POM_DIR

log = logging.getLogger("bridge.audit")

SPARK_POM = POM_DIR / "spark" / "pom.xml"
DEFAULT_MASTER = "local[2]"

#: key and value kinds of the decoded table (besides the record kinds of records.py)
TOMBSTONE = "tombstone"
UNDECODABLE = "undecodable"


class AuditError(RuntimeError):
    """The audit cannot run or its input is unusable; ``exit_code`` tells the CLI which."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


# -- Spark session ------------------------------------------------------------------------------


def pom_spark_version() -> str:
    """The Spark version the Kafka source jars are fetched for (``spark.version`` in the pom)."""
    m = re.search(r"<spark\.version>([^<]+)</spark\.version>", SPARK_POM.read_text())
    if not m:
        raise AuditError(f"{SPARK_POM} names no spark.version")
    return m.group(1)


def kafka_source_jars() -> list[str]:
    """Local paths of the spark-sql-kafka jars, fetched by Maven once and cached."""
    from bridge.jars import MavenError, ensure_classpath

    try:
        pattern = ensure_classpath("spark")
    except MavenError as exc:
        raise AuditError(f"cannot fetch Spark's Kafka source jars: {exc}") from None
    return sorted(glob.glob(pattern[:-1] + "*.jar"))


def _code_zip() -> str:
    """``bridge`` and ``zkpaths`` zipped, for executors of a real cluster to import."""
    root = Path(__file__).resolve().parents[2]
    tmp = tempfile.mkdtemp(prefix="kzb-audit-")
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    path = Path(tmp) / "kafka_zk_bridge.zip"
    with zipfile.ZipFile(path, "w") as z:
        for pkg in ("bridge", "zkpaths"):
            for f in (root / pkg).rglob("*.py"):
                z.write(f, f.relative_to(root))
    return str(path)


def active_session():
    """The Spark session already running in this process, if any (pyspark may be absent)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    return SparkSession.getActiveSession()


def spark_session(
    master: str = DEFAULT_MASTER,
    *,
    app_name: str = "kafka-zk-bridge audit",
    conf: dict[str, str] | None = None,
):
    """A Spark session with the Kafka source on its classpath, quiet and tuned for the job.

    Local mode uses this Python for workers and binds to loopback. Any other master gets the
    project's code shipped with ``addPyFile``; its executors need pyarrow and pandas.
    """
    try:
        import pyspark
        from pyspark.sql import SparkSession
    except ImportError:
        raise AuditError(
            "pyspark is not installed: pip install 'kafka-zk-bridge[audit]'", 2
        ) from None
    expected = pom_spark_version()
    if pyspark.__version__ != expected:
        raise AuditError(
            f"pyspark {pyspark.__version__} is installed but the Kafka source jars are for "
            f"Spark {expected} ({SPARK_POM}); install pyspark=={expected}"
        )
    # local-cluster[...] runs executors in processes of their own: treated like a cluster
    local = master == "local" or master.startswith("local[")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # local mode runs its tasks in the driver: 1g (Spark's default) is tight for joins
        conf = {"spark.driver.memory": "2g", **(conf or {})}
    cores = os.cpu_count() or 2
    settings = {
        "spark.jars": ",".join(kafka_source_jars()),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(max(2, 2 * cores) if local else 64),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # Spark's admin-based offset reader drops internal topics (it filters on
        # TopicDescription.isInternal), which would make __consumer_offsets look empty; the
        # consumer-based reader does not
        "spark.sql.streaming.kafka.useDeprecatedOffsetFetching": "true",
        "spark.kafka.consumer.cache.capacity": "256",
        "spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile="
        + str(Path(__file__).with_name("log4j2.properties")),
        **(conf or {}),
    }
    builder = SparkSession.builder.master(master).appName(app_name)
    for k, v in settings.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if not local:
        spark.sparkContext.addPyFile(_code_zip())
    return spark


# -- sources ------------------------------------------------------------------------------------


def kafka_options(
    bootstrap_servers: str,
    ranges: dict[str, Any],
    client: dict[str, Any] | None = None,
) -> dict[str, str]:
    """Spark Kafka source options for reading ``__consumer_offsets`` as a batch.

    ``ranges`` is what :func:`check_inputs` found: ``partitions`` and per partition the
    ``start`` and ``end`` offsets, so every pass over the topic reads the same records.
    ``client`` is kafka-python style (security_protocol, sasl_*, ssl_cafile) and is
    translated to the Java client's settings.
    """
    client = client or {}
    topic = dumpmod.OFFSETS_TOPIC
    held = sorted((p for p in ranges["end"] if ranges["end"][p] > ranges["start"][p]), key=int)
    opts = {
        "kafka.bootstrap.servers": bootstrap_servers,
        # assign, not subscribe: a subscribing driver consumer joins a group of its own,
        # which would add a spark-kafka-relation-* group to the very topic being audited
        # partitions holding no records are left out: each would cost a task and a consumer
        "assign": json.dumps({topic: [int(p) for p in held]}),
        "startingOffsets": json.dumps({topic: {p: ranges["start"][p] for p in held}}),
        "endingOffsets": json.dumps({topic: {p: ranges["end"][p] for p in held}}),
        # an aborted transactional offset commit never took effect
        "kafka.isolation.level": "read_committed",
        # compaction removes records between listing offsets and reading them
        "failOnDataLoss": "false",
        # each task's last fetch asks past its range; the broker would hold it for the
        # default 500 ms waiting for data that is not coming, per partition
        "kafka.fetch.max.wait.ms": "20",
    }
    if client.get("security_protocol", "PLAINTEXT") != "PLAINTEXT":
        opts["kafka.security.protocol"] = client["security_protocol"]
    if client.get("ssl_cafile"):
        opts["kafka.ssl.truststore.type"] = "PEM"
        opts["kafka.ssl.truststore.location"] = client["ssl_cafile"]
    mech = client.get("sasl_mechanism")
    if mech:
        module = "plain.PlainLoginModule" if mech == "PLAIN" else "scram.ScramLoginModule"
        user = json.dumps(client.get("sasl_plain_username") or "")
        secret = json.dumps(client.get("sasl_plain_password") or "")
        opts["kafka.sasl.mechanism"] = mech
        opts["kafka.sasl.jaas.config"] = (
            f"org.apache.kafka.common.security.{module} required username={user} password={secret};"
        )
    return opts


def kafka_source(
    spark, bootstrap_servers: str, ranges: dict[str, Any], client: dict[str, Any] | None = None
):
    """``__consumer_offsets`` through Spark's Kafka source, as the pipeline's five columns."""
    from pyspark.sql import functions as F

    reader = spark.read.format("kafka")
    for k, v in kafka_options(bootstrap_servers, ranges, client).items():
        reader = reader.option(k, v)
    return reader.load().select(
        "partition",
        "offset",
        F.unix_millis("timestamp").alias("timestamp_ms"),
        "key",
        "value",
    )


def dump_source(spark, directory: Path):
    """A dump written by :func:`bridge.audit.dump.write_dump`, as the pipeline's columns."""
    from pyspark.sql import functions as F

    manifest = dumpmod.read_manifest(directory)
    path = str(Path(directory) / manifest["records_file"])
    if manifest["records_file"] == dumpmod.RECORDS_JSONL:
        df = spark.read.schema(
            "partition INT, offset BIGINT, timestamp BIGINT, key STRING, value STRING"
        ).json(path)
        df = df.select(
            "partition",
            "offset",
            "timestamp",
            F.unbase64("key").alias("key"),
            F.unbase64("value").alias("value"),
        )
    else:
        df = spark.read.parquet(path)
    return df.select(
        "partition", "offset", F.col("timestamp").alias("timestamp_ms"), "key", "value"
    )


# -- stage 1: decode and compact ----------------------------------------------------------------

DECODED_SCHEMA = (
    "key BINARY, key_kind STRING, key_version INT, group STRING, topic STRING, partition INT, "
    "value_kind STRING, value_version INT, records BIGINT, first_ts BIGINT, last_ts BIGINT, "
    "latest_partition INT, latest_offset BIGINT, latest_ts BIGINT, "
    "commit_offset BIGINT, commit_timestamp BIGINT, commit_metadata STRING, "
    "leader_epoch INT, expire_timestamp BIGINT, "
    "protocol_type STRING, protocol STRING, generation INT, members INT, "
    "member_topics ARRAY<STRING>, error STRING, "
    # set by the compaction (see compact_rows)
    "kept BOOLEAN, kafka_commits BIGINT, kafka_tombstones BIGINT, "
    "kafka_first_commit_ts BIGINT, kafka_last_record_ts BIGINT"
)


def key_fields(key: bytes) -> tuple[dict[str, Any], Key | None]:
    """A raw key's decoded fields, and the key (None when undecodable)."""
    try:
        k = decode_key(key)
    except RecordError as exc:
        return {"key_kind": UNDECODABLE, "value_kind": UNDECODABLE, "error": str(exc)}, None
    out: dict[str, Any] = {"key_kind": k.kind, "key_version": k.version}
    if isinstance(k, OffsetCommitKey | GroupMetadataKey):
        out["group"] = k.group
    if isinstance(k, OffsetCommitKey):
        out["topic"], out["partition"] = k.topic, k.partition
    return out, k


def pair_fields(
    fields: dict[str, Any], k: Key | None, vhead: bytes | None
) -> tuple[dict[str, Any], Key | None]:
    """A (raw key, value version) pair's fields from its :func:`key_fields`, values unread.

    The second item is the key when the pair's values are for :func:`value_fields` to read,
    else None (undecodable key or version, tombstone, version this decoder does not know).
    """
    out = dict(fields)
    if k is None:
        return out, None
    if vhead is None:
        out["value_kind"] = TOMBSTONE
        return out, None
    version, error = _value_version(bytes(vhead))
    if error is not None:
        out["value_kind"], out["error"] = UNDECODABLE, error
        return out, None
    out["value_version"] = version
    out["value_kind"] = value_kind(k, version)
    if out["value_kind"] == "unknown":
        return out, None
    return out, k


@functools.lru_cache(maxsize=256)
def _value_version(vhead: bytes) -> tuple[int | None, str | None]:
    """:func:`value_version` of a value's first two bytes, or its error (few distinct)."""
    try:
        return value_version(vhead), None
    except RecordError as exc:
        return None, str(exc)


def value_fields(k: Key, value: bytes | None) -> dict[str, Any]:
    """The decoded fields of a value under key ``k`` (an ``error`` when it does not decode)."""
    try:
        v = decode_value(k, value)
    except RecordError as exc:
        return {"error": str(exc)}
    if isinstance(v, OffsetCommitValue):
        return {
            "commit_offset": v.offset,
            "commit_timestamp": v.commit_timestamp,
            "commit_metadata": v.metadata,
            "leader_epoch": v.leader_epoch,
            "expire_timestamp": v.expire_timestamp,
        }
    if isinstance(v, GroupMetadataValue):
        s = summarize_group(v)
        out: dict[str, Any] = {
            "protocol_type": s.protocol_type,
            "protocol": s.protocol,
            "generation": s.generation,
            "members": s.members,
            "member_topics": list(s.topics),
        }
        if s.bad_members:
            out["error"] = "; ".join(s.bad_members)[:2000]
        return out
    return {}


def decode_row(key: bytes, vhead: bytes | None, latest_value: bytes | None) -> dict[str, Any]:
    """Decoded fields of one (raw key, value version) group and its latest value."""
    out, k = pair_fields(*key_fields(key), vhead)
    if k is not None:
        out |= value_fields(k, latest_value)
    return out


def compaction_key(row: dict[str, Any]) -> tuple[Any, ...] | None:
    """What the group coordinator compacts a decoded row under; None for other keys."""
    if row["key_kind"] == "offset_commit":
        return ("offset_commit", row["group"], row["topic"], row["partition"])
    if row["key_kind"] == "group_metadata":
        return ("group_metadata", row["group"])
    return None


def compact_rows(rows: list[dict[str, Any]], positions: list[tuple[int, int] | None]) -> None:
    """Compact decoded rows in place, as the group coordinator loads the topic.

    ``rows`` are :func:`decode_row` results, one per (raw key, value version) pair with its
    ``records``, ``first_ts`` and ``last_ts``, and ``positions[i]`` is (partition, offset) of
    the latest record of ``rows[i]`` (None when it was not found). Per (group, topic,
    partition) of the offset commit keys and per group of the group metadata keys, the row
    whose latest record comes last in the log gets ``kept=True`` - a tombstone kept means
    deleted - and, for offset commits, the counts over all of the key's rows: records that
    are commits and tombstones, first commit and last commit time. A pair with no position
    never beats one with a position. Every row of one key must be in ``rows``.
    """
    # per compaction key: [row kept, its position, commits, tombstones, first, last]
    state: dict[tuple[Any, ...], list[Any]] = {}
    for i, row in enumerate(rows):
        ck = compaction_key(row)
        if ck is None:
            continue
        pos = positions[i]
        st = state.get(ck)
        if st is None:
            st = state[ck] = [i, pos, 0, 0, None, None]
        elif pos is not None and (st[1] is None or st[1] < pos):
            st[0], st[1] = i, pos
        if ck[0] != "offset_commit":
            continue
        if row["value_kind"] == TOMBSTONE:
            st[3] += row["records"]
        else:
            st[2] += row["records"]
            if st[4] is None or row["first_ts"] < st[4]:
                st[4] = row["first_ts"]
            if st[5] is None or row["last_ts"] > st[5]:
                st[5] = row["last_ts"]
    for ck, (i, _, commits, tombstones, first, last) in state.items():
        row = rows[i]
        row["kept"] = True
        if ck[0] == "offset_commit":
            row["kafka_commits"], row["kafka_tombstones"] = commits, tombstones
            row["kafka_first_commit_ts"], row["kafka_last_record_ts"] = first, last


COMPACTED_AWAY = "the latest record was compacted away while the audit read it"


def _decode_batches(batches: Iterator[Any]) -> Iterator[Any]:
    """mapInArrow body: a partition's pairs in, decoded and compacted rows out.

    Runs in Python workers. The partition holds every pair of its groups (see
    :func:`decode_latest`), so it is compacted whole: each distinct key is decoded once,
    each pair's value version read, the rows compacted (:func:`compact_rows`), and only
    the values of the rows compaction keeps are decoded - the others are counted, their
    values never read. Rows go back once all are in.
    """
    import gc

    from bridge.audit.pipeline import _decode_partition

    # the rows held until the partition is in are many small dicts and no cycles: the
    # collector would scan them all over again as they pile up
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield from _decode_partition(batches)
    finally:
        if collecting:
            gc.enable()


def _decode_partition(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    from bridge.audit.pipeline import (
        COMPACTED_AWAY,
        DECODED_ARROW,
        UNDECODABLE,
        compact_rows,
        key_fields,
        pair_fields,
        value_fields,
    )

    names = DECODED_ARROW.names
    passed = ("key", "records", "first_ts", "last_ts", "latest_partition", "latest_offset")
    batches_in: list[tuple[Any, list[dict[str, Any]]]] = []
    rows: list[dict[str, Any]] = []
    positions: list[tuple[int, int] | None] = []
    values: dict[int, tuple[Any, bytes | None]] = {}  # row -> (key, value) to decode
    keys_seen: dict[bytes, tuple[dict[str, Any], Any]] = {}
    for batch in batches:
        cols = [
            batch.column(n).to_pylist()
            for n in (
                "key",
                "vhead",
                "latest_value",
                "latest_partition",
                "latest_offset",
                "records",
                "first_ts",
                "last_ts",
            )
        ]
        start = len(rows)
        for key, vhead, value, part, offset, n, first, last in zip(*cols, strict=True):
            known = keys_seen.get(key)
            if known is None:
                known = keys_seen[key] = key_fields(key)
            if part is not None:
                row, k = pair_fields(*known, vhead)
                if k is not None:
                    values[len(rows)] = (k, value)
                positions.append((part, offset))
            else:
                row, _ = pair_fields(*known, None)
                row["value_kind"] = UNDECODABLE
                row["error"] = COMPACTED_AWAY
                positions.append(None)
            row["records"], row["first_ts"], row["last_ts"] = n, first, last
            rows.append(row)
        batches_in.append((batch, rows[start:]))
    compact_rows(rows, positions)
    for i, (k, value) in values.items():
        if rows[i].get("kept"):
            rows[i] |= value_fields(k, value)
    passed = (*passed, "latest_ts")
    made = pa.schema([f for f in DECODED_ARROW if f.name not in passed])
    for batch, part_rows in batches_in:
        out = pa.RecordBatch.from_pylist(part_rows, schema=made)
        cols = [batch.column(n) if n in passed else out.column(n) for n in names]
        yield pa.RecordBatch.from_arrays(cols, schema=DECODED_ARROW)


def _decoded_arrow_schema():
    try:
        import pyarrow as pa
    except ImportError:
        return None
    t = {
        "BINARY": pa.binary(),
        "STRING": pa.string(),
        "INT": pa.int32(),
        "BIGINT": pa.int64(),
        "ARRAY<STRING>": pa.list_(pa.string()),
        "BOOLEAN": pa.bool_(),
    }
    fields = [f.strip().split(" ", 1) for f in DECODED_SCHEMA.split(", ")]
    return pa.schema([(n, t[ty]) for n, ty in fields])


DECODED_ARROW = _decoded_arrow_schema()


#: a record's position, ``partition * 2**40 + offset``: unique, and ordered like the log
#: within a partition (a group's records all live in one partition)
ORDER_SHIFT = 1 << 40
#: below this many distinct key/version pairs, the latest records are picked out of the
#: records as they stream past a broadcast copy of the aggregates (no shuffle of the
#: records); above it, with a shuffle join
BROADCAST_KEYS = 2_000_000
#: at most this many pairs per decoding task, which holds all of them until they are compacted
PAIRS_PER_TASK = 200_000


def _order(partition: str = "partition", offset: str = "offset"):
    from pyspark.sql import functions as F

    return F.col(partition).cast("long") * F.lit(ORDER_SHIFT) + F.col(offset)


def aggregate_raw(src):
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


def group_bytes():
    """The group id's bytes in a raw key (its length prefix included), found by the JVM.

    Every classic key - offset commit v0 and v1, group metadata v2 - is its version (int16)
    and then the group id (int16 length + UTF-8), so all keys of one group share these bytes,
    whatever their kind and version. For other keys they are just some bytes of the key.
    """
    from pyspark.sql import functions as F

    length = F.conv(F.hex(F.substring("key", 3, 2)), 16, 10).cast("int")
    return F.substring("key", F.lit(3), F.lit(2) + length)


def decode_latest(src, raw, keys: int, again=None):
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


def _not_found(raw, decoded):
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


def compact_offsets(decoded):
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


def compact_groups(decoded):
    """Stage 1d: each group's last metadata record (members, protocol); tombstone = removed.

    The rows :func:`compact_rows` kept.
    """
    from pyspark.sql import functions as F

    kept = decoded.where((F.col("key_kind") == "group_metadata") & F.col("kept"))
    return kept.select(
        "group",
        (F.col("value_kind") == TOMBSTONE).alias("kafka_group_removed"),
        F.col("protocol_type").alias("kafka_protocol_type"),
        F.col("protocol").alias("kafka_protocol"),
        F.col("generation").alias("kafka_generation"),
        F.coalesce(F.col("members"), F.lit(0)).alias("kafka_members"),
        F.col("member_topics").alias("kafka_member_topics"),
    )


def record_versions(decoded):
    """Records counted by key and value version; ``known`` is False for what is not decoded.

    ``pairs`` is how many (raw key, value version) pairs there were.
    """
    from pyspark.sql import functions as F

    known_keys = F.col("key_kind").isin("offset_commit", "group_metadata")
    known_values = F.col("value_kind").isin("offset_commit", "group_metadata", TOMBSTONE)
    return (
        decoded.groupBy("key_kind", "key_version", "value_kind", "value_version")
        .agg(F.sum("records").alias("records"), F.count(F.lit(1)).alias("pairs"))
        .withColumn("known", known_keys & known_values)
    )


@dataclass
class Compacted:
    """Stage 1's results; ``raw`` and ``decoded`` are cached until :meth:`unpersist`."""

    raw: Any
    decoded: Any
    #: distinct (raw key, value version) pairs
    keys: int
    #: :func:`record_versions`, as dicts (without ``pairs``)
    versions: list[dict[str, Any]]

    @property
    def records(self) -> int:
        return sum(v["records"] for v in self.versions)

    @property
    def offsets(self):
        return compact_offsets(self.decoded)

    @property
    def groups(self):
        return compact_groups(self.decoded)

    def unpersist(self) -> None:
        self.decoded.unpersist()
        self.raw.unpersist()


def decode_and_compact(src) -> Compacted:
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


# -- stage 2-4: snapshot, log ends, comparison --------------------------------------------------

SNAPSHOT_SCHEMA = (
    "kind STRING, path STRING, group STRING, topic STRING, partition INT, consumer_id STRING, "
    "broker_id INT, offset BIGINT, value STRING, error STRING, ctime BIGINT, mtime BIGINT, "
    "mzxid BIGINT, data_version INT, data_length INT, writable BOOLEAN, note STRING"
)


def snapshot_source(spark, directory: Path):
    manifest = snapmod.read_manifest(directory)
    path = str(Path(directory) / manifest["nodes_file"])
    if path.endswith(".jsonl"):
        return spark.read.schema(SNAPSHOT_SCHEMA).json(path)
    return spark.read.parquet(path)


def zk_tables(snap):
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
    facts = in_group.groupBy("group").agg(
        F.max(is_group).alias("in_zookeeper"),
        F.max(F.when(is_group, F.col("writable"))).alias("zk_writable"),
        F.max(F.when(is_group, F.col("note"))).alias("zk_not_writable"),
        F.count(F.when((F.col("kind") == "consumer") & F.col("error").isNull(), 1)).alias(
            "zk_consumers"
        ),
        F.collect_list(F.col("error")).alias("zk_bad_nodes"),
    )
    return offsets, facts


def compare(zk_offsets, kafka_offsets, log_ends, log_ends_known: bool):
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


def _verdict_pandas(pdf):
    """applyInPandas body: one group's rows (partitions + facts) in, its verdict out."""
    import pandas as pd

    from bridge.audit.pipeline import facts_from_rows

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
        log_ends_known=bool(first.get("log_ends_known", True)),
    )


def _int(v: Any) -> int | None:
    v = _none(v)
    return None if v is None else int(v)


# -- the job -------------------------------------------------------------------------------------


@dataclass
class AuditConfig:
    snapshot: Path
    out: Path
    bootstrap_servers: str | None = None
    dump: Path | None = None
    #: full-match regex of group ids to audit (all when None)
    groups: str | None = None
    client_options: dict[str, Any] = field(default_factory=dict)
    #: time buckets of the activity plot
    buckets: int = 48
    #: groups shown in the HTML report (most urgent first); all are in the Parquet tables
    report_groups: int = 2000


@dataclass
class AuditResult:
    out: Path
    summary: dict[str, Any]
    groups: list[dict[str, Any]]
    partitions: list[dict[str, Any]]
    versions: list[dict[str, Any]]
    activity: list[dict[str, Any]]


class _Stages:
    """Numbered progress lines with the time each stage took."""

    def __init__(self, total: int) -> None:
        self.total, self.n, self.t0 = total, 0, time.monotonic()
        self.timings: dict[str, float] = {}
        self._name, self._start = "", self.t0

    def start(self, name: str, detail: str = "") -> None:
        self.n += 1
        self._name, self._start = name, time.monotonic()
        log.info("[%d/%d] %s%s", self.n, self.total, name, f": {detail}" if detail else "")

    def done(self, detail: str) -> None:
        took = time.monotonic() - self._start
        self.timings[self._name] = round(took, 3)
        log.info("[%d/%d] %s done in %.1fs: %s", self.n, self.total, self._name, took, detail)


def check_inputs(cfg: AuditConfig) -> dict[str, Any]:
    """Fail fast, before Spark starts, on bad paths or an unreachable or empty cluster."""
    info: dict[str, Any] = {"snapshot": snapmod.read_manifest(cfg.snapshot)}
    if cfg.groups is not None:
        try:
            re.compile(cfg.groups)
        except re.error as exc:
            raise AuditError(f"--groups {cfg.groups!r} is not a valid regex: {exc}") from None
    if cfg.dump is not None:
        try:
            info["dump"] = dumpmod.read_manifest(cfg.dump)
        except dumpmod.DumpError as exc:
            raise AuditError(str(exc)) from None
        if info["dump"].get("records") == 0:
            raise AuditError(f"dump {cfg.dump} holds no records of __consumer_offsets", 4)
        return info
    if not cfg.bootstrap_servers:
        raise AuditError("give --bootstrap-server (read the cluster) or --dump (a dump)")
    info["kafka"] = _check_kafka(cfg.bootstrap_servers, cfg.client_options)
    return info


def _check_kafka(bootstrap: str, client: dict[str, Any]) -> dict[str, Any]:
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.admin import OffsetSpec
    from kafka.errors import KafkaError

    opts = {k: v for k, v in client.items() if k != "bootstrap_servers"}
    opts.setdefault("request_timeout_ms", 10000)
    try:
        admin = KafkaAdminClient(
            bootstrap_servers=bootstrap.split(","),
            bootstrap_timeout_ms=opts["request_timeout_ms"],
            **opts,
        )
    except KafkaError as exc:
        raise AuditError(
            f"Kafka at {bootstrap} is not reachable ({type(exc).__name__}); "
            "check --bootstrap-server",
            3,
        ) from None
    try:
        desc = admin.describe_topics([dumpmod.OFFSETS_TOPIC])[0]
        if desc["error_code"] != 0 or not desc["partitions"]:
            raise AuditError(
                f"{dumpmod.OFFSETS_TOPIC} does not exist on {bootstrap}: no group has "
                "committed offsets to this cluster",
                4,
            )
        tps = [
            TopicPartition(dumpmod.OFFSETS_TOPIC, p["partition_index"]) for p in desc["partitions"]
        ]
        first = admin.list_partition_offsets({tp: OffsetSpec.EARLIEST for tp in tps})
        # the last stable offset: records of open transactions are not read (read_committed)
        last = admin.list_partition_offsets(
            {tp: OffsetSpec.LATEST for tp in tps}, isolation_level="read_committed"
        )
        held = sum(last[tp].offset - first[tp].offset for tp in tps)
        if held == 0:
            raise AuditError(f"{dumpmod.OFFSETS_TOPIC} on {bootstrap} holds no records", 4)
        # every pass of the job reads exactly these ranges, whatever is appended meanwhile
        return {
            "partitions": sorted(tp.partition for tp in tps),
            "start": {str(tp.partition): first[tp].offset for tp in tps},
            "end": {str(tp.partition): last[tp].offset for tp in tps},
            "offsets_span": held,
        }
    except KafkaError as exc:
        raise AuditError(f"reading {dumpmod.OFFSETS_TOPIC} metadata failed: {exc}", 3) from None
    finally:
        admin.close()


def run(spark, cfg: AuditConfig, info: dict[str, Any] | None = None) -> AuditResult:
    """The whole audit on an existing Spark session; writes ``cfg.out`` and returns results.

    ``info`` is what :func:`check_inputs` returned, when the caller checked before starting
    Spark; otherwise the inputs are checked here.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from bridge.audit import report

    info = info if info is not None else check_inputs(cfg)
    stages = _Stages(6)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    group_filter = None
    if cfg.groups is not None:
        group_filter = F.col("group").rlike(f"^(?:{cfg.groups})$")

    # 1 --------------------------------------------------------------------------------------
    where = f"dump {cfg.dump}" if cfg.dump else f"Kafka at {cfg.bootstrap_servers}"
    stages.start("decode and compact __consumer_offsets", f"reading {where}")
    if cfg.dump is not None:
        src = dump_source(spark, cfg.dump)
    else:
        # read once: the job passes over the records three times, and a broker is no place
        # to re-read a large topic from (spills to local disk when it does not fit)
        src = kafka_source(spark, cfg.bootstrap_servers, info["kafka"], cfg.client_options)
        src = src.persist(StorageLevel.MEMORY_AND_DISK)
    stage1 = decode_and_compact(src)
    decoded, versions, keys, records = stage1.decoded, stage1.versions, stage1.keys, stage1.records
    if records == 0:
        raise AuditError(f"{dumpmod.OFFSETS_TOPIC} ({where}) holds no records", 4)
    unknown = sum(v["records"] for v in versions if not v["known"])
    # the rows compaction kept, read from the cached decoded table
    kafka_offsets = stage1.offsets
    kafka_groups = stage1.groups
    if group_filter is not None:
        kafka_offsets = kafka_offsets.where(group_filter)
        kafka_groups = kafka_groups.where(group_filter)
    stages.done(
        f"{records} records of {keys} distinct key/version pairs, "
        f"{unknown} records of versions this decoder does not read"
    )

    # 2 --------------------------------------------------------------------------------------
    stages.start("read the ZooKeeper snapshot", str(cfg.snapshot))
    snap = snapshot_source(spark, cfg.snapshot)
    zk_offsets, zk_facts = zk_tables(snap)
    if group_filter is not None:
        zk_offsets, zk_facts = zk_offsets.where(group_filter), zk_facts.where(group_filter)
    zk_offsets, zk_facts = zk_offsets.cache(), zk_facts.cache()
    taken = info["snapshot"]
    counts = taken.get("counts", {})
    stages.done(
        f"{taken.get('groups', '?')} groups, {counts.get('offset', '?')} offset nodes, "
        f"{taken.get('bad_nodes', '?')} bad nodes (the whole snapshot)"
    )

    # 3 --------------------------------------------------------------------------------------
    stages.start("log-end offsets")
    topics = sorted(
        r.topic
        for r in zk_offsets.select("topic")
        .union(kafka_offsets.select("topic"))
        .distinct()
        .collect()
    )
    if cfg.dump is not None:
        ends = dumpmod.read_log_end_offsets(cfg.dump)
        ends_known = (Path(cfg.dump) / dumpmod.LOG_END_OFFSETS).exists()
    else:
        ends = _log_end_offsets(cfg.bootstrap_servers, cfg.client_options, topics)
        ends_known = True
    wanted = set(topics)
    rows = [(t, p, o) for (t, p), o in ends.items() if t in wanted]
    log_ends = spark.createDataFrame(rows, "topic STRING, partition INT, log_end_offset BIGINT")
    stages.done(f"{len(rows)} partitions of {len(topics)} topics")

    # 4 --------------------------------------------------------------------------------------
    stages.start("compare stores and decide verdicts")
    all_parts = compare(zk_offsets, kafka_offsets, log_ends, ends_known)
    # a group is audited when ZooKeeper has it or Kafka holds offsets for it; a Kafka group
    # that never committed (or whose offsets are all deleted) has nothing to migrate
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
    is_equal = F.col("zk_offset") == F.col("kafka_offset")
    numbers = parts.groupBy("group").agg(
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
    groups_df = (
        verdicts.join(facts, "group")
        .join(numbers, "group", "left")
        .select(
            "group",
            "verdict",
            "reasons",
            "notes",
            "can_migrate",
            "can_finalize",
            "can_roll_back",
            F.coalesce("partitions", F.lit(0)).alias("partitions"),
            F.coalesce("zk_partitions", F.lit(0)).alias("zk_partitions"),
            F.coalesce("kafka_partitions", F.lit(0)).alias("kafka_partitions"),
            F.coalesce("equal_partitions", F.lit(0)).alias("equal_partitions"),
            F.coalesce("diverged_partitions", F.lit(0)).alias("diverged_partitions"),
            "max_abs_difference",
            "total_difference",
            "zk_lag",
            "kafka_lag",
            "lag",
            "zk_last_commit_ms",
            "kafka_last_commit_ms",
            F.coalesce("kafka_commits", F.lit(0)).alias("kafka_commits"),
            "kafka_commits_per_min",
            F.coalesce("in_zookeeper", F.lit(False)).alias("in_zookeeper"),
            "zk_writable",
            F.coalesce("zk_consumers", F.lit(0)).alias("zk_consumers"),
            F.size(F.coalesce("zk_bad_nodes", F.array())).alias("zk_bad_nodes"),
            "kafka_protocol_type",
            "kafka_protocol",
            "kafka_generation",
            F.coalesce("kafka_members", F.lit(0)).alias("kafka_members"),
            F.coalesce("kafka_group_removed", F.lit(False)).alias("kafka_group_removed"),
        )
        .orderBy("group")
    )
    _write(groups_df, out / "groups")
    _write(parts.orderBy("group", "topic", "partition"), out / "partitions")
    groups = [r.asDict(recursive=True) for r in spark.read.parquet(str(out / "groups")).collect()]
    by_verdict: dict[str, int] = {}
    for g in groups:
        by_verdict[g["verdict"]] = by_verdict.get(g["verdict"], 0) + 1
    # the report shows the most urgent groups; only their rows come back to the driver
    shown = None
    if len(groups) > cfg.report_groups:
        shown = [g["group"] for g in report.urgent_first(groups)[: cfg.report_groups]]
    stages.done(f"{len(groups)} groups: " + ", ".join(f"{n} {v}" for v, n in by_verdict.items()))

    # 5 --------------------------------------------------------------------------------------
    stages.start("commit activity over time")
    commit_keys = decoded.where(
        (F.col("key_kind") == "offset_commit") & (F.col("value_kind") != TOMBSTONE)
    )
    if group_filter is not None:
        commit_keys = commit_keys.where(group_filter)
    span = commit_keys.agg(F.min("first_ts").alias("t0"), F.max("last_ts").alias("t1")).first()
    activity: list[dict[str, Any]] = []
    bucket_ms = 0
    t0 = span["t0"]
    if t0 is not None:
        bucket_ms = max(1000, math.ceil((span["t1"] - t0 + 1) / cfg.buckets))
        keymap = commit_keys.select("key", "group").distinct()
        act = (
            src.where(F.col("value").isNotNull())
            .join(keymap, "key")
            .groupBy(
                "group",
                (F.floor((F.col("timestamp_ms") - t0) / bucket_ms) * bucket_ms + t0).alias(
                    "bucket_start_ms"
                ),
            )
            .agg(F.count(F.lit(1)).alias("commits"))
            .orderBy("group", "bucket_start_ms")
        )
        _write(act, out / "activity")
        activity = [r.asDict() for r in _read(spark, out / "activity", shown)]
    stages.done(f"{len(activity)} (group, time bucket) cells, bucket {bucket_ms / 1000:.0f}s")

    # 6 --------------------------------------------------------------------------------------
    stages.start("write tables and report", str(out))
    _write(spark.createDataFrame(versions, _VERSIONS_SCHEMA), out / "record_versions")
    partitions = [r.asDict() for r in _read(spark, out / "partitions", shown)]
    summary = {
        "source": where,
        "snapshot": str(cfg.snapshot),
        "group_filter": cfg.groups,
        "records": records,
        "distinct_key_versions": keys,
        "unknown_version_records": unknown,
        "record_versions": versions,
        "groups": len(groups),
        "verdicts": by_verdict,
        "partitions": sum(g["partitions"] for g in groups),
        "log_end_offsets_known": ends_known,
        "activity_bucket_ms": bucket_ms,
        "inputs": info,
        "generated_ms": int(time.time() * 1000),
    }
    html = report.render(summary, groups, partitions, versions, activity, cfg.report_groups)
    (out / "report.html").write_text(html, encoding="utf-8")
    summary["timings_s"] = stages.timings
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    stages.done(f"report {out / 'report.html'} ({len(html) // 1024} KiB)")
    for df in (src, zk_offsets, zk_facts, parts):
        df.unpersist()
    stage1.unpersist()
    return AuditResult(out, summary, groups, partitions, versions, activity)


_VERSIONS_SCHEMA = (
    "key_kind STRING, key_version INT, value_kind STRING, value_version INT, records BIGINT, "
    "known BOOLEAN"
)


def _write(df, path: Path) -> None:
    df.coalesce(1).write.mode("overwrite").parquet(str(path))


def _read(spark, path: Path, groups: list[str] | None) -> list[Any]:
    """Rows of a written table, only those of ``groups`` when given."""
    from pyspark.sql import functions as F

    df = spark.read.parquet(str(path))
    return (df if groups is None else df.where(F.col("group").isin(groups))).collect()


def _log_end_offsets(bootstrap: str, client: dict[str, Any], topics: list[str]):
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    opts = {k: v for k, v in client.items() if k != "bootstrap_servers"}
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), **opts)
    except KafkaError as exc:
        raise AuditError(f"Kafka at {bootstrap} is not reachable ({exc})", 3) from None
    try:
        return dumpmod.log_end_offsets(admin, topics)
    except KafkaError as exc:
        raise AuditError(f"listing log-end offsets failed: {exc}", 3) from None
    finally:
        admin.close()
