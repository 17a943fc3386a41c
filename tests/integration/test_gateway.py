"""The legacy gateway on Kafka 4.x: old request versions in, the real cluster behind.

An in-process ``Gateway`` (port 0) in front of the 4.x stack; the "old client" is
kafka-python's protocol classes at the old versions over a plain socket (``old_client``).
The negative control sends the same old versions straight to a 4.x broker, which refuses
them: what these tests see through the gateway is the gateway's doing.
"""

from __future__ import annotations

import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.protocol.consumer import (
    FetchRequest,
    ListOffsetsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from kafka.protocol.metadata import ApiVersionsRequest, FindCoordinatorRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from bridge.config import KafkaSettings
from bridge.gateway.server import Gateway
from tests.conftest import wait_for
from tests.integration.old_client import OldClient, known_everywhere

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def stack(stack4):
    """This module on the session's Kafka 4.x stack (conftest's ``stack4``)."""
    return stack4


@pytest.fixture
def gateway(stack, zk):
    # no periodic refresh during a test: a moved leader must be found by the error path
    gw = Gateway(
        "127.0.0.1:0",
        KafkaSettings(bootstrap_servers=stack.bootstrap_servers),
        zookeeper=zk,
        metadata_refresh_s=3600,
    )
    gw.start()
    yield gw
    gw.stop()


@pytest.fixture
def client(gateway):
    c = OldClient(gateway.address)
    yield c
    c.close()


def _topic(admin: KafkaAdminClient, name: str, partitions: int = 1, replicas: int = 3, **configs):
    admin.create_topics(
        {name: {"num_partitions": partitions, "replication_factor": replicas, "configs": configs}}
    )
    wait_for(lambda: known_everywhere(admin, name, partitions), 30, what=f"{name} on every broker")
    return name


def _leaders(admin: KafkaAdminClient, topic: str) -> dict[int, int]:
    found = admin.describe_topics([topic])
    return (
        {p["partition_index"]: p["leader_id"] for t in found for p in t["partitions"]}
        if found
        else {}
    )


def message_set(magic: int, messages: list[tuple[bytes | None, bytes, int | None]]) -> bytes:
    builder = LegacyRecordBatchBuilder(magic, 0, 1 << 20)
    for i, (key, value, ts) in enumerate(messages):
        builder.append(i, ts if magic else None, key, value)
    return bytes(builder.build())


def read_messages(records: bytes) -> list[tuple[int, bytes | None, bytes, int | None, int]]:
    """(offset, key, value, timestamp, magic) of every whole message in a message set."""
    out, mr = [], MemoryRecords(records)
    while (batch := mr.next_batch()) is not None:
        for r in batch:
            out.append((r.offset, r.key, r.value, r.timestamp, batch.magic))
    return out


def produce(client: OldClient, version: int, topic: str, partition: int, records: bytes, acks=1):
    request = ProduceRequest[version](
        acks=acks,
        timeout_ms=10000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[
                    ProduceRequest.TopicProduceData.PartitionProduceData(
                        index=partition, records=records
                    )
                ],
            )
        ],
    )
    response = client.send(request)
    return None if response is None else response.responses[0].partition_responses[0]


def fetch(client: OldClient, version: int, parts: dict[tuple[str, int], int], max_bytes=1 << 20):
    topics: dict[str, list] = {}
    for (topic, partition), offset in parts.items():
        topics.setdefault(topic, []).append(
            FetchRequest.FetchTopic.FetchPartition(
                partition=partition, fetch_offset=offset, partition_max_bytes=max_bytes
            )
        )
    request = FetchRequest[version](
        replica_id=-1,
        max_wait_ms=100,
        min_bytes=1,
        max_bytes=max_bytes,
        topics=[FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()],
    )
    response = client.send(request)
    return {(t.topic, p.partition_index): p for t in response.responses for p in t.partitions}


