"""kafka-node 3.0.1 HighLevelConsumers (npm, the last release with them) through the bridge
on Kafka 3.9 (issue 16, part 4).

A HighLevelConsumer finds brokers in ``/brokers/ids`` (the registry mirror), balances with
its own dialect under ``/consumers/<g>`` and commits with OffsetCommit v0, which a KRaft
broker refuses; the bridge's legacy gateway keeps v0 offsets in ZooKeeper, as brokers up to
2.x did, and gives each broker id its own port (``gateway.broker_port_base``), since
kafka-node keys brokers by address. Shown: the group consumes every message, its offsets land
in ZooKeeper and (storage mode ``zookeeper``) in Kafka, ``groups``/``describe`` show the
dialect and who owns what, a ``kill -9`` hands the partitions over; without the gateway
nothing is committed anywhere (the negative control); mixed with a kafka-python consumer
the bridge refuses in one line and the kafka-python consumer gets nothing until the
HighLevelConsumer leaves (its negative control).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid

import pytest
from kafka import KafkaProducer
from kafka.admin import NewTopic

from bridge.devstack.kafka_node import KafkaNodeConsumerProcess
from bridge.devstack.legacy import LegacyConsumerProcess, NewConsumerProcess
from tests.conftest import ROOT, wait_for
from tests.e2e.test_gateway import kafka_offsets, zk_offsets

pytestmark = pytest.mark.e2e

PARTITIONS = 3
REFUSED = "refusing to mix kafka-node HighLevelConsumers"
GATEWAY = {
    "ZK_BRIDGE__REGISTRY__ADVERTISE": "gateway",
    "ZK_BRIDGE__GATEWAY__BROKER_PORT_BASE": "0",
}


def _topic(admin, name: str) -> str:
    admin.create_topics([NewTopic(name, PARTITIONS, 1)])
    return name


def _produce(stack, topic: str, start: int, n: int) -> dict[tuple[int, int], str]:
    """``n`` messages spread over the partitions; (partition, offset) -> value."""
    p = KafkaProducer(bootstrap_servers=stack.bootstrap_servers.split(","))
    futures = [
        (p.send(topic, f"v{i}".encode(), partition=i % PARTITIONS), f"v{i}")
        for i in range(start, start + n)
    ]
    p.flush()
    sent = {}
    for f, value in futures:
        md = f.get(30)
        sent[(md.partition, md.offset)] = value
    p.close()
    return sent


def _ends(sent: dict[tuple[int, int], str]) -> dict[int, int]:
    ends: dict[int, int] = {}
    for part, off in sent:
        ends[part] = max(ends.get(part, 0), off + 1)
    return ends


def _cli(stack, chroot: str, *args: str) -> object:
    out = subprocess.run(
        [sys.executable, "-m", "bridge.cli", *args, "--output", "json"]
        + ["--zookeeper", stack.zk_connect + chroot, "--bootstrap-server", stack.bootstrap_servers],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _migrate(stack, chroot: str, group: str, to: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bridge.cli", "migrate", group, "--to", to, "--lag-window", "1"]
        + list(extra)
        + ["--zookeeper", stack.zk_connect + chroot, "--bootstrap-server", stack.bootstrap_servers],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=180,
    )


def _hlc(stack, chroot, group, topic, tmp_path, name) -> KafkaNodeConsumerProcess:
    c = KafkaNodeConsumerProcess(
        stack.zk_connect + chroot, group, [topic], log=tmp_path / f"{name}.log"
    )
    c.wait_ready(90)
    return c


def _wait_brokers(zk, stack) -> None:
    n = len(stack.bootstrap_servers.split(","))

    def mirrored() -> bool:
        return bool(zk.exists("/brokers/ids")) and len(zk.get_children("/brokers/ids")) == n

    wait_for(mirrored, 60, 0.2, "brokers mirrored")


def _consumed(*consumers) -> dict[tuple[int, int], str]:
    return {(m.partition, m.offset): m.value for c in consumers for m in c.messages}


def _not_msg(c) -> list[str]:
    """A consumer's last protocol lines other than messages: its rebalances and errors."""
    return [x for x in c.lines if not x.startswith("MSG ")][-8:]


def _mode(stack, chroot: str, group: str) -> str:
    return next(r["mode"] for r in _cli(stack, chroot, "groups") if r["group"] == group)


def _step(stack, chroot: str, group: str, to: str) -> None:
    """A storage-mode step that must pass its gates and be recorded. As an operator would,
    the gates are first checked with ``--dry-run`` until they pass: right after a member
    joins, ZooKeeper shows the new owners some seconds before the proxies' Kafka group has
    rebalanced (an existing proxy hears of it at its next heartbeat), and "no owner
    conflicts" refuses the step meanwhile, as it must."""
    dry: list[subprocess.CompletedProcess] = []

    def gates_pass() -> bool:
        dry.append(_migrate(stack, chroot, group, to, "--dry-run"))
        return dry[-1].returncode == 0

    try:
        wait_for(gates_pass, 60, 1.0, f"the gates of -> {to}")
    except AssertionError:
        raise AssertionError(f"gates of -> {to} never passed: {dry[-1].stdout}") from None
    out = _migrate(stack, chroot, group, to)
    assert out.returncode == 0, out.stdout + out.stderr
    assert _mode(stack, chroot, group) == to


