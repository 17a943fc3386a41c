"""Decoder fuzzing (issue 7): every decoder of foreign bytes, zero unhandled exceptions.

    python -m bench.fuzz [--inputs 1000000] [--engine auto|atheris|mutate|hypothesis]
                         [--jobs 1] [--only NAME ...] [--seed 1] [--list]

Every decoder that reads bytes another program wrote is driven with ``--inputs`` inputs in
all, split evenly between them: the ZooKeeper node decoders of :mod:`zkpaths` (broker,
topic, partition state, controller, controller epoch, cluster id, consumer registration,
owner, offset), the names of the legacy layout (``parse_path``, thread and consumer ids,
mirrored ids, endpoints), and the ``__consumer_offsets`` decoders of :mod:`bridge.audit`
(key, offset commit and group metadata values of every version, the consumer protocol's
subscription and assignment blobs, and the audit's whole per-record decode, ``decode_row``).

Each decoder may fail only with its own documented error (:class:`zkpaths.CodecError`,
:class:`bridge.audit.wire.RecordError`, ...), whose message must be non-empty and bounded;
anything else - ``IndexError``, ``struct.error``, ``UnicodeDecodeError``, ``RecursionError``,
``MemoryError``, a hang - is an *unhandled exception*. Those are counted, the first few are
printed with the input as hex, and the run exits 1. Otherwise it exits 0.

Engines:

* ``atheris`` (the default when it is installed): libFuzzer, coverage-guided over the
  instrumented decoder modules, one subprocess per decoder (``-runs``-style budget), seeded
  with valid encodings of every version; half of the mutations are libFuzzer's own, half
  the structure-aware mutator below. libFuzzer's timeout (10 s) and RSS limit catch hangs
  and runaway allocations, reported with the input that caused them.
* ``mutate`` (the fallback): the same seeds and structure-aware mutator in a plain loop,
  in-process; an input whose outcome (result type, or error reason with the numbers and
  quoted data masked) is new joins the corpus, a cheap stand-in for coverage feedback.
* ``hypothesis``: the same mutator driven by Hypothesis (seed choice, mutation seed), plus
  arbitrary binaries; slower, kept so the harness runs where only the test extra is.

The structure-aware mutator knows three shapes: JSON documents (a field replaced by a value
of the wrong type, deleted, duplicated, a huge or non-finite number, deep nesting, lone
surrogates, invalid UTF-8, another version), Kafka binary (versions -1..12 and extremes
written over the int16 prefix, huge int16/int32 lengths and over-long varints written over
a random offset, truncation, splicing with another seed), and plain text; plus libFuzzer's
style byte edits (bit flips, inserts, deletes, interesting integers).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[1]

#: an expected error's message must be no longer than this (invariant I5: bounded excerpts)
MAX_MESSAGE = 1000
#: failures kept per decoder, with their input
KEEP_FAILURES = 5
#: longest input the engines produce (libFuzzer -max_len; the mutate engine's cap)
MAX_LEN = 4096
#: corpus size cap per decoder for the mutate engine
MAX_CORPUS = 2000
#: the issue's target
TARGET_INPUTS = 1_000_000


# -- targets -----------------------------------------------------------------------------------


@dataclass
class Target:
    """One decoder: bytes in; ``expected`` is the only error type it may raise."""

    name: str
    decode: Callable[[bytes], object]
    expected: tuple[type[BaseException], ...]
    shape: str  # "json", "binary", "text" or "row"
    seeds: list[bytes]
    #: keys known to the format, for the JSON mutator to add
    keys: tuple[str, ...] = ()
    #: longest acceptable message of an expected error (None: not checked). Node data and
    #: records are foreign input, so their errors quote bounded excerpts (invariant I5);
    #: names are quoted whole (ZooKeeper bounds them)
    max_message: int | None = MAX_MESSAGE


def _row_frame(key: bytes, value: bytes | None) -> bytes:
    """The ``audit_row`` input: int16 key length, key, then the value (none: a tombstone)."""
    return struct.pack(">H", len(key)) + key + (value if value is not None else b"")


def _decode_row_input(decode_row: Callable) -> Callable[[bytes], object]:
    def run(data: bytes) -> object:
        n = int.from_bytes(data[:2], "big") if len(data) >= 2 else 0
        key = data[2 : 2 + n]
        value = data[2 + n :] if len(data) > 2 + n else None
        return decode_row(key, None if value is None else value[:2], value)

    return run


def _text_input(parse: Callable[[str], object]) -> Callable[[bytes], object]:
    """Names reach the bridge as text (kazoo decodes them); undecodable bytes become U+FFFD."""

    def run(data: bytes) -> object:
        return parse(data.decode("utf-8", "replace"))

    return run


def _dumps(doc: object, pretty: bool = False) -> bytes:
    if pretty:
        return json.dumps(doc, indent=1, ensure_ascii=True).encode()
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


def _broker_seeds() -> list[bytes]:
    """Broker registrations of every version, as Kafka and older brokers wrote them."""
    import zkpaths

    dumps = _dumps
    brokers = [
        zkpaths.encode_broker(
            zkpaths.BrokerRegistration.from_endpoints(
                1,
                ["PLAINTEXT://h1:9092", "SSL://[::1]:9093", "INTERNAL://:9094"],
                listener_security_protocol_map={
                    "PLAINTEXT": "PLAINTEXT",
                    "SSL": "SSL",
                    "INTERNAL": "SASL_PLAINTEXT",
                },
                jmx_port=9999,
                timestamp_ms=1_700_000_000_000,
                rack="rack-a",
                features={"metadata.version": {"min_version": 1, "max_version": 21}},
                version=5,
            )
        ),
        zkpaths.encode_broker(
            zkpaths.BrokerRegistration.from_endpoints(0, ["PLAINTEXT://broker-0.example:9092"])
        ),
        dumps(
            {"jmx_port": -1, "timestamp": "1400000000000", "host": "h", "version": 1, "port": 9092}
        ),
        dumps(
            {
                "jmx_port": -1,
                "timestamp": "1500000000000",
                "endpoints": ["PLAINTEXT://h:9092", "SSL://h:9093"],
                "host": "h",
                "version": 2,
                "port": 9092,
            }
        ),
        dumps(
            {
                "jmx_port": 7,
                "timestamp": 1500000000000,
                "endpoints": ["SASL_SSL://h:9094"],
                "host": None,
                "version": 3,
                "port": -1,
                "rack": "r",
            },
            pretty=True,
        ),
    ]
    return brokers


def _zk_json_seeds() -> dict[str, list[bytes]]:
    """Topic assignments, partition states, controllers and consumer registrations."""
    import zkpaths

    dumps = _dumps
    topics = [
        zkpaths.encode_topic(
            zkpaths.TopicAssignment(
                {0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2)},
                adding_replicas={1: (4,)},
                removing_replicas={1: (1,)},
                topic_id="ooEOTJNkQzq_OfLeXvvHEQ",
            )
        ),
        zkpaths.encode_topic(zkpaths.TopicAssignment({0: (0,)}, version=1)),
        zkpaths.encode_topic(zkpaths.TopicAssignment({0: (1, 0), 1: (0, 1)}, version=2)),
        dumps({"version": 1, "partitions": {"0": [0, 1], "1": [1, 0]}}, pretty=True),
    ]
    states = [
        zkpaths.encode_partition_state(zkpaths.PartitionState(1, 5, (1, 2, 3), 7)),
        zkpaths.encode_partition_state(
            zkpaths.PartitionState(-1, 0, (), 1, leader_recovery_state=1)
        ),
        dumps(
            {"controller_epoch": 3, "leader": 2, "version": 1, "leader_epoch": 0, "isr": [2]},
            pretty=True,
        ),
    ]
    controllers = [
        zkpaths.encode_controller(zkpaths.ControllerRegistration(0, 1_700_000_000_000)),
        zkpaths.encode_controller(zkpaths.ControllerRegistration(3000, 1, 7)),
        zkpaths.encode_controller(zkpaths.ControllerRegistration(1, 2, -1)),
    ]
    registrations = [
        zkpaths.encode_consumer_registration(
            zkpaths.ConsumerRegistration({"orders": 2, "payments": 1}, timestamp_ms=1_500_000_000)
        ),
        zkpaths.encode_consumer_registration(
            zkpaths.ConsumerRegistration({"orders\\.(eu|us)/.*": 3}, zkpaths.WHITE_LIST)
        ),
        zkpaths.encode_consumer_registration(
            zkpaths.ConsumerRegistration({"__.*": 1}, zkpaths.BLACK_LIST, timestamp_ms=0)
        ),
        b'{ "pattern":"static", "subscription":{ "t": 1 }, "timestamp":"1", "version":1 }',
        dumps({"version": "1", "subscription": {"a": 1, "b": 2}, "pattern": "white_list"}),
    ]
    return {
        "topics": topics,
        "states": states,
        "controllers": controllers,
        "registrations": registrations,
    }


def _zk_name_seeds() -> dict[str, list[bytes]]:
    """Owners, offsets, epochs, cluster ids and the names of the legacy layout."""
    import zkpaths

    owners = [
        b"group_host-1500000000000-1a2b3c4d-0",
        b"kafka-node-client-3",
        "g_h\u00f6st-1-deadbeef-12".encode(),
    ]
    offsets = [b"-1", b"0", b"42", b"9223372036854775807"]
    epochs = [zkpaths.encode_controller_epoch(e) for e in (0, 1, 2147483647)]
    cluster_ids = [
        zkpaths.encode_cluster_id("Xo7vV1v7QkW6_oYs5H3pKg"),
        b'{"version":1,"id":"c"}',
    ]
    paths = [
        p.encode()
        for p in (
            "/brokers/ids/1",
            "/brokers/topics/orders/partitions/0/state",
            "/consumers/g/ids/g_h-1-0a1b2c3d",
            "/consumers/g/owners/orders/3",
            "/consumers/g/offsets/orders/2147483647",
            "/controller_epoch",
            "/cluster/id",
        )
    ]
    threads = [b"g_host-1500000000000-1a2b3c4d-0", b"c-12", b"x-y-0"]
    consumer_ids = [b"g_host-1500000000000-1a2b3c4d", b"g_configured", b"g__~~a.0b"]
    mirrored = [
        zkpaths.escape_id(s).encode()
        for s in ("consumer-1-3f2a", "a/b c", "\u00e9\U0001f600", "~.-_")
    ]
    endpoints = [b"PLAINTEXT://h:9092", b"SSL://[fe80::1%eth0]:9093", b"internal://:0"]

    return {
        "owners": owners,
        "offsets": offsets,
        "epochs": epochs,
        "cluster_ids": cluster_ids,
        "paths": paths,
        "threads": threads,
        "consumer_ids": consumer_ids,
        "mirrored": mirrored,
        "endpoints": endpoints,
    }


def _zk_json_targets() -> list[Target]:
    """The registry's JSON decoders: brokers, topics and partition states."""
    import zkpaths
    from zkpaths import CodecError

    brokers = _broker_seeds()
    seeds = _zk_json_seeds()
    topics, states = seeds["topics"], seeds["states"]
    codec = (CodecError,)
    return [
        Target(
            "broker",
            lambda d: zkpaths.decode_broker(1, d),
            codec,
            "json",
            brokers,
            (
                "version",
                "host",
                "port",
                "endpoints",
                "jmx_port",
                "timestamp",
                "rack",
                "listener_security_protocol_map",
                "features",
            ),
        ),
        Target(
            "topic",
            zkpaths.decode_topic,
            codec,
            "json",
            topics,
            ("version", "partitions", "adding_replicas", "removing_replicas", "topic_id"),
        ),
        Target(
            "partition_state",
            zkpaths.decode_partition_state,
            codec,
            "json",
            states,
            (
                "version",
                "leader",
                "leader_epoch",
                "isr",
                "controller_epoch",
                "leader_recovery_state",
            ),
        ),
    ]


