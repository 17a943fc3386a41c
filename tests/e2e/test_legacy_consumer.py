"""The real 0.10.2.2 Scala consumer reads a KRaft cluster through the bridge's registry.

It is given nothing but ``zookeeper.connect`` (a chroot only the bridge writes), so every
broker and topic it finds there came from the registry mirror.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from kafka import KafkaProducer
from kafka.admin import NewTopic

from bridge.devstack.legacy import LegacyConsumerProcess
from tests.conftest import wait_for

pytestmark = pytest.mark.e2e

MESSAGES = 600


def test_old_scala_consumer_consumes_everything_via_the_bridge(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    topic = topic_name("legacy")
    admin.create_topics([NewTopic(topic, 6, 2)])
    producer = KafkaProducer(bootstrap_servers=stack.bootstrap_servers.split(","))
    sent = set()
    for i in range(MESSAGES):
        value = f"m{i}"
        producer.send(topic, value=value.encode(), partition=i % 6)
        sent.add(value)
    producer.flush()
    producer.close()

    start_bridge()
    wait_for(
        lambda: zk.exists(f"/brokers/topics/{topic}/partitions/5/state"),
        30,
        what="bridge mirroring the topic",
    )

    group = "legacy-e2e"
    consumer = LegacyConsumerProcess(
        stack.zk_connect + chroot,
        group,
        [topic],
        streams=2,
        extra=["--auto-offset-reset", "smallest", "--auto-commit-interval-ms", "500"],
        log=tmp_path / "legacy.log",
    )
    try:
        consumer.wait_ready()
        consumer.wait_consumed(MESSAGES, timeout=90)
    finally:
        assert consumer.stop() in (0, 143)

    got = Counter(m.value for m in consumer.messages)
    assert set(got) == sent, f"missing: {sorted(sent - set(got))[:10]}"
    assert all(n == 1 for n in got.values()), "a message was consumed twice"
    assert {m.partition for m in consumer.messages} == set(range(6))

    # its offsets are where every legacy tool looks for them
    offsets = {
        int(p): int(zk.get(f"/consumers/{group}/offsets/{topic}/{p}")[0])
        for p in zk.get_children(f"/consumers/{group}/offsets/{topic}")
    }
    assert offsets == {p: MESSAGES // 6 for p in range(6)}
    # and the consumer registered itself the legacy way, in the tree the bridge keeps
    assert consumer.consumer_id and consumer.consumer_id.startswith(f"{group}_")
    admin.delete_topics([topic])


def test_bridge_never_touches_what_the_old_consumer_wrote(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    topic = topic_name("own")
    admin.create_topics([NewTopic(topic, 2, 1)])
    start_bridge()
    wait_for(lambda: zk.exists(f"/brokers/topics/{topic}"), 30, what="topic mirrored")
    consumer = LegacyConsumerProcess(
        stack.zk_connect + chroot,
        "own-g",
        [topic],
        extra=["--auto-offset-reset", "smallest"],
        log=tmp_path / "legacy.log",
    )
    try:
        consumer.wait_ready()
        ids = zk.get_children("/consumers/own-g/ids")
        reg = json.loads(zk.get(f"/consumers/own-g/ids/{ids[0]}")[0])
        assert reg["subscription"] == {topic: 1}
        # the ledger records only bridge-created nodes: none of the consumer's own
        wait_for(lambda: zk.exists(f"/consumers/own-g/owners/{topic}/1"), 30)
        ledger = "/kafka-zk-bridge/owned"
        theirs = [f"/consumers/own-g/ids/{ids[0]}"] + [
            f"/consumers/own-g/owners/{topic}/{p}" for p in (0, 1)
        ]
        for path in theirs:
            assert zk.exists(path), path
            assert not zk.exists(ledger + path) or zk.get(ledger + path)[0] != b"owned", path
    finally:
        consumer.stop()
    admin.delete_topics([topic])