def check_group_through_the_gateway(stack, zk, admin, bridge, chroot, topic, tmp_path) -> None:
    """Two HighLevelConsumers behind the gateway (``bridge`` started with ``GATEWAY``): every
    message consumed, OffsetCommit v0 kept in ZooKeeper and copied into Kafka, the group
    shown by ``describe``/``groups``; storage mode zookeeper -> dual -> zookeeper (-> kafka
    refused); after the rollback a ``kill -9`` hands the partitions to the survivor, which
    resumes at the committed offsets (every new message, none consumed before again) and
    keeps committing in ZooKeeper, copied into Kafka. Run on 3.9 and on 4.x, the same code."""
    group = f"kn-{uuid.uuid4().hex[:6]}"
    sent = _produce(stack, topic, 0, 60)
    a = _hlc(stack, chroot, group, topic, tmp_path, "a")
    b = _hlc(stack, chroot, group, topic, tmp_path, "b")
    try:
        wait_for(lambda: set(_consumed(a, b)) >= set(sent), 90, 0.2, "every message consumed")
        assert {k: v for k, v in _consumed(a, b).items() if k in sent} == sent
        ends = {(topic, p): o for p, o in _ends(sent).items()}
        # OffsetCommit v0 through the gateway: ZooKeeper; the bridge copies it into Kafka
        wait_for(lambda: zk_offsets(zk, group, [topic]) == ends, 60, 0.5, "offsets in ZooKeeper")
        wait_for(lambda: kafka_offsets(admin, group) == ends, 90, 0.5, "offsets in Kafka")

        def shown():
            d = _cli(stack, chroot, "describe", group)
            owns = {p for c in d["consumers"] for p in c["owns"].split(",") if p != "-"}
            return d if len(owns) == PARTITIONS and len(d["consumers"]) == 2 else None

        desc = wait_for(shown, 60, 1.0, "both consumers and their partitions in describe")
        assert {c["consumer_id"] for c in desc["consumers"]} == {a.consumer_id, b.consumer_id}
        assert {c["dialect"] for c in desc["consumers"]} == {"kafka-node"}
        assert {c["topics"] for c in desc["consumers"]} == {topic}
        row = next(r for r in _cli(stack, chroot, "groups") if r["group"] == group)
        assert (row["dialects"], row["old_threads"], row["mode"]) == ("kafka-node", 2, "zookeeper")

        # storage mode: zookeeper -> dual passes its gates; -> kafka is refused, since the
        # HighLevelConsumers' commits (OffsetCommit v0) only ever reach ZooKeeper; the
        # rollback dual -> zookeeper passes its gates (the mode read back after each step)
        _step(stack, chroot, group, "dual")
        to_kafka = _migrate(stack, chroot, group, "kafka")
        assert to_kafka.returncode == 1, to_kafka.stdout + to_kafka.stderr
        assert "[FAIL] consumers use the target store" in to_kafka.stdout
        assert "commit with OffsetCommit v0" in to_kafka.stdout
        _step(stack, chroot, group, "zookeeper")

        # kill -9: its owner and ids nodes expire with its session, the other takes over at
        # the committed offsets: every new message, none of the old ones again
        seen = len(b.messages)
        a.kill()
        wait_for(lambda: len(b.owned) == PARTITIONS, 60, 0.2, "survivor owns every partition")
        more = _produce(stack, topic, 60, 30)
        try:
            wait_for(lambda: set(_consumed(b)) >= set(more), 60, 0.2, "new messages after kill -9")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the survivor's last lines: {_not_msg(b)}") from None
        after = {(m.partition, m.offset) for m in b.messages[seen:]}
        assert after == set(more), "after the rollback: every new message, no old one again"
        ends = {(topic, p): o for p, o in _ends({**sent, **more}).items()}
        wait_for(lambda: zk_offsets(zk, group, [topic]) == ends, 60, 0.5, "offsets after kill")
        wait_for(lambda: kafka_offsets(admin, group) == ends, 90, 0.5, "copied into Kafka")
    finally:
        a.stop()
        b.stop()
    log = bridge.text()
    assert REFUSED not in log  # negative control of the mixed-group test
    # the killed consumer's proxy, listed until Kafka drops it, is not taken for a new member
    assert "a new member leads this group" not in log and "is static" not in log


def test_high_level_consumers_consume_and_commit_through_the_gateway(
    stack, zk, admin, start_bridge, chroot, topic_name, tmp_path
) -> None:
    bridge = start_bridge("--gateway-listen", "127.0.0.1:0", env=GATEWAY)
    _wait_brokers(zk, stack)
    topic = _topic(admin, topic_name("kn"))
    check_group_through_the_gateway(stack, zk, admin, bridge, chroot, topic, tmp_path)


