"""Stage 1 of the audit on Spark ``local[2]`` against a plain reading of the same records.

A dump made to be awkward - offset commit keys v0 and v1 of the same partition, the latest
record of a key in another ``__consumer_offsets`` partition than the rest, every value
version, tombstones first, last and in between, group metadata with members and with bad
member blobs, KIP-848 records (members joining and leaving, groups of either type, values
cut short), share groups' keys, undecodable keys and values, versions newer than the decoder -
is compacted by :func:`bridge.audit.compaction.decode_and_compact`, and every row of its
offsets, groups and version counts must equal what :func:`expected` finds going through the
records one by one, as the group coordinator loads the topic. No Kafka needed, only Spark.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bridge.audit import dump, next_gen
from bridge.audit.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
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

pytestmark = pytest.mark.integration

GROUPS = [f"g{i}" for i in range(7)] + ["gé-ü"]
TOPICS = ["alpha", "beta"]
PARTITIONS = 3
T0 = 1_700_000_000_000


def _offset_key(rng: random.Random, group: str) -> bytes:
    version = 0 if rng.random() < 0.25 else 1
    return encode_key(
        OffsetCommitKey(group, rng.choice(TOPICS), rng.randrange(PARTITIONS), version)
    )


def _offset_value(rng: random.Random, n: int, ts: int) -> bytes | None:
    r = rng.random()
    if r < 0.12:
        return None  # tombstone
    if r < 0.15:
        return (9).to_bytes(2, "big") + b"\x00" * 30  # newer than the decoder
    if r < 0.18:
        return encode_value(OffsetCommitValue(n, "m", ts, 3, leader_epoch=1))[:-3]  # truncated
    if r < 0.19:
        return b"\x00"  # no whole version
    version = rng.choice([0, 1, 2, 3, 3, 3, 4])
    return encode_value(
        OffsetCommitValue(
            n,
            rng.choice(["", "meta", "ünï", "x" * 40]),
            ts,
            version,
            leader_epoch=rng.randrange(5) if version >= 3 else -1,
            expire_timestamp=ts + 1000 if version == 1 else -1,
        )
    )


def _group_value(rng: random.Random, group: str, ts: int) -> bytes | None:
    if rng.random() < 0.2:
        return None  # group removed
    version = rng.choice([0, 1, 2, 3, 4])
    members = []
    for m in range(rng.randrange(0, 3)):
        topics = tuple(sorted(rng.sample(TOPICS, rng.randrange(1, 3))))
        sub = encode_subscription(Subscription(topics, None, (), -1, None, 0))
        if rng.random() < 0.15:
            sub = b"\x00\x00\xff"  # a bad member blob
        members.append(
            MemberMetadata(
                f"m{m}-{group}",
                f"c{m}",
                "/10.0.0.1",
                30000,
                sub,
                encode_assignment(Assignment(tuple((t, (m,)) for t in topics))),
                60000 if version >= 1 else -1,
                f"static-{m}" if version >= 3 and m == 0 else None,
            )
        )
    value = GroupMetadataValue(
        "consumer",
        rng.randrange(1, 50),
        "range" if members else None,
        members[0].member_id if members else None,
        tuple(members),
        version,
        ts if version >= 2 else -1,
    )
    return encode_value(value)


def _next_gen_record(rng: random.Random, group: str) -> tuple[bytes, bytes | None]:
    """A record of a next-generation group (KIP-848): a member of three, or the group's."""
    examples = dict((k.record_type, (k, v)) for k, v in next_gen.examples(group))
    key, value = examples[rng.choice(list(examples))]
    if key.member_id is not None:
        key = replace(key, member_id=rng.choice(["m-1", "m-2", "m-3"]))
    if key.record_type == next_gen.METADATA:
        value = next_gen.VALUES[key.record_type](epoch=rng.randrange(1, 50))
    elif key.record_type == next_gen.MEMBER_METADATA:
        value = replace_fields(
            value,
            subscribed_topic_names=rng.sample(TOPICS, rng.randrange(0, 3)),
            server_assignor=rng.choice(["uniform", "range", None]),
        )
    r = rng.random()
    raw = next_gen.encode_value(key.record_type, value)
    if r < 0.2:
        return next_gen.encode_key(key), None  # a member left, or the group was removed
    if r < 0.25:
        return next_gen.encode_key(key), raw[:-2]  # cut short
    return next_gen.encode_key(key), raw


