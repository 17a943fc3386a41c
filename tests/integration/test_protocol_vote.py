"""What a mixed group's leader does, made visible: a new member without ``range`` (the
protocol vote), and a leader whose ``range`` is not Kafka's."""

from __future__ import annotations

import time

import pytest
from kafka.admin import NewTopic
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

from bridge.kafka.range_assignor import KafkaRangeAssignor
from tests.conftest import wait_for
from tests.integration.test_group_mirror import PolledConsumer, register_old_consumer
from tests.integration.test_ops import free_port, metric

pytestmark = pytest.mark.integration


def test_member_without_range_is_named_and_nothing_else_changes(
    stack, zk, admin, start_bridge, topic_name
):
    topic = topic_name("vote")
    admin.create_topics([NewTopic(topic, 4, 1)])
    group = f"{topic}-g"
    bridge = start_bridge()
    newbie = PolledConsumer(
        stack.bootstrap_servers,
        group,
        [topic],
        "rr-only",
        assignors=(RoundRobinPartitionAssignor,),
    )
    try:
        owners = f"/consumers/{group}/owners/{topic}"
        wait_for(
            lambda: zk.exists(owners) and len(zk.get_children(owners)) == 4,
            60,
            what="the new-style group mirrored",
        )
        owners_before = sorted(zk.get_children(owners))
        # an old consumer registers: the bridge's proxy offers only range and is refused
        register_old_consumer(zk, group, topic)
        wait_for(
            lambda: "which its members chose without 'range'" in bridge.text(),
            60,
            what="the bridge naming the member",
        )
        text = bridge.text()
        assert "rr-only" in text and "'roundrobin'" in text
        # the group still runs as the new member formed it; the mirror wrote nothing more
        desc = admin.describe_groups([group])[group]
        assert [m["client_id"] for m in desc["members"]] == ["rr-only"]
        assert sorted(zk.get_children(owners)) == owners_before
    finally:
        newbie.close()
        admin.delete_topics([topic])


class DynamicMembersTakeAll(RangePartitionAssignor):
    """Named ``range`` but not Kafka's range: new (dynamic) members take every partition."""

    @classmethod
    def assign(cls, cluster, members):
        dynamic = [m for m in members if m.group_instance_id is None]
        out = {}
        for m in members:
            topics = sorted(m.metadata.topics) if m in dynamic[:1] else []
            parts = [(t, sorted(cluster.partitions_for_topic(t) or ())) for t in topics]
            out[m.member_id] = ConsumerProtocolAssignment(0, parts, b"")
        return out


@pytest.mark.parametrize(
    "assignor", [KafkaRangeAssignor, DynamicMembersTakeAll], ids=["kafka-range", "not-range"]
)
def test_a_leader_assigning_other_than_range_is_reported(
    stack, zk, admin, start_bridge, topic_name, assignor
):
    """A new member leads (it formed the group); once an old consumer's proxy joins, the
    bridge compares the leader's assignment with Kafka's range, which old consumers follow."""
    topic = topic_name("lead")
    admin.create_topics([NewTopic(topic, 4, 1)])
    group = f"{topic}-g"
    port = free_port()
    bridge = start_bridge("--metrics-address", f"127.0.0.1:{port}")
    leader = PolledConsumer(
        stack.bootstrap_servers, group, [topic], "leading-member", assignors=(assignor,)
    )
    try:
        owners = f"/consumers/{group}/owners/{topic}"
        wait_for(lambda: zk.exists(owners), 60, what="the new-style group mirrored")
        register_old_consumer(zk, group, topic)

        def two_members_stable() -> bool:
            d = admin.describe_groups([group])[group]
            return d["group_state"] == "Stable" and len(d["members"]) == 2

        wait_for(two_members_stable, 60, what="the proxy joined the new member's group")
        gauge = "zkbridge_assignment_mismatches"
        if assignor is KafkaRangeAssignor:
            wait_for(lambda: metric(port, gauge, group=group) == 0, 30, what="gauge at 0")
            time.sleep(3)  # a few more passes of the flow
            assert metric(port, gauge, group=group) == 0
            assert "other than Kafka's range" not in bridge.text()
        else:
            # range gives the proxy (static, first) 0-1; the leader gave them to itself
            wait_for(lambda: metric(port, gauge, group=group) == 2, 60, what="gauge at 2")
            wait_for(lambda: "other than Kafka's range" in bridge.text(), 10, what="reported")
            line = next(ln for ln in bridge.text().splitlines() if "Kafka's range" in ln)
            assert f"{topic}-0" in line and "leading-member" in line
            assert "docs/troubleshooting.md" in line
    finally:
        leader.close()
        admin.delete_topics([topic])