def _zk_controller_targets() -> list[Target]:
    """The controller, its epoch, the cluster id and old consumers' registrations."""
    import zkpaths
    from zkpaths import CodecError

    seeds = _zk_json_seeds()
    controllers, registrations = seeds["controllers"], seeds["registrations"]
    names = _zk_name_seeds()
    epochs, cluster_ids = names["epochs"], names["cluster_ids"]
    codec = (CodecError,)
    return [
        Target(
            "controller",
            zkpaths.decode_controller,
            codec,
            "json",
            controllers,
            ("version", "brokerid", "timestamp", "kraftControllerEpoch"),
        ),
        Target("controller_epoch", zkpaths.decode_controller_epoch, codec, "text", epochs),
        Target(
            "cluster_id", zkpaths.decode_cluster_id, codec, "json", cluster_ids, ("version", "id")
        ),
        Target(
            "consumer_registration",
            zkpaths.decode_consumer_registration,
            codec,
            "json",
            registrations,
            ("version", "subscription", "pattern", "timestamp"),
        ),
    ]


def _zk_text_targets() -> list[Target]:
    """Owner and offset nodes, and the names of the legacy layout as kazoo hands them over."""
    import zkpaths
    from zkpaths import CodecError, LegacyFormatError, ZkLayoutError, ZkPathError

    names = _zk_name_seeds()
    owners, offsets, paths = names["owners"], names["offsets"], names["paths"]
    threads, consumer_ids = names["threads"], names["consumer_ids"]
    mirrored, endpoints = names["mirrored"], names["endpoints"]
    codec = (CodecError,)
    return [
        Target("owner", zkpaths.decode_owner, codec, "text", owners),
        Target("offset", zkpaths.decode_offset, codec, "text", offsets),
        # names of the legacy layout, as kazoo hands them over (their errors quote them whole)
        *(
            Target(name, _text_input(parse), (error,), "text", seeds, max_message=None)
            for name, parse, error, seeds in (
                ("path", zkpaths.parse_path, ZkPathError, paths),
                ("thread_id", zkpaths.parse_thread_id, LegacyFormatError, threads),
                (
                    "consumer_id",
                    lambda s: zkpaths.parse_consumer_id("g", s),
                    LegacyFormatError,
                    consumer_ids,
                ),
                ("mirrored_id", zkpaths.unescape_id, ZkLayoutError, mirrored),
                ("endpoint", zkpaths.parse_endpoint, ValueError, endpoints),
            )
        ),
    ]


