"""The migration audit on the real stack: real commits, a real ZooKeeper tree, Spark local[2].

One module-wide world is built once: two topics with messages, 21 groups whose offsets are
committed to Kafka over several rounds (admin OffsetCommit, and real subscribed consumers
for two of them), the same groups' ZooKeeper side written with kazoo in a private chroot -
some equal, some behind or ahead, some diverged both ways, some with bad or read-only
nodes, two with offsets deleted in Kafka (tombstones), one pointing past the log end. Then
``zk-bridge snapshot`` and the Spark job run, and every verdict and number is checked
against what was set up. ``__consumer_offsets`` is shared by the whole test session, so
only groups under this module's unique prefix are audited.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
import time
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata
from kazoo.client import KazooClient
from kazoo.security import make_acl, make_digest_acl

from bridge.audit import dump, next_gen, snapshot
from bridge.audit.next_gen import ConsumerGroupKey
from bridge.audit.pipeline import AuditConfig, AuditResult, run
from bridge.audit.records import (
    GroupMetadataKey,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownKey,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from bridge.audit.session import spark_session
from bridge.audit.verdict import BLOCKED, READY_TO_FINALIZE, READY_TO_MIGRATE, READY_TO_ROLL_BACK
from bridge.audit.wire import RecordError
from bridge.cli import main as cli_main
from tests.conftest import ROOT, wait_for
from zkpaths import BrokerRegistration, TopicAssignment, encode_broker, encode_topic

pytestmark = pytest.mark.integration

A_PARTS, A_MSGS = 3, 100  # topic A: 3 partitions of 100 messages
B_PARTS, B_MSGS = 2, 50  # topic B: 2 partitions of 50 messages
ROUNDS = 3  # Kafka commits per partition for admin-committed groups
BAD = object()  # marker: a ZooKeeper offset node with bad data (see bad_data)
UNREADABLE = b"7"  # bad_data of a node whose ACL lets only another user read it
SECRET_ACL = [make_digest_acl("someone-else", "secret", all=True)]


@dataclass
class Group:
    """What one group's two stores are set up to hold, and the verdict that must follow."""

    verdict: str
    topic: str  # "A" or "B"
    zk: list = field(default_factory=list)  # per partition: int, None (no node) or BAD
    kafka: list = field(default_factory=list)  # per partition: int or None
    consumer: bool = False  # commit with a real subscribed consumer (reads everything)
    in_zk: bool = True
    read_only: bool = False  # offset nodes readable only
    registered: bool = False  # an old consumer's ids node
    bad_data: dict = field(default_factory=dict)  # partition -> raw bytes of a bad node
    bad_registration: bool = False
    delete_offsets: list = field(default_factory=list)  # partitions deleted in Kafka
    delete_group: bool = False
    reasons: tuple[str, ...] = ()  # substrings the verdict's reasons must contain
    notes: tuple[str, ...] = ()


