"""Every old Scala consumer release (0.8.2.2 to 0.11.0.3) on Kafka 4.x through the legacy
gateway: a mixed group with kafka-python, then the migration and its rollback; one test,
every release's group side by side in one bridge (gateway advertised, broker JSON v2, which
0.9.0.0 needs), one JVM per release and run.

1. Per release an old consumer (``offsets.storage=zookeeper``) of its own group consumes
   while a producer writes; a kafka-python consumer joins each group, both consume side by
   side, and it leaves again; the old one takes every partition back, consumes to the log
   ends and stops. From the consumers' own logs, per release: no partition fetched by two
   members at once (I1, the analysis of ``test_coexistence.py``), not vacuously (the new
   member had some partitions, not all, and the old one consumed while it did), every
   message consumed, the old consumer's offsets in ZooKeeper at the log ends.
2. ``test_scala_migration.py``'s steps on the same groups: ``zookeeper → dual → kafka`` with a
   kafka-python consumer starting exactly where the old one stopped, the rollback
   ``kafka → dual → zookeeper``, and the restarted old consumer resuming exactly where the
   new one stopped; every message once per group over those runs.

``offsets.storage=kafka`` is left out here (the 3.9 test has it for every release; through
the gateway, ``test_gateway.py`` has it for 0.10.2.2 with dual commit, alone and in a mixed
group where the gateway commits as the old thread's proxy). Set
``KZB_STACK4_DIR`` to reuse a 4.x stack that is already up.
"""

from __future__ import annotations

import time

import pytest
from kafka.admin import NewTopic
from kafka.errors import KafkaError

from bridge.devstack.legacy import SCALA_CONSUMERS, NewConsumerProcess
from tests.e2e.test_coexistence import Producer, log_ends, overlaps, ownership_segments
from tests.e2e.test_gateway import start_gateway_bridge
from tests.e2e.test_scala_consumers import registry_env, wait_registry, zk_offsets
from tests.e2e.test_scala_migration import (
    JSON_VERSION,
    PARTITIONS,
    Releases,
    consumed_to,
    migrate_and_roll_back,
    old_consumers_again,
    proxied,
    stop_all,
    wait_until,
)
from tests.integration.test_migrate import record

pytestmark = pytest.mark.e2e

#: messages each side of a mixed group takes while they share it
SIDE_BY_SIDE = 20


@pytest.fixture(scope="module")
def stack(stack4):
    """This module on the session's Kafka 4.x stack (conftest's ``stack4``)."""
    return stack4


def joined(admin, group: str) -> bool:
    """The bridge's proxy is a member of the Kafka group (a group Kafka 4 does not know yet
    is an error, not an empty group)."""
    try:
        return proxied(admin, group)
    except KafkaError:
        return False


def beside(old, new) -> int:
    """How many messages the old consumer took between the new one's first and last."""
    if not new.messages:
        return 0
    first, last = new.messages[0].wall_ms, new.messages[-1].wall_ms
    return sum(1 for m in old.messages if first <= m.wall_ms <= last)


def side_by_side(old, new) -> bool:
    """Each took ``SIDE_BY_SIDE`` messages while the other consumed."""
    return len(new.messages) >= SIDE_BY_SIDE and beside(old, new) >= SIDE_BY_SIDE


def taken_back(old, left_ms: int) -> bool:
    """The old consumer fetched every partition after the new one left."""
    return {m.partition for m in old.messages if m.wall_ms > left_ms} == set(range(PARTITIONS))


def mixed_groups(s: Releases) -> tuple[dict, dict]:
    """Old consumers and, for a while, a kafka-python consumer in each release's group, a
    producer writing; returns both sides' consumers per release once the old ones stopped."""
    producer = Producer(s.stack.bootstrap_servers, s.topic, PARTITIONS)
    processes, old, new = [], {}, {}
    try:
        for r, t in s.tag.items():
            process, shares = s.jvm(r, f"mixed{t}", [(s.zk_group[r], s.topic, ())])
            processes.append(process)
            old[r] = shares[s.zk_group[r]]
        wait_until(
            lambda: all(c.messages and joined(s.admin, s.zk_group[r]) for r, c in old.items()),
            old,
            "old consumers consuming, their proxies in the Kafka groups",
        )
        s.lap("old consumers")
        for r, t in s.tag.items():
            new[r] = NewConsumerProcess(
                s.stack.bootstrap_servers,
                s.zk_group[r],
                [s.topic],
                client_id=f"mixed{t}",
                log=s.logs / f"mixednew{t}.log",
            )
        wait_until(lambda: all(side_by_side(old[r], new[r]) for r in old), new, "side by side")
        s.lap("side by side")
        stop_all(new.values())
        left_ms = int(time.time() * 1000)
        wait_until(lambda: all(taken_back(c, left_ms) for c in old.values()), old, "taken back")
        producer.stop()
        s.ends.append(ends := log_ends(s.admin, s.topic, PARTITIONS))
        wait_until(lambda: all(consumed_to(c, ends) for c in old.values()), old, "to the ends")
        s.lap("taken back, to the log ends")
    finally:
        producer.stop()
        stop_all([*new.values(), *processes])
    s.lap("stopped")
    return old, new


def check_mixed(s: Releases, old: dict, new: dict) -> None:
    """I1 per release from the consumers' own logs, not vacuously; nothing missed; the old
    consumer's last commit at the log ends."""
    ends = s.ends[-1]
    want = {(p, o) for p, end in ends.items() for o in range(end)}
    for r in s.tag:
        double = overlaps(ownership_segments({"old": old[r], "new": new[r]}))
        assert double == [], f"{r}: partitions fetched by two members at once: {double[:5]}"
        parts = {m.partition for m in new[r].messages}
        assert 0 < len(parts) < PARTITIONS, f"{r}: the new member had partitions {parts}"
        assert side_by_side(old[r], new[r]), f"{r}: {beside(old[r], new[r])} taken beside it"
        seen = {(m.partition, m.offset) for c in (old[r], new[r]) for m in c.messages}
        assert want <= seen, f"{r}: {len(want - seen)} never consumed"
        assert zk_offsets(s.zk, s.zk_group[r], s.topic) == ends, r
        assert record(s.zk, s.zk_group[r])["mode"] == "zookeeper", r


def test_every_release_shares_a_group_migrates_and_rolls_back_through_the_gateway(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    topic = topic_name("mig")
    admin.create_topics([NewTopic(topic, PARTITIONS, 2)])
    s = Releases(stack, chroot, zk, admin, topic, tmp_path)
    bridges: list = []
    start_gateway_bridge(start_bridge, zk, admin, bridges, registry_env(JSON_VERSION))
    wait_registry(zk, topic, JSON_VERSION)

    old, new = mixed_groups(s)
    check_mixed(s, old, new)
    first = s.ends[-1]
    migrate_and_roll_back(s, first)
    old_consumers_again(s, first, s.ends[-1], refusal=False)
    print(f"\n{s.timings}")
    for r in SCALA_CONSUMERS:
        s.exactly_once(r, since=first)
    assert "Traceback" not in bridges[0].text()
