"""Inputs of the golden vectors: what ``scripts/golden_vectors.py`` asks Kafka's classes to
write (in the JSON form of Kafka's message definitions) or to read (older versions' ZooKeeper
JSON). Only inputs live here; every expected byte and field comes from the jars.
"""

from __future__ import annotations

import base64
import json
import random

TS, TS2 = 1700000000000, 1700086400000


def msg(message: str, version: int, fields: dict, tagged: list | None = None) -> dict:
    request = {"kind": "message", "message": message, "version": version, "fields": fields}
    return request | ({"tagged": tagged} if tagged else {})


def ocv(version: int, offset: int, metadata: str, **extra: int) -> dict:
    return msg(
        "OffsetCommitValue",
        version,
        {"offset": offset, "metadata": metadata, "commitTimestamp": TS, **extra},
    )


KEYS = {
    "offset commit key v0": msg(
        "OffsetCommitKey", 0, {"group": "group", "topic": "topic", "partition": 7}
    ),
    "offset commit key v1": msg(
        "OffsetCommitKey", 1, {"group": "group", "topic": "topic", "partition": 42}
    ),
    "offset commit key v1, unicode": msg(
        "OffsetCommitKey", 1, {"group": "géz", "topic": "t", "partition": 0}
    ),
    "offset commit key v1, astral": msg(
        "OffsetCommitKey", 1, {"group": "g\U0001f600", "topic": "t-\u00e9", "partition": 2**31 - 1}
    ),
    "group metadata key v2": msg("GroupMetadataKey", 2, {"group": "group"}),
    "group metadata key v2, empty group": msg("GroupMetadataKey", 2, {"group": ""}),
}

OFFSET_VALUES = {
    "v0": ocv(0, 42, "md"),
    "v1 (expire timestamp after the commit timestamp)": ocv(1, 42, "", expireTimestamp=TS2),
    "v1, no expiry": ocv(1, 0, "", expireTimestamp=-1),
    "v2": ocv(2, 2**63 - 1, "x"),
    "v3 (leader epoch before the metadata)": ocv(3, 1000, "md", leaderEpoch=5),
    "v3, epoch unknown": ocv(3, 1000, "", leaderEpoch=-1),
    "v4 flexible: compact metadata, no tagged fields": ocv(4, 1000, "md", leaderEpoch=5),
    "v4 flexible with tagged fields": {
        **ocv(4, 1000, "", leaderEpoch=5),
        "tagged": [[0, "abcd"], [5, ""]],
    },
    "v4 metadata longer than 127 bytes (two-byte varint)": ocv(4, 1, "m" * 200, leaderEpoch=-1),
    "v4 unicode metadata": ocv(4, 7, "é\U0001f600", leaderEpoch=0),
}


def tps(pairs: list[tuple[str, list[int]]]) -> list[dict]:
    return [{"topic": t, "partitions": ps} for t, ps in pairs]


SUBSCRIPTIONS = {
    "v0": msg("ConsumerProtocolSubscription", 0, {"topics": ["a", "b"], "userData": None}),
    "v0 with user data": msg(
        "ConsumerProtocolSubscription", 0, {"topics": ["a"], "userData": "AQI="}
    ),
    "v1 owned partitions": msg(
        "ConsumerProtocolSubscription",
        1,
        {"topics": ["a"], "userData": None, "ownedPartitions": tps([("a", [0, 3])])},
    ),
    "v2 generation": msg(
        "ConsumerProtocolSubscription",
        2,
        {"topics": ["a"], "userData": None, "ownedPartitions": [], "generationId": 9},
    ),
    "v3 rack": msg(
        "ConsumerProtocolSubscription",
        3,
        {
            "topics": ["a"],
            "userData": None,
            "ownedPartitions": [],
            "generationId": -1,
            "rackId": "r1",
        },
    ),
    "v3 no rack": msg(
        "ConsumerProtocolSubscription",
        3,
        {"topics": [], "userData": None, "ownedPartitions": [], "generationId": 2, "rackId": None},
    ),
}

