"""The pykafka dialect through the one reader, on a real ZooKeeper (hand-written fixtures:
the real client is in tests/e2e/test_pykafka.py).

Bad input (I5): an owner node of unknown format (``x-y-z``, ``1-a``) is reported once,
naming its path, and left alone; the good nodes beside it are still read.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from kafka.admin import NewTopic
from kazoo.client import KazooClient

from bridge.kafka.cluster import partition_counts
from bridge.zookeeper.reader import ConsumerTreeReader, NodeProblem, PykafkaOwnerNode
from tests.conftest import ROOT, wait_for
from zkpaths import TopicPartition

pytestmark = pytest.mark.integration

#: pykafka's consumer ids are <hostname>:<uuid4>
A = "host:11111111-1111-4111-8111-111111111111"
B = "host:22222222-2222-4222-9222-222222222222"
C = "host:33333333-3333-4333-a333-333333333333"
SCALA_REG = {"version": 1, "subscription": {"t": 1}, "pattern": "static", "timestamp": "1"}


def _tree(zk: KazooClient, t: str = "t") -> str:
    g = "/consumers/g"
    nodes = {
        f"{g}/ids/{A}": t.encode(),
        f"{g}/ids/{B}": t.encode(),
        f"{g}/ids/g_scala-1-abc": json.dumps({**SCALA_REG, "subscription": {t: 1}}).encode(),
        f"{g}/ids/{C}": b"not a topic!",
        f"{g}/ids/g_garbage": b"garbage",  # not pykafka's id: a bad JSON registration
        f"{g}/owners/b'{t}'/1-0": A.encode(),
        f"{g}/owners/b'{t}'/2-1": B.encode(),
        f"{g}/owners/b'{t}'/x-y-z": B.encode(),
        f"{g}/owners/{t}/3-2": A.encode(),  # pykafka on Python 2: the plain topic dir
        f"{g}/owners/{t}/1-a": A.encode(),
        f"{g}/owners/{t}/3": b"g_scala-1-abc-0",
        f"{g}/owners/{t}/1-9": A.encode(),  # t has 4 partitions
    }
    for path, data in nodes.items():
        zk.create(path, data, makepath=True)
    return g


def test_members_and_owners_by_dialect_bad_nodes_reported_once(zk: KazooClient) -> None:
    g = _tree(zk)
    seen: list[NodeProblem] = []
    reader = ConsumerTreeReader(zk, report=seen.append)
    ids = reader.consumer_ids(["g"])["g"]
    members = reader.members("g", ids)
    assert {c: m.dialect for c, m in members.items()} == {
        A: "pykafka",
        B: "pykafka",
        "g_scala-1-abc": "scala",
    }
    quiet = ConsumerTreeReader(zk, report=lambda _p: None)  # its problems are members()'
    assert set(quiet.registrations("g", ids)) == {"g_scala-1-abc"}  # pykafka writes no JSON
    owners = reader.pykafka_owners("g", {"t": 4})
    assert owners == {
        TopicPartition("t", 0): PykafkaOwnerNode(A, 1, f"{g}/owners/b't'/1-0"),
        TopicPartition("t", 1): PykafkaOwnerNode(B, 2, f"{g}/owners/b't'/2-1"),
        TopicPartition("t", 2): PykafkaOwnerNode(A, 3, f"{g}/owners/t/3-2"),
    }
    # the Scala-style owner is owners()'s, which skips pykafka's nodes without complaint
    assert reader.owners({"g": None}, {"t": 4})["g"] == {TopicPartition("t", 3): "g_scala-1-abc-0"}
    bad = {p.path: p.reason for p in seen}
    assert set(bad) == {
        f"{g}/ids/{C}",
        f"{g}/ids/g_garbage",
        f"{g}/owners/b't'/x-y-z",
        f"{g}/owners/t/1-a",
        f"{g}/owners/t/1-9",
    }, seen
    assert len(seen) == len(bad)  # once each
    assert "unknown pykafka owner node name 'x-y-z'" in bad[f"{g}/owners/b't'/x-y-z"]
    assert "unknown owner node name '1-a'" in bad[f"{g}/owners/t/1-a"]
    assert "bad pykafka registration" in bad[f"{g}/ids/{C}"]
    assert "not valid JSON" in bad[f"{g}/ids/g_garbage"]
    # left alone
    assert zk.get(f"{g}/owners/b't'/x-y-z")[0] == B.encode()
    assert zk.get(f"{g}/owners/t/1-a")[0] == A.encode()


def test_describe_shows_pykafka_members_and_names_the_bad_owner(
    stack, zk, chroot, admin, topic_name
) -> None:
    t = topic_name()
    admin.create_topics([NewTopic(t, 4, 1)])
    # describe reads the topic's partition count from a broker (CI: one that did not know
    # the topic yet left the pykafka member owning nothing); brokers learn of it one by one
    wait_for(lambda: partition_counts(admin).get(t) == 4, 30, what=f"{t} known")
    _tree(zk, t)
    out = subprocess.run(
        [sys.executable, "-m", "bridge.cli", "describe", "g", "--output", "json"]
        + ["--zookeeper", stack.zk_connect + chroot, "--bootstrap-server", stack.bootstrap_servers],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert f"/consumers/g/owners/b'{t}'/x-y-z" in out.stderr
    assert f"/consumers/g/owners/{t}/1-a" in out.stderr
    body = json.loads(out.stdout)
    members = {m["consumer_id"]: m for m in body["consumers"]}
    assert members[A]["dialect"] == "pykafka"
    assert members[A]["topics"] == t
    assert members[A]["owns"] == f"{t}-0,{t}-2"
    assert members["g_scala-1-abc"]["dialect"] == "scala"
    assert "old ZooKeeper consumers g_scala-1-abc" in body["note"]
    assert zk.exists(f"/consumers/g/owners/b'{t}'/x-y-z")
    admin.delete_topics([t])