def replace_fields(value: Any, **fields: Any) -> Any:
    """An ``ApiData`` with some fields replaced."""
    return type(value)(**{**value.to_dict(json=False), **fields})


def records(seed: int = 7, n: int = 6000) -> list[dump.RawRecord]:
    """An awkward ``__consumer_offsets``: see the module's docstring."""
    rng = random.Random(seed)
    home = {g: i % 4 for i, g in enumerate(GROUPS)}  # coordinator partition per group
    next_offset = [0] * 5
    out = []
    for i in range(n):
        group = rng.choice(GROUPS)
        # now and then a record lands in another partition (a coordinator move): its
        # position orders it by partition first, as the pipeline's compaction does
        part = 4 if rng.random() < 0.03 else home[group]
        offset = next_offset[part]
        next_offset[part] += rng.choice([1, 1, 1, 2])  # gaps, as compaction leaves
        ts = T0 + i * 1000 + rng.randrange(-5000, 5000)
        r = rng.random()
        if r < 0.7:
            key, value = _offset_key(rng, group), _offset_value(rng, i, ts)
        elif r < 0.85:
            key, value = encode_key(GroupMetadataKey(group)), _group_value(rng, group, ts)
        elif r < 0.91:  # KIP-848 records
            key, value = _next_gen_record(rng, group)
        elif r < 0.92:  # a share group's record: a newer key version, then the group id
            version = rng.randrange(9, 12)
            key = version.to_bytes(2, "big") + encode_key(GroupMetadataKey(group))[2:]
            value = None if rng.random() < 0.2 else b"\x00\x00" + b"\x01" * 12
        elif r < 0.95:  # undecodable keys: truncated, invalid UTF-8, a trailing byte
            good = _offset_key(rng, group)
            key = rng.choice([good[:-2], good[:4] + b"\xff" + good[5:], good + b"\x00", b"\x00"])
            value = _offset_value(rng, i, ts)
        else:  # a group metadata key whose value is an offset commit's, and vice versa
            if rng.random() < 0.5:
                key, value = encode_key(GroupMetadataKey(group)), _offset_value(rng, i, ts)
            else:
                key, value = _offset_key(rng, group), _group_value(rng, group, ts)
        out.append(dump.RawRecord(part, offset, ts, key, value))
    rng.shuffle(out)  # file order is not log order
    return out