ASSIGNMENTS = {
    "v0": msg(
        "ConsumerProtocolAssignment",
        0,
        {"assignedPartitions": tps([("a", [0, 1])]), "userData": None},
    ),
    "v1 user data": msg(
        "ConsumerProtocolAssignment", 1, {"assignedPartitions": [], "userData": "/w=="}
    ),
    "v3": msg(
        "ConsumerProtocolAssignment",
        3,
        {"assignedPartitions": tps([("a", []), ("b", [4])]), "userData": None},
    ),
}


def group_values(sub: bytes, asg: bytes) -> dict[str, dict]:
    """GroupMetadataValue cases; members carry Kafka's own subscription/assignment bytes."""
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    m = {
        "memberId": "m1",
        "clientId": "c1",
        "clientHost": "/10.0.0.1",
        "rebalanceTimeout": 300000,
        "sessionTimeout": 30000,
        "subscription": b64(sub),
        "assignment": b64(asg),
    }
    base = {"protocolType": "consumer", "generation": 3, "protocol": "range", "leader": "m1"}
    now = {"currentStateTimestamp": TS}
    connect = {"protocolType": "connect", "generation": 1, "protocol": "default", "leader": "m1"}
    unsynced = m | {"groupInstanceId": None, "subscription": b64(b"\xab\xcd"), "assignment": ""}
    return {
        "v0": msg("GroupMetadataValue", 0, base | {"members": [m]}),
        "v0 empty group: null protocol and leader, no members": msg(
            "GroupMetadataValue",
            0,
            {
                "protocolType": "consumer",
                "generation": 4,
                "protocol": None,
                "leader": None,
                "members": [],
            },
        ),
        "v1 rebalance timeout": msg("GroupMetadataValue", 1, base | {"members": [m]}),
        "v2 current state timestamp": msg("GroupMetadataValue", 2, base | now | {"members": [m]}),
        "v3 static member": msg(
            "GroupMetadataValue", 3, base | now | {"members": [m | {"groupInstanceId": "i1"}]}
        ),
        "v3 dynamic member, empty assignment (not yet synced)": msg(
            "GroupMetadataValue", 3, connect | now | {"members": [unsynced]}
        ),
        "v4 flexible": msg(
            "GroupMetadataValue", 4, base | now | {"members": [m | {"groupInstanceId": None}]}
        ),
        "v4 flexible, static member": msg(
            "GroupMetadataValue",
            4,
            base | now | {"members": [m | {"groupInstanceId": "i\U0001f600"}]},
        ),
    }


HASH_STRINGS = [
    "",
    "a",
    "x",
    "foo",
    "Aa",
    "BB",
    "my-group",
    "caf\u00e9",
    "group",
    "console-consumer-12345",
    "polygenelubricants",
    "GydZG_",
    "é",
    "\U0001f600",
    "\u00e9\U0001f600x",
    "\uffff",
    "zk-bridge-" + "x" * 100,
]


def order_cases() -> list[list[str]]:
    """Insertion orders (also sorted by ``String.compareTo``): the protocol-vote cases,
    full collisions, partition-state keys, pseudo-random lists (fixed seed) of short,
    partly non-ASCII strings."""
    state_keys = ["version", "leader", "leader_epoch", "controller_epoch", "isr"]
    cases = [
        ["x2", "roundrobin"],
        ["range", "roundrobin"],
        ["Aa", "BB"],
        ["AaAa", "BBBB", "AaBB", "BBAa"],
        state_keys,
        [f"p{i}" for i in range(40)],
    ]
    cases += [c[::-1] for c in cases]
    rng = random.Random(12)
    alphabet = "abcxyz-_09AB\u00e9\U0001f600"
    for size in (3, 7, 13, 30, 100):
        words = ["".join(rng.choices(alphabet, k=rng.randint(0, 6))) for _ in range(size)]
        cases.append(list(dict.fromkeys(words)))  # not a set: its order varies per run
    return cases


def zn(znode: str, **fields: object) -> dict:
    """A ZNode written by Kafka's encoder from ``fields``."""
    return {"kind": "znode", "znode": znode, "encode": fields}


