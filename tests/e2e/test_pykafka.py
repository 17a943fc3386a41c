"""The real pykafka 2.8.0 ``BalancedConsumer`` (ZooKeeper-balanced, pure Python) and the bridge.

pykafka finds its brokers in ``/brokers/ids`` of a chroot only the bridge writes, balances
through ``/consumers/<g>/ids`` and ``owners/<t>/<leader>-<p>`` and commits its offsets to
Kafka. The bridge shows the group (``describe``: members, topics, owned partitions,
dialect) and mirrors its Kafka offsets under ``/consumers/<g>/offsets``. A group where
pykafka meets kafka-python or Scala consumers is refused with one clear line, and the
bridge writes nothing into its ``ids``/``owners`` (a kafka-python-only group, which the
bridge does mirror, is the negative control).
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest
from kafka import KafkaProducer
from kafka.admin import NewTopic

from bridge.devstack.legacy import LegacyConsumerProcess, NewConsumerProcess
from bridge.devstack.pykafka_client import PykafkaConsumerProcess
from bridge.kafka.groups import describe_group
from tests.conftest import ROOT, wait_for

pytestmark = pytest.mark.e2e

PARTITIONS = 4
PER_PARTITION = 50


def cli(stack, chroot, *args: str, ok: int = 0) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "bridge.cli", *args, "--zookeeper", stack.zk_connect + chroot]
        + ["--bootstrap-server", stack.bootstrap_servers, "--output", "json"],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    assert out.returncode == ok, out.stdout + out.stderr
    return out.stdout


def describe(stack, chroot, group: str) -> dict:
    return json.loads(cli(stack, chroot, "describe", group))


def topic_with_data(stack, admin, topic: str) -> None:
    admin.create_topics([NewTopic(topic, PARTITIONS, 2)])
    producer = KafkaProducer(bootstrap_servers=stack.bootstrap_servers.split(","))
    for i in range(PARTITIONS * PER_PARTITION):
        producer.send(topic, f"m{i}".encode(), partition=i % PARTITIONS)
    producer.flush()
    producer.close()


def pykafka_owned(d: dict) -> dict[str, list[str]]:
    """consumer id -> partitions it owns, of the pykafka consumers ``describe`` shows."""
    return {
        m["consumer_id"]: [] if m["owns"] == "-" else m["owns"].split(",")
        for m in d["consumers"]
        if m["dialect"] == "pykafka"
    }


def check_group(stack, zk, admin, chroot, topic: str, tmp_path) -> None:
    """Two BalancedConsumers of a group of their own, on a ``topic`` the running bridge
    mirrors: every message consumed, the group shown by ``describe``/``groups``, its Kafka
    offsets under ``/consumers/<g>/offsets``, the step to ``dual`` refused by its gate, and
    a ``kill -9`` rebalancing every partition onto the survivor. Run on 3.9 and on 4.x."""
    group = f"pykafka-e2e-{uuid.uuid4().hex[:6]}"
    consumers = [
        PykafkaConsumerProcess(stack.zk_connect + chroot, group, topic, log=tmp_path / f"p{i}.log")
        for i in range(2)
    ]
    try:
        for c in consumers:
            c.wait_ready(120)
        wait_for(
            lambda: (
                len({(m.partition, m.offset) for c in consumers for m in c.messages})
                == PARTITIONS * PER_PARTITION
            ),
            120,
            0.2,
            "every message consumed by the pykafka group",
        )
        # balanced among themselves: describe shows both, each owning some partitions
        d = wait_for(
            lambda: (
                (d := describe(stack, chroot, group))
                and len([p for p in pykafka_owned(d).values() if p]) == 2
                and d
            ),
            60,
            0.5,
            "both pykafka consumers owning partitions in describe",
        )
        owned = pykafka_owned(d)
        assert set(owned) == {c.consumer_id for c in consumers}
        assert sorted(p for ps in owned.values() for p in ps) == [
            f"{topic}-{p}" for p in range(PARTITIONS)
        ]
        assert all(m["topics"] == topic for m in d["consumers"])
        assert d["note"] is None
        assert d["mode"] == "kafka"
        rows = json.loads(cli(stack, chroot, "groups"))
        assert [r["dialects"] for r in rows if r["group"] == group] == ["pykafka"]

        # its Kafka offsets under /consumers/<g>/offsets, read back with plain kazoo
        def zk_offsets() -> dict[int, int]:
            base = f"/consumers/{group}/offsets/{topic}"
            if not zk.exists(base):
                return {}
            return {int(p): int(zk.get(f"{base}/{p}")[0]) for p in zk.get_children(base)}

        wanted = dict.fromkeys(range(PARTITIONS), PER_PARTITION)
        wait_for(lambda: zk_offsets() == wanted, 60, 0.5, "the mirrored offsets")
        kafka = admin.list_group_offsets({group: None})[group]
        assert {tp.partition: o.offset for tp, o in kafka.items()} == wanted, "pykafka's commits"
        # the bridge wrote nothing under the group's ids: only the two pykafka consumers
        assert sorted(zk.get_children(f"/consumers/{group}/ids")) == sorted(owned)
        # a step towards ZooKeeper storage does not fit consumers that never read it
        step = ["migrate", group, "--to", "dual", "--dry-run", "--lag-window", "1"]
        (outcome,) = json.loads(cli(stack, chroot, *step, ok=1))
        failed = {g["name"]: g["details"] for g in outcome["gates"] if not g["ok"]}
        assert list(failed) == ["consumers use the target store"], outcome
        assert "in Kafka only" in failed["consumers use the target store"][0]

        # kill -9 one: its session expires, the other rebalances onto every partition
        consumers[0].kill()
        survivor = consumers[1].consumer_id
        wait_for(
            lambda: (
                pykafka_owned(describe(stack, chroot, group))
                == {survivor: [f"{topic}-{p}" for p in range(PARTITIONS)]}
            ),
            90,
            1.0,
            "the surviving pykafka consumer owning every partition",
        )
    finally:
        for c in consumers:
            c.stop()


def test_pykafka_group_shown_and_its_kafka_offsets_mirrored(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    topic = topic_name("pyk")
    topic_with_data(stack, admin, topic)
    start_bridge()
    wait_for(lambda: zk.exists(f"/brokers/topics/{topic}"), 60, what="the registry mirror")
    check_group(stack, zk, admin, chroot, topic, tmp_path)
    admin.delete_topics([topic])


def check_mixed_refused(stack, zk, admin, bridge, chroot, topic: str, tmp_path) -> None:
    """pykafka with kafka-python, then with the 0.10.2.2 Scala consumer, each in a group of
    its own (ids unique to the run: Kafka's groups are the cluster's): refused in one line,
    nothing of the bridge's in them; a kafka-python group alone is mirrored (the negative
    control). ``bridge`` mirrors ``topic`` already; run on 3.9 and on 4.x (gateway)."""
    run = uuid.uuid4().hex[:6]
    alone_g, kp_g, scala_g = f"kp-alone-{run}", f"mixed-kp-{run}", f"mixed-scala-{run}"
    zkc = stack.zk_connect + chroot
    procs = []
    try:
        # negative control: a kafka-python group alone is mirrored under /ids
        alone = NewConsumerProcess(stack.bootstrap_servers, alone_g, [topic], client_id="kp-alone")
        procs.append(alone)
        wait_for(
            lambda: (
                zk.exists(f"/consumers/{alone_g}/ids")
                and zk.get_children(f"/consumers/{alone_g}/ids")
            ),
            60,
            0.5,
            "the bridge mirroring a kafka-python member (negative control)",
        )

        # pykafka + kafka-python in one group
        pyk = PykafkaConsumerProcess(zkc, kp_g, topic, log=tmp_path / "pyk.log")
        procs.append(pyk)
        pyk.wait_ready(120)
        pyk.wait_consumed(1, 120)
        kp = NewConsumerProcess(stack.bootstrap_servers, kp_g, [topic], client_id="kp-mix")
        procs.append(kp)
        d = wait_for(
            lambda: (d := describe(stack, chroot, kp_g))["note"] and d,
            90,
            0.5,
            "describe's note on the mixed group",
        )
        assert f"group {kp_g} not bridged" in d["note"] and "Kafka group members" in d["note"]
        wait_for(
            lambda: f"group {kp_g} not bridged: pykafka BalancedConsumers" in bridge.text(),
            60,
            0.5,
            "the bridge's refusal line",
        )
        # nothing of the bridge's under its ids or owners: only what pykafka wrote
        assert zk.get_children(f"/consumers/{kp_g}/ids") == [pyk.consumer_id]
        for t in zk.get_children(f"/consumers/{kp_g}/owners"):
            for name in zk.get_children(f"/consumers/{kp_g}/owners/{t}"):
                assert "-" in name, f"a Scala-style owner node {t}/{name} in a refused group"

        # pykafka + the 0.10.2.2 Scala consumer in one group
        pyk2 = PykafkaConsumerProcess(zkc, scala_g, topic, log=tmp_path / "pyk2.log")
        procs.append(pyk2)
        pyk2.wait_ready(120)
        pyk2.wait_consumed(1, 120)
        scala = LegacyConsumerProcess(
            zkc,
            scala_g,
            [topic],
            extra=["--auto-offset-reset", "smallest"],
            log=tmp_path / "scala.log",
        )
        procs.append(scala)
        d = wait_for(
            lambda: (d := describe(stack, chroot, scala_g))["note"] and d,
            90,
            0.5,
            "describe's note on the pykafka + Scala group",
        )
        assert "old ZooKeeper consumers" in d["note"]
        assert {m["dialect"] for m in d["consumers"]} == {"pykafka", "scala"}
        # no proxy joined the Kafka group for the Scala consumer
        assert not describe_group(admin, scala_g).get("members"), "a proxy joined"
    finally:
        # the newest first: with the kafka-python member gone, pykafka's last commit
        # (generation -1) is taken at once; before, Kafka refuses it (UnknownMemberId)
        # and pykafka retries for some 20 s
        for p in reversed(procs):
            p.stop()


def test_pykafka_mixed_with_kafka_python_or_scala_consumers_is_refused(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    topic = topic_name("mix")
    topic_with_data(stack, admin, topic)
    bridge = start_bridge()
    wait_for(lambda: zk.exists(f"/brokers/topics/{topic}"), 60, what="the registry mirror")
    check_mixed_refused(stack, zk, admin, bridge, chroot, topic, tmp_path)
    admin.delete_topics([topic])
