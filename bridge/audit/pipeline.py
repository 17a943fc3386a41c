"""The audit job on Spark: ``__consumer_offsets`` + a ZooKeeper snapshot -> per-group verdicts.

Stages (each logs a line when it starts and when it is done):

1. **decode and compact** - the topic is read as a batch (Spark's Kafka source, or a dump;
   :mod:`bridge.audit.sources`), records grouped by raw key bytes and value version, only
   the latest record of each pair decoded, compacted as the group coordinator loads the
   topic (:mod:`bridge.audit.compaction`, whose Python workers run
   :mod:`bridge.audit.decode`). A Kafka source is read once and kept (spilling to disk) for
   later passes.
2. **snapshot** - the ZooKeeper side, as written by ``zk-bridge snapshot``.
3. **log-end offsets** - for every topic either store mentions (kafka-python admin, or the
   dump's ``log_end_offsets.jsonl``).
4. **compare and decide** - per partition: both offsets, their difference, last commit time
   and commit rate per store, lag; per group: the verdict of :mod:`bridge.audit.verdict`
   (:mod:`bridge.audit.compare`).
5. **activity** - Kafka commits per group over time (a second pass over the records).
6. **write** - Parquet tables ``partitions``, ``groups``, ``record_versions``, ``activity``,
   ``summary.json`` and the self-contained ``report.html``.

This module is the job's order and its outputs; the Spark session is made by
:mod:`bridge.audit.session`.
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridge.audit import dump as dumpmod
from bridge.audit import snapshot as snapmod
from bridge.audit.compaction import Compacted, decode_and_compact
from bridge.audit.compare import activity_table, verdict_tables, zk_tables
from bridge.audit.errors import AuditError
from bridge.audit.sources import (
    dump_source,
    kafka_log_end_offsets,
    kafka_ranges,
    kafka_source,
    snapshot_source,
)

log = logging.getLogger("bridge.audit")

if TYPE_CHECKING:  # pyspark is an optional dependency (the audit extra)
    from pyspark.sql import DataFrame, SparkSession


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
    info["kafka"] = kafka_ranges(cfg.bootstrap_servers, cfg.client_options)
    return info


@dataclass
class _Job:
    """One run of the audit: its inputs, and what each stage leaves for the next ones."""

    spark: Any
    cfg: AuditConfig
    info: dict[str, Any]
    stages: _Stages = field(default_factory=lambda: _Stages(6))
    #: stage 1: the records (five columns), their compaction, records of unknown versions
    src: Any = None
    stage1: Compacted | None = None
    unknown: int = 0
    #: stages 2-3: the ZooKeeper side, log-end offsets
    zk_offsets: Any = None
    zk_facts: Any = None
    log_ends: Any = None
    ends_known: bool = True
    #: stage 4: the groups table read back, verdict counts, groups shown in the report
    parts: Any = None
    groups: list[dict[str, Any]] = field(default_factory=list)
    by_verdict: dict[str, int] = field(default_factory=dict)
    shown: list[str] | None = None
    #: stage 5
    activity: list[dict[str, Any]] = field(default_factory=list)
    bucket_ms: int = 0

    @property
    def out(self) -> Path:
        return Path(self.cfg.out)

    @property
    def where(self) -> str:
        """Where the records are read from, as the progress lines and the summary name it."""
        cfg = self.cfg
        return f"dump {cfg.dump}" if cfg.dump else f"Kafka at {cfg.bootstrap_servers}"

    def audited(self, df: DataFrame) -> DataFrame:
        """``df`` restricted to the groups ``--groups`` selects (all when not given)."""
        if self.cfg.groups is None:
            return df
        from pyspark.sql import functions as F

        return df.where(F.col("group").rlike(f"^(?:{self.cfg.groups})$"))


def run(spark: SparkSession, cfg: AuditConfig, info: dict[str, Any] | None = None) -> AuditResult:
    """The whole audit on an existing Spark session; writes ``cfg.out`` and returns results.

    ``info`` is what :func:`check_inputs` returned, when the caller checked before starting
    Spark; otherwise the inputs are checked here.
    """
    job = _Job(spark, cfg, info if info is not None else check_inputs(cfg))
    job.out.mkdir(parents=True, exist_ok=True)
    _decode_and_compact(job)
    _read_snapshot(job)
    _read_log_ends(job)
    _compare_and_decide(job)
    _commit_activity(job)
    result = _write_report(job)
    for df in (job.src, job.zk_offsets, job.zk_facts, job.parts):
        df.unpersist()
    job.stage1.unpersist()
    return result


def _decode_and_compact(job: _Job) -> None:
    """Stage 1: the records read (a Kafka source once, kept) and compacted."""
    from pyspark import StorageLevel

    cfg = job.cfg
    job.stages.start("decode and compact __consumer_offsets", f"reading {job.where}")
    if cfg.dump is not None:
        job.src = dump_source(job.spark, cfg.dump)
    else:
        # read once: the job passes over the records three times, and a broker is no place
        # to re-read a large topic from (spills to local disk when it does not fit)
        src = kafka_source(job.spark, cfg.bootstrap_servers, job.info["kafka"], cfg.client_options)
        job.src = src.persist(StorageLevel.MEMORY_AND_DISK)
    stage1 = job.stage1 = decode_and_compact(job.src)
    if stage1.records == 0:
        raise AuditError(f"{dumpmod.OFFSETS_TOPIC} ({job.where}) holds no records", 4)
    job.unknown = sum(v["records"] for v in stage1.versions if not v["known"])
    job.stages.done(
        f"{stage1.records} records of {stage1.keys} distinct key/version pairs, "
        f"{job.unknown} records of versions this decoder does not read"
    )


def _read_snapshot(job: _Job) -> None:
    """Stage 2: per-partition offsets and per-group facts of the ZooKeeper snapshot."""
    job.stages.start("read the ZooKeeper snapshot", str(job.cfg.snapshot))
    zk_offsets, zk_facts = zk_tables(snapshot_source(job.spark, job.cfg.snapshot))
    job.zk_offsets = job.audited(zk_offsets).cache()
    job.zk_facts = job.audited(zk_facts).cache()
    taken = job.info["snapshot"]
    counts = taken.get("counts", {})
    job.stages.done(
        f"{taken.get('groups', '?')} groups, {counts.get('offset', '?')} offset nodes, "
        f"{taken.get('bad_nodes', '?')} bad nodes (the whole snapshot)"
    )


def _read_log_ends(job: _Job) -> None:
    """Stage 3: log-end offsets of every topic either store mentions."""
    cfg = job.cfg
    job.stages.start("log-end offsets")
    kafka_topics = job.audited(job.stage1.offsets).select("topic")
    both = job.zk_offsets.select("topic").union(kafka_topics).distinct()
    topics = sorted(r.topic for r in both.collect())
    if cfg.dump is not None:
        ends = dumpmod.read_log_end_offsets(cfg.dump)
        job.ends_known = (Path(cfg.dump) / dumpmod.LOG_END_OFFSETS).exists()
    else:
        ends = kafka_log_end_offsets(cfg.bootstrap_servers, cfg.client_options, topics)
        job.ends_known = True
    wanted = set(topics)
    rows = [(t, p, o) for (t, p), o in ends.items() if t in wanted]
    schema = "topic STRING, partition INT, log_end_offset BIGINT"
    job.log_ends = job.spark.createDataFrame(rows, schema)
    job.stages.done(f"{len(rows)} partitions of {len(topics)} topics")


def _compare_and_decide(job: _Job) -> None:
    """Stage 4: the ``partitions`` and ``groups`` tables written, the groups read back."""
    from bridge.audit import report

    job.stages.start("compare stores and decide verdicts")
    out = job.out
    job.parts, groups_df = verdict_tables(
        job.zk_offsets,
        job.zk_facts,
        job.audited(job.stage1.offsets),
        job.audited(job.stage1.groups),
        job.log_ends,
        job.ends_known,
    )
    _write(groups_df, out / "groups")
    _write(job.parts.orderBy("group", "topic", "partition"), out / "partitions")
    groups = [
        r.asDict(recursive=True) for r in job.spark.read.parquet(str(out / "groups")).collect()
    ]
    for g in groups:
        job.by_verdict[g["verdict"]] = job.by_verdict.get(g["verdict"], 0) + 1
    job.groups = groups
    # the report shows the most urgent groups; only their rows come back to the driver
    if len(groups) > job.cfg.report_groups:
        job.shown = [g["group"] for g in report.urgent_first(groups)[: job.cfg.report_groups]]
    verdicts = ", ".join(f"{n} {v}" for v, n in job.by_verdict.items())
    job.stages.done(f"{len(groups)} groups: {verdicts}")


def _commit_activity(job: _Job) -> None:
    """Stage 5: the ``activity`` table written, the shown groups' cells read back."""
    job.stages.start("commit activity over time")
    decoded = job.audited(job.stage1.decoded)
    act, job.bucket_ms = activity_table(job.src, decoded, job.cfg.buckets)
    if act is not None:
        _write(act, job.out / "activity")
        job.activity = [r.asDict() for r in _read(job.spark, job.out / "activity", job.shown)]
    job.stages.done(
        f"{len(job.activity)} (group, time bucket) cells, bucket {job.bucket_ms / 1000:.0f}s"
    )