def expected(recs: list[dump.RawRecord]) -> dict[str, Any]:
    """Offsets, groups and version counts, going through the records in log order.

    The same decoder (:func:`bridge.audit.decode.decode_row`), but no aggregation: a
    dict per (group, topic, partition) and per group, the later record replacing the
    earlier, tombstones included; the pipeline's column derivations written out plainly.
    """
    from bridge.audit.decode import TOMBSTONE, decode_row

    offsets: dict[tuple, dict] = {}
    groups: dict[str, dict] = {}
    next_gen_rows: dict[tuple, dict] = {}
    versions: dict[tuple, int] = {}
    for rec in sorted(recs, key=lambda r: (r.partition, r.offset)):
        vhead = None if rec.value is None else rec.value[:2]
        row = decode_row(rec.key, vhead, rec.value)
        kind, vkind = row["key_kind"], row["value_kind"]
        vk = (kind, row.get("key_version"), vkind, row.get("value_version"))
        versions[vk] = versions.get(vk, 0) + 1
        if kind == "offset_commit":
            k = (row["group"], row["topic"], row["partition"])
            o = offsets.setdefault(k, {"commits": 0, "tombstones": 0, "first": None})
            if vkind == TOMBSTONE:
                o["tombstones"] += 1
            else:
                o["commits"] += 1
                o["first"] = rec.timestamp if o["first"] is None else min(o["first"], rec.timestamp)
                o["last_ts"] = max(o.get("last_ts", rec.timestamp), rec.timestamp)
            o["row"] = row
        elif kind == "group_metadata":
            groups[row["group"]] = row
        elif kind == next_gen.KIND:
            next_gen_rows[(row["group"], row["key_version"], row.get("member_id"))] = row
    out_offsets = {}
    for (g, t, p), o in offsets.items():
        row = o["row"]
        ok = row["value_kind"] == "offset_commit" and row.get("error") is None
        error = row.get("error")
        if row["value_kind"] == "unknown":
            error = f"offset commit value v{row['value_version']} is newer than this decoder"
        span = None if o["first"] is None else (o["last_ts"] - o["first"]) / 60000.0
        out_offsets[(g, t, p)] = {
            "kafka_offset": row.get("commit_offset") if ok else None,
            "kafka_deleted": row["value_kind"] == TOMBSTONE,
            "kafka_error": error,
            "kafka_last_commit_ms": row.get("commit_timestamp") if ok else None,
            "kafka_metadata": row.get("commit_metadata"),
            "kafka_commits": o["commits"],
            "kafka_tombstones": o["tombstones"],
            "kafka_commits_per_min": (o["commits"] - 1) / span if span else None,
        }
    out_groups = {
        g: {
            "kafka_group_removed": row["value_kind"] == TOMBSTONE,
            "kafka_protocol_type": row.get("protocol_type"),
            "kafka_protocol": row.get("protocol"),
            "kafka_generation": row.get("generation"),
            "kafka_members": row.get("members") or 0,
            "kafka_member_topics": row.get("member_topics"),
            "kafka_group_type": "classic",
        }
        for g, row in groups.items()
    }
    typed_groups = _next_gen_groups(next_gen_rows)
    removed = [g for g in out_groups.values() if g["kafka_group_removed"]]
    removed += [g for g in typed_groups.values() if g["kafka_group_removed"]]
    for g, typed in typed_groups.items():
        classic = out_groups.get(g)
        # the live type wins; live in both: consumer-type
        if classic is None or typed["kafka_group_removed"] <= classic["kafka_group_removed"]:
            out_groups[g] = typed
    return {
        "offsets": out_offsets,
        "groups": out_groups,
        "versions": versions,
        "kept": len(out_offsets) + len(groups) + len(next_gen_rows),
        "removed": len(removed),  # of either type, before the live type is picked
    }


def _next_gen_groups(kept: dict[tuple, dict]) -> dict[str, dict]:
    """A next-generation group as its last records leave it, written out plainly."""
    out: dict[str, dict] = {}
    for (g, record_type, _member), row in sorted(kept.items(), key=str):
        o = out.setdefault(
            g,
            {
                "kafka_group_removed": True,
                "kafka_protocol_type": "consumer",
                "kafka_protocol": None,
                "kafka_generation": None,
                "kafka_members": 0,
                "kafka_member_topics": [],
                "kafka_group_type": "consumer",
            },
        )
        if row["value_kind"] != next_gen.KIND:
            continue  # removed, or a version the decoder does not read
        if record_type == next_gen.METADATA:
            o["kafka_group_removed"] = False
            o["kafka_generation"] = row.get("generation")
        elif record_type == next_gen.MEMBER_METADATA:
            o["kafka_members"] += 1
            topics = set(o["kafka_member_topics"]) | set(row.get("member_topics") or ())
            o["kafka_member_topics"] = sorted(topics)
            if row.get("protocol") is not None:
                o["kafka_protocol"] = max(o["kafka_protocol"] or "", row["protocol"])
    return out


@pytest.fixture(scope="module")
def spark():
    from bridge.audit.session import spark_session

    session = spark_session("local[2]", app_name="kafka-zk-bridge audit compaction test")
    yield session
    session.stop()


