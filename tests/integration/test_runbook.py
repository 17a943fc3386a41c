"""Every `zk-bridge` command of docs/migration.md, run in order against the real stack."""

from __future__ import annotations

import os
import re
import shlex
import string
import subprocess
import sys

import pytest
from kafka import KafkaProducer
from kafka.admin import NewTopic

from tests.conftest import ROOT, wait_for
from tests.integration.test_group_mirror import PolledConsumer

pytestmark = pytest.mark.integration

RUNBOOK = ROOT / "docs" / "migration.md"


#: sections whose commands need more than one consumer group on the stack; their steps are run
#: by their own tests (storm spouts: tests/e2e/test_storm.py, with a real KafkaSpout)
OWN_TESTS = ("## storm-kafka spouts",)


def runbook_commands() -> list[str]:
    """The runbook's commands for one consumer group, in the page's order."""
    cmds, skipping = [], False
    for line in RUNBOOK.read_text().splitlines():
        if line.startswith("## "):
            skipping = line.strip() in OWN_TESTS
        elif line.strip().startswith("zk-bridge ") and not skipping:
            cmds.append(line.strip())
    return cmds


def test_runbook_has_commands():
    cmds = runbook_commands()
    assert any("--to dual" in c for c in cmds) and any("--to zookeeper" in c for c in cmds)


def test_every_runbook_command_runs(stack, zk, admin, start_bridge, topic_name, chroot, tmp_path):
    topic = topic_name("rb")
    admin.create_topics([NewTopic(topic, 2, 1)])
    group = f"{topic}-g"
    producer = KafkaProducer(bootstrap_servers=stack.bootstrap_servers.split(","))
    for i in range(20):
        producer.send(topic, b"x", partition=i % 2)
    producer.flush()
    producer.close()
    start_bridge()
    consumer = PolledConsumer(stack.bootstrap_servers, group, [topic], "rb-1")
    env = {
        **os.environ,
        "ZK": stack.zk_connect + chroot,
        "KAFKA": stack.bootstrap_servers,
        "GROUP": group,
    }
    try:
        wait_for(lambda: zk.exists(f"/kafka-zk-bridge/groups/{group}"), 60)
        # The group starts as a Kafka group, so the rollback runbook (kafka → dual →
        # zookeeper) runs first, then the migration runbook takes it back to kafka.
        order = runbook_commands()
        migrate = [c for c in order if " migrate " in c]
        first_dual = next(i for i, c in enumerate(migrate) if "--to kafka" in c) + 1
        to_kafka, back = migrate[:first_dual], migrate[first_dual:]
        others = [c for c in order if " migrate " not in c]
        sequence = [*others[:3], *back, *others[3:4], *to_kafka, *others[4:]]
        assert sorted(sequence) == sorted(order)
        for cmd in sequence:
            argv = [string.Template(a).substitute(env) for a in shlex.split(cmd)]
            if argv[1] == "migrate":
                argv += ["--lag-window", "1"]
            res = subprocess.run(
                [sys.executable, "-m", "bridge.cli", *argv[1:]],
                env=env,
                capture_output=True,
                text=True,
                timeout=180,
                cwd=tmp_path,
            )
            assert res.returncode == 0, f"{cmd}\n{res.stdout}\n{res.stderr}"
        assert b'"mode":"kafka"' in zk.get(f"/kafka-zk-bridge/groups/{group}")[0]
        assert re.search(
            rf"/consumers/{group}/offsets/{topic}/0:\d+",
            (tmp_path / f"{group}-before.txt").read_text(),
        )
    finally:
        consumer.close()
        admin.delete_topics([topic])