def _protocol_seeds() -> dict[str, list[bytes]]:
    """Consumer-protocol subscriptions and assignments, offset keys and commit values."""
    from bridge.audit import consumer_protocol as cp
    from bridge.audit import next_gen
    from bridge.audit import records as rec

    sub = [
        cp.encode_subscription(cp.Subscription(("orders", "payments"), None, (), -1, None, 0)),
        cp.encode_subscription(
            cp.Subscription(("orders",), b"\x00\x01ud", (("orders", (0, 1)),), -1, None, 1)
        ),
        cp.encode_subscription(cp.Subscription(("t",), None, (("t", (2,)),), 7, None, 2)),
        cp.encode_subscription(cp.Subscription(("t", "u"), b"", (), 9, "rack-1", 3)),
    ]
    asg = [
        cp.encode_assignment(cp.Assignment((("orders", (0, 2)), ("payments", (1,))), None, v))
        for v in range(4)
    ] + [cp.encode_assignment(cp.Assignment((), b"user", 1))]
    keys = (
        [rec.encode_key(rec.OffsetCommitKey("group-1", "orders", 3, v)) for v in (0, 1)]
        + [rec.encode_key(rec.GroupMetadataKey("group-1"))]
        + [next_gen.encode_key(k) for k, _ in next_gen.examples()]
        + [struct.pack(">h", 11) + b"\x00\x07group-1\x00\x00"]  # a share group's
    )
    commits = [
        rec.encode_value(
            rec.OffsetCommitValue(
                1000 + v,
                "meta" if v % 2 else "",
                1_700_000_000_000,
                v,
                leader_epoch=5 if v >= 3 else -1,
                expire_timestamp=1_700_000_600_000 if v == 1 else -1,
                tagged_fields=((0, b"\x01"), (3, b"")) if v == 4 else (),
            )
        )
        for v in range(5)
    ]

    return {"sub": sub, "asg": asg, "keys": keys, "commits": commits}


def _group_seeds(
    sub: list[bytes], asg: list[bytes], keys: list[bytes], commits: list[bytes]
) -> tuple[list[bytes], list[bytes]]:
    """Group metadata values of every version, and whole audit rows (key and value)."""
    from bridge.audit import next_gen
    from bridge.audit import records as rec

    def member(v: int, i: int) -> rec.MemberMetadata:
        return rec.MemberMetadata(
            f"consumer-{i}-0f3c",
            f"client-{i}",
            "/10.0.0.1",
            10_000,
            sub[min(v, 3)],
            asg[min(v, 3)],
            rebalance_timeout=30_000 if v >= 1 else -1,
            group_instance_id=("static-1" if i else None) if v >= 3 else None,
            tagged_fields=((1, b"x"),) if v >= 4 and i else (),
        )

    groups = [
        rec.encode_value(
            rec.GroupMetadataValue(
                "consumer",
                7,
                "range",
                "consumer-0-0f3c",
                tuple(member(v, i) for i in range(2)),
                v,
                current_state_timestamp=1_700_000_000_000 if v >= 2 else -1,
                tagged_fields=((2, b"ab"),) if v >= 4 else (),
            )
        )
        for v in range(5)
    ] + [
        rec.encode_value(rec.GroupMetadataValue("connect", 0, None, None, (), 3)),
    ]
    rows = (
        [_row_frame(keys[i], commits[v]) for i in (0, 1) for v in range(5)]
        + [_row_frame(keys[2], g) for g in groups]
        + [_row_frame(keys[0], None), _row_frame(keys[2], None), _row_frame(keys[3], b"\x00\x00")]
        + [_row_frame(keys[0], groups[3]), _row_frame(keys[2], commits[3])]
        + [  # a next-generation group's records (KIP-848), and a tombstone of one
            _row_frame(next_gen.encode_key(k), next_gen.encode_value(k.record_type, v))
            for k, v in next_gen.examples()
        ]
        + [_row_frame(keys[6], None)]
    )

    return groups, rows


def _offsets_targets() -> list[Target]:
    """The decoders of __consumer_offsets records, and the audit's per-record decode."""
    from bridge.audit import consumer_protocol as cp
    from bridge.audit import records as rec
    from bridge.audit.decode import decode_row
    from bridge.audit.wire import RecordError

    seeds = _protocol_seeds()
    sub, asg, keys, commits = seeds["sub"], seeds["asg"], seeds["keys"], seeds["commits"]
    groups, rows = _group_seeds(sub, asg, keys, commits)
    record = (RecordError,)
    return [
        # __consumer_offsets
        Target("offsets_key", rec.decode_key, record, "binary", keys),
        Target("offset_commit_value", rec.decode_offset_commit_value, record, "binary", commits),
        Target("group_metadata_value", rec.decode_group_metadata_value, record, "binary", groups),
        Target("subscription", cp.decode_subscription, record, "binary", sub),
        Target("assignment", cp.decode_assignment, record, "binary", asg),
        # the audit's whole per-record decode: it contains every RecordError itself
        Target("audit_row", _decode_row_input(decode_row), (), "row", rows),
    ]


