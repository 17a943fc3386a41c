"""Bad input in kafka-node's dialect, through the one ZooKeeper reader (I5): a registration
with a pattern kafka-node never writes and owner nodes holding no id of the group are each
reported once by path and left alone; the good HighLevelConsumer next to them is decoded.
(Fixture nodes written here; the real client is in tests/e2e/test_kafka_node.py.)"""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient

from bridge.zookeeper.reader import ConsumerTreeReader, NodeProblem
from zkpaths import TopicPartition
from zkpaths.dialects import KAFKA_NODE, member_threads
from zkpaths.dialects import kafka_node as kn

pytestmark = pytest.mark.integration

GOOD = "kg_602a95fb-959a-4619-8e9d-252e1cf63743"
BAD = "kg_0f6b1c2e-1111-4222-8333-444455556666"


def test_bad_kafka_node_nodes_are_reported_by_path_and_left_alone(zk: KazooClient) -> None:
    g = "/consumers/kg"
    nodes = {
        f"{g}/ids/{GOOD}": kn.encode_registration(["t"], 1795549304454),
        f"{g}/ids/{BAD}": kn.encode_registration(["t"], 1).replace(b"white_list", b"regex"),
        f"{g}/owners/t/0": GOOD.encode(),
        f"{g}/owners/t/1": b"somebody-else",
        f"{g}/owners/t/2": f"{GOOD}-0".encode(),  # a Scala-style thread id of a kafka-node id
    }
    for path, data in nodes.items():
        zk.create(path, data, makepath=True)
    seen: list[NodeProblem] = []
    reader = ConsumerTreeReader(zk, report=seen.append)

    members = reader.members("kg", reader.consumer_ids(["kg"])["kg"])
    assert list(members) == [GOOD] and members[GOOD].dialect == KAFKA_NODE
    known = {t for ts in member_threads(members[GOOD]).values() for t in ts}
    claims = reader.owners({"kg": ["t"]}, {"t": 3})["kg"]
    owners = reader.known_owners("kg", claims, dict.fromkeys(known))
    assert owners == {TopicPartition("t", 0): GOOD}

    by_path = {p.path: p.reason for p in seen}
    assert set(by_path) == {f"{g}/ids/{BAD}", f"{g}/owners/t/1", f"{g}/owners/t/2"}
    assert "unknown pattern 'regex'" in by_path[f"{g}/ids/{BAD}"]
    assert "is not a consumer id of group 'kg'" in by_path[f"{g}/owners/t/1"]
    assert "is not a registered consumer of group 'kg'" in by_path[f"{g}/owners/t/2"]
    # left alone: every node is still there, unchanged
    for path, data in nodes.items():
        assert zk.get(path)[0] == data
