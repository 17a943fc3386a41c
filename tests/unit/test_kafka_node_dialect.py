"""kafka-node's HighLevelConsumer dialect (zkpaths.dialects.kafka_node) and the bridge's
decision to carry such a group alone and refuse it mixed (bridge.decide.kafka_node).

The references are independent transcriptions of kafka-node 3.0.1's own code (lib/
zookeeper.js ``registerConsumer``, lib/highLevelConsumer.js ``rebalanceAttempt``), written
the way the JavaScript is, loop for loop, not with the module's helpers."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zkpaths
from bridge.decide.kafka_node import kafka_node_refusal, proxies_only
from bridge.decide.kafka_node import kafka_node_step_problem as kn_step
from bridge.kafka.views import KafkaMember
from zkpaths.dialects import KAFKA_NODE, SCALA, decode_member, member_threads
from zkpaths.dialects import kafka_node as kn

#: what a real kafka-node 3.0.1 HighLevelConsumer wrote on the 3.9 test stack
REAL_ID = "kng3_602a95fb-959a-4619-8e9d-252e1cf63743"
REAL = (
    b'{"version":1,"subscription":{"kn-t1": 1},"pattern":"white_list","timestamp":"1795549304454"}'
)

topic_names = st.from_regex(r"[A-Za-z0-9._-]{1,30}", fullmatch=True).filter(
    lambda t: t not in (".", "..")
)


def js_register_consumer(topics: list[str], ms: int) -> bytes:
    """``Zookeeper.prototype.registerConsumer``'s string building, as written in JS."""
    metadata = '{"version":1,"subscription":'
    metadata += "{"
    sep = ""
    for t in topics:
        metadata += sep + '"' + t + '": 1'
        sep = ", "
    metadata += "}"
    metadata += ',"pattern":"white_list","timestamp":"' + str(ms) + '"}'
    return metadata.encode()


def js_utf16_less(a: str, b: str) -> bool:
    """JavaScript's default ``sort`` comparison: UTF-16 code units, element by element."""
    ua = a.encode("utf-16-be", "surrogatepass")
    ub = b.encode("utf-16-be", "surrogatepass")
    units_a = [int.from_bytes(ua[i : i + 2], "big") for i in range(0, len(ua), 2)]
    units_b = [int.from_bytes(ub[i : i + 2], "big") for i in range(0, len(ub), 2)]
    for x, y in zip(units_a, units_b, strict=False):
        if x != y:
            return x < y
    return len(units_a) < len(units_b)


def js_rebalance(me: str, consumers: list[str], partitions: list[int]) -> list[int]:
    """``rebalanceAttempt``'s loop for one topic, with JS's variable names."""
    ordered: list[str] = []
    for c in consumers:  # insertion sort with the JS comparison
        i = 0
        while i < len(ordered) and js_utf16_less(ordered[i], c):
            i += 1
        ordered.insert(i, c)
    number_of_consumers = len(ordered)
    number_of_partition = len(partitions)
    partitions_per_consumer = number_of_partition // number_of_consumers
    extra_partitions = number_of_partition % number_of_consumers
    current = ordered.index(me)
    extra_bit = current
    if current > extra_partitions:
        extra_bit = extra_partitions
    start_part = partitions_per_consumer * current + extra_bit
    extra_n_parts = 1
    if current + 1 > extra_partitions:
        extra_n_parts = 0
    n_parts = partitions_per_consumer + extra_n_parts
    ps = sorted(partitions)
    return [ps[i] for i in range(start_part, start_part + n_parts)]


# ---- registration ------------------------------------------------------------------------


def test_a_real_high_level_consumer_is_kafka_node_and_owns_by_consumer_id() -> None:
    m = decode_member(REAL_ID, REAL)
    assert (m.dialect, m.topics) == (KAFKA_NODE, ("kn-t1",))
    assert member_threads(m) == {"kn-t1": (REAL_ID,)}


def test_a_scala_whitelist_consumer_stays_scala() -> None:
    compact = b'{"version":1,"subscription":{"kn-t1":1},"pattern":"white_list","timestamp":"1"}'
    m = decode_member("g_host-1700000000000-0a1b2c3d", compact)
    assert m.dialect == SCALA
    assert member_threads(m, ["kn-t1", "kn-t2"]) == {"kn-t1": ("g_host-1700000000000-0a1b2c3d-0",)}
    # the same uuid-shaped id with the Scala spelling is still Scala
    assert decode_member(f"g_{uuid.uuid4()}", compact).dialect == SCALA
    # a configured kafka-node id is recognised by kafka-node's own spelling
    assert decode_member("g_my-app-1", REAL).dialect == KAFKA_NODE


@given(
    topics=st.lists(topic_names, min_size=1, max_size=5, unique=True),
    ms=st.integers(0, 2**53),
    group=st.from_regex(r"[A-Za-z0-9._-]{1,20}", fullmatch=True),
)
@settings(max_examples=200, deadline=None)
def test_every_registration_kafka_node_writes_decodes_as_kafka_node(topics, ms, group) -> None:
    data = js_register_consumer(topics, ms)
    assert kn.encode_registration(topics, ms) == data
    cid = f"{group}_{uuid.UUID(int=ms, version=4)}"
    m = decode_member(cid, data)
    assert m.dialect == KAFKA_NODE
    assert m.registration is not None and m.registration.timestamp_ms == ms
    assert member_threads(m) == {t: (cid,) for t in sorted(topics)}