def build_targets() -> dict[str, Target]:
    """Every decoder with its seeds; imports the decoders (instrumented when under atheris)."""
    t = [
        *_zk_json_targets(),
        *_zk_controller_targets(),
        *_zk_text_targets(),
        *_offsets_targets(),
        # the legacy gateway's record converters (fetch responses, produce requests)
        *_gateway_targets(),
        _gateway_request_target(),
    ]
    targets = {x.name: x for x in t}
    targets["_selftest_broken"] = Target(
        "_selftest_broken", _selftest_broken, (ValueError,), "binary", [b"\x01\x02\x03"]
    )
    return targets


def _gateway_targets() -> list[Target]:
    """``down_convert`` and ``up_convert`` over arbitrary bytes: they may raise only
    ConversionError. The first input byte picks the options (bit 0: magic, bit 1:
    min_one_message, bit 2: max_bytes 100 rather than 1 MB); the rest is the records."""
    import struct as st

    from kafka.record.default_records import DefaultRecordBatchBuilder
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    from bridge.gateway.convert import ConversionError, down_convert, up_convert

    limit = 1 << 20  # decompressed bytes: keeps each input fast

    def down(data: bytes) -> object:
        opts = data[0] if data else 0
        return down_convert(
            data[1:],
            magic=opts & 1,
            fetch_offset=3,
            max_bytes=100 if opts & 4 else 1 << 20,
            aborted=[(7, 2)],
            min_one_message=bool(opts & 2),
            max_uncompressed=limit,
        )

    def up(data: bytes) -> object:
        return up_convert(data[1:], magic=(data[0] & 1) if data else 1, max_uncompressed=limit)

    def v2(base: int, codec: int, pid: int = -1, control: int | None = None) -> bytes:
        b = DefaultRecordBatchBuilder(2, codec, pid >= 0, pid, 0, 0, 1 << 20)
        if control is None:
            for i in range(4):
                b.append(i, timestamp=1000 + i, key=b"k" if i % 2 else None, value=b"v" * 40,
                         headers=[("h", b"x")] if i == 3 else [])  # fmt: skip
        else:
            b.append(0, timestamp=1, key=st.pack(">hh", 0, control), value=b"\0" * 6, headers=[])
        data = bytearray(b.build())
        st.pack_into(">q", data, 0, base)
        if control is not None:
            st.pack_into(">h", data, 21, 0x30)
        return bytes(data)

    def legacy(magic: int, codec: int) -> bytes:
        b = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
        for i in range(3):
            b.append(i, timestamp=1000 + i, key=None if i else b"k", value=b"v" * 30)
        return bytes(b.build())

    logs = [v2(0, c) + v2(4, c) for c in (0, 1, 2, 3)]
    logs += [v2(0, 0, 7) + v2(4, 0, 7, control=0) + v2(5, 3), legacy(1, 0) + v2(3, 0)]
    down_seeds = [bytes([o]) + log for log in logs for o in (0, 1, 6)]
    up_seeds = [bytes([m]) + legacy(m, c) for m in (0, 1) for c in (0, 1, 2, 3)]
    errors = (ConversionError,)
    return [
        Target("down_convert", down, errors, "binary", down_seeds),
        Target("up_convert", up, errors, "binary", up_seeds),
    ]


def _gateway_request_target() -> Target:
    """The gateway's decoding of one request frame (header, api key and version, body): it
    may raise only BadRequest, with a bounded message. Seeds: each served request at each of
    its versions, as kafka-python encodes it."""
    from kafka.protocol.consumer import FetchRequest, OffsetCommitRequest, OffsetFetchRequest

    from bridge.gateway.dispatch import HANDLERS, BadRequest, parse_request

    fetch = FetchRequest.FetchTopic
    commit = OffsetCommitRequest.OffsetCommitRequestTopic
    fields = {
        0: {"acks": 1, "timeout_ms": 10, "topic_data": []},
        1: {"replica_id": -1, "max_wait_ms": 1, "min_bytes": 1, "max_bytes": 9, "topics": [
            fetch(topic="t", partitions=[fetch.FetchPartition(
                partition=0, fetch_offset=3, partition_max_bytes=9)])]},
        2: {"replica_id": -1, "topics": []},
        3: {"topics": []},
        8: {"group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "", "topics": [
            commit(name="t", partitions=[commit.OffsetCommitRequestPartition(
                partition_index=0, committed_offset=1, committed_metadata="")])]},
        9: {"group_id": "g", "topics": [
            OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1])]},
        10: {"key": "g"},
        11: {"group_id": "g", "session_timeout_ms": 10, "rebalance_timeout_ms": 10,
             "member_id": "", "protocol_type": "consumer", "protocols": []},
        12: {"group_id": "g", "generation_id": 1, "member_id": "m"},
        13: {"group_id": "g", "member_id": "m"},
        14: {"group_id": "g", "generation_id": 1, "member_id": "m", "assignments": []},
        18: {},
    }  # fmt: skip
    seeds = []
    for key, (cls, lo, hi, _) in sorted(HANDLERS.items()):
        for version in range(lo, hi + 1):
            request = cls[version](**fields[key])
            request.with_header(correlation_id=7, client_id="fuzz")
            seeds.append(bytes(request.encode(header=True)))
    return Target("gateway_request", parse_request, (BadRequest,), "binary", seeds)


def _selftest_broken(data: bytes) -> object:
    """A deliberately broken decoder, to check that the harness reports what it must."""
    if len(data) < 3:
        raise ValueError("too short")
    return data[data[0]]  # IndexError when the first byte points past the end


DEFAULT_EXCLUDED = ("_selftest_broken",)


# -- the structure-aware mutator ---------------------------------------------------------------

