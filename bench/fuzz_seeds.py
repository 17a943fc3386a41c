"""Valid encodings of every version of every format the fuzzer drives (``bench/fuzz.py``):
the seeds its mutators start from."""

from __future__ import annotations

import json
import struct


def row_frame(key: bytes, value: bytes | None) -> bytes:
    """The ``audit_row`` input: int16 key length, key, then the value (none: a tombstone)."""
    return struct.pack(">H", len(key)) + key + (value if value is not None else b"")


def dumps(doc: object, pretty: bool = False) -> bytes:
    if pretty:
        return json.dumps(doc, indent=1, ensure_ascii=True).encode()
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


def broker_seeds() -> list[bytes]:
    """Broker registrations of every version, as Kafka and older brokers wrote them."""
    import zkpaths

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


def zk_json_seeds() -> dict[str, list[bytes]]:
    """Topic assignments, partition states, controllers and consumer registrations."""
    import zkpaths

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


def zk_name_seeds() -> dict[str, list[bytes]]:
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


def protocol_seeds() -> dict[str, list[bytes]]:
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


def group_seeds(
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
        [row_frame(keys[i], commits[v]) for i in (0, 1) for v in range(5)]
        + [row_frame(keys[2], g) for g in groups]
        + [row_frame(keys[0], None), row_frame(keys[2], None), row_frame(keys[3], b"\x00\x00")]
        + [row_frame(keys[0], groups[3]), row_frame(keys[2], commits[3])]
        + [  # a next-generation group's records (KIP-848), and a tombstone of one
            row_frame(next_gen.encode_key(k), next_gen.encode_value(k.record_type, v))
            for k, v in next_gen.examples()
        ]
        + [row_frame(keys[6], None)]
    )

    return groups, rows