def test_metadata_lists_every_broker_at_the_gateway(gateway, client, admin, topic_name):
    topic = _topic(admin, topic_name(), partitions=3)
    cluster_ids = {b["broker_id"] for b in admin.describe_cluster()["brokers"]}
    leaders = _leaders(admin, topic)
    assert client.send(ApiVersionsRequest[0]()).error_code == 0
    for version in range(4):
        response = client.send(
            MetadataRequest[version](topics=[MetadataRequest.MetadataRequestTopic(name=topic)])
        )
        assert {b.node_id for b in response.brokers} == cluster_ids
        assert {(b.host, b.port) for b in response.brokers} == {gateway.address}
        (t,) = response.topics
        assert (t.name, t.error_code) == (topic, 0)
        assert {p.partition_index: p.leader_id for p in t.partitions} == leaders
        assert all(len(p.replica_nodes) == 3 and p.leader_id in p.isr_nodes for p in t.partitions)
    every = client.send(MetadataRequest[0](topics=[]))  # v0: [] = every topic
    assert topic in {t.name for t in every.topics}


def test_produce_v0_v2_then_fetch_v0_v3(client, admin, topic_name):
    topic = _topic(admin, topic_name())
    ts = int(time.time() * 1000)
    sent = [
        (0, [(b"k0", b"v0", None), (None, b"v1", None)]),
        (1, [(b"k2", b"v2", None)]),
        (2, [(b"k3", b"v3", ts), (b"k4", b"v4", ts + 1)]),
    ]
    base = []
    for version, messages in sent:
        answer = produce(client, version, topic, 0, message_set(0 if version < 2 else 1, messages))
        assert answer.error_code == 0, answer
        base.append(answer.base_offset)
    assert base == [0, 2, 3]  # the leader's real offsets
    assert produce(client, 2, topic, 0, message_set(1, [(b"k5", b"v5", ts + 2)]), acks=0) is None
    flat = [m for _, ms in sent for m in ms] + [(b"k5", b"v5", ts + 2)]
    for version in range(4):
        got = consume(client, version, topic, 0, 0, len(flat))
        assert [(o, k, v) for o, k, v, _, _ in got] == [
            (i, k, v) for i, (k, v, _) in enumerate(flat)
        ]
        assert {m for *_, m in got} == {0 if version < 2 else 1}
        if version >= 2:  # magic 1 carries the timestamps the v2 producer set
            assert [t for _, _, _, t, _ in got][3:] == [ts, ts + 1, ts + 2]
    # fetching from the middle starts there, also inside what was one produce
    got = read_messages(fetch(client, 3, {(topic, 0): 4})[(topic, 0)].records)
    assert [o for o, *_ in got] == [4, 5]


def consume(
    client: OldClient,
    version: int,
    topic: str,
    partition: int,
    offset: int,
    count: int,
    within_s: float = 20,
):
    """Fetch from ``offset`` on as an old consumer does until ``count`` messages came (a
    fetch may stop at a segment's end, so one fetch is not enough)."""
    got: list = []
    deadline = time.monotonic() + within_s
    while len(got) < count and time.monotonic() < deadline:
        answer = fetch(client, version, {(topic, partition): offset})[(topic, partition)]
        assert answer.error_code == 0, answer
        new = read_messages(answer.records)
        got += new
        offset = new[-1][0] + 1 if new else offset
    return got


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4"])
def test_compressed_batches_of_a_new_producer_read_back(stack, client, admin, topic_name, codec):
    """kafka-python writes compressed v2 batches; old fetches get them as magic 0/1 wrappers."""
    topic = _topic(admin, topic_name(codec))
    producer = KafkaProducer(
        bootstrap_servers=stack.bootstrap_servers.split(","), compression_type=codec, linger_ms=50
    )
    ts = int(time.time() * 1000)
    sent = [(b"k%d" % i, b"%s value %d " % (codec.encode(), i) * 20, ts + i) for i in range(200)]
    for key, value, t in sent:
        producer.send(topic, value, key=key, partition=0, timestamp_ms=t)
    producer.flush()
    producer.close()
    for version in (0, 2, 3):
        got = consume(client, version, topic, 0, 0, len(sent))
        assert [(o, k, v) for o, k, v, _, _ in got] == [
            (i, k, v) for i, (k, v, _) in enumerate(sent)
        ]
        if version >= 2:
            assert [t for _, _, _, t, _ in got] == [t for *_, t in sent]