GROUPS: dict[str, Group] = {
    "fin-0": Group(READY_TO_FINALIZE, "A", zk=[100] * 3, kafka=[100] * 3, consumer=True),
    "fin-1": Group(READY_TO_FINALIZE, "A", zk=[100] * 3, kafka=[100] * 3, consumer=True),
    "fin-2": Group(READY_TO_FINALIZE, "A", zk=[30, 40, 50], kafka=[30, 40, 50]),
    "fin-3": Group(READY_TO_FINALIZE, "B", zk=[45, 20], kafka=[45, 20]),
    "mig-0": Group(
        READY_TO_MIGRATE,
        "A",
        zk=[10, 20, 30],
        kafka=[None] * 3,
        registered=True,
        notes=("1 old consumer(s) registered in ZooKeeper",),
    ),
    "mig-1": Group(READY_TO_MIGRATE, "B", zk=[5, 50], kafka=[None, None]),
    "mig-2": Group(READY_TO_MIGRATE, "A", zk=[60, 60, 60], kafka=[50, 60, 40]),
    "mig-3": Group(READY_TO_MIGRATE, "A", zk=[-1, 70, 80], kafka=[None, 70, 10]),
    "mig-4": Group(READY_TO_MIGRATE, "B", zk=[30, 30], kafka=[30, 29]),
    "rb-0": Group(
        READY_TO_ROLL_BACK,
        "B",
        zk=[None, None],
        kafka=[45, 30],
        in_zk=False,
        notes=("not in ZooKeeper",),
    ),
    "rb-1": Group(READY_TO_ROLL_BACK, "A", zk=[5, None, None], kafka=[10, 10, 10]),
    "rb-2": Group(READY_TO_ROLL_BACK, "B", zk=[10, 10], kafka=[45, 30]),
    "rb-3": Group(READY_TO_ROLL_BACK, "A", zk=[90, 90, 90], kafka=[95, 90, 100]),
    "rb-ro": Group(
        BLOCKED,
        "B",
        zk=[10, 10],
        kafka=[20, 20],
        read_only=True,
        reasons=("cannot roll back: ZooKeeper offsets not writable", "does not grant WRITE"),
    ),
    "div-0": Group(
        BLOCKED,
        "A",
        zk=[50, 10, 30],
        kafka=[40, 20, 30],
        reasons=(
            "cannot migrate: Kafka ahead of ZooKeeper on {A}-1 (20 > 10)",
            "cannot roll back: ZooKeeper ahead of Kafka on {A}-0 (50 > 40)",
        ),
    ),
    "div-1": Group(
        BLOCKED,
        "B",
        zk=[10, None],
        kafka=[5, 20],
        reasons=(
            "cannot migrate: no ZooKeeper offset for {B}-1 (Kafka has 20)",
            "cannot roll back: ZooKeeper ahead of Kafka on {B}-0 (10 > 5)",
        ),
    ),
    "bad-0": Group(
        BLOCKED,
        "A",
        zk=[BAD, 5, BAD],
        kafka=[None] * 3,
        bad_data={0: b"abc", 2: UNREADABLE},
        reasons=("2 bad ZooKeeper node(s)", "not an offset", "may not read it"),
    ),
    "bad-1": Group(
        BLOCKED,
        "A",
        zk=[BAD, BAD, 3],
        kafka=[1, 1, 1],
        bad_data={0: b"\xff\xfe", 1: b"9" * 200},
        bad_registration=True,
        reasons=("3 bad ZooKeeper node(s)", "not UTF-8", "more than the 64-byte limit", "JSON"),
    ),
    "tomb-0": Group(
        READY_TO_MIGRATE,
        "A",
        zk=[70, 70, 70],
        kafka=[60, 60, 60],
        delete_offsets=[1, 2],
        notes=("Kafka offsets deleted or expired (tombstone) for {A}-1, {A}-2",),
    ),
    "tomb-1": Group(
        READY_TO_MIGRATE,
        "B",
        zk=[25, 25],
        kafka=[20, 20],
        delete_group=True,
        notes=("Kafka offsets deleted or expired (tombstone) for {B}-0, {B}-1",),
    ),
    "end-0": Group(
        BLOCKED,
        "A",
        zk=[5000, 10, 10],
        kafka=[None] * 3,
        reasons=("cannot migrate: {A}-0: ZooKeeper offset 5000 is past the log end 100",),
    ),
}


@dataclass
class World:
    prefix: str
    chroot: str
    zk_connect: str
    bootstrap: str
    topics: dict[str, str]
    started_ms: int
    finished_ms: int

    def name(self, short: str) -> str:
        return self.prefix + short

    def fmt(self, text: str) -> str:
        return text.format(A=self.topics["A"], B=self.topics["B"])

    def final_kafka(self, short: str) -> dict[tuple[str, int], int | None]:
        """Offsets Kafka must hold at the end (None: never committed or deleted)."""
        g = GROUPS[short]
        topic = self.topics[g.topic]
        out = {}
        for p, off in enumerate(g.kafka):
            deleted = g.delete_group or p in g.delete_offsets
            out[(topic, p)] = None if deleted else off
        return out