@pytest.mark.parametrize(
    "data, reason",
    [
        (REAL.replace(b"white_list", b"whitelist"), "unknown pattern"),
        (REAL.replace(b'"kn-t1": 1', b'"kn t1": 1'), "kafka-node subscribes to topics by name"),
        (REAL[:-10], "JSON"),
    ],
)
def test_bad_kafka_node_registrations_are_codec_errors(data: bytes, reason: str) -> None:
    with pytest.raises(zkpaths.CodecError) as err:
        decode_member(REAL_ID, data, path=f"/consumers/kng3/ids/{REAL_ID}")
    assert reason.lower() in str(err.value).lower()


def test_owner_data_must_be_a_known_id_of_the_group() -> None:
    known = {REAL_ID: 1, "kng3_host-1-0a1b2c3d-0": 1}
    assert kn.owner_problem("kng3", REAL_ID.encode(), known) is None
    assert kn.owner_problem("kng3", b"kng3_host-1-0a1b2c3d-0", known) is None
    assert "not a consumer id of group" in kn.owner_problem("kng3", b"garbage", known)
    assert "not a registered consumer" in kn.owner_problem("kng3", b"kng3_gone", known)
    # a HighLevelConsumer that is leaving unregisters and releases in parallel: not bad input
    assert kn.owner_problem("kng3", f"kng3_{uuid.uuid4()}".encode(), known) is None
    assert "partition owner" in kn.owner_problem("kng3", b"\xff\xfe", known)


# ---- balancing -----------------------------------------------------------------------------

ids = st.one_of(
    st.uuids(version=4).map(lambda u: f"g_{u}"),
    st.text(min_size=1, max_size=6).map(lambda s: f"g_{s}"),
)


@given(
    consumers=st.lists(ids, min_size=1, max_size=8, unique=True),
    n=st.integers(0, 24),
)
@settings(max_examples=300, deadline=None)
def test_kafka_range_over_proxies_is_kafka_nodes_own_range(consumers, n) -> None:
    """What makes a kafka-node group carriable: the proxies are static members whose
    instance id is the consumer id, and Kafka's range over them gives each consumer what
    kafka-node's rebalance gives it."""
    partitions = list(range(n))
    expected = {c: js_rebalance(c, consumers, partitions) for c in consumers}
    for c in consumers:
        assert kn.range_partitions(c, consumers, partitions) == expected[c]
    members = tuple(KafkaMember(f"m-{i}", c, ("t",)) for i, c in enumerate(consumers))
    kafka = proxies_only(members, frozenset(consumers), {"t": n})
    by_instance = {m.member_id: m.group_instance_id for m in members}
    got: dict[str, list[int]] = {c: [] for c in consumers}
    for tp, member in sorted(kafka.items(), key=lambda kv: kv[0].partition):
        got[by_instance[member]].append(tp.partition)
    assert got == expected


def test_a_refusing_leader_gives_kafka_members_nothing() -> None:
    members = (
        KafkaMember("p1", "g_a", ("t",)),
        KafkaMember("p2", "g_b", ("t",)),
        KafkaMember("kafka-python-1", None, ("t",)),
    )
    got = proxies_only(members, frozenset({"g_a", "g_b"}), {"t": 5})
    assert set(got.values()) == {"p1", "p2"} and len(got) == 5


# ---- refusal -------------------------------------------------------------------------------


def _member(cid: str, data: bytes):
    return decode_member(cid, data)


def test_kafka_node_alone_is_carried_and_mixed_is_refused_in_one_line() -> None:
    hlc = {REAL_ID: _member(REAL_ID, REAL)}
    assert kafka_node_refusal("kng3", hlc, {}) is None
    why = kafka_node_refusal("kng3", hlc, {"kafka-python-1-abc": "kafka-python-1"})
    assert why is not None and "\n" not in why
    assert why.startswith("group kng3: refusing to mix kafka-node HighLevelConsumers")
    assert REAL_ID in why and "kafka-python-1-abc (client kafka-python-1)" in why
    assert "fetched twice" in why
    scala = b'{"version":1,"subscription":{"kn-t1":1},"pattern":"static","timestamp":"1"}'
    mixed = {**hlc, "kng3_h-1-0a1b2c3d": _member("kng3_h-1-0a1b2c3d", scala)}
    why = kafka_node_refusal("kng3", mixed, {})
    assert why is not None and "scala consumers kng3_h-1-0a1b2c3d" in why
    assert "different ranges" in why
    # no kafka-node consumer: not this module's business
    assert (
        kafka_node_refusal("kng3", {"kng3_h-1-0a1b2c3d": mixed["kng3_h-1-0a1b2c3d"]}, {"m": "c"})
        is None
    )


def test_a_group_with_high_level_consumers_does_not_step_to_kafka_mode() -> None:
    hlc = {REAL_ID: _member(REAL_ID, REAL)}
    assert kn_step(hlc, "dual") is None and kn_step(hlc, "zookeeper") is None
    why = kn_step(hlc, "kafka")
    assert why is not None and REAL_ID in why and "OffsetCommit v0" in why
    assert kn_step({}, "kafka") is None
