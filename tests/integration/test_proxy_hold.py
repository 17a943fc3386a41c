"""A leader proxy holding its SyncGroup longer than the Kafka request timeout.

While the leader proxy holds the SyncGroup (the hand-over gate waits for old owners to
release, up to ``coexistence.max_hold_s``, 15 s by default), the other proxies' SyncGroup
requests wait at the coordinator. Sent with the client's ``request_timeout_ms`` (10 s by
default) they timed out first: the proxy closed its connection and rejoined, the group went
through generation after generation, and in one of them (seen at a load of 40 on two cores)
a kafka-python member led and assigned an old consumer's partitions to itself, which broke
I1 (``tests/e2e/test_scala_consumers.py``, 0.8.2.2). A SyncGroup now waits as long as the
coordinator may keep it: the rebalance timeout, like the JoinGroup.
"""

from __future__ import annotations

import time

import pytest
from kafka.admin import NewTopic

from bridge.kafka.proxy import ProxyMember, ProxyPool
from tests.conftest import wait_for
from zkpaths import TopicPartition

pytestmark = pytest.mark.integration

REQUEST_TIMEOUT_MS = 2000
HOLD_S = 5.0  # longer than the request timeout


def test_a_held_sync_group_outlasts_the_request_timeout(stack, admin, topic_name):
    topic = topic_name("hold")
    admin.create_topics([NewTopic(topic, 4, 1)])
    group = f"{topic}-g"
    options = {
        "bootstrap_servers": stack.bootstrap_servers.split(","),
        "request_timeout_ms": REQUEST_TIMEOUT_MS,
    }
    pool = ProxyPool(options)
    held: list[int] = []

    async def gate(proxy, generation, members):
        held.append(generation)
        await pool.sleep(HOLD_S)
        ids = sorted(members, key=lambda m: m.group_instance_id or m.member_id)
        return {TopicPartition(topic, p): ids[p * len(ids) // 4].member_id for p in range(4)}

    proxies = [
        ProxyMember(pool, group, f"{group}_t-{i}", (topic,), gate, session_timeout_ms=10000)
        for i in range(2)
    ]
    try:
        for p in proxies:
            p.start()
        wait_for(
            lambda: (
                all(p.assignment.get(topic) for p in proxies)
                and sum(len(p.assignment[topic]) for p in proxies) == 4
            ),
            60,
            0.2,
            "both proxies assigned",
        )
        generations = list(held)
        time.sleep(HOLD_S + 3)  # a timed-out SyncGroup would have started another by now
        errors = [p.last_error for p in proxies if p.last_error]
    finally:
        for p in proxies:
            p.stop(leave=True)
        pool.close()
    assert held == generations, f"the group kept rebalancing: generations {held}"
    assert not errors, errors
    admin.delete_topics([topic])