def _compare(stage1, want: dict[str, Any]) -> None:
    got_offsets = {}
    for r in stage1.offsets.collect():
        d = r.asDict()
        got_offsets[(d.pop("group"), d.pop("topic"), d.pop("partition"))] = d
    assert got_offsets.keys() == want["offsets"].keys()
    for k, w in want["offsets"].items():
        g = got_offsets[k]
        per_min, w_per_min = g.pop("kafka_commits_per_min"), w["kafka_commits_per_min"]
        assert g == {n: v for n, v in w.items() if n != "kafka_commits_per_min"}, k
        assert per_min == pytest.approx(w_per_min), k
    got_groups = {r["group"]: r.asDict() for r in stage1.groups.collect()}
    for d in got_groups.values():
        del d["group"]
    assert got_groups == want["groups"]
    got_versions = {
        (v["key_kind"], v["key_version"], v["value_kind"], v["value_version"]): v["records"]
        for v in stage1.versions
    }
    assert got_versions == want["versions"]


@pytest.mark.parametrize("path", ["broadcast", "shuffle"])
def test_stage_one_compacts_as_the_coordinator_loads(
    spark, tmp_path: Path, monkeypatch, path: str
) -> None:
    from bridge.audit import compaction
    from bridge.audit.compaction import decode_and_compact
    from bridge.audit.sources import dump_source

    if path == "shuffle":  # what a topic of millions of keys takes: a shuffle join, many tasks
        monkeypatch.setattr(compaction, "BROADCAST_KEYS", 0)
        monkeypatch.setattr(compaction, "PAIRS_PER_TASK", 100)
    recs = records()
    dump.write_dump(tmp_path, recs, {}, batch_rows=1000)
    stage1 = decode_and_compact(dump_source(spark, tmp_path))
    want = expected(recs)
    # the dump is as awkward as meant
    kinds = {k[0] for k in want["versions"]}
    assert kinds == {"offset_commit", "group_metadata", "consumer_group", "unknown", "undecodable"}
    typed = {g["kafka_group_type"] for g in want["groups"].values() if not g["kafka_group_removed"]}
    assert typed == {"classic", "consumer"}
    assert any(g["kafka_members"] > 1 for g in want["groups"].values())
    assert {k[1] for k in want["versions"] if k[0] == "offset_commit"} == {0, 1}
    assert any(o["kafka_deleted"] for o in want["offsets"].values())
    assert any(o["kafka_error"] for o in want["offsets"].values())
    assert want["removed"] > 0
    assert stage1.records == len(recs)
    _compare(stage1, want)
    # every pair was decoded or counted, and only the rows compaction keeps carry values
    kept = stage1.decoded.where("kept").count()
    assert kept == want["kept"]
    assert stage1.decoded.count() == stage1.keys
    stage1.unpersist()


def test_a_latest_record_gone_by_the_second_read(spark, tmp_path: Path, monkeypatch) -> None:
    """A pair whose latest record the second read misses is undecodable, not lost."""
    from pyspark.sql import functions as F

    from bridge.audit import compaction
    from bridge.audit.decode import COMPACTED_AWAY
    from bridge.audit.sources import dump_source

    recs = records(seed=11, n=3000)
    dump.write_dump(tmp_path, recs, {}, batch_rows=1000)
    src = dump_source(spark, tmp_path)
    raw = compaction.aggregate_raw(src).collect()
    # the latest record of one offset commit pair and one group metadata pair disappear
    gone = {}
    for r in raw:
        kind = int.from_bytes(r["key"][:2], "big")
        if r["vhead"] is not None and kind in (1, 2) and kind not in gone:
            gone[kind] = r["latest_order"]
    assert len(gone) == 2
    order = compaction._order()
    reread = src.where(~order.isin(list(gone.values())))
    decode_latest = compaction.decode_latest
    monkeypatch.setattr(
        compaction,
        "decode_latest",
        lambda s, r, k, again=None: decode_latest(reread, r, k, again),
    )
    stage1 = compaction.decode_and_compact(src)
    lost = stage1.decoded.where(F.col("error") == COMPACTED_AWAY).collect()
    assert len(lost) == 2
    assert {r["value_kind"] for r in lost} == {"undecodable"}
    # every pair still has its row and every record its count
    assert stage1.decoded.count() == stage1.keys == len(raw)
    assert stage1.records == len(recs)
    stage1.unpersist()