def _write_report(job: _Job) -> AuditResult:
    """Stage 6: ``record_versions``, ``summary.json`` and ``report.html``."""
    from bridge.audit import report

    cfg, out, stage1 = job.cfg, job.out, job.stage1
    job.stages.start("write tables and report", str(out))
    versions = stage1.versions
    _write(job.spark.createDataFrame(versions, _VERSIONS_SCHEMA), out / "record_versions")
    partitions = [r.asDict() for r in _read(job.spark, out / "partitions", job.shown)]
    summary = {
        "source": job.where,
        "snapshot": str(cfg.snapshot),
        "group_filter": cfg.groups,
        "records": stage1.records,
        "distinct_key_versions": stage1.keys,
        "unknown_version_records": job.unknown,
        "record_versions": versions,
        "groups": len(job.groups),
        "verdicts": job.by_verdict,
        "partitions": sum(g["partitions"] for g in job.groups),
        "log_end_offsets_known": job.ends_known,
        "activity_bucket_ms": job.bucket_ms,
        "inputs": job.info,
        "generated_ms": int(time.time() * 1000),
    }
    html = report.render(summary, job.groups, partitions, versions, job.activity, cfg.report_groups)
    (out / "report.html").write_text(html, encoding="utf-8")
    summary["timings_s"] = job.stages.timings
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    job.stages.done(f"report {out / 'report.html'} ({len(html) // 1024} KiB)")
    return AuditResult(out, summary, job.groups, partitions, versions, job.activity)


_VERSIONS_SCHEMA = (
    "key_kind STRING, key_version INT, value_kind STRING, value_version INT, records BIGINT, "
    "known BOOLEAN"
)


def _write(df: DataFrame, path: Path) -> None:
    """One Parquet file per table: the tables are small next to the records."""
    df.coalesce(1).write.mode("overwrite").parquet(str(path))


def _read(spark: SparkSession, path: Path, groups: list[str] | None) -> list[Any]:
    """Rows of a written table, only those of ``groups`` when given."""
    from pyspark.sql import functions as F

    df = spark.read.parquet(str(path))
    return (df if groups is None else df.where(F.col("group").isin(groups))).collect()