def _commit_rounds(admin: KafkaAdminClient, group: str, offsets: dict) -> None:
    for r in range(1, ROUNDS + 1):
        admin.alter_group_offsets(
            group,
            {
                tp: OffsetAndMetadata(off * r // ROUNDS, f"round {r}", -1)
                for tp, off in offsets.items()
            },
        )
        time.sleep(0.05)


def _consume_all_and_commit(bootstrap: str, group: str, topic: str, expected: int) -> None:
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap.split(","),
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    try:
        seen = 0
        deadline = time.monotonic() + 60
        while seen < expected and time.monotonic() < deadline:
            seen += sum(len(r) for r in consumer.poll(500).values())
        assert seen == expected, f"{group} consumed {seen} of {expected}"
        consumer.commit()
    finally:
        consumer.close()


def _write_zk(zk: KazooClient, group: str, topic: str, g: Group) -> None:
    base = f"/consumers/{group}"
    zk.ensure_path(f"{base}/offsets/{topic}")
    zk.ensure_path(f"{base}/owners/{topic}")
    for p, off in enumerate(g.zk):
        path = f"{base}/offsets/{topic}/{p}"
        if off is BAD:
            acl = SECRET_ACL if g.bad_data[p] is UNREADABLE else None
            zk.create(path, g.bad_data[p], acl=acl)
        elif off is not None:
            if g.read_only:
                zk.create(path, str(off).encode(), acl=[make_acl("world", "anyone", read=True)])
                continue
            # two writes: the node's data version and mtime then say it was committed to
            zk.create(path, str(off // 2 if off > 0 else off).encode())
            zk.set(path, str(off).encode())
    if g.registered:
        reg = {"version": 1, "subscription": {topic: 1}, "pattern": "static", "timestamp": "1"}
        zk.create(f"{base}/ids/{group}_host-1-abc", json.dumps(reg).encode(), makepath=True)
        zk.create(f"{base}/owners/{topic}/0", f"{group}_host-1-abc-0".encode())
    if g.bad_registration:
        zk.create(f"{base}/ids/{group}_broken", b"{not json", makepath=True)


def _latest_in_topic(bootstrap: str, prefix: str) -> tuple[dict, list[RecordError]]:
    """Every record of __consumer_offsets decoded; the latest offsets of ``prefix`` groups."""
    latest: dict[tuple[str, str, int], tuple[tuple[int, int], int | None]] = {}
    errors: list[RecordError] = []
    for r in dump.read_offsets_topic(bootstrap):
        try:
            key = decode_key(r.key)
            value = decode_value(key, r.value)
        except RecordError as exc:
            errors.append(exc)
            continue
        if isinstance(key, OffsetCommitKey) and key.group.startswith(prefix):
            pos = (r.partition, r.offset)
            k = (key.group, key.topic, key.partition)
            if k not in latest or latest[k][0] < pos:
                latest[k] = (pos, None if value is None else value.offset)
    return {k: v[1] for k, v in latest.items()}, errors


@pytest.fixture(scope="session")
def spark():
    s = spark_session("local[2]")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def world(stack):
    prefix = f"audit-{uuid.uuid4().hex[:6]}-"
    chroot = f"/audit-{uuid.uuid4().hex[:6]}"
    bootstrap = stack.bootstrap_servers
    topics = {"A": f"{prefix}a", "B": f"{prefix}b"}
    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","))
    admin.create_topics([NewTopic(topics["A"], A_PARTS, 3), NewTopic(topics["B"], B_PARTS, 3)])
    producer = KafkaProducer(bootstrap_servers=bootstrap.split(","))
    for t, parts, n in (("A", A_PARTS, A_MSGS), ("B", B_PARTS, B_MSGS)):
        for p in range(parts):
            for i in range(n):
                producer.send(topics[t], f"{t}{p}-{i}".encode(), partition=p)
    producer.flush()
    producer.close()
    wait_for(
        lambda: dump.log_end_offsets(admin, topics.values()).get((topics["B"], 1)) == B_MSGS,
        60,
        0.2,
        "log-end offsets of the audit topics",
    )

    root = KazooClient(stack.zk_connect)
    root.start()
    root.ensure_path(chroot)
    zk = KazooClient(stack.zk_connect + chroot)
    zk.start()
    # the registry side of the snapshot: what a bridge mirrors, plus one node nobody can read
    broker = BrokerRegistration(1, "127.0.0.1", 9092, ("PLAINTEXT://127.0.0.1:9092",))
    zk.create("/brokers/ids/1", encode_broker(broker), makepath=True)
    zk.create("/brokers/ids/2", b'{"version":4,"host":', makepath=True)
    zk.create(
        f"/brokers/topics/{topics['A']}",
        encode_topic(TopicAssignment({p: (1,) for p in range(A_PARTS)})),
        makepath=True,
    )
    started = int(time.time() * 1000)
    for short, g in GROUPS.items():
        group, topic = prefix + short, topics[g.topic]
        if g.in_zk:
            _write_zk(zk, group, topic, g)
        if g.consumer:
            _consume_all_and_commit(bootstrap, group, topic, len(g.kafka) * A_MSGS)
        elif any(o is not None for o in g.kafka):
            offsets = {TopicPartition(topic, p): o for p, o in enumerate(g.kafka) if o is not None}
            _commit_rounds(admin, group, offsets)
        if g.delete_offsets:
            gone = [TopicPartition(topic, p) for p in g.delete_offsets]
            admin.delete_group_offsets(group, gone)
        if g.delete_group:
            assert admin.delete_groups([group]) == {group: "OK"}
    finished = int(time.time() * 1000)
    w = World(prefix, chroot, stack.zk_connect + chroot, bootstrap, topics, started, finished)

    # the coordinator has written everything once the topic shows each group's end state
    expected = {
        (w.name(s), t, p): off
        for s in GROUPS
        for (t, p), off in w.final_kafka(s).items()
        if GROUPS[s].kafka[p] is not None
    }
    wait_for(
        lambda: _latest_in_topic(bootstrap, prefix)[0] == expected,
        60,
        0.5,
        "the test's commits and deletions in __consumer_offsets",
    )
    admin.close()
    yield w
    zk.stop()
    zk.close()
    # a recursive delete lists every node, which the unreadable ones refuse: those go first
    for short, g in GROUPS.items():
        for p, data in g.bad_data.items():
            if data is UNREADABLE:
                topic = topics[g.topic]
                root.delete(f"{chroot}/consumers/{prefix}{short}/offsets/{topic}/{p}")
    root.delete(chroot, recursive=True)
    root.stop()
    root.close()


@pytest.fixture(scope="module")
def audited(world, spark, tmp_path_factory) -> tuple[AuditResult, Path]:
    base = tmp_path_factory.mktemp("audit")
    snap = base / "snapshot"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bridge.cli",
            "snapshot",
            "--zookeeper",
            world.zk_connect,
            "--out",
            str(snap),
            "--format",
            "parquet",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    in_zk = sum(g.in_zk for g in GROUPS.values())
    assert f"snapshot: {in_zk} groups" in out.stdout
    cfg = AuditConfig(
        snapshot=snap,
        out=base / "out",
        bootstrap_servers=world.bootstrap,
        groups=re.escape(world.prefix) + ".*",
    )
    return run(spark, cfg), snap


# -- the decoder on real records --------------------------------------------------------------


def test_every_real_record_of_the_topic_decodes(world) -> None:
    latest, errors = _latest_in_topic(world.bootstrap, world.prefix)
    assert errors == []
    for short in GROUPS:
        for (topic, p), off in world.final_kafka(short).items():
            if GROUPS[short].kafka[p] is not None:
                assert latest[(world.name(short), topic, p)] == off, (short, p)
    # the real consumer groups left group metadata with consumer-protocol members
    kinds = {
        (type(decode_key(r.key)).__name__, decode_key(r.key).version)
        for r in dump.read_offsets_topic(world.bootstrap)
    }
    assert ("OffsetCommitKey", 1) in kinds and ("GroupMetadataKey", 2) in kinds


# -- the snapshot ---------------------------------------------------------------------------------


def test_snapshot_keeps_bad_nodes_with_their_reasons(audited, world) -> None:
    rows = snapshot.read_rows(audited[1])
    bad = {r.path: r.error for r in rows if r.error}
    base = f"/consumers/{world.name('bad-1')}"
    topic = world.topics["A"]
    assert "not UTF-8" in bad[f"{base}/offsets/{topic}/0"]
    assert "more than the 64-byte limit" in bad[f"{base}/offsets/{topic}/1"]
    assert "not valid JSON" in bad[f"{base}/ids/{world.name('bad-1')}_broken"]
    assert "not an offset" in bad[f"/consumers/{world.name('bad-0')}/offsets/{topic}/0"]
    assert "bad broker registration" in bad["/brokers/ids/2"]
    unreadable = f"/consumers/{world.name('bad-0')}/offsets/{topic}/2"
    assert "this identity may not read it (ZooKeeper ACL)" in bad[unreadable]
    assert len(bad) == 6
    registry = {r.path: r for r in rows if r.kind in ("broker", "topic")}
    assert json.loads(registry["/brokers/ids/1"].value)["port"] == 9092
    assert json.loads(registry[f"/brokers/topics/{topic}"].value) == {"partitions": A_PARTS}
    offsets = {r.path: r for r in rows if r.kind == "offset" and r.offset is not None}
    node = offsets[f"/consumers/{world.name('fin-2')}/offsets/{topic}/2"]
    assert node.offset == 50 and node.data_version == 1
    assert world.started_ms - 1000 <= node.mtime <= world.finished_ms + 1000
    groups = {r.group: r for r in rows if r.kind == "group"}
    assert groups[world.name("rb-ro")].writable is False
    assert "does not grant WRITE" in groups[world.name("rb-ro")].note
    assert groups[world.name("rb-2")].writable is True


# -- verdicts and numbers ---------------------------------------------------------------------


def test_every_group_gets_the_verdict_its_setup_implies(audited, world) -> None:
    result = audited[0]
    got = {g["group"]: g for g in result.groups}
    assert sorted(got) == sorted(world.name(s) for s in GROUPS)
    for short, g in GROUPS.items():
        row = got[world.name(short)]
        assert row["verdict"] == g.verdict, (short, row["reasons"])
        text = " | ".join(row["reasons"])
        for want in g.reasons:
            assert world.fmt(want) in text, (short, text)
        notes = " | ".join(row["notes"])
        for want in g.notes:
            assert world.fmt(want) in notes, (short, notes)
    counts = result.summary["verdicts"]
    assert counts == {
        v: sum(g.verdict == v for g in GROUPS.values())
        for v in {g.verdict for g in GROUPS.values()}
    }


def test_partition_numbers_match_the_setup(audited, world) -> None:
    parts = {(p["group"], p["topic"], p["partition"]): p for p in audited[0].partitions}
    ends = {"A": A_MSGS, "B": B_MSGS}
    checked = 0
    for short, g in GROUPS.items():
        topic = world.topics[g.topic]
        kafka = world.final_kafka(short)
        for p in range(len(g.zk)):
            zk = g.zk[p] if g.zk[p] is not BAD and g.in_zk else None
            kf = kafka[(topic, p)]
            row = parts.get((world.name(short), topic, p))
            if zk is None and kf is None and g.zk[p] is not BAD:
                continue
            assert row is not None, (short, p)
            assert row["zk_offset"] == zk, (short, p)
            assert row["kafka_offset"] == kf, (short, p)
            assert row["difference"] == (kf - zk if zk is not None and kf is not None else None)
            assert row["log_end_offset"] == ends[g.topic]
            assert row["zk_lag"] == (ends[g.topic] - zk if zk is not None and zk >= 0 else None)
            assert row["kafka_lag"] == (ends[g.topic] - kf if kf is not None else None)
            if kf is not None:
                commits = 1 if g.consumer else ROUNDS
                assert row["kafka_commits"] == commits, (short, p)
                assert world.started_ms - 1000 <= row["kafka_last_commit_ms"] <= world.finished_ms
                if not g.consumer:
                    assert row["kafka_commits_per_min"] > 0
            if zk is not None and not g.read_only:
                assert world.started_ms - 1000 <= row["zk_last_commit_ms"] <= world.finished_ms
                assert row["zk_commits_per_min"] is None or row["zk_commits_per_min"] > 0
            checked += 1
    assert checked >= 45
    # tombstones: deleted in Kafka, shown as such
    tomb = parts[(world.name("tomb-1"), world.topics["B"], 0)]
    assert tomb["kafka_deleted"] is True and tomb["kafka_offset"] is None
    groups = {g["group"]: g for g in audited[0].groups}
    fin = groups[world.name("fin-2")]
    assert (fin["partitions"], fin["equal_partitions"], fin["lag"]) == (3, 3, 70 + 60 + 50)
    div = groups[world.name("div-0")]
    assert (div["diverged_partitions"], div["total_difference"]) == (2, 0)


def test_record_versions_and_activity(audited, world) -> None:
    result = audited[0]
    versions = {
        (v["key_kind"], v["key_version"], v["value_kind"], v["value_version"]): v
        for v in result.versions
    }
    assert versions[("offset_commit", 1, "offset_commit", 3)]["records"] > 0
    # tomb-0 deleted 2 partitions, tomb-1 its group (2 partitions): other tests may add more
    assert versions[("offset_commit", 1, "tombstone", None)]["records"] >= 4
    assert versions[("group_metadata", 2, "group_metadata", 3)]["known"] is True
    assert result.summary["unknown_version_records"] == sum(
        v["records"] for v in result.versions if not v["known"]
    )
    per_group: dict[str, int] = {}
    for a in result.activity:
        per_group[a["group"]] = per_group.get(a["group"], 0) + a["commits"]
    for short, g in GROUPS.items():
        n = sum(o is not None for o in g.kafka) * (1 if g.consumer else ROUNDS)
        assert per_group.get(world.name(short), 0) == n, short
    for table in ("groups", "partitions", "record_versions", "activity"):
        assert list((result.out / table).glob("*.parquet")), table
    summary = json.loads((result.out / "summary.json").read_text())
    assert summary["groups"] == len(GROUPS)
    assert set(summary["timings_s"]) >= {"decode and compact __consumer_offsets"}


# -- the report in a real browser -------------------------------------------------------------


def _chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "Debian chromium is missing: scripts/setup.sh installs it"
    return subprocess.run(
        [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _png_rows(path: Path) -> tuple[int, int, int]:
    """Width, height and number of distinct pixel rows of a PNG (8-bit RGB/RGBA)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    height = depth = color = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert depth == 8 and color in (2, 6)
    raw = zlib.decompress(idat)
    stride = 1 + width * (3 if color == 2 else 4)
    rows = {raw[i * stride + 1 : (i + 1) * stride] for i in range(height)}
    return width, height, len(rows)


def test_report_renders_in_headless_chromium(audited, world, tmp_path) -> None:
    report = audited[0].out / "report.html"
    png = tmp_path / "report.png"
    shot = _chromium(
        f"--screenshot={png}", "--window-size=1400,2000", report.as_uri(), profile=tmp_path / "p1"
    )
    assert png.exists(), shot.stderr[-2000:]
    width, height, distinct = _png_rows(png)
    assert (width, height) == (1400, 2000)
    assert png.stat().st_size > 30_000 and distinct > 200  # text, bars, tables: not blank
    dom = _chromium("--dump-dom", report.as_uri(), profile=tmp_path / "p2").stdout
    assert dom.startswith("<html") or "<body" in dom
    for short in GROUPS:
        assert f"<b>{world.name(short)}</b>" in dom, short
        assert dom.count(world.name(short)) >= 4  # table, partitions, and in the plots
    for plot in ("lag", "divergence", "activity"):
        svg = re.search(rf'<svg id="plot-{plot}".*?</svg>', dom, re.S)
        assert svg, plot
        assert svg.group(0).count("<rect") >= len(GROUPS) // 2, plot
        assert "<title>" in svg.group(0)
    # nothing in the page refers to anything outside it
    assert not re.search(r"(src|href)=\"(https?:)?//", dom)


# -- the same audit from a dump, through the command line ---------------------------------------


def test_cli_dump_then_audit_of_the_dump_agrees(audited, world, spark, tmp_path, capsys) -> None:
    dump_dir = tmp_path / "dump"
    assert (
        cli_main(["audit", "dump", "--bootstrap-server", world.bootstrap, "--out", str(dump_dir)])
        == 0
    )
    manifest = dump.read_manifest(dump_dir)
    assert manifest["records"] >= 50 and manifest["tombstones"] >= 4
    ends = dump.read_log_end_offsets(dump_dir)
    assert ends[(world.topics["A"], 2)] == A_MSGS
    out = tmp_path / "from-dump"
    code = cli_main(
        [
            "audit",
            "--dump",
            str(dump_dir),
            "--snapshot",
            str(audited[1]),
            "--out",
            str(out),
            "--groups",
            re.escape(world.prefix) + ".*",
        ]
    )
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert f"audit: {len(GROUPS)} groups" in printed.out
    assert "[1/6] decode and compact __consumer_offsets" in printed.err
    from_dump = {
        r["group"]: (r["verdict"], r["reasons"])
        for r in spark.read.parquet(str(out / "groups")).collect()
    }
    from_kafka = {g["group"]: (g["verdict"], g["reasons"]) for g in audited[0].groups}
    assert from_dump == from_kafka


# -- what no real cluster can be made to write ----------------------------------------------------


def test_records_of_unknown_versions_are_counted_not_fatal(spark, tmp_path) -> None:
    """A dump with what newer clusters write and this decoder does not read (a share
    group's key, newer value versions), KIP-848 records it does read (one cut short), and
    what nobody should write (garbage): counted by version."""
    key = encode_key(OffsetCommitKey("x-g", "t", 0))
    key_n = encode_key(OffsetCommitKey("x-n", "t", 0))
    records = [
        dump.RawRecord(0, 0, 1_000, key, encode_value(OffsetCommitValue(5, "", 1_000, 4))),
        dump.RawRecord(0, 1, 2_000, key, encode_value(OffsetCommitValue(7, "", 2_000, 1))),
        dump.RawRecord(0, 2, 3_000, key, b"\x00\x09" + b"\x00" * 20),  # value v9: newer
        dump.RawRecord(
            0, 3, 4_000, b"\x00\x03" + encode_key(GroupMetadataKey("x-g"))[2:], b"\x00\x00"
        ),
        dump.RawRecord(0, 4, 5_000, b"\x00\x08\x00\x03x-g\x00\x01m", None),
        dump.RawRecord(0, 5, 5_500, b"\x00\x0b" + encode_key(GroupMetadataKey("x-g"))[2:], None),
        dump.RawRecord(1, 0, 6_000, b"\x00\x01\x00", b"\x00\x03"),  # truncated key
        dump.RawRecord(1, 1, 7_000, encode_key(OffsetCommitKey("x-h", "t", 0)), b"\x00\x03\x00"),
        # x-n: a next-generation group with one member, Kafka ahead of ZooKeeper
        *(
            dump.RawRecord(
                2, i, 8_000 + i, next_gen.encode_key(k), next_gen.encode_value(k.record_type, v)
            )
            for i, (k, v) in enumerate(next_gen.examples("x-n"))
        ),
        dump.RawRecord(2, 9, 9_000, key_n, encode_value(OffsetCommitValue(8, "", 9_000))),
    ]
    assert decode_key(records[3].key) == ConsumerGroupKey(3, "x-g")
    assert decode_key(records[5].key) == UnknownKey(11)
    dump_dir = tmp_path / "dump"
    dump.write_dump(dump_dir, iter(records), {("t", 0): 10}, fmt="jsonl")
    snap = tmp_path / "snap"
    snapshot.write(
        snap,
        [snapshot.NodeRow("offset", "/consumers/x-g/offsets/t/0", "x-g", "t", 0, offset=7)]
        + [snapshot.NodeRow("group", "/consumers/x-g", "x-g", writable=True)]
        + [snapshot.NodeRow("offset", "/consumers/x-n/offsets/t/0", "x-n", "t", 0, offset=5)]
        + [snapshot.NodeRow("group", "/consumers/x-n", "x-n", writable=True)]
        # the bridge's mirror of x-n's member (not an old consumer), and one old consumer
        + [
            snapshot.NodeRow("consumer", f"/consumers/x-n/ids/{c}", "x-n", consumer_id=c)
            for c in ("x-n_~~m-1", "old-host-1700000000000-0f3c")
        ],
        {"format": snapshot.SNAPSHOT_FORMAT, "version": 1},
        "jsonl",
    )
    result = run(spark, AuditConfig(snapshot=snap, out=tmp_path / "out", dump=dump_dir))
    versions = {
        (v["key_kind"], v["key_version"], v["value_kind"], v["value_version"]): (
            v["records"],
            v["known"],
        )
        for v in result.versions
    }
    assert versions == {
        ("offset_commit", 1, "offset_commit", 4): (1, True),
        ("offset_commit", 1, "offset_commit", 1): (1, True),
        ("offset_commit", 1, "unknown", 9): (1, False),
        ("offset_commit", 1, "offset_commit", 3): (2, True),  # x-h's cut short, x-n's
        ("consumer_group", 3, "consumer_group", 0): (2, True),  # x-g's epoch cut short
        **{("consumer_group", t, "consumer_group", 0): (1, True) for t in (4, 5, 6, 7, 8, 16)},
        ("consumer_group", 8, "tombstone", None): (1, True),
        ("unknown", 11, "tombstone", None): (1, False),
        ("undecodable", None, "undecodable", None): (1, False),
    }
    assert result.summary["unknown_version_records"] == 3
    groups = {g["group"]: g for g in result.groups}
    # x-g's last commit is of a version this decoder does not read: it cannot be judged
    assert groups["x-g"]["verdict"] == BLOCKED
    assert "offset commit value v9 is newer than this decoder" in groups["x-g"]["reasons"][0]
    # x-n, Kafka ahead, is ready to roll back as a classic group would be: its live
    # next-generation member and its old consumer are noted, not blockers
    n = groups["x-n"]
    assert (n["kafka_group_type"], n["kafka_members"], n["kafka_generation"]) == ("consumer", 1, 7)
    assert n["verdict"] == READY_TO_ROLL_BACK and n["can_roll_back"] and not n["can_finalize"]
    assert "1 member(s) in the Kafka group (next-generation)" in n["notes"]
    assert n["zk_consumers"] == 1  # the mirrored member is not an old consumer
    assert "1 old consumer(s) registered in ZooKeeper" in n["notes"]
    assert groups["x-g"]["kafka_group_type"] == "consumer"  # its epoch record, cut short
    # x-h's only commit is a truncated v3 value
    assert groups["x-h"]["verdict"] == BLOCKED
    assert "undecodable last Kafka record" in groups["x-h"]["reasons"][0]