def zn_read(znode: str, doc: dict, **extra: object) -> dict:
    """A ZNode as older Kafka versions wrote it (``doc`` in its key order, compact), read by
    Kafka 3.9's decoder."""
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    return {"kind": "znode", "znode": znode, "decode": text, **extra}


def broker(version: int, endpoints: list, rack: str | None = None, **kw: object) -> dict:
    fields = {
        "id": 1,
        "version": version,
        "jmx_port": -1,
        "rack": rack,
        "timestamp": 1795306073844,
        "endpoints": endpoints,
        "features": {},
    }
    return zn("broker", **(fields | kw))


PLAIN = [["PLAINTEXT", "PLAINTEXT", "host1", 9092]]
TWO = [["CLIENT", "PLAINTEXT", "host1", 9092], ["REPLICATION", "SSL", "host1", 9093]]
MIXED = [
    ["SSL", "SSL", "a", 9093],
    ["INTERNAL", "PLAINTEXT", "b", 9094],
    ["PLAINTEXT", "PLAINTEXT", "c", 9092],
]
TOPIC_ID = "ooEOTJNkQzq_OfLeXvvHEQ"

BROKERS = {
    "v4, rack": broker(4, PLAIN, "dc1"),
    "v4, no rack": broker(4, PLAIN),
    "v4, host and port from the first PLAINTEXT-protocol listener": broker(4, MIXED, jmx_port=9999),
    "v4, no PLAINTEXT listener": broker(4, [["SSL", "SSL", "a", 9093]]),
    "v4, IPv6 and SASL": broker(4, [["SASL_SSL", "SASL_SSL", "::1", 9095]], "r\u00e9"),
    "v5, features": broker(5, TWO, "dc1", jmx_port=9999, features={"metadata.version": [1, 21]}),
    "v5, two features, no rack": broker(5, PLAIN, features={"a": [0, 3], "kraft.version": [0, 1]}),
    "v5, no features": broker(5, PLAIN),
    "v1, read": zn_read(
        "broker",
        {"jmx_port": -1, "timestamp": "1400000000000", "host": "h", "version": 1, "port": 9092},
        id=0,
    ),
    "v2, read (listeners named after protocols)": zn_read(
        "broker",
        {
            "jmx_port": 9999,
            "timestamp": "1450000000000",
            "endpoints": ["PLAINTEXT://h2:9092", "SSL://h2:9093"],
            "host": "h2",
            "version": 2,
            "port": 9092,
        },
        id=2,
    ),
    "v3, read (rack)": zn_read(
        "broker",
        {
            "jmx_port": -1,
            "timestamp": "1470000000000",
            "endpoints": ["PLAINTEXT://h3:9092"],
            "rack": "dc1",
            "host": "h3",
            "version": 3,
            "port": 9092,
        },
        id=3,
    ),
    "v4, read (as a 0.10-2.x broker wrote it)": zn_read(
        "broker",
        {
            "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
            "endpoints": ["PLAINTEXT://host1:9092"],
            "jmx_port": -1,
            "host": "host1",
            "timestamp": "1500000000000",
            "port": 9092,
            "version": 4,
        },
        id=1,
    ),
    "v5, read (the ZkData.scala doc comment's example)": zn_read(
        "broker",
        {
            "version": 5,
            "host": "localhost",
            "port": 9092,
            "jmx_port": 9999,
            "timestamp": "2233345666",
            "endpoints": ["CLIENT://host1:9092", "REPLICATION://host1:9093"],
            "rack": "dc1",
            "listener_security_protocol_map": {"CLIENT": "PLAINTEXT", "REPLICATION": "SSL"},
            "features": {
                "feature": {"min_version": 1, "first_active_version": 2, "max_version": 3}
            },
        },
        id=5,
    ),
}

