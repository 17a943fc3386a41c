"""The one reader of ``/consumers`` and the operator mode of the writer, on a real ZooKeeper.

The reader's policy (I5): every node someone else wrote badly is reported exactly once per
read, naming its path, and left out; every good node is still read. The operator writer:
one transaction, conditional on the versions read, no ledger marker.
"""

from __future__ import annotations

import json

import pytest
from kazoo.client import KazooClient

from bridge.decide.plan import Create, SetData
from bridge.zookeeper.reader import ConsumerTreeReader, NodeProblem, OffsetNode, log_problem
from bridge.zookeeper.writer import BatchRejected, Check, OperatorWriter, TooLarge
from zkpaths import ConsumerRegistration, GroupPartition, TopicPartition

pytestmark = pytest.mark.integration

REG = {"version": 1, "subscription": {"t": 2}, "pattern": "static", "timestamp": "1"}


def _tree(zk: KazooClient, nodes: dict[str, bytes]) -> None:
    for path, data in nodes.items():
        zk.create(path, data, makepath=True)


def _reader(zk: KazooClient) -> tuple[ConsumerTreeReader, list[NodeProblem]]:
    seen: list[NodeProblem] = []
    return ConsumerTreeReader(zk, report=seen.append), seen


def test_good_nodes_are_decoded_and_each_bad_one_is_reported_once(zk: KazooClient) -> None:
    g = "/consumers/g"
    _tree(
        zk,
        {
            f"{g}/ids/g_a": json.dumps(REG).encode(),
            f"{g}/ids/g_badjson": b"{not json",
            f"{g}/ids/g_future": json.dumps({**REG, "version": 9}).encode(),
            f"{g}/owners/t/0": b"g_a-0",
            f"{g}/owners/t/1": b"\xff\xfe",
            f"{g}/owners/t/7": b"g_a-1",  # t has 2 partitions
            f"{g}/offsets/t/0": b"42",
            f"{g}/offsets/t/1": b"-1",
            f"{g}/offsets/t/x": b"5",
            f"{g}/offsets/t/07": b"4",  # not the canonical spelling of 7
            f"{g}/offsets/t/7": b"9",
            f"{g}/offsets/u/0": b"not-a-number",
            f"{g}/offsets/u/1": b"7" * 100_000,
            f"{g}/offsets/bad topic/0": b"3",
            "/consumers/h/offsets/t/0": b"5",
            "/consumers/empty": b"",
        },
    )
    reader, seen = _reader(zk)
    assert reader.groups() == ["empty", "g", "h"]
    assert reader.consumer_ids(["g", "h", "nope"]) == {
        "g": ["g_a", "g_badjson", "g_future"],
        "h": [],
        "nope": [],
    }
    regs = reader.registrations("g", ["g_a", "g_badjson", "g_future", "g_gone"])
    assert regs == {"g_a": ConsumerRegistration({"t": 2}, "static", 1)}
    assert [p.path for p in seen] == [f"{g}/ids/g_badjson", f"{g}/ids/g_future"]
    assert "not valid JSON" in seen[0].reason and "unknown version 9" in seen[1].reason

    seen.clear()
    owners = reader.owners({"g": None}, {"t": 2})["g"]
    assert owners == {TopicPartition("t", 0): "g_a-0"}
    assert sorted(p.path for p in seen) == [f"{g}/owners/t/1", f"{g}/owners/t/7"]

    seen.clear()
    offsets = reader.offsets({"g": None, "h": ["t"], "empty": None})
    assert {tp: n.offset for tp, n in offsets["g"].items()} == {
        TopicPartition("t", 0): 42,
        TopicPartition("t", 1): -1,  # the old consumer's "none yet" is a value, not a problem
        TopicPartition("t", 7): 9,  # without partition counts, any partition is read
    }
    assert offsets["h"] == {TopicPartition("t", 0): OffsetNode(5, 0)}
    assert offsets["empty"] == {}
    by_path = {p.path: p.reason for p in seen}
    assert len(seen) == len(by_path) == 5, seen
    assert "partition 'x'" in by_path[f"{g}/offsets/t/x"]
    assert "partition '07' is not a canonical number" in by_path[f"{g}/offsets/t/07"]
    assert "not an offset" in by_path[f"{g}/offsets/u/0"]
    assert "data: 'not-a-number'" in by_path[f"{g}/offsets/u/0"]
    assert "(100000 bytes)" in by_path[f"{g}/offsets/u/1"]  # quoted, never whole
    assert "character other than" in by_path[f"{g}/offsets/bad topic"]


def test_only_the_topics_asked_for_are_read_and_versions_are_kept(zk: KazooClient) -> None:
    _tree(zk, {"/consumers/g/offsets/t/0": b"1", "/consumers/g/offsets/u/0": b"bad"})
    zk.set("/consumers/g/offsets/t/0", b"2")
    reader, seen = _reader(zk)
    got = reader.offsets({"g": ["t", "absent"]})
    assert got == {"g": {TopicPartition("t", 0): OffsetNode(2, 1)}} and seen == []


