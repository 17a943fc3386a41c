"""The decoders ``bench/fuzz.py`` drives: one :class:`Target` per decoder of foreign bytes,
with the only error it may raise, its input shape and its seeds (``fuzz_seeds.py``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bench.fuzz_seeds import (
    broker_seeds,
    group_seeds,
    protocol_seeds,
    zk_json_seeds,
    zk_name_seeds,
)

#: an expected error's message must be no longer than this (invariant I5: bounded excerpts)
MAX_MESSAGE = 1000


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


def _zk_json_targets() -> list[Target]:
    """The registry's JSON decoders: brokers, topics and partition states."""
    import zkpaths
    from zkpaths import CodecError

    brokers = broker_seeds()
    seeds = zk_json_seeds()
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

    seeds = zk_json_seeds()
    controllers, registrations = seeds["controllers"], seeds["registrations"]
    names = zk_name_seeds()
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

    names = zk_name_seeds()
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


def _offsets_targets() -> list[Target]:
    """The decoders of __consumer_offsets records, and the audit's per-record decode."""
    from bridge.audit import consumer_protocol as cp
    from bridge.audit import records as rec
    from bridge.audit.decode import decode_row
    from bridge.audit.wire import RecordError

    seeds = protocol_seeds()
    sub, asg, keys, commits = seeds["sub"], seeds["asg"], seeds["keys"], seeds["commits"]
    groups, rows = group_seeds(sub, asg, keys, commits)
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