def test_aborted_transactions_are_not_delivered(stack, client, admin, topic_name):
    topic = _topic(admin, topic_name())
    bootstrap = stack.bootstrap_servers.split(",")
    plain = KafkaProducer(bootstrap_servers=bootstrap)
    plain.send(topic, b"before", partition=0).get(30)
    tx = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=topic_name("tx"))
    tx.init_transactions()
    tx.begin_transaction()
    for i in range(3):
        tx.send(topic, b"aborted %d" % i, partition=0)
    tx.flush()  # in the log, then aborted
    tx.abort_transaction()
    tx.begin_transaction()
    tx.send(topic, b"committed", partition=0)
    tx.commit_transaction()
    tx.close()
    plain.send(topic, b"after", partition=0).get(30)
    plain.close()
    committed = _read_directly(bootstrap, topic, "read_committed", 3)
    assert [v for _, v in committed] == [b"before", b"committed", b"after"]
    everything = _read_directly(bootstrap, topic, "read_uncommitted", 6)
    assert b"aborted 0" in [v for _, v in everything]  # the aborts are really in the log
    got = consume(client, 2, topic, 0, 0, 3)
    assert [(o, v) for o, _, v, _, _ in got] == committed


def _read_directly(bootstrap: list[str], topic: str, isolation: str, count: int):
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level=isolation, auto_offset_reset="earliest"
    )
    consumer.assign([TopicPartition(topic, 0)])
    got: list = []
    deadline = time.monotonic() + 20
    while len(got) < count and time.monotonic() < deadline:
        for records in consumer.poll(500).values():
            got += [(r.offset, r.value) for r in records]
    consumer.close()
    return got


def test_fetch_size_limits_as_old_brokers_had_them(client, admin, topic_name):
    """v0-v2: a message larger than the partition's limit comes cut (the old client then says
    its fetch size is too small); v3: the first message is whole whatever the limits
    (KIP-74), and the response's max_bytes is filled in the request's partition order."""
    topic = _topic(admin, topic_name(), partitions=2)
    big = b"x" * 2000
    for p in range(2):
        answer = produce(
            client, 2, topic, p, message_set(1, [(None, big, 1), (None, big, 2)]), acks=-1
        )
        assert answer.error_code == 0
    cut = fetch(client, 0, {(topic, 0): 0}, max_bytes=500)[(topic, 0)]
    assert cut.error_code == 0 and 0 < len(cut.records) <= 500
    assert read_messages(cut.records) == []  # no whole message: "fetch size too small"
    both = fetch(client, 3, {(topic, 0): 0, (topic, 1): 0}, max_bytes=500)
    first = read_messages(both[(topic, 0)].records)
    assert [(o, v) for o, _, v, _, _ in first] == [(0, big)]  # whole, beyond every limit
    assert read_messages(both[(topic, 1)].records) == []  # nothing left of max_bytes
    roomy = fetch(client, 3, {(topic, 0): 0, (topic, 1): 0}, max_bytes=1 << 20)
    assert [len(read_messages(roomy[(topic, p)].records)) for p in range(2)] == [2, 2]


