"""Flow F1 on the real stack: the legacy registry follows Kafka within 2 s.

The ZooKeeper side is read with plain kazoo and ``json``, as a legacy reader would; the
Kafka side with the admin API. Each change is made on the Kafka side, and the 2 s clock
starts once every broker's own metadata shows it.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from kafka.admin import NewPartitions, NewTopic
from kafka.errors import KafkaError
from kazoo.exceptions import NoNodeError

from tests.conftest import wait_for

pytestmark = pytest.mark.integration

MIRROR_DEADLINE_S = 2.0


def kafka_registry(admin, topics: set[str]) -> dict:
    """What the legacy tree must say, straight from Kafka's metadata."""
    cluster = admin.describe_cluster()
    brokers = {
        b["broker_id"]: (b["host"], b["port"]) for b in cluster["brokers"] if not b.get("is_fenced")
    }
    out: dict = {"brokers": brokers, "topics": {}, "cluster_id": cluster["cluster_id"]}
    for t in admin.describe_topics(sorted(topics)):
        if t["error_code"]:
            continue
        out["topics"][t["name"]] = {
            p["partition_index"]: (tuple(p["replica_nodes"]), p["leader_id"], tuple(p["isr_nodes"]))
            for p in t["partitions"]
        }
    return out


def zk_registry(zk, topics: set[str]) -> dict:
    """The same facts read from ZooKeeper the way the old consumer and storm-kafka do."""
    out: dict = {"brokers": {}, "topics": {}, "cluster_id": None}
    try:
        for bid in zk.get_children("/brokers/ids"):
            data = json.loads(zk.get(f"/brokers/ids/{bid}")[0])
            out["brokers"][int(bid)] = (data["host"], data["port"])
        out["cluster_id"] = json.loads(zk.get("/cluster/id")[0])["id"]
    except NoNodeError:
        return out
    for t in sorted(topics):
        try:
            assignment = json.loads(zk.get(f"/brokers/topics/{t}")[0])["partitions"]
        except NoNodeError:
            continue  # no such topic in the tree
        try:
            parts = {}
            for p in zk.get_children(f"/brokers/topics/{t}/partitions"):
                state = json.loads(zk.get(f"/brokers/topics/{t}/partitions/{p}/state")[0])
                parts[int(p)] = (tuple(assignment[p]), state["leader"], tuple(state["isr"]))
            out["topics"][t] = parts
        except (NoNodeError, KeyError):
            # a topic half written or half deleted (its batches land one after another:
            # a new partition's state lands before the topic's assignment names it, as a
            # reader going by the assignment never sees a partition without its state)
            # matches no Kafka view: the comparison waits for the tree to be whole again
            out["topics"][t] = "incomplete"
    return out


def kafka_views(admin, topics: set[str]) -> list[dict]:
    """:func:`kafka_registry` as each live broker's own metadata says it, asked on a
    connection of its own. Brokers apply a change each on its own time, so one answer says
    little of the others': a deleted topic still listed by a broker that applied the
    deletion late made the Kafka view, read from that broker, match a tree the bridge had
    rightly not cleared yet (a CI run; the bridge deletes a topic once every broker says
    it is gone)."""
    from kafka.protocol.metadata import MetadataRequest

    from tests.integration.old_client import OldClient

    base = kafka_registry(admin, topics)
    request = MetadataRequest[4](
        topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in sorted(topics)],
        allow_auto_topic_creation=False,
    )
    views = []
    for host, port in base["brokers"].values():
        client = OldClient((host, port), timeout=10)
        try:
            answer = client.send(request)
        finally:
            client.close()
        seen = {
            t.name: {
                p.partition_index: (tuple(p.replica_nodes), p.leader_id, tuple(p.isr_nodes))
                for p in t.partitions
            }
            for t in answer.topics
            if not t.error_code
        }
        views.append({**base, "topics": seen})
    return views


def _everywhere(admin, topics: set[str], kafka_ready) -> bool:
    """Whether every live broker's own metadata shows the change (a broker that cannot be
    asked right now, restarting, does not yet)."""
    try:
        return all(kafka_ready(v) for v in kafka_views(admin, topics))
    except (OSError, ConnectionError, KafkaError):
        return False


def converge(zk, admin, topics: set[str], kafka_ready, what: str) -> float:
    """Wait for every broker to show a change, then for ZooKeeper to match; return the
    lag."""
    wait_for(
        lambda: _everywhere(admin, topics, kafka_ready), 60, 0.1, f"Kafka (every broker): {what}"
    )
    start = time.monotonic()
    last = {}

    def matches():
        nonlocal last
        want = kafka_registry(admin, topics)
        last = {"kafka": want, "zk": zk_registry(zk, topics)}
        return last["zk"] == want

    deadline = start + MIRROR_DEADLINE_S
    while time.monotonic() < deadline:
        if matches():
            return time.monotonic() - start
        time.sleep(0.05)
    raise AssertionError(f"ZooKeeper did not follow Kafka within 2 s after {what}: {last}")


