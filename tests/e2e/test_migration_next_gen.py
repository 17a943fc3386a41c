"""A migration zookeeper -> dual -> kafka and its rollback on Kafka 4.x, where the new side
is a next-generation group (KIP-848): Kafka's own Java consumer 4.x with
``group.protocol=consumer`` (harness ``NextGenConsumer``).

The old side is the real 0.10.2.2 Scala consumer on ZooKeeper offset storage, reaching the
4.x cluster through the bridge's legacy gateway (as ``test_gateway`` does). The old
application stops, the group is migrated and the new consumer starts exactly where the old
one stopped; then the rollback, and an old consumer starts exactly where the new one
stopped. Every message is consumed exactly once (clean stops commit what was consumed).

Set ``KZB_STACK4_DIR`` to reuse a 4.x stack that is already up (it is left running).
"""

from __future__ import annotations

import pytest
from kafka import KafkaProducer
from kafka.admin import NewTopic

from bridge.devstack.legacy import MIGRATION_SETTINGS, ConsumerProcess, LegacyConsumerProcess
from bridge.devstack.next_gen import NextGenConsumerProcess
from bridge.kafka.groups import list_groups
from bridge.kafka.views import CLASSIC, CONSUMER
from tests.conftest import wait_for
from tests.e2e.test_gateway import kafka_offsets, start_gateway_bridge, zk_offsets
from tests.integration.test_migrate import cli, record

pytestmark = pytest.mark.e2e

PARTITIONS = 3
PER_PARTITION = 40
EXPECT_2 = ("--expect-members", "2", "--lag-window", "1")


@pytest.fixture(scope="module")
def stack(stack4):
    """This module on the session's Kafka 4.x stack (conftest's ``stack4``)."""
    return stack4


def produce(stack, topic: str, label: str) -> dict[int, int]:
    """``PER_PARTITION`` messages into each partition; returns the log-end offsets."""
    producer = KafkaProducer(bootstrap_servers=stack.bootstrap_servers.split(","))
    ends: dict[int, int] = {}
    for i in range(PER_PARTITION * PARTITIONS):
        meta = producer.send(topic, f"{label}{i}".encode(), partition=i % PARTITIONS).get(30)
        ends[meta.partition] = max(ends.get(meta.partition, 0), meta.offset + 1)
    producer.close()
    return ends


def consumed_to(consumer: ConsumerProcess, ends: dict[int, int]) -> bool:
    seen = {(m.partition, m.offset) for m in consumer.messages}
    return all((p, end - 1) in seen for p, end in ends.items())


def first_offsets(consumer: ConsumerProcess) -> dict[int, int]:
    """Where the consumer started in each partition."""
    first: dict[int, int] = {}
    for m in consumer.messages:
        first[m.partition] = min(first.get(m.partition, m.offset), m.offset)
    return first


def migrate(stack, chroot, zk, group: str, to: str) -> None:
    step = cli(stack, chroot, "migrate", group, "--to", to, "--lag-window", "1")
    assert step.returncode == 0, f"--to {to}:\n{step.stdout}{step.stderr}"
    assert record(zk, group)["mode"] == to


def reset_dry_run(stack, chroot, group: str):
    """``offsets reset`` refuses a live group before anything else: its liveness check."""
    return cli(stack, chroot, "offsets", "reset", group, "--to-latest", "--dry-run")


def group_type(admin, group: str) -> str | None:
    listed = list_groups(admin).get(group)
    return listed.group_type if listed else None


def test_an_old_group_migrates_to_a_next_generation_group_and_rolls_back(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    topic = topic_name("t")
    group = f"{topic}-g"
    admin.create_topics([NewTopic(topic, PARTITIONS, 2)])
    start_gateway_bridge(start_bridge, zk, admin)
    wait_for(lambda: zk.exists(f"/brokers/topics/{topic}/partitions/{PARTITIONS - 1}/state"), 30)
    offsets = {(topic, p) for p in range(PARTITIONS)}

    def old(name: str) -> LegacyConsumerProcess:
        extra = [*MIGRATION_SETTINGS, "--auto-commit-interval-ms", "500"]
        c = LegacyConsumerProcess(
            stack.zk_connect + chroot, group, [topic], extra=extra, log=tmp_path / f"{name}.log"
        )
        c.wait_ready(90)
        return c

    consumers: list[ConsumerProcess] = []
    try:
        batch1 = produce(stack, topic, "a")
        consumers.append(old_a := old("oldA"))
        wait_for(lambda: consumed_to(old_a, batch1), 90, 0.2, "old consumer A done")
        old_a.stop()
        assert zk_offsets(zk, group, [topic]) == {(topic, p): e for p, e in batch1.items()}
        wait_for(lambda: zk.exists(f"/kafka-zk-bridge/groups/{group}"), 60, what="a record")
        assert record(zk, group)["mode"] == "zookeeper"

        batch2 = produce(stack, topic, "b")  # producers go on while nobody consumes
        migrate(stack, chroot, zk, group, "dual")
        new = NextGenConsumerProcess(
            stack.bootstrap_servers, group, [topic], client_id="newN1", log=tmp_path / "n1.log"
        )
        consumers.append(new)
        new.wait_ready(120)
        wait_for(lambda: consumed_to(new, batch2), 90, 0.2, "the next-generation consumer done")
        assert first_offsets(new) == batch1, "the new consumer starts where the old stopped"
        assert group_type(admin, group) == CONSUMER, "the group is a next-generation group"
        # a live consumer-type group is live for the operator's tools (read with
        # ConsumerGroupDescribe: DescribeGroups answers GROUP_ID_NOT_FOUND for it)
        refused = reset_dry_run(stack, chroot, group)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "Kafka consumer group is Stable with 1 member(s): newN1" in refused.stderr
        assert "old consumer" not in refused.stderr, "the mirror of newN1 is not an old consumer"
        # the gates see the next-generation member (not an empty group): asked for two
        # members, they count exactly the one, mirrored (the control of "members present")
        step = cli(stack, chroot, *("migrate", group, "--to", "kafka", "--dry-run"), *EXPECT_2)
        assert step.returncode == 1, step.stdout + step.stderr
        assert "1 members present, 2 expected" in step.stdout, step.stdout
        assert "is not mirrored" not in step.stdout, step.stdout
        for to in ("kafka", "dual"):  # finalize, then the rollback runbook
            migrate(stack, chroot, zk, group, to)
        new.stop()
        # the control: the same check lets an empty consumer-type group through
        allowed = reset_dry_run(stack, chroot, group)
        assert allowed.returncode == 0, allowed.stdout + allowed.stderr
        assert group_type(admin, group) == CONSUMER
        migrate(stack, chroot, zk, group, "zookeeper")
        at = {(topic, p): e for p, e in batch2.items()}
        assert kafka_offsets(admin, group) == at, "the Kafka group's position"
        assert zk_offsets(zk, group, [topic]) == at

        batch3 = produce(stack, topic, "c")
        consumers.append(old_b := old("oldB"))
        wait_for(lambda: consumed_to(old_b, batch3), 90, 0.2, "old consumer B done")
        assert first_offsets(old_b) == batch2, "the old consumer resumes where the new stopped"
        # its proxies turned the empty consumer-type group classic (a classic member joining)
        assert group_type(admin, group) == CLASSIC
    finally:
        for c in consumers:
            c.stop()
    seen = [(m.partition, m.offset) for c in consumers for m in c.messages]
    assert sorted(seen) == sorted((p, o) for p, end in batch3.items() for o in range(end))
    assert set(zk_offsets(zk, group, [topic])) == offsets
