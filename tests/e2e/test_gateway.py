"""Old clients on Kafka 4.x through the legacy gateway (flow F6, issue 13).

Kafka 4 refuses the request versions and message formats of 0.8-2.0 clients (KIP-896). With
``--gateway-listen`` and ``registry.advertise = "gateway"`` the bridge publishes its gateway
in ``/brokers/ids``; real old clients from Maven Central, driven by the repo's harnesses,
then consume and produce on a 4.x cluster: the 0.8.2.2 to 0.11.0.3 Scala consumers
(ZooKeeper mode, the bridge's chroot) and the 0.10.2.2 Java producer. The same consumer
without the gateway gets nothing (the negative control).

Set ``KZB_STACK4_DIR`` to reuse a 4.x stack that is already up (it is left running).
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import KafkaError

from bridge.cli import STOP_GRACE_S
from bridge.devstack.legacy import SCALA_CONSUMERS, LegacyConsumerProcess, NewConsumerProcess
from bridge.devstack.legacy_producer import message, produce_legacy
from tests.conftest import wait_for
from tests.e2e.legacy_io import (
    KEEP_OLD_TIMESTAMPS,
    TS_BASE,
    Sent,
    check_consumed,
    produce_python,
    produce_transactions,
    read_python,
)
from tests.e2e.test_coexistence import Producer, log_ends

pytestmark = pytest.mark.e2e

PARTITIONS = 3
PER_TOPIC = 60
COMPRESSIONS = ("none", "gzip", "snappy", "lz4")


@pytest.fixture(scope="module")
def stack(stack4):
    """This module on the session's Kafka 4.x stack (conftest's ``stack4``)."""
    return stack4


def old_group(name: str) -> str:
    """A group id of its own: Kafka's groups are the cluster's, not the test's chroot's, and
    one left by an earlier run (its offsets, a member not yet expired) must not be seen."""
    return f"old-{name}-{uuid.uuid4().hex[:6]}"


def kafka_brokers(admin) -> dict[int, tuple[str, int]]:
    return {b["broker_id"]: (b["host"], b["port"]) for b in admin.describe_cluster()["brokers"]}


def registered(zk) -> dict[int, dict]:
    ids = zk.get_children("/brokers/ids") if zk.exists("/brokers/ids") else []
    return {int(i): json.loads(zk.get(f"/brokers/ids/{i}")[0]) for i in ids}


#: the old consumers' groups are left out of the group mirror and its storage modes: the
#: bridge would otherwise copy their ZooKeeper offsets into Kafka, and the offsets the tests
#: find in Kafka must be the ones the consumers committed through the gateway
OLD_GROUPS_UNMIRRORED = {"ZK_BRIDGE__GROUPS__EXCLUDE": '["old-.*"]'}


def start_gateway_bridge(
    start_bridge, zk, admin, bridges: list | None = None, extra_env: dict | None = None
) -> dict:
    """A bridge with its gateway on a free port, advertised; returns the endpoint
    /brokers/ids publishes for each broker id, once every broker of Kafka has one."""
    env = {"ZK_BRIDGE__REGISTRY__ADVERTISE": "gateway", **OLD_GROUPS_UNMIRRORED}
    env.update(extra_env or {})
    bridge = start_bridge("--gateway-listen", "127.0.0.1:0", env=env)
    if bridges is not None:
        bridges.append(bridge)
    brokers = kafka_brokers(admin)

    def published():
        regs = registered(zk)
        if set(regs) != set(brokers):
            return None
        ends = {bid: (r["host"], r["port"]) for bid, r in regs.items()}
        return ends if not set(ends.values()) & set(brokers.values()) else None

    return wait_for(published, 60, what="gateway endpoints in /brokers/ids")


def wait_topics(zk, topics: list[str]) -> None:
    for t in topics:
        wait_for(
            lambda t=t: zk.exists(f"/brokers/topics/{t}/partitions/{PARTITIONS - 1}/state"),
            30,
            what=f"{t} mirrored",
        )


def committed_ends(sent: list[Sent]) -> dict[tuple[str, int], int]:
    """Where an old consumer's committed offset lands after it consumed everything: one past
    the last message it was given (control batches and aborted records come later, if any)."""
    ends: dict[tuple[str, int], int] = {}
    for s in sent:
        ends[(s.topic, s.partition)] = max(ends.get((s.topic, s.partition), 0), s.offset + 1)
    return ends


def zk_offsets(zk, group: str, topics: list[str]) -> dict[tuple[str, int], int]:
    out = {}
    for t in topics:
        path = f"/consumers/{group}/offsets/{t}"
        for p in zk.get_children(path) if zk.exists(path) else []:
            out[(t, int(p))] = int(zk.get(f"{path}/{p}")[0])
    return out


def kafka_offsets(admin, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets in Kafka. A retriable answer is asked again: on a fresh
    cluster whose ``__consumer_offsets`` no group has used yet, FindCoordinator answers
    COORDINATOR_NOT_AVAILABLE while the topic is created (seen in a clean-clone CI run)."""

    def read() -> tuple[dict[tuple[str, int], int]] | None:
        try:
            found = admin.list_group_offsets({group: None})[group]
        except KafkaError as exc:
            if exc.retriable:
                return None
            raise
        return (
            {(tp.topic, tp.partition): om.offset for tp, om in found.items() if om.offset >= 0},
        )

    return wait_for(read, 60, interval=0.5, what=f"committed offsets of {group} in Kafka")[0]