TOPICS = {
    "v3, two partitions": zn("topic", topic_id=TOPIC_ID, partitions={"1": [2, 0], "0": [1, 2]}),
    "v3, twelve partitions inserted backwards": zn(
        "topic",
        topic_id=TOPIC_ID,
        partitions={str(p): [p % 3, (p + 1) % 3] for p in range(11, -1, -1)},
    ),
    "v3, no topic id": zn("topic", topic_id=None, partitions={"0": [1]}),
    "v3, reassigning": zn(
        "topic",
        topic_id=TOPIC_ID,
        partitions={"0": [1, 2, 3], "1": [2, 3]},
        adding={"0": [3]},
        removing={"1": [3]},
    ),
    "v3, no partitions": zn("topic", topic_id=TOPIC_ID, partitions={}),
    "v1, read (0.8-2.3 writers)": zn_read(
        "topic", {"version": 1, "partitions": {"0": [1, 2], "1": [2, 0], "10": [0, 1]}}
    ),
    "v2, read (2.4-2.7, reassigning)": zn_read(
        "topic",
        {
            "version": 2,
            "partitions": {"0": [1, 2, 3]},
            "adding_replicas": {"0": [3]},
            "removing_replicas": {},
        },
    ),
    "v3, read (a Scala 2.12 build's key order)": zn_read(
        "topic",
        {
            "removing_replicas": {},
            "partitions": {"2": [1], "1": [0], "0": [2]},
            "topic_id": "ooEOTJNkQzq_OfLeXvvHEQ",
            "adding_replicas": {},
            "version": 3,
        },
    ),
}


def state(leader: int, isr: list[int], recovery: int = 0, epoch: int = 1, cepoch: int = 4) -> dict:
    return zn(
        "state",
        leader=leader,
        leader_epoch=epoch,
        isr=isr,
        leader_recovery_state=recovery,
        controller_epoch=cepoch,
    )


STATES = {
    "recovered": state(1, [1, 0]),
    "recovering": state(1, [1, 0], recovery=1),
    "no leader, empty isr": state(-1, [], epoch=7, cepoch=12),
    "large epochs": state(2, [2, 0, 1], epoch=2**31 - 1, cepoch=2**31 - 1),
}

CONTROLLERS = {
    "v2, ZooKeeper controller": zn("controller", brokerid=1, timestamp=TS, kraft_epoch=-1),
    "v2, KRaft controller epoch": zn("controller", brokerid=3000, timestamp=TS, kraft_epoch=7),
    "v1, read": zn_read("controller", {"version": 1, "brokerid": 0, "timestamp": "1500000000000"}),
}
CONTROLLER_EPOCHS = {str(e): zn("controller_epoch", epoch=e) for e in (0, 7, 2**31 - 1)}
CLUSTER_IDS = {i: zn("cluster_id", id=i) for i in (TOPIC_ID, "abc_-123", "MkU3OEVBNTcwNTJENDM2Qg")}
CLUSTER_IDS["numeric version, read"] = zn_read("cluster_id", {"version": 1, "id": "abc"})
ZNODES = {
    "broker": BROKERS,
    "topic": TOPICS,
    "state": STATES,
    "controller": CONTROLLERS,
    "controller_epoch": CONTROLLER_EPOCHS,
    "cluster_id": CLUSTER_IDS,
}


#: groups whose protocol election the hand-picked cases once pinned down (ties, collisions)
VOTE_GROUPS = [
    {"a": ["range", "roundrobin"], "b": ["roundrobin", "range"]},
    {"b": ["roundrobin", "range"], "a": ["range", "roundrobin"]},
    {"c1": ["range", "cooperative-sticky"], "c2": ["cooperative-sticky", "range"]},
    {"m1": ["Aa", "BB"], "m2": ["BB", "Aa"]},
    {"m2": ["BB", "Aa"], "m1": ["Aa", "BB"]},
    {"x": ["range", "roundrobin"], "y": ["roundrobin", "range"], "z": ["range"]},
    {
        "x": ["sticky", "range"],
        "y": ["range", "sticky"],
        "z": ["roundrobin", "sticky", "range"],
        "w": ["roundrobin", "range", "sticky"],
    },
    {"m0-9023": ["Aa", "p1", "p14", "p7", "p12", "BB"], "m1-28809": ["BB", "p14", "Aa"]},
]