_INTERESTING = (0, 1, -1, 2, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000)
_INTERESTING += (0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 2**63 - 1, 2**63, 2**64 - 1)
_VARINTS = (
    b"\x00",
    b"\x01",
    b"\x7f",
    b"\x80\x01",
    b"\xff\xff\xff\xff\x0f",
    b"\xff\xff\xff\xff\x7f",
)
_VARINTS += (b"\x80" * 5 + b"\x01", b"\xff" * 6)
_TOKENS = (
    b"-",
    b"_",
    b"/",
    b"~",
    b".",
    b" ",
    b":",
    b"://",
    b"[",
    b"]",
    b"%",
    b"-1",
    b"0",
    b"9" * 25,
    b"\x00",
    b"\xc3\xa9",
    b"\xed\xa0\x80",  # a UTF-16 surrogate in UTF-8: invalid
    b"\xff",
    b"\xef\xbb\xbf",
    "\U0001f600".encode(),
    b"~~",
    b".0",
    b". 2f",
    b"~d800",
    b"\\",
)
_JSON_VALUES: tuple[object, ...] = (
    None,
    True,
    False,
    0,
    -1,
    1,
    1.5,
    -0.0,
    1e308,
    2**31,
    -(2**31) - 1,
    2**63,
    -(2**63) - 1,
    10**40,
    "",
    "x",
    "1",
    "-1",
    "9" * 25,
    "PLAINTEXT://h:9092",
    "static",
    "white_list",
    [],
    {},
    [1],
    [None],
    [1, 1],
    ["a"],
    {"a": 1},
    {"0": [1]},
    {"min_version": 1, "max_version": 0},
    [[[[]]]],
)
_JSON_TEXT_TRICKS = (
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"1e999",
    b"-0",
    b"1.0",
    b'"\\ud800"',
    b'"\\udfff\\ud800"',
    b'"\\u0000"',
    b"9" * 5000,
    b"[" * 2000 + b"]" * 2000,
    b'{"a":' * 1200 + b"1" + b"}" * 1200,
    b"true",
    b"null",
)


def _mutate_bytes(data: bytes, rng: random.Random, seeds: Sequence[bytes]) -> bytes:
    """One libFuzzer-style edit."""
    b = bytearray(data)
    op = rng.randrange(11)
    if op == 0 and b:  # flip a bit
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    elif op == 1 and b:  # a random byte
        b[rng.randrange(len(b))] = rng.randrange(256)
    elif op == 2:  # insert random bytes
        i = rng.randint(0, len(b))
        b[i:i] = rng.randbytes(rng.randint(1, 8))
    elif op == 3 and b:  # delete a range
        i = rng.randrange(len(b))
        del b[i : i + rng.randint(1, 16)]
    elif op == 4:  # truncate
        del b[rng.randint(0, len(b)) :]
    elif op == 5:  # a token
        i = rng.randint(0, len(b))
        tok = rng.choice(_TOKENS)
        if rng.random() < 0.5 and i < len(b):
            b[i : i + len(tok)] = tok
        else:
            b[i:i] = tok
    elif op == 6 and b:  # duplicate a chunk
        i = rng.randrange(len(b))
        j = min(len(b), i + rng.randint(1, 32))
        k = rng.randint(0, len(b))
        b[k:k] = b[i:j] * rng.choice((1, 2, 8, 64))
    elif op == 7 and seeds:  # splice with a seed
        other = rng.choice(seeds)
        i, j = rng.randint(0, len(b)), rng.randint(0, len(other))
        b = b[:i] + other[j:]
    elif op == 8 and b:  # an interesting integer, big-endian, 1/2/4/8 bytes
        width = rng.choice((1, 2, 4, 8))
        v = rng.choice(_INTERESTING) % (1 << (8 * width))
        i = rng.randrange(len(b))
        b[i : i + width] = v.to_bytes(width, "big")
    elif op == 9:  # swap two bytes / shuffle a short range
        if len(b) >= 2:
            i, j = rng.randrange(len(b)), rng.randrange(len(b))
            b[i], b[j] = b[j], b[i]
    else:  # append junk
        b += rng.randbytes(rng.randint(1, 4))
    return bytes(b)


def _mutate_binary(data: bytes, rng: random.Random, seeds: Sequence[bytes]) -> bytes:
    """Kafka-encoding-aware edits: versions, lengths, varints; else a byte edit."""
    b = bytearray(data)
    op = rng.randrange(6)
    if op == 0:  # another version in the int16 prefix
        v = rng.choice((-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x7FFF, -0x8000))
        b[0:2] = struct.pack(">h", v)
    elif op == 1 and b:  # a huge or negative int16/int32 length anywhere
        width = rng.choice((2, 4))
        v = rng.choice((-1, -2, 0x7FFF, -0x8000, 0x7FFFFFFF, -(2**31), len(b), len(b) + 1))
        v = max(-(2 ** (8 * width - 1)), min(v, 2 ** (8 * width - 1) - 1))
        i = rng.randrange(len(b))
        b[i : i + width] = v.to_bytes(width, "big", signed=True)
    elif op == 2:  # a varint (compact lengths, tagged field counts/tags/sizes)
        i = rng.randint(0, len(b))
        tok = rng.choice(_VARINTS)
        if rng.random() < 0.5:
            b[i : i + len(tok)] = tok
        else:
            b[i:i] = tok
    elif op == 3:  # cut anywhere (every field boundary of a valid record is hit eventually)
        del b[rng.randint(0, len(b)) :]
    else:
        return _mutate_bytes(data, rng, seeds)
    return bytes(b)


def _random_json(rng: random.Random, keys: Sequence[str], depth: int = 0) -> object:
    r = rng.random()
    if depth > 2 or r < 0.6:
        return rng.choice(_JSON_VALUES)
    if r < 0.8:
        return [_random_json(rng, keys, depth + 1) for _ in range(rng.randint(0, 3))]
    pool = list(keys) or ["a"]
    return {rng.choice(pool): _random_json(rng, keys, depth + 1) for _ in range(rng.randint(0, 3))}


def _containers(doc: object, out: list) -> list:
    if isinstance(doc, dict | list):
        out.append(doc)
        for v in doc.values() if isinstance(doc, dict) else doc:
            _containers(v, out)
    return out


