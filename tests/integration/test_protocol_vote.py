"""The protocol vote, made visible: a new member without ``range`` in a mixed group."""

from __future__ import annotations

import json

import pytest
from kafka.admin import NewTopic
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from tests.conftest import wait_for
from tests.integration.test_group_mirror import PolledConsumer

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
        old_id = f"{group}_host-1700000000000-abcd1234"
        zk.create(
            f"/consumers/{group}/ids/{old_id}",
            json.dumps(
                {"version": 1, "subscription": {topic: 1}, "pattern": "static", "timestamp": "1"}
            ).encode(),
            ephemeral=True,
        )
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