@pytest.mark.parametrize(("magic", "codec"), [(0, 1), (1, 2), (1, 3)])  # gzip, snappy, lz4
def test_compressed_old_produce_read_by_a_new_consumer(
    stack, client, admin, topic_name, magic, codec
):
    """An old producer's compressed message set, up-converted by the gateway, is what a
    kafka-python consumer reads: offsets, keys, values and (magic 1) timestamps."""
    topic = _topic(admin, topic_name())
    ts = int(time.time() * 1000)
    sent = [(b"k%d" % i, b"value %d " % i * 10, ts + i) for i in range(20)]
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
    for i, (key, value, t) in enumerate(sent):
        builder.append(i, t if magic else None, key, value)
    answer = produce(client, 2 if magic else 0, topic, 0, bytes(builder.build()), acks=-1)
    assert (answer.error_code, answer.base_offset) == (0, 0)
    consumer = KafkaConsumer(
        bootstrap_servers=stack.bootstrap_servers.split(","), auto_offset_reset="earliest"
    )
    consumer.assign([TopicPartition(topic, 0)])
    got: list = []
    deadline = time.monotonic() + 20
    while len(got) < len(sent) and time.monotonic() < deadline:
        for records in consumer.poll(500).values():
            got += [(r.offset, r.key, r.value, r.timestamp) for r in records]
    consumer.close()
    assert [(o, k, v) for o, k, v, _ in got] == [(i, k, v) for i, (k, v, _) in enumerate(sent)]
    if magic:
        assert [t for *_, t in got] == [t for *_, t in sent]


def test_a_0_10_java_style_client_group_through_the_gateway(gateway, admin, topic_name):
    """kafka-python pinned to 0.10.1 speaks what a 0.10.1 Java client speaks (Produce v2,
    Fetch v3, ListOffsets v1, Metadata, GroupCoordinator v0, JoinGroup v1, SyncGroup,
    Heartbeat, LeaveGroup v0, OffsetCommit v2, OffsetFetch v1): a whole consumer group
    through the gateway, its committed offsets in Kafka."""
    topic = _topic(admin, topic_name(), partitions=2)
    group = topic_name("g")
    address = ["{}:{}".format(*gateway.address)]
    producer = KafkaProducer(bootstrap_servers=address, api_version=(0, 10, 1))
    for i in range(10):
        producer.send(topic, b"v%d" % i, key=b"k%d" % i)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(
        topic, bootstrap_servers=address, api_version=(0, 10, 1), group_id=group,
        auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=10000,
    )  # fmt: skip
    got = sorted(m.value for m in consumer)
    consumer.commit()
    consumer.close()
    assert got == sorted(b"v%d" % i for i in range(10))
    committed = admin.list_group_offsets({group: None})[group]
    assert sum(m.offset for m in committed.values()) == 10


def test_list_offsets_v0(stack, client, admin, topic_name):
    topic = _topic(admin, topic_name())
    producer = KafkaProducer(bootstrap_servers=stack.bootstrap_servers.split(","), acks="all")
    for i in range(3):
        producer.send(topic, b"x%d" % i, partition=0).get(30)  # acks=all: in the high watermark
    producer.close()

    def offsets(timestamp: int, count: int = 1):
        request = ListOffsetsRequest[0](
            replica_id=-1,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name=topic,
                    partitions=[
                        ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                            partition_index=0, timestamp=timestamp, max_num_offsets=count
                        )
                    ],
                )
            ],
        )
        (p,) = client.send(request).topics[0].partitions
        assert p.error_code == 0, p
        return list(p.old_style_offsets)

    assert offsets(-1) == [3]
    assert offsets(-2) == [0]
    assert offsets(-1, count=0) == []
    assert offsets(int(time.time() * 1000) + 3600_000) == [3]  # after every message: the end