def _edit_json(doc: object, op: int, rng: random.Random, target: Target) -> object:
    """Edit ``op`` of the parsed document: replace or delete a field or element (0-4),
    another version (5), an added key or elements (6), another top-level type (7)."""
    nodes = _containers(doc, [])
    if op <= 4 and nodes:  # replace or delete a field / element
        node = rng.choice(nodes)
        if isinstance(node, dict) and node:
            k = rng.choice(list(node))
            if op == 0:
                del node[k]
            else:
                node[k] = _random_json(rng, target.keys)
        elif isinstance(node, list) and node:
            i = rng.randrange(len(node))
            if op == 0:
                del node[i]
            else:
                node[i] = _random_json(rng, target.keys)
        elif isinstance(node, dict):
            node[rng.choice(target.keys or ("a",))] = _random_json(rng, target.keys)
        else:
            node.append(_random_json(rng, target.keys))
    elif op == 5 and isinstance(doc, dict):  # another version, of any type
        doc["version"] = rng.choice((0, 1, 2, 3, 4, 5, 6, -1, "1", "2", 1.0, True, None, 2**64))
    elif op == 6 and nodes:  # add a (known) key
        node = rng.choice(nodes)
        if isinstance(node, dict):
            node[rng.choice((*target.keys, "", "x", "0", "\u00e9"))] = _random_json(
                rng, target.keys
            )
        else:
            node.extend([rng.choice(_JSON_VALUES)] * rng.choice((1, 2, 50)))
    elif op == 7:  # another top-level type
        doc = _random_json(rng, target.keys)
    return doc