@pytest.mark.parametrize("likely", [True, False], ids=["listed-ahead", "negative-control"])
def test_topic_dirs_likely_there_are_listed_with_the_groups_dir(zk: KazooClient, likely) -> None:
    """The topics the bridge wrote are listed in the same round as the group's offsets
    dir; one not guessed is listed after, one guessed but not there is not taken.
    Negative control: without the guess, every topic dir waits for the second round."""
    _tree(
        zk,
        {
            "/consumers/g/offsets/t/0": b"1",
            "/consumers/g/offsets/t/1": b"2",
            "/consumers/g/offsets/u/0": b"3",  # not guessed
        },
    )
    reader, seen = _reader(zk)
    rounds: list[list[str]] = []
    real = reader.children

    def counted(paths):
        rounds.append(sorted(paths))
        return real(paths)

    reader.children = counted  # type: ignore[method-assign]
    guess = {"g": {"t", "gone"}} if likely else None
    got = reader.offsets({"g": None}, likely=guess)
    assert got == {
        "g": {
            TopicPartition("t", 0): OffsetNode(1, 0),
            TopicPartition("t", 1): OffsetNode(2, 0),
            TopicPartition("u", 0): OffsetNode(3, 0),
        }
    }
    assert seen == []
    base = "/consumers/g/offsets"
    if likely:
        assert rounds == [[base, f"{base}/gone", f"{base}/t"], [f"{base}/u"]]
    else:
        assert rounds == [[base], [f"{base}/t", f"{base}/u"]]


def test_offsets_at_keeps_a_bad_node_with_its_version_for_the_write(zk: KazooClient) -> None:
    _tree(zk, {"/consumers/g/offsets/t/0": b"10", "/consumers/g/offsets/t/1": b"x"})
    reader, seen = _reader(zk)
    g0, g1, g2 = (GroupPartition("g", "t", p) for p in range(3))
    got = reader.offsets_at([g0, g1, g2])
    assert got[g0] == OffsetNode(10, 0)
    assert got[g1].problem is not None and got[g1].version == 0
    assert g2 not in got
    assert [p.path for p in seen] == ["/consumers/g/offsets/t/1"]


def test_reads_beyond_one_window_are_complete(zk: KazooClient) -> None:
    """More nodes than requests in flight at once: every one is read."""
    groups = [f"g{i:02}" for i in range(30)]
    tx = zk.transaction()
    tx.create("/consumers", b"")
    for g in groups:
        for d in ("", "/offsets", "/offsets/t"):
            tx.create(f"/consumers/{g}{d}", b"")
        for p in range(25):
            tx.create(f"/consumers/{g}/offsets/t/{p}", str(p * 10).encode())
    assert not any(isinstance(r, Exception) for r in tx.commit())
    reader, seen = _reader(zk)
    got = reader.offsets(dict.fromkeys(reader.groups()))
    assert sum(len(v) for v in got.values()) == 750 and not seen
    assert all(n.offset == tp.partition * 10 for v in got.values() for tp, n in v.items())


def test_default_report_logs_the_path_and_counts(zk: KazooClient, caplog) -> None:
    from bridge.metrics import METRICS

    _tree(zk, {"/consumers/g/offsets/t/0": b"nope"})
    counter = METRICS.node_problems.labels(flow="zookeeper", kind="bad_node")
    before = counter._value.get()
    assert ConsumerTreeReader(zk, report=log_problem).offsets({"g": None}) == {"g": {}}
    assert counter._value.get() == before + 1
    assert [r.node for r in caplog.records if hasattr(r, "node")] == ["/consumers/g/offsets/t/0"]


def test_operator_writer_is_one_conditional_transaction_without_ledger(
    zk: KazooClient, chroot: str
) -> None:
    writer = OperatorWriter(zk)
    ops = [*writer.missing_parents(["/consumers/g/offsets/t/0"]), Create("/consumers/g/x", b"")]
    parents = ["/consumers", "/consumers/g", "/consumers/g/offsets", "/consumers/g/offsets/t"]
    assert [op.path for op in ops[:-1]] == parents
    writer.apply(ops)
    assert writer.missing_parents(["/consumers/g/offsets/t/0"]) == []
    writer.apply([Create("/consumers/g/offsets/t/0", b"1")])
    zk.set("/consumers/g/offsets/t/0", b"2")  # a concurrent writer: version 1 now
    with pytest.raises(BatchRejected) as rejected:
        writer.apply(
            [
                Create("/consumers/g/offsets/t/1", b"5"),
                SetData("/consumers/g/offsets/t/0", b"3", 0),
            ]
        )
    assert rejected.value.op.path == "/consumers/g/offsets/t/0"
    assert zk.exists("/consumers/g/offsets/t/1") is None  # nothing of the batch landed
    with pytest.raises(BatchRejected):
        writer.apply([Check("/consumers/g/x", 3), SetData("/consumers/g/offsets/t/0", b"4", 1)])
    assert zk.get("/consumers/g/offsets/t/0")[0] == b"2"
    writer.apply([Check("/consumers/g/x", 0), SetData("/consumers/g/offsets/t/0", b"4", 1)])
    assert zk.get("/consumers/g/offsets/t/0")[0] == b"4"
    with pytest.raises(TooLarge):
        OperatorWriter(zk, max_bytes=1000).apply([Create("/consumers/g/big", b"x" * 2000)])
    assert zk.exists("/consumers/g/big") is None
    # an operator's nodes are not the bridge's: no ownership ledger anywhere
    assert zk.get_children("/") == ["consumers"]
