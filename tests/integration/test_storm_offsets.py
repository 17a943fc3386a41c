"""A storm spout's offset nodes on the real stack: bad ones reported by path and left alone
(I5), the good ones of the same spout still reconciled, and a migration step refused while
a node is unreadable."""

from __future__ import annotations

import json

import pytest
from kafka.admin import NewTopic

from tests.conftest import wait_for
from tests.e2e.test_storm import _cli, _kafka_offsets

pytestmark = pytest.mark.integration

HALF = b'{"topology":{"id":"topo-1","name":"n"},"offset":7,"parti'


def _good(topic: str, partition: int, offset: int) -> bytes:
    return json.dumps(
        {
            "topology": {"id": "topo-1", "name": "n"},
            "offset": offset,
            "partition": partition,
            "broker": {"host": "127.0.0.1", "port": 9092},
            "topic": topic,
        }
    ).encode()


def test_half_written_spout_node_is_reported_and_left_alone(
    stack, zk, admin, start_bridge, topic_name, chroot
):
    topic = topic_name("stormbad")
    group = f"{topic}-spout"
    admin.create_topics([NewTopic(topic, 3, 1)])
    base = "/storm/s1"
    zk.create(f"{base}/partition_0", _good(topic, 0, 3), makepath=True)
    zk.create(f"{base}/partition_1", HALF)
    zk.create(f"{base}/partition_2", _good("another-topic", 2, 5))
    spouts = [{"zk_root": "/storm", "spout_id": "s1", "topic": topic, "group": group}]
    env = {"ZK_BRIDGE__STORM__SPOUTS": json.dumps(spouts)}
    bridge = start_bridge(env=env)

    # the good node is copied into Kafka (zookeeper mode); the bad ones are not
    wait_for(lambda: _kafka_offsets(admin, group, topic) == {0: 3}, 60, what="partition 0 copied")
    wait_for(lambda: f"{base}/partition_2" in bridge.text(), 30, what="both bad nodes reported")
    log = bridge.text()
    for path, reason in (
        (f"{base}/partition_1", "not valid JSON"),
        (f"{base}/partition_2", "holds another-topic-2"),
    ):
        lines = [ln for ln in log.splitlines() if path in ln]
        assert len(lines) == 1 and reason in lines[0], lines  # once, not every tick
    assert "Traceback" not in log
    assert zk.get(f"{base}/partition_1")[0] == HALF

    # describe shows the readable partition and names the bad node on stderr
    shown = _cli(stack, chroot, env, "describe", group, "--output", "json")
    assert shown.returncode == 0, shown.stderr
    assert [r["partition"] for r in json.loads(shown.stdout)["partitions"]] == [0]
    assert f"{base}/partition_1" in shown.stderr and "Traceback" not in shown.stderr

    # a step is refused while a node is unreadable, naming it
    step = _cli(stack, chroot, env, "migrate", group, "--to", "dual", "--lag-window", "0.5")
    assert step.returncode == 1, step.stdout + step.stderr
    assert "spout offsets readable" in step.stdout and f"{base}/partition_1" in step.stdout
    assert zk.get(f"{base}/partition_1")[0] == HALF