def _json_text_trick(text: bytes, rng: random.Random, target: Target) -> bytes:
    """Textual tricks JSON libraries disagree on: a literal json.dumps cannot write, a
    duplicate key, invalid UTF-8 / BOM / NUL, or a byte-level mutation."""
    trick = rng.random()
    if trick < 0.5:
        # a scalar replaced with a literal json.dumps cannot write
        spots = [m.span() for m in re.finditer(rb'-?[0-9][0-9.eE+-]*|"[^"\\]*"', text)]
        if spots:
            i, j = rng.choice(spots)
            text = text[:i] + rng.choice(_JSON_TEXT_TRICKS) + text[j:]
    elif trick < 0.7 and text.startswith(b"{") and len(text) > 2:  # a duplicate key
        k = rng.choice(target.keys or ("a",))
        text = b'{"' + k.encode() + b'":1,' + text[1:]
    elif trick < 0.85:  # invalid UTF-8 / BOM / NUL somewhere
        i = rng.randint(0, len(text))
        text = (
            text[:i] + rng.choice((b"\xff", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\x00")) + text[i:]
        )
    else:
        text = _mutate_bytes(text, rng, target.seeds)
    return text


def _mutate_json(data: bytes, rng: random.Random, target: Target) -> bytes:
    """A JSON-aware edit: the document still parses (mostly), with something wrong in it."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        if rng.random() < 0.5:
            return _mutate_bytes(data, rng, target.seeds)
        doc = json.loads(rng.choice(target.seeds))
    op = rng.randrange(10)
    doc = _edit_json(doc, op, rng, target)
    indent = rng.choice((None, None, None, 0, 1))
    text = json.dumps(doc, indent=indent, ensure_ascii=rng.random() < 0.3)
    text = text.encode("utf-8", "surrogatepass")  # lone surrogates from a \\ud800 input
    if op in (8, 9) or rng.random() < 0.1:  # textual tricks JSON libraries disagree on
        text = _json_text_trick(text, rng, target)
    return text


def mutate(target: Target, data: bytes, rng: random.Random, max_len: int = MAX_LEN) -> bytes:
    """1-4 stacked structure-aware edits of ``data`` (a seed or a corpus entry)."""
    out = data
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4))):
        if target.shape == "json" and rng.random() < 0.7:
            out = _mutate_json(out, rng, target)
        elif target.shape in ("binary", "row") and rng.random() < 0.6:
            if target.shape == "row" and len(out) >= 2 and rng.random() < 0.5:
                # edit the key or the value inside the frame, keeping the frame
                n = int.from_bytes(out[:2], "big")
                key, value = out[2 : 2 + n], out[2 + n :]
                if rng.random() < 0.5:
                    key = _mutate_binary(key, rng, target.seeds)
                else:
                    value = _mutate_binary(value, rng, target.seeds)
                out = _row_frame(key[:0xFFFF], value or None)
            else:
                out = _mutate_binary(out, rng, target.seeds)
        else:
            out = _mutate_bytes(out, rng, target.seeds)
    return out[:max_len]


# -- running one input -------------------------------------------------------------------------


@dataclass
class Stats:
    """What one decoder did with its inputs; ``failures`` hold the input as hex."""

    name: str
    inputs: int = 0
    decoded: int = 0
    rejected: int = 0
    unhandled: int = 0
    bad_messages: int = 0
    seconds: float = 0.0  # in the decoder
    wall: float = 0.0  # the engine's whole loop: mutations, bookkeeping, decoder
    slowest: float = 0.0
    slowest_hex: str = ""
    failures: list[dict] = field(default_factory=list)
    corpus: int = 0
    engine: str = ""
    crashed: str = ""  # the engine itself died (timeout, out of memory...): its report

    def as_dict(self) -> dict:
        return dict(self.__dict__)

    @property
    def failed(self) -> int:
        return self.unhandled + self.bad_messages + (1 if self.crashed else 0)


def _mask(message: str) -> str:
    """An error reason without the data in it: what the mutate engine calls an outcome."""
    message = message.split("; data: ", 1)[0]
    message = re.sub(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", "Q", message)
    return re.sub(r"-?[0-9]+", "N", message)[:200]


def run_one(target: Target, data: bytes, stats: Stats) -> str | None:
    """Decode ``data``; count the outcome; return an outcome label (None for a failure)."""
    stats.inputs += 1
    start = time.perf_counter()
    try:
        result = target.decode(data)
    except target.expected as exc:
        took = time.perf_counter() - start
        stats.rejected += 1
        label = "E:" + type(exc).__name__ + ":" + _mask(str(exc))
        message = str(exc)
        if not message.strip() or (
            target.max_message is not None and len(message) > target.max_message
        ):
            stats.bad_messages += 1
            _keep(stats, data, f"{type(exc).__name__} message of {len(message)} chars", exc)
            label = None
    except Exception as exc:  # noqa: BLE001 - exactly what the fuzzer hunts
        took = time.perf_counter() - start
        stats.unhandled += 1
        _keep(stats, data, f"unhandled {type(exc).__name__}", exc)
        label = None
    else:
        took = time.perf_counter() - start
        stats.decoded += 1
        label = "OK:" + type(result).__name__
        if isinstance(result, dict):  # decode_row: what it made of the key, the value
            label += ":".join(str(result.get(k)) for k in ("key_kind", "value_kind"))
            label += _mask(str(result.get("error", "")))
    stats.seconds += took
    if took > stats.slowest:
        stats.slowest, stats.slowest_hex = took, data[:256].hex()
    return label


def _keep(stats: Stats, data: bytes, what: str, exc: BaseException) -> None:
    """Keep the input of the first failures: per kind, one per failure site, a few sites."""
    kind = what.split()[0]
    same_kind = [f for f in stats.failures if f["what"].split()[0] == kind]
    if len(same_kind) >= KEEP_FAILURES:
        return
    tb = traceback.extract_tb(exc.__traceback__)
    where = f"{tb[-1].filename}:{tb[-1].lineno}" if tb else "?"
    if any(f["where"] == where and f["what"] == what for f in same_kind):
        return
    stats.failures.append(
        {
            "what": what,
            "where": where,
            "message": str(exc)[:300],
            "input_hex": data.hex(),
            "traceback": "".join(traceback.format_exception(exc, limit=-4))[-3000:],
        }
    )


# -- engines -----------------------------------------------------------------------------------


def run_mutate(target: Target, n: int, seed: int) -> Stats:
    """The pure-Python engine: seeds first, then mutations of the corpus."""
    stats = Stats(target.name, engine="mutate")
    started = time.perf_counter()
    rng = random.Random(f"{seed}:{target.name}")
    corpus = list(target.seeds)
    seen: set[str] = set()
    for data in target.seeds[:n]:
        label = run_one(target, data, stats)
        if label:
            seen.add(label)
    while stats.inputs < n:
        parent = rng.choice(corpus)
        child = mutate(target, parent, rng)
        label = run_one(target, child, stats)
        if label and label not in seen:
            seen.add(label)
            if len(corpus) < MAX_CORPUS:
                corpus.append(child)
    stats.corpus = len(corpus)
    stats.wall = time.perf_counter() - started
    return stats


def run_hypothesis(target: Target, n: int, seed: int) -> Stats:
    """The mutator driven by Hypothesis: a seed and a mutation seed per example, or raw bytes."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    stats = Stats(target.name, engine="hypothesis")
    seeds = target.seeds

    def mutated(args: tuple[int, int]) -> bytes:
        i, s = args
        return mutate(target, seeds[i], random.Random(s))

    inputs = st.one_of(
        st.tuples(st.integers(0, len(seeds) - 1), st.integers(0, 2**32 - 1)).map(mutated),
        st.binary(max_size=300),
        st.sampled_from(seeds),
    )

    @settings(
        max_examples=n,
        database=None,
        deadline=None,
        derandomize=False,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(inputs)
    def run(data: bytes) -> None:
        if stats.inputs < n:
            run_one(target, data, stats)

    from hypothesis import seed as hseed

    started = time.perf_counter()
    hseed(seed)(run)()
    stats.corpus = len(seeds)
    stats.wall = time.perf_counter() - started
    return stats


def atheris_available() -> bool:
    try:
        import atheris  # noqa: F401
    except ImportError:
        return False
    return True


def _worker(name: str, n: int, seed: int, result: Path, workdir: Path) -> int:
    """Inside the atheris subprocess: fuzz one decoder for ``n`` inputs, write ``result``."""
    import atheris

    atheris.enabled_hooks.add("RegEx")
    atheris.enabled_hooks.add("str")
    decoders = ["zkpaths", "bridge.audit.wire", "bridge.audit.consumer_protocol"]
    decoders += ["bridge.audit.records", "bridge.audit.decode", "bridge.gateway"]
    with atheris.instrument_imports(include=decoders):
        targets = build_targets()
    target = targets[name]
    stats = Stats(name, engine="atheris")
    started = time.perf_counter()

    def finish() -> None:
        stats.corpus = sum(1 for _ in (workdir / "corpus").iterdir())
        stats.wall = time.perf_counter() - started
        result.write_text(json.dumps(stats.as_dict()))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    def test_one_input(data: bytes) -> None:
        run_one(target, data, stats)
        if stats.inputs >= n:
            finish()

    def custom_mutator(data: bytes, max_size: int, mseed: int) -> bytes:
        rng = random.Random(mseed)
        if rng.random() < 0.5:
            return atheris.Mutate(data, max_size)
        return mutate(target, data, rng, max_size)

    corpus = workdir / "corpus"
    corpus.mkdir(exist_ok=True)
    for i, s in enumerate(target.seeds):
        (corpus / f"seed-{i:03d}").write_bytes(s)
    argv = [
        sys.argv[0],
        f"-runs={max(2 * n, n + 10_000)}",
        f"-seed={seed}",
        f"-max_len={MAX_LEN}",
        "-timeout=10",
        "-rss_limit_mb=2048",
        f"-artifact_prefix={workdir}/",
        "-print_final_stats=0",
        "-detect_leaks=0",
        str(corpus),
    ]
    atheris.Setup(argv, test_one_input, custom_mutator=custom_mutator)
    atheris.Fuzz()
    finish()  # libFuzzer stopped before n inputs: report what was run
    return 0


def run_atheris(
    names: Sequence[str], per: dict[str, int], seed: int, jobs: int, quiet: bool = False
) -> list[Stats]:
    """One atheris subprocess per decoder, ``jobs`` at a time."""
    out: dict[str, Stats] = {}
    pending = list(names)
    running: list[tuple[str, subprocess.Popen, Path, IO[bytes], float]] = []
    with tempfile.TemporaryDirectory(prefix="kzb-fuzz-") as base:
        while pending or running:
            while pending and len(running) < jobs:
                name = pending.pop(0)
                work = Path(base) / name
                work.mkdir()
                log = open(work / "log", "wb")  # noqa: SIM115 - closed with the process
                cmd = [
                    sys.executable,
                    "-m",
                    "bench.fuzz",
                    "--worker",
                    name,
                    "--inputs",
                    str(per[name]),
                    "--seed",
                    str(seed),
                    "--workdir",
                    str(work),
                ]
                env = {**os.environ, "PYTHONPATH": str(ROOT)}
                proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=log, env=env)
                # libFuzzer's own -timeout catches a slow input; this, a stuck worker
                deadline = time.monotonic() + 120 + per[name] / 500
                running.append((name, proc, work, log, deadline))
            time.sleep(0.05)
            for item in list(running):
                name, proc, work, log, deadline = item
                if proc.poll() is None:
                    if time.monotonic() < deadline:
                        continue
                    proc.kill()
                    proc.wait()
                running.remove(item)
                log.close()
                out[name] = _collect(name, proc.returncode, work)
                if not quiet:
                    _progress(out[name])
    return [out[n] for n in names]


def _collect(name: str, rc: int, work: Path) -> Stats:
    result = work / "result.json"
    if rc == 0 and result.exists():
        return Stats(**json.loads(result.read_text()))
    stats = Stats(name, engine="atheris")
    log = (work / "log").read_text(errors="replace")
    stats.crashed = f"atheris worker exited {rc}:\n" + "\n".join(log.splitlines()[-30:])
    for art in sorted(work.glob("*-*")):
        if art.is_file() and art.name.split("-")[0] in ("crash", "timeout", "oom", "leak", "slow"):
            data = art.read_bytes()
            stats.failures.append(
                {
                    "what": f"libFuzzer {art.name.split('-')[0]}",
                    "where": "",
                    "message": "",
                    "input_hex": data.hex(),
                    "traceback": "",
                }
            )
    return stats


# -- reporting ---------------------------------------------------------------------------------


def _progress(s: Stats) -> None:
    rate = s.inputs / s.wall if s.wall else 0.0
    flag = "" if not s.failed else "  <-- FAILED"
    print(
        f"  {s.name:<22} {s.inputs:>9,} inputs {s.decoded:>8,} decoded {s.rejected:>9,} rejected "
        f"{s.unhandled:>3} unhandled {s.bad_messages:>3} bad msg  {rate:>7,.0f} inputs/s  "
        f"corpus {s.corpus:>4}  slowest {s.slowest * 1000:6.2f} ms{flag}",
        flush=True,
    )


def report(all_stats: list[Stats], wall: float, engine: str, jobs: int) -> int:
    total = sum(s.inputs for s in all_stats)
    unhandled = sum(s.unhandled for s in all_stats)
    bad = sum(s.bad_messages for s in all_stats)
    crashed = [s for s in all_stats if s.crashed]
    print()
    print(f"engine: {engine}, {jobs} job(s), {len(all_stats)} decoders")
    engines = sum(s.wall for s in all_stats)
    decoders = sum(s.seconds for s in all_stats)
    print(
        f"total: {total:,} inputs in {wall:.1f} s wall = {total / wall:,.0f} inputs/s "
        f"(fuzzing loops alone {total / max(1e-9, engines):,.0f} inputs/s, "
        f"decoders alone {total / max(1e-9, decoders):,.0f} inputs/s)"
    )
    slow = max(all_stats, key=lambda s: s.slowest, default=None)
    if slow is not None:
        print(f"slowest input: {slow.slowest * 1000:.1f} ms ({slow.name})")
    print(
        f"decoded {sum(s.decoded for s in all_stats):,}, rejected with the decoder's own error "
        f"{sum(s.rejected for s in all_stats):,}"
    )
    print(f"unhandled exceptions: {unhandled}; over-long or empty error messages: {bad}")
    if crashed:
        print(f"engine crashes (timeouts, out of memory, uncaught): {len(crashed)}")
    for s in all_stats:
        if s.crashed:
            print(f"\n== {s.name}: {s.crashed}")
        for f in s.failures:
            print(f"\n== {s.name}: {f['what']} at {f['where']}: {f['message']}")
            print(f"input ({len(f['input_hex']) // 2} bytes, hex): {f['input_hex']}")
            if f["traceback"]:
                print(f["traceback"].rstrip())
    failed = unhandled + bad + len(crashed)
    verdict = "MET" if not failed else "MISSED"
    print(f"\nzero unhandled exceptions: {verdict}")
    if total >= TARGET_INPUTS:
        print(f">= {TARGET_INPUTS:,} inputs: MET ({total:,})")
    else:
        print(f">= {TARGET_INPUTS:,} inputs: NOT TESTED (this run: {total:,}; use --inputs)")
    return 1 if failed else 0


def fuzz(
    inputs: int,
    engine: str = "auto",
    only: Sequence[str] | None = None,
    seed: int = 1,
    jobs: int = 1,
    quiet: bool = False,
) -> tuple[int, list[Stats]]:
    """Run the harness; returns the exit code and the per-decoder stats."""
    if engine == "auto":
        engine = "atheris" if atheris_available() else "mutate"
    targets = build_targets()
    names = list(only) if only else [n for n in targets if n not in DEFAULT_EXCLUDED]
    unknown = [n for n in names if n not in targets]
    if unknown:
        raise SystemExit(f"unknown decoder(s) {unknown}; --list shows them")
    per = {
        n: inputs // len(names) + (1 if i < inputs % len(names) else 0) for i, n in enumerate(names)
    }
    started = time.perf_counter()
    if not quiet:
        print(f"fuzzing {len(names)} decoders with {inputs:,} inputs ({engine})", flush=True)
    if engine == "atheris":
        all_stats = run_atheris(names, per, seed, jobs, quiet)
    else:
        run = run_mutate if engine == "mutate" else run_hypothesis
        all_stats = []
        for n in names:
            s = run(targets[n], per[n], seed)
            all_stats.append(s)
            if not quiet:
                _progress(s)
    wall = time.perf_counter() - started
    label = {
        "atheris": "atheris (libFuzzer, coverage-guided, with the structure-aware mutator)",
        "mutate": "mutate (pure Python, structure-aware mutator, outcome-guided corpus)",
        "hypothesis": "hypothesis (structure-aware mutator and arbitrary bytes)",
    }[engine]
    if quiet:
        failed = sum(s.failed for s in all_stats)
        return (1 if failed else 0), all_stats
    return report(all_stats, wall, label, jobs), all_stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inputs", type=int, default=TARGET_INPUTS, help="inputs in all, split evenly")
    ap.add_argument("--engine", choices=("auto", "atheris", "mutate", "hypothesis"), default="auto")
    ap.add_argument("--jobs", type=int, default=1, help="atheris workers at a time")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="these decoders only")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--list", action="store_true", help="list the decoders and exit")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return _worker(
            args.worker, args.inputs, args.seed, args.workdir / "result.json", args.workdir
        )
    if args.list:
        for name, t in build_targets().items():
            errors = ", ".join(e.__name__ for e in t.expected) or "nothing"
            note = " (harness self-test, not run by default)" if name in DEFAULT_EXCLUDED else ""
            print(f"{name:<22} {t.shape:<7} raises only {errors}; {len(t.seeds)} seeds{note}")
        return 0
    code, _ = fuzz(args.inputs, args.engine, args.only, args.seed, max(1, args.jobs))
    return code


if __name__ == "__main__":
    sys.exit(main())