def test_the_registry_publishes_the_gateway_and_keeps_the_rest(
    stack, zk, admin, start_bridge, topic_name, chroot
):
    """advertise = gateway changes /brokers/ids' endpoints only: beside a bridge advertising
    the brokers (its own chroot), the same broker ids, racks and features, the same topics."""
    topic = topic_name("reg")
    admin.create_topics([NewTopic(topic, PARTITIONS, 2, topic_configs=KEEP_OLD_TIMESTAMPS)])
    zk.ensure_path("/plain")
    start_bridge(zookeeper=stack.zk_connect + chroot + "/plain")
    bridges: list = []
    gateway = start_gateway_bridge(start_bridge, zk, admin, bridges)
    wait_topics(zk, [topic])
    plain_zk = f"{chroot}/plain"
    wait_for(lambda: zk.exists(f"/plain/brokers/topics/{topic}/partitions/2/state"), 30)
    brokers = kafka_brokers(admin)
    for bid, reg in registered(zk).items():
        plain = json.loads(zk.get(f"/plain/brokers/ids/{bid}")[0])
        assert (plain["host"], plain["port"]) == brokers[bid], plain_zk
        host, port = gateway[bid]
        assert reg["endpoints"] == [f"PLAINTEXT://{host}:{port}"]
        assert reg["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
        for key in ("host", "port", "endpoints", "timestamp"):
            reg.pop(key), plain.pop(key)
        assert reg == plain
    for path in (f"/brokers/topics/{topic}", f"/brokers/topics/{topic}/partitions/0/state"):
        assert zk.get(path)[0] == zk.get("/plain" + path)[0], path
    admin.delete_topics([topic])

    # a client connected to the gateway does not hold the bridge's stop past its grace
    with socket.create_connection(next(iter(gateway.values())), timeout=5):
        t0 = time.monotonic()
        bridges[0].stop()
        took = time.monotonic() - t0
    assert took < STOP_GRACE_S, f"stopping took {took:.1f}s"
    assert "without a clean shutdown" not in bridges[0].text()  # not the grace's hard exit
    assert "Traceback" not in bridges[0].text()
    assert "legacy gateway listening" in bridges[0].text()


def test_a_gateway_port_in_use_stops_the_bridge_in_one_line(stack, start_bridge):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {"ZK_BRIDGE__REGISTRY__ADVERTISE": "gateway"}
        bridge = start_bridge("--gateway-listen", f"127.0.0.1:{port}", env=env)
        assert bridge.proc.wait(60) == 2
    errors = [line for line in bridge.text().splitlines() if " ERROR " in line]
    assert len(errors) == 1 and f"127.0.0.1:{port}" in errors[0], errors
    assert "gateway.listen" in errors[0] and "Traceback" not in bridge.text()


@pytest.fixture(scope="module")
def written(stack):
    """Topics with no compression, gzip, snappy and lz4, and one with three transactions
    (the second aborted), written by kafka-python; returns (topics, committed messages)."""
    tag = uuid.uuid4().hex[:6]
    names = [f"gw-{c}-{tag}" for c in (*COMPRESSIONS, "txn")]
    admin = KafkaAdminClient(bootstrap_servers=stack.bootstrap_servers.split(","))
    admin.create_topics(
        [NewTopic(t, PARTITIONS, 2, topic_configs=KEEP_OLD_TIMESTAMPS) for t in names]
    )
    sent: list[Sent] = []
    for compression, t in zip(COMPRESSIONS, names, strict=False):
        codec = None if compression == "none" else compression
        sent += produce_python(stack.bootstrap_servers, t, PARTITIONS, PER_TOPIC, compression=codec)
    committed, aborted = produce_transactions(stack.bootstrap_servers, names[-1], PARTITIONS, 20)
    assert len(committed) == 40 and len(aborted) == 20
    yield names, sent + committed
    admin.delete_topics(names)
    admin.close()


def consume_all(stack, chroot, names, sent, groups: dict, tmp_path, ready_s: float = 90) -> dict:
    """Run one old consumer per group (``group: (classpath, extra flags)``) over ``names``
    until each consumed as many messages as were committed, then stop them (they commit)."""
    settings = ["--auto-offset-reset", "smallest", "--details", "true"]
    # KZB_LEGACY_LOG_LEVEL=INFO: the old consumers' own log (fetchers, rebalances) in tmp_path
    settings += ["--log-level", os.environ.get("KZB_LEGACY_LOG_LEVEL", "WARN")]
    consumers = {
        group: LegacyConsumerProcess(
            stack.zk_connect + chroot,
            group,
            names,
            streams=2,
            extra=settings + extra,
            log=tmp_path / f"{group}.log",
            jars=jars,
        )
        for group, (jars, extra) in groups.items()
    }
    try:
        for c in consumers.values():
            c.wait_ready(ready_s)
        for c in consumers.values():
            c.wait_consumed(len(sent), timeout=120)
        time.sleep(2)  # anything more (a duplicate, an aborted record) would show by now
    finally:
        codes = {g: c.stop() for g, c in consumers.items()}
    assert all(code in (0, 143) for code in codes.values()), codes
    return consumers


def test_old_consumers_read_every_committed_message_through_the_gateway(
    stack, zk, admin, start_bridge, chroot, tmp_path, written
):
    """Every Scala consumer release (``SCALA_CONSUMERS``: 0.8.2.2, 0.9.0.0, 0.9.0.1, 0.10.2.2,
    0.11.0.3), one JVM each side by side, offsets in ZooKeeper; broker JSON v2, which 0.9.0.0
    needs and the others read too (v4 through the gateway: the dual-commit and coexistence
    tests)."""
    names, sent = written
    groups = {old_group(r.replace(".", "")): (jars, []) for r, jars in SCALA_CONSUMERS.items()}
    start_gateway_bridge(
        start_bridge, zk, admin, extra_env={"ZK_BRIDGE__REGISTRY__BROKER_JSON_VERSION": "2"}
    )
    assert {r["version"] for r in registered(zk).values()} == {2}
    wait_topics(zk, names)
    consumers = consume_all(stack, chroot, names, sent, groups, tmp_path)
    ends = committed_ends(sent)
    for release, group in zip(SCALA_CONSUMERS, groups, strict=True):
        # 0.10+ fetch message format v1: the producers' timestamps; 0.8 and 0.9 have none
        ts = "CreateTime" if release in ("0.10.2.2", "0.11.0.3") else None
        check_consumed(consumers[group].messages, sent, timestamps=ts)
        assert zk_offsets(zk, group, names) == ends, release
        assert not kafka_offsets(admin, group), "ZooKeeper storage must not reach Kafka"


def test_dual_commit_puts_the_old_consumers_offsets_in_kafka_too(
    stack, zk, admin, start_bridge, chroot, tmp_path, written
):
    """offsets.storage=kafka with dual.commit.enabled: GroupCoordinator v0, OffsetFetch v2 and
    OffsetCommit v2 through the gateway. The group is left out of the bridge's group mirror,
    so the offsets found in Kafka are the ones the consumer committed there."""
    names, sent = written
    group = old_group("kafka")
    assert not kafka_offsets(admin, group)
    start_gateway_bridge(start_bridge, zk, admin)
    wait_topics(zk, names)
    flags = ["--offsets-storage", "kafka", "--dual-commit", "true"]
    consumers = consume_all(stack, chroot, names, sent, {group: ("legacy", flags)}, tmp_path)
    check_consumed(consumers[group].messages, sent, timestamps="CreateTime")
    ends = committed_ends(sent)
    assert zk_offsets(zk, group, names) == ends
    assert kafka_offsets(admin, group) == ends


#: the old consumer's flags: Kafka storage, dual commit, committing every half second
KAFKA_STORAGE = [
    *("--offsets-storage", "kafka", "--dual-commit", "true", "--auto-commit-interval-ms", "500"),
    *("--auto-offset-reset", "smallest"),
]


def consumed_to(consumer, ends: dict[int, int]) -> bool:
    seen = {(m.partition, m.offset) for m in consumer.messages}
    return all((p, end - 1) in seen for p, end in ends.items() if end)


def handed_over(old, new) -> dict[int, tuple[int, int]]:
    """Per partition the new member was given: (the offset the old consumer would have read
    next there when the new member started, the first offset the new member read). Equal when
    the old owner's final commit reached the new owner; the new member re-reads when it did
    not (the first offset lower)."""
    first_ms = new.messages[0].wall_ms
    out = {}
    for p in sorted({m.partition for m in new.messages}):
        before = [m.offset for m in old.messages if m.partition == p and m.wall_ms < first_ms]
        first = min(m.offset for m in new.messages if m.partition == p)
        out[p] = (max(before, default=-1) + 1, first)
    return out


def read_twice(*consumers) -> list:
    """(partition, offset) consumed more than once over ``consumers`` together, with who
    (True: the first consumer) and when (wall ms), first few."""
    seen: dict[tuple[int, int], list[tuple[bool, int]]] = {}
    for c in consumers:
        for m in c.messages:
            seen.setdefault((m.partition, m.offset), []).append((c is consumers[0], m.wall_ms))
    return sorted((k, v) for k, v in seen.items() if len(v) > 1)[:5]


def proxy_joined(admin, group: str) -> bool:
    """The bridge's proxy is a member of the Kafka group (4.x: an unknown group is an error)."""
    try:
        d = admin.describe_groups([group])[group]
    except KafkaError:
        return False
    return any(m["client_id"] == "zk-bridge-proxy" for m in d["members"])


def mixed_kafka_storage_group(stack, admin, chroot, topic, group, logs) -> tuple:
    """A 0.10.2.2 consumer with ``KAFKA_STORAGE`` and, once its proxy is in the Kafka group,
    a kafka-python consumer, a producer writing; the new one leaves, the old one takes every
    partition to the log ends. Returns (old consumer still running, new one, log ends)."""
    old = LegacyConsumerProcess(
        stack.zk_connect + chroot, group, [topic], extra=KAFKA_STORAGE, log=logs / f"{group}.log"
    )
    producer = Producer(stack.bootstrap_servers, topic, PARTITIONS)
    new = None
    try:
        old.wait_ready(90)
        # from every partition first: the one handed to the new member has something to
        # hand over (the negative control's re-read, the positive one's exact hand-over)
        wait_for(
            lambda: (
                {m.partition for m in old.messages} == set(range(PARTITIONS))
                and proxy_joined(admin, group)
            ),
            120,
            what="the old consumer on every partition, its proxy joined",
        )
        new = NewConsumerProcess(
            stack.bootstrap_servers, group, [topic], client_id="mixed", log=logs / "new.log"
        )
        wait_for(lambda: len(new.messages) >= 5, 120, what="the new member consuming")
        new.stop()
        producer.stop()
        ends = log_ends(admin, topic, PARTITIONS)
        wait_for(lambda: consumed_to(old, ends), 120, what="the old consumer at the log ends")
    except BaseException:
        old.stop()
        raise
    finally:
        producer.stop()
        if new is not None:
            new.stop()
    return old, new, ends


def test_kafka_storage_commits_in_a_mixed_group_are_made_as_the_proxies(
    stack, zk, admin, start_bridge, chroot, tmp_path
):
    """offsets.storage=kafka + dual.commit in a group where the bridge's proxy is a member:
    Kafka refuses the consumer's generation -1 commits, so the gateway commits them as the
    proxy of the old thread owning each partition; they land in Kafka and (dual commit) in
    ZooKeeper, the new member starts the partition it is handed exactly where the old
    consumer stopped (its final commit, made mid-rebalance, is kept in ZooKeeper, whence the
    hand-over gate carries it into Kafka), and a restarted consumer resumes where it
    committed. Negative control first: with ``gateway.rewrite_simple_commits = false``
    nothing of the old consumer's is stored and the new member re-reads its partition."""
    topic = f"gw-mixed-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    off = {"ZK_BRIDGE__GATEWAY__REWRITE_SIMPLE_COMMITS": "false"}
    bridge = start_bridge_for(start_bridge, zk, admin, off)
    group = f"mixed-off-{uuid.uuid4().hex[:6]}"  # mirrored: not OLD_GROUPS_UNMIRRORED
    old, new, ends = mixed_kafka_storage_group(stack, admin, chroot, topic, group, tmp_path)
    time.sleep(3)  # six more commit intervals, then its shutdown commit
    old.stop()
    only_old = set(range(PARTITIONS)) - {m.partition for m in new.messages}
    assert only_old and all(ends[p] for p in only_old)
    stored = {**kafka_offsets(admin, group), **zk_offsets(zk, group, [topic])}
    assert not {p for (_, p) in stored} & only_old, stored
    moved = handed_over(old, new)
    assert moved and all(first < next_ for next_, first in moved.values()), moved  # re-read
    bridge.stop()

    bridge = start_bridge_for(start_bridge, zk, admin, {})
    group = f"mixed-on-{uuid.uuid4().hex[:6]}"
    old, new, ends = mixed_kafka_storage_group(stack, admin, chroot, topic, group, tmp_path)
    want = {(topic, p): end for p, end in ends.items()}
    try:
        wait_for(lambda: kafka_offsets(admin, group) == want, 30, what="commits in Kafka")
        wait_for(lambda: zk_offsets(zk, group, [topic]) == want, 30, what="dual commits")
    finally:
        old.stop()
    moved = handed_over(old, new)
    assert moved and all(first == next_ for next_, first in moved.values()), moved
    # nor a stale auto-commit retry storing older offsets (the old consumer re-reading)
    assert not read_twice(old, new), read_twice(old, new)
    # restarted, it resumes where it committed: only what was written since
    again = LegacyConsumerProcess(
        stack.zk_connect + chroot, group, [topic], extra=KAFKA_STORAGE, log=tmp_path / "again.log"
    )
    try:
        again.wait_ready(90)
        sent = produce_python(stack.bootstrap_servers, topic, PARTITIONS, 9, prefix="again")
        again.wait_consumed(len(sent), timeout=60)
        time.sleep(1)  # a re-read of older messages would show by now
    finally:
        again.stop()
    assert sorted((m.partition, m.offset) for m in again.messages) == sorted(
        (s.partition, s.offset) for s in sent
    )
    assert "Traceback" not in bridge.text()
    admin.delete_topics([topic])


def start_bridge_for(start_bridge, zk, admin, env: dict):
    """A gateway bridge (``start_gateway_bridge``) with ``env``; returns its process."""
    bridges: list = []
    start_gateway_bridge(start_bridge, zk, admin, bridges, env)
    return bridges[0]


@pytest.mark.parametrize("compression", ["none", "gzip", "lz4"])
def test_the_old_producer_writes_through_the_gateway(
    stack, zk, admin, start_bridge, topic_name, tmp_path, compression
):
    topic = topic_name(compression)
    admin.create_topics([NewTopic(topic, PARTITIONS, 2, topic_configs=KEEP_OLD_TIMESTAMPS)])
    gateway = start_gateway_bridge(start_bridge, zk, admin)
    bootstrap = ",".join(sorted({f"{h}:{p}" for h, p in gateway.values()}))
    count = 150
    run = produce_legacy(
        bootstrap,
        topic,
        count,
        prefix="old",
        compression=compression,
        timestamp_base=TS_BASE,
        log=tmp_path / "producer.log",
    )
    assert run.returncode == 0 and not run.errors, run.lines[-5:]
    assert sorted(a.index for a in run.acked) == list(range(count))
    records = read_python(stack.bootstrap_servers, topic, count)
    by_place = {(r.partition, r.offset): r for r in records}
    assert len(by_place) == len(records) == count
    for a in run.acked:
        r = by_place[(a.partition, a.offset)]  # the offset the gateway acknowledged is real
        assert (r.key, r.value) == message("old", a.index)
        assert r.timestamp == a.timestamp == TS_BASE + a.index
    assert {a.partition for a in run.acked} == set(range(PARTITIONS))
    admin.delete_topics([topic])


def test_without_the_gateway_the_old_consumer_gets_nothing_from_kafka_4(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    """The negative control: the same consumer, settings and data, the registry advertising
    the brokers themselves. Kafka 4 refuses its requests, so not one message arrives; the
    tests above would fail the same way if the gateway did nothing."""
    topic = topic_name("neg")
    admin.create_topics([NewTopic(topic, PARTITIONS, 2, topic_configs=KEEP_OLD_TIMESTAMPS)])
    sent = produce_python(stack.bootstrap_servers, topic, PARTITIONS, PER_TOPIC)
    start_bridge(env=OLD_GROUPS_UNMIRRORED)
    brokers = kafka_brokers(admin)
    wait_for(
        lambda: {bid: (r["host"], r["port"]) for bid, r in registered(zk).items()} == brokers,
        30,
        what="the brokers' own endpoints in /brokers/ids",
    )
    wait_topics(zk, [topic])
    group = old_group("direct")
    consumer = LegacyConsumerProcess(
        stack.zk_connect + chroot,
        group,
        [topic],
        streams=2,
        extra=["--auto-offset-reset", "smallest", "--details", "true"],
        log=tmp_path / "old-direct.log",
    )
    try:
        consumer.wait_ready(90)
        time.sleep(20)
    finally:
        consumer.stop()
    assert len(sent) == PER_TOPIC and consumer.messages == []
    assert not any(zk_offsets(zk, group, [topic]).values()), "an offset moved"
    # the brokers closed the connection on its old requests (here ListOffsets v0)
    assert "java.io.EOFException" in (tmp_path / "old-direct.log").read_text()
    # and the old producer, pointed at the brokers themselves, has no message acknowledged
    run = produce_legacy(
        stack.bootstrap_servers,
        topic,
        10,
        props={"max.block.ms": "10000", "request.timeout.ms": "5000", "retries": "0"},
        log=tmp_path / "producer.log",
    )
    assert run.returncode == 2 and not run.acked and run.errors, run.lines[-5:]
    admin.delete_topics([topic])
