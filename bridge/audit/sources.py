"""Where the audit's inputs come from: ``__consumer_offsets`` (Kafka or a dump), the snapshot.

Every source is turned into the columns the stages expect, so the stages do not care where
the records came from: the topic as ``partition, offset, timestamp_ms, key, value`` (Spark's
Kafka source read as a batch over fixed ranges, or a dump written by ``zk-bridge audit dump``)
and the ZooKeeper snapshot of ``zk-bridge snapshot`` as its node table. The Kafka metadata
the job needs besides (the ranges every pass reads, log-end offsets of the topics either
store mentions) is read here too, with kafka-python's admin client.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridge.audit import dump as dumpmod
from bridge.audit import snapshot as snapmod
from bridge.audit.errors import AuditError
from zkpaths import TopicPartition

if TYPE_CHECKING:  # pyspark is an optional dependency (the audit extra)
    from pyspark.sql import DataFrame, SparkSession

SNAPSHOT_SCHEMA = (
    "kind STRING, path STRING, group STRING, topic STRING, partition INT, consumer_id STRING, "
    "broker_id INT, offset BIGINT, value STRING, error STRING, ctime BIGINT, mtime BIGINT, "
    "mzxid BIGINT, data_version INT, data_length INT, writable BOOLEAN, note STRING"
)


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
    spark: SparkSession,
    bootstrap_servers: str,
    ranges: dict[str, Any],
    client: dict[str, Any] | None = None,
) -> DataFrame:
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


def dump_source(spark: SparkSession, directory: Path) -> DataFrame:
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


def snapshot_source(spark: SparkSession, directory: Path) -> DataFrame:
    """A snapshot written by ``zk-bridge snapshot``, as its node table (JSON lines or Parquet)."""
    manifest = snapmod.read_manifest(directory)
    path = str(Path(directory) / manifest["nodes_file"])
    if path.endswith(".jsonl"):
        return spark.read.schema(SNAPSHOT_SCHEMA).json(path)
    return spark.read.parquet(path)


def kafka_ranges(bootstrap: str, client: dict[str, Any]) -> dict[str, Any]:
    """The offset ranges of ``__consumer_offsets`` that every pass of the job reads.

    Read once before Spark starts so that an unreachable cluster or an empty topic fails in
    seconds with its exit code, and so that the passes agree on the records whatever is
    appended meanwhile: ``partitions``, per partition ``start`` and ``end`` (the last stable
    offset), and ``offsets_span``.
    """
    from kafka.errors import KafkaError

    from bridge.kafka.admin import open_admin
    from bridge.kafka.cluster import partition_counts
    from bridge.kafka.offsets import log_offsets

    try:
        admin = open_admin(bootstrap, client, bound_ms=10000)
    except KafkaError as exc:
        raise AuditError(
            f"Kafka at {bootstrap} is not reachable ({type(exc).__name__}); "
            "check --bootstrap-server",
            3,
        ) from None
    try:
        count = partition_counts(admin, [dumpmod.OFFSETS_TOPIC]).get(dumpmod.OFFSETS_TOPIC)
        if not count:
            raise AuditError(
                f"{dumpmod.OFFSETS_TOPIC} does not exist on {bootstrap}: no group has "
                "committed offsets to this cluster",
                4,
            )
        tps = [TopicPartition(dumpmod.OFFSETS_TOPIC, p) for p in range(count)]
        first = log_offsets(admin, tps, "earliest")
        # the last stable offset: records of open transactions are not read (read_committed)
        last = log_offsets(admin, tps, "latest", read_committed=True)
        held = sum(last[tp] - first[tp] for tp in tps)
        if held == 0:
            raise AuditError(f"{dumpmod.OFFSETS_TOPIC} on {bootstrap} holds no records", 4)
        # every pass of the job reads exactly these ranges, whatever is appended meanwhile
        return {
            "partitions": sorted(tp.partition for tp in tps),
            "start": {str(tp.partition): first[tp] for tp in tps},
            "end": {str(tp.partition): last[tp] for tp in tps},
            "offsets_span": held,
        }
    except KafkaError as exc:
        raise AuditError(f"reading {dumpmod.OFFSETS_TOPIC} metadata failed: {exc}", 3) from None
    finally:
        admin.close()


def kafka_log_end_offsets(
    bootstrap: str, client: dict[str, Any], topics: list[str]
) -> dict[TopicPartition, int]:
    """Log-end offsets of every partition of ``topics``, for the lag columns."""
    from kafka.errors import KafkaError

    from bridge.kafka.admin import open_admin

    try:
        admin = open_admin(bootstrap, client)
    except KafkaError as exc:
        raise AuditError(f"Kafka at {bootstrap} is not reachable ({exc})", 3) from None
    try:
        return dumpmod.log_end_offsets(admin, topics)
    except KafkaError as exc:
        raise AuditError(f"listing log-end offsets failed: {exc}", 3) from None
    finally:
        admin.close()