def test_partitions_of_several_leaders_and_a_moved_leader(client, admin, topic_name):
    """One fetch over partitions led by different brokers is fanned out and merged; after a
    leader moves, the gateway's stale route is corrected by the old leader's NOT_LEADER
    (periodic refresh is off in these tests), and the old client never sees an error."""
    topic = _topic(admin, topic_name(), partitions=3)
    leaders = _leaders(admin, topic)
    assert len(set(leaders.values())) > 1, leaders
    for p in range(3):
        answer = produce(client, 2, topic, p, message_set(1, [(b"k", b"p%d" % p, 1)]), acks=-1)
        assert answer.error_code == 0  # acks=-1: below every high watermark, fetchable at once
    answers = fetch(client, 3, {(topic, p): 0 for p in range(3)})
    assert [read_messages(answers[(topic, p)].records)[0][2] for p in range(3)] == [
        b"p0",
        b"p1",
        b"p2",
    ]
    # data on one leader only: answered at once, not after max_wait on the other leaders
    other = next(p for p in range(3) if leaders[p] != leaders[0])
    part = FetchRequest.FetchTopic.FetchPartition
    request = FetchRequest[3](
        replica_id=-1, max_wait_ms=30000, min_bytes=1, max_bytes=1 << 20,
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
            part(partition=0, fetch_offset=0, partition_max_bytes=1 << 20),
            part(partition=other, fetch_offset=1, partition_max_bytes=1 << 20),  # its end
        ])],
    )  # fmt: skip
    started = time.monotonic()
    answer = client.send(request)
    # answered on the first leader's data, not after max_wait (30 s) on the other's: the
    # margin is wide so a loaded machine cannot blur the two (it was 2.5 s of 5 s)
    assert time.monotonic() - started < 15
    assert [len(p.records) > 0 for p in answer.responses[0].partitions] == [True, False]
    old = leaders[0]
    replicas = next(
        p["replica_nodes"]
        for t in admin.describe_topics([topic])
        for p in t["partitions"]
        if p["partition_index"] == 0
    )
    new = next(r for r in replicas if r != old)
    admin.alter_partition_reassignments(
        {TopicPartition(topic, 0): [new] + [r for r in replicas if r != new]}
    )
    wait_for(lambda: _preferred(admin, topic, new), 30, what="preferred replica moved")
    admin.elect_leaders(0, {topic: [0]}, raise_errors=False)
    wait_for(lambda: _leaders(admin, topic)[0] == new, 30, what=f"leader {new}")
    answer = produce(client, 2, topic, 0, message_set(1, [(b"k", b"after the move", 2)]))
    assert (answer.error_code, answer.base_offset) == (0, 1)
    # acks=1: fetchable once the high watermark passes it, when every replica in the ISR
    # fetched it from the new leader. A follower slow to switch leaders holds the watermark
    # up to replica.lag.time.max.ms (30 s) before it leaves the ISR: seen once at 20 s.
    got = consume(client, 3, topic, 0, 0, 2, within_s=45)
    assert [v for _, _, v, _, _ in got] == [b"p0", b"after the move"]


def _preferred(admin: KafkaAdminClient, topic: str, broker: int) -> bool:
    return any(
        p["replica_nodes"][0] == broker
        for t in admin.describe_topics([topic])
        for p in t["partitions"]
        if p["partition_index"] == 0
    )


def _commit(client: OldClient, version: int, group: str, topic: str, offsets: dict[int, int]):
    t = OffsetCommitRequest.OffsetCommitRequestTopic
    request = OffsetCommitRequest[version](
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",  # a simple commit
        topics=[
            t(
                name=topic,
                partitions=[
                    t.OffsetCommitRequestPartition(
                        partition_index=p,
                        committed_offset=o,
                        commit_timestamp=-1,
                        committed_metadata="m",
                    )
                    for p, o in offsets.items()
                ],
            )
        ],
    )
    return {p.partition_index: p.error_code for p in client.send(request).topics[0].partitions}


def _fetch_offsets(client: OldClient, version: int, group: str, topic: str, partitions: list[int]):
    t = OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=partitions)
    response = client.send(OffsetFetchRequest[version](group_id=group, topics=[t]))
    return {
        p.partition_index: (p.committed_offset, p.error_code) for p in response.topics[0].partitions
    }


def test_offset_commit_and_fetch_v1_in_kafka(gateway, client, admin, topic_name):
    topic = _topic(admin, topic_name(), partitions=2)
    group = topic_name("g")
    coordinator = client.send(FindCoordinatorRequest[0](key=group))
    assert coordinator.error_code == 0
    assert (coordinator.host, coordinator.port) == gateway.address
    assert coordinator.node_id in {b["broker_id"] for b in admin.describe_cluster()["brokers"]}
    assert _commit(client, 1, group, topic, {0: 42, 1: 7}) == {0: 0, 1: 0}
    assert _fetch_offsets(client, 1, group, topic, [0, 1]) == {0: (42, 0), 1: (7, 0)}
    in_kafka = admin.list_group_offsets({group: None})[group]
    assert {tp.partition: m.offset for tp, m in in_kafka.items()} == {0: 42, 1: 7}