def test_registry_follows_topics_and_brokers(stack, zk, admin, start_bridge, topic_name):
    a, b = topic_name("a"), topic_name("b")
    topics = {a, b}
    bridge = start_bridge()
    wait_for(lambda: zk.exists("/brokers/ids/3"), 30, what="bridge registering brokers")

    # broker registrations: v4 JSON with host/port that the widest range of readers accepts
    reg = json.loads(zk.get("/brokers/ids/1")[0])
    assert reg["version"] == 4 and reg["host"] == "127.0.0.1"
    assert reg["port"] == stack.broker_port(1) and reg["jmx_port"] == -1
    assert reg["endpoints"] == [f"PLAINTEXT://127.0.0.1:{stack.broker_port(1)}"]
    assert isinstance(reg["timestamp"], str) and reg["timestamp"].isdigit()
    assert zk.exists("/brokers/ids/1").ephemeralOwner != 0  # it dies with the bridge
    assert json.loads(zk.get("/cluster/id")[0]) == {"version": "1", "id": stack.state.cluster_id}
    assert int(zk.get("/controller_epoch")[0]) >= 1
    assert json.loads(zk.get("/controller")[0])["brokerid"] in (1, 2, 3)

    admin.create_topics([NewTopic(a, 3, 2), NewTopic(b, 1, 3)])
    converge(
        zk,
        admin,
        topics,
        lambda k: (
            set(k["topics"]) == topics
            and all(len(k["topics"][t]) == n for t, n in ((a, 3), (b, 1)))
        ),
        "create topics",
    )
    state_path = f"/brokers/topics/{a}/partitions/0/state"
    state = json.loads(wait_for(lambda: zk.exists(state_path) and zk.get(state_path), 5)[0])
    assert set(state) >= {"controller_epoch", "leader", "version", "leader_epoch", "isr"}

    admin.create_partitions({a: NewPartitions(total_count=6)})
    converge(zk, admin, topics, lambda k: len(k["topics"].get(a, {})) == 6, "partition increase")

    admin.delete_topics([b])
    converge(zk, admin, topics, lambda k: set(k["topics"]) == {a}, "delete topic")
    assert not zk.exists(f"/brokers/topics/{b}")

    # a broker stops: its registration goes, leaders and ISRs move
    stack.stop("kafka-3")
    try:
        converge(
            zk,
            admin,
            topics,
            lambda k: (
                3 not in k["brokers"] and all(3 not in isr for _, _, isr in k["topics"][a].values())
            ),
            "broker 3 stopped",
        )
    finally:
        stack.start("kafka-3")
    stack.wait_brokers({1, 2, 3})
    converge(zk, admin, topics, lambda k: 3 in k["brokers"], "broker 3 restarted")
    assert "Traceback" not in bridge.text()
    # clean-up only: the admin client may still hold the restarted broker's old connection
    _try_delete(admin, a)


def _try_delete(admin, topic: str) -> bool:
    try:
        admin.delete_topics([topic])
        return True
    except KafkaError:
        return False


def test_bridge_nodes_die_with_it_and_come_back(stack, zk, start_bridge):
    bridge = start_bridge()
    wait_for(lambda: zk.exists("/brokers/ids/1"), 30, what="registration")
    first = zk.exists("/brokers/ids/1").ephemeralOwner
    bridge.proc.kill()  # kill -9: no clean-up, the session must expire
    bridge.proc.wait()
    wait_for(lambda: not zk.exists("/brokers/ids/1"), 30, what="ephemeral expiry")
    start_bridge()
    wait_for(lambda: zk.exists("/brokers/ids/1"), 30, what="re-registration")
    assert zk.exists("/brokers/ids/1").ephemeralOwner != first


def test_refuses_when_a_zookeeper_mode_cluster_owns_the_registry(stack, zk, start_bridge):
    live = {
        "version": 4,
        "host": "10.0.0.9",
        "port": 9092,
        "jmx_port": -1,
        "timestamp": "1500000000000",
        "endpoints": ["PLAINTEXT://10.0.0.9:9092"],
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
    }
    zk.create("/brokers/ids/7", json.dumps(live).encode(), makepath=True, ephemeral=True)
    bridge = start_bridge()
    wait_for(
        lambda: "ZooKeeper-mode Kafka cluster owns this registry" in bridge.text(),
        30,
        what="refusal message",
    )
    time.sleep(1.0)  # give it several ticks in which it could (wrongly) write
    assert zk.get_children("/brokers/ids") == ["7"]
    assert not zk.exists("/brokers/topics") or zk.get_children("/brokers/topics") == []


def test_garbage_broker_node_is_reported_and_the_rest_mirrored(stack, zk, start_bridge):
    zk.create("/brokers/ids/99", b"{not json", makepath=True)
    zk.create("/brokers/ids/not-a-number", b"{}", makepath=True)
    bridge = start_bridge()
    wait_for(lambda: zk.exists("/brokers/ids/3"), 30, what="mirror despite garbage")
    wait_for(lambda: "/brokers/ids/99" in bridge.text(), 10, what="report naming the node")
    assert "/brokers/ids/not-a-number" in bridge.text()
    assert zk.get("/brokers/ids/99")[0] == b"{not json"  # left alone (I4)
    assert "Traceback" not in bridge.text()


def test_unreachable_servers_give_a_clear_message(tmp_path):
    import subprocess
    import sys

    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bridge.cli",
            "run",
            "--metrics-address",
            "127.0.0.1:0",
            "--zookeeper",
            "127.0.0.1:1",
            "--bootstrap-server",
            "127.0.0.1:1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        # five attempts of 1 s each instead of the default 15 s (the message is the point)
        env={**os.environ, "ZK_BRIDGE__ZOOKEEPER__CONNECTION_TIMEOUT_S": "1"},
    )
    assert out.returncode == 3
    assert "ZooKeeper at 127.0.0.1:1 did not answer after" in out.stderr
    assert "retrying in" in out.stderr
    assert "Traceback" not in out.stderr