def vote_groups() -> list[dict[str, list[str]]]:
    """The groups above and pseudo-random ones (fixed seed): every member shares a common
    protocol (Kafka refuses others), ids and protocols that collide in ``hashCode``, and
    groups large enough to resize the coordinators' hash maps."""
    rng = random.Random(7)
    pool = ["range", "roundrobin", "sticky", "cooperative-sticky", "Aa", "BB", "AaAa", "BBBB"]
    pool += [f"p{i}" for i in range(20)] + ["\u00e9", "\U0001f600"]
    groups = list(VOTE_GROUPS)
    for n in [2] * 20 + [3] * 20 + [5] * 15 + [13] * 10 + [30] * 5:
        common = rng.sample(pool, rng.randint(1, 3))
        members: dict[str, list[str]] = {}
        while len(members) < n:
            name = rng.choice(
                ["Aa", "BB", "AaBB", "BBAa", f"m{len(members)}-{rng.randint(0, 99999)}"]
            )
            extras = rng.sample(pool, rng.randint(0, 4))
            protocols = list(dict.fromkeys(common + extras))
            rng.shuffle(protocols)
            members.setdefault(name, protocols)
        groups.append(members)
    return groups


def registration(subscription: dict[str, int], pattern: str = "static") -> str:
    """/consumers/<g>/ids/<id> as a 0.10.2.2 consumer writes it."""
    return json.dumps(
        {"version": 1, "subscription": subscription, "pattern": pattern, "timestamp": "1"},
        separators=(",", ":"),
    )


#: groups of old consumers (consumer id -> registration JSON) and their topics' partitions
LEGACY_ASSIGNOR_CASES = {
    "two consumers, two topics": (
        {"t0": 5, "orders1": 3},
        {
            "g_a-1-00000001": registration({"t0": 2, "orders1": 1}),
            "g_b-1-00000002": registration({"t0": 1}),
        },
    ),
    "threads sort as strings (c-10 before c-2)": (
        {"t": 12},
        {"g_c": registration({"t": 11}), "g_d": registration({"t": 1})},
    ),
    "white list beside static, internal topic excluded": (
        {"x": 3, "y": 3, "__consumer_offsets": 2},
        {"g_w": registration({".*": 2}, "white_list"), "g_s": registration({"y": 1})},
    ),
    "black list": (
        {"x": 4, "orders": 2},
        {"g_b": registration({"x": 1}, "black_list"), "g_s": registration({"x": 2})},
    ),
    "the PartitionAssignor scaladoc example": (
        {"t": 5},
        {"C1": registration({"t": 2}), "C2": registration({"t": 2})},
    ),
    "more threads than partitions, a missing topic": (
        {"t": 2},
        {"a": registration({"t": 2, "gone": 1}), "b": registration({"t": 1})},
    ),
}

#: Kafka range cases: (members as (id, group.instance.id, topics) in join order, partitions)
KAFKA_RANGE_CASES = {
    "three members, a missing topic": (
        [["c-7", None, ["t0", "t1"]], ["A-3", None, ["t1"]], ["c-10", None, ["t0", "missing"]]],
        {"t0": 5, "t1": 3},
    ),
    "static members first, by instance id": (
        [["m-b", "i-0", ["t"]], ["m-a", None, ["t"]], ["m-z", "i-1", ["t"]]],
        {"t": 3},
    ),
    "a proxy listed between two dynamic members": (
        [["n1", None, ["t"]], ["g_vm-1-0-5b1f", "g_vm-1-0", ["t"]], ["n2", None, ["t"]]],
        {"t": 6},
    ),
}


#: old consumers registering (consumer.id, pattern, {topic or regex: streams}), run for real
LEGACY_REGISTRATIONS = {
    "static, one topic": ("c1", "static", {"t": 1}),
    "static, two topics": ("c2", "static", {"b": 2, "a": 3}),
    "static, six topics (a Scala hash map's order)": ("c3", "static", dict.fromkeys("abcdef", 1)),
    "white list": ("c4", "white_list", {"foo.*": 2}),
    "white list, comma-separated topics": ("c5", "white_list", {"t1, t2": 1}),
    "black list": ("c6", "black_list", {"__.*": 3}),
    "white list, dotted topic name (backslash)": ("c7", "white_list", {"orders\\.v1": 1}),
    "white list, escapes": ("c8", "white_list", {'a\\d+/"x"\u0085': 1}),
}