def test_without_the_gateway_kraft_refuses_the_commits(
    stack, zk, admin, start_bridge, chroot, topic_name, tmp_path
) -> None:
    """The negative control: brokers advertised directly, the HighLevelConsumer consumes
    (Fetch v0 is still served by 3.9) but its OffsetCommit v0 is refused by the KRaft broker
    and silently dropped by kafka-node: no offsets in ZooKeeper, none in Kafka."""
    start_bridge()
    _wait_brokers(zk, stack)
    topic = _topic(admin, topic_name("kn"))
    group = f"kn-{uuid.uuid4().hex[:6]}"
    sent = _produce(stack, topic, 0, 30)
    c = _hlc(stack, chroot, group, topic, tmp_path, "c")
    try:
        wait_for(lambda: set(_consumed(c)) >= set(sent), 90, 0.2, "every message consumed")
    finally:
        c.stop()  # SIGTERM: close(force) commits once more before it exits
    assert "EXIT" in c.lines
    time.sleep(1)
    assert zk_offsets(zk, group, [topic]) == {}
    assert kafka_offsets(admin, group) == {}


def check_mixed_with_kafka_python(stack, zk, admin, bridge, chroot, topic, tmp_path) -> None:
    """A HighLevelConsumer, then a kafka-python consumer in its group: refused in one line,
    the Kafka member gets nothing until the HighLevelConsumer leaves (``bridge`` started
    with ``GATEWAY``, so the HighLevelConsumer commits). Run on 3.9 and on 4.x."""
    group = f"kn-{uuid.uuid4().hex[:6]}"
    sent = _produce(stack, topic, 0, 30)
    hlc = _hlc(stack, chroot, group, topic, tmp_path, "hlc")
    new = None
    try:
        wait_for(lambda: set(_consumed(hlc)) >= set(sent), 90, 0.2, "HLC consumed")
        wait_for(lambda: zk_offsets(zk, group, [topic]), 60, 0.5, "HLC commits")
        new = NewConsumerProcess(
            stack.bootstrap_servers,
            group,
            [topic],
            client_id="kafka-python-mixed",
            log=tmp_path / "new.log",
        )
        lines = wait_for(
            lambda: [x for x in bridge.text().splitlines() if f"{group}: {REFUSED}" in x],
            90,
            0.5,
            "refusal",
        )
        assert f"group {group}: " in lines[0] and hlc.consumer_id in lines[0]
        assert "kafka-python-mixed" in lines[0]
        ids = zk.get_children(f"/consumers/{group}/ids")
        assert ids == [hlc.consumer_id]  # nothing mirrored into a refused group
        more = _produce(stack, topic, 30, 30)
        wait_for(lambda: set(_consumed(hlc)) >= set(more), 60, 0.2, "HLC consumes on")
        assert len(hlc.owned) == PARTITIONS
        assert new.messages == []  # I1: the Kafka member was given no partition
        # negative control: once the HighLevelConsumer leaves, the group is no longer
        # refused and the same kafka-python consumer gets the partitions and the messages
        hlc.stop()
        last = _produce(stack, topic, 60, 30)
        wait_for(lambda: set(_consumed(new)) >= set(last), 90, 0.2, "kafka-python consumes")
        assert not set(_consumed(new)) & set(sent)  # it starts where the HLC committed
    finally:
        hlc.stop()
        if new is not None:
            new.stop()


def check_mixed_with_a_scala_consumer(bridge, stack, zk, chroot, topic, tmp_path) -> None:
    """A HighLevelConsumer and a 0.10.2.2 Scala consumer in one group compute different
    ranges over the same /ids (consumers vs threads): the bridge says so and stays out.
    (Negative control of the line: the lone-HLC group of the first test has none.)"""
    group = f"kn-{uuid.uuid4().hex[:6]}"
    hlc = _hlc(stack, chroot, group, topic, tmp_path, "hlc")
    scala = LegacyConsumerProcess(
        stack.zk_connect + chroot, group, [topic], log=tmp_path / "scala.log"
    )
    try:
        scala.wait_ready(120)
        line = wait_for(
            lambda: next(
                (x for x in bridge.text().splitlines() if f"{group}: {REFUSED}" in x), None
            ),
            90,
            0.5,
            "refusal",
        )
        assert f"group {group}: " in line and hlc.consumer_id in line
        assert f"scala consumers {scala.consumer_id}" in line and "different ranges" in line
        ids = set(zk.get_children(f"/consumers/{group}/ids"))
        assert ids == {hlc.consumer_id, scala.consumer_id}  # nothing mirrored
    finally:
        scala.stop()
        hlc.stop()


def test_mixed_with_kafka_python_or_a_scala_consumer_is_refused_in_one_line(
    stack, zk, admin, start_bridge, chroot, topic_name, tmp_path
) -> None:
    """Both mixes, one bridge (with the gateway) and one topic, a group each."""
    bridge = start_bridge("--gateway-listen", "127.0.0.1:0", env=GATEWAY)
    _wait_brokers(zk, stack)
    topic = _topic(admin, topic_name("kn"))
    check_mixed_with_kafka_python(stack, zk, admin, bridge, chroot, topic, tmp_path)
    check_mixed_with_a_scala_consumer(bridge, stack, zk, chroot, topic, tmp_path)