def test_offset_fetch_v2_of_named_and_of_every_partition(client, admin, topic_name):
    """v2, what 0.10.2's Scala consumer sends with offsets.storage=kafka: named partitions,
    and (topics null) every partition the group has an offset for, with a top-level error."""
    topic = _topic(admin, topic_name(), partitions=3)
    group = topic_name("g")
    assert _commit(client, 2, group, topic, {0: 5, 2: 9}) == {0: 0, 2: 0}
    assert _fetch_offsets(client, 2, group, topic, [0, 1, 2]) == {0: (5, 0), 1: (-1, 0), 2: (9, 0)}
    every = client.send(OffsetFetchRequest[2](group_id=group, topics=None))
    assert every.error_code == 0
    got = {
        (t.name, p.partition_index): p.committed_offset for t in every.topics for p in t.partitions
    }
    assert got == {(topic, 0): 5, (topic, 2): 9}
    nothing = client.send(OffsetFetchRequest[2](group_id=topic_name("none"), topics=None))
    assert (nothing.error_code, nothing.topics) == (0, [])


def test_offset_commit_and_fetch_v0_in_zookeeper(client, admin, zk, topic_name):
    """v0 is ZooKeeper storage, as on old brokers: the node the old consumer reads."""
    topic = _topic(admin, topic_name())
    group = topic_name("g")
    assert _fetch_offsets(client, 0, group, topic, [0]) == {0: (-1, 3)}  # never committed
    assert _commit(client, 0, group, topic, {0: 42}) == {0: 0}
    assert zk.get(f"/consumers/{group}/offsets/{topic}/0")[0] == b"42"
    zk.set(f"/consumers/{group}/offsets/{topic}/0", b"43")  # e.g. the old consumer itself
    assert _fetch_offsets(client, 0, group, topic, [0]) == {0: (43, 0)}
    assert admin.list_group_offsets({group: None})[group] == {}  # not in Kafka


def test_old_versions_straight_to_kafka_4_are_refused(stack, admin, topic_name):
    """Negative control: without the gateway a 4.x broker closes the connection on the old
    versions these tests send (KIP-896), so an answer above can only be the gateway's.
    (4.x still answers Metadata v0-v3 and FindCoordinator v0, with its own endpoints.)"""
    topic = _topic(admin, topic_name())
    broker = admin.describe_cluster()["brokers"][0]
    partition = FetchRequest.FetchTopic.FetchPartition(
        partition=0, fetch_offset=0, partition_max_bytes=1024
    )
    commit = OffsetCommitRequest.OffsetCommitRequestTopic
    requests = [
        FetchRequest[0](
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=1,
            topics=[FetchRequest.FetchTopic(topic=topic, partitions=[partition])],
        ),
        ListOffsetsRequest[0](replica_id=-1, topics=[]),
        OffsetCommitRequest[1](
            group_id="g",
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[
                commit(
                    name=topic,
                    partitions=[
                        commit.OffsetCommitRequestPartition(
                            partition_index=0,
                            committed_offset=0,
                            commit_timestamp=-1,
                            committed_metadata="",
                        )
                    ],
                )
            ],
        ),
        OffsetFetchRequest[0](group_id="g", topics=None),
        ProduceRequest[0](
            acks=1,
            timeout_ms=1000,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name=topic,
                    partition_data=[
                        ProduceRequest.TopicProduceData.PartitionProduceData(
                            index=0, records=message_set(0, [(None, b"x", None)])
                        )
                    ],
                )
            ],
        ),
    ]
    for request in requests:
        c = OldClient((broker["host"], broker["port"]))
        try:
            c.write(request)
            assert c.closed_by_peer(), f"{request.name} v{request.API_VERSION} answered by Kafka 4"
        finally:
            c.close()
