"""Storage modes: one-step transitions, forward-only reconciliation, gates that name culprits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.decide.migration import (
    GroupRecord,
    GroupSnapshot,
    OffsetPlan,
    Offsets,
    StepRefused,
    StorageMode,
    check_step,
    gates,
    infer_mode,
    kafka_writers,
    offsets_after,
    reconcile,
)
from bridge.kafka.views import GroupView, MemberView
from zkpaths import TopicPartition

Z, D, K = StorageMode.ZOOKEEPER, StorageMode.DUAL, StorageMode.KAFKA
TP = TopicPartition("t", 0)


@pytest.mark.parametrize(("src", "dst"), [(Z, D), (D, K), (K, D), (D, Z)])
def test_one_step_transitions_are_allowed(src, dst):
    check_step(src, dst)


@pytest.mark.parametrize(("src", "dst"), [(Z, K), (K, Z), (D, D)])
def test_skipping_dual_or_standing_still_is_refused(src, dst):
    with pytest.raises(StepRefused):
        check_step(src, dst)


def test_inferred_mode():
    assert infer_mode(old_consumers=True, zk_offsets=True, kafka_group=True) is Z
    assert infer_mode(old_consumers=False, zk_offsets=True, kafka_group=False) is Z
    assert infer_mode(old_consumers=False, zk_offsets=False, kafka_group=True) is K


offsets = st.one_of(st.none(), st.integers(0, 10**6))


@settings(max_examples=500)
@given(
    st.sampled_from(list(StorageMode)),
    st.dictionaries(
        st.integers(0, 5).map(lambda p: TopicPartition("t", p)),
        st.builds(Offsets, offsets, offsets),
        max_size=6,
    ),
)
def test_reconcile_never_moves_an_offset_backward_and_converges(mode, current):
    r = reconcile(mode, current)
    for tp, o in current.items():
        if tp in r.to_zk:
            assert r.to_zk[tp] > (o.zk if o.zk is not None else -1)
        if tp in r.to_kafka:
            assert r.to_kafka[tp] > (o.kafka if o.kafka is not None else -1)
    after = {
        tp: Offsets(r.to_zk.get(tp, o.zk), r.to_kafka.get(tp, o.kafka)) for tp, o in current.items()
    }
    again = reconcile(mode, after)
    assert not again.to_zk and not again.to_kafka
    if mode is StorageMode.DUAL:  # both stores hold max(zk, kafka)
        assert all(o.zk == o.kafka or (o.zk is None and o.kafka is None) for o in after.values())


def test_dual_takes_the_max_of_both_like_the_old_consumer_fetch():
    r = reconcile(D, {TP: Offsets(zk=10, kafka=7)})
    assert r.to_kafka == {TP: 10} and r.to_zk == {}


def snapshot(**kw) -> GroupSnapshot:
    base = dict(offsets={TP: Offsets(5, 5)}, lag_start=50, lag_end=40)
    base.update(kw)
    return GroupSnapshot(**base)


def failed(results) -> dict[str, tuple[str, ...]]:
    return {r.name: r.details for r in results if not r.ok}


def test_all_gates_pass_on_a_healthy_group():
    assert failed(gates(snapshot())) == {}


def test_diverged_stores_name_the_partition():
    assert failed(gates(snapshot(offsets={TP: Offsets(5, 9)}))) == {
        "stores equal": ("t-0: zookeeper 5, kafka 9",)
    }


def test_missing_members_are_named():
    s = snapshot(old_threads=frozenset({"g_h-1-a-0"}), new_members=frozenset({"m1"}))
    assert failed(gates(s))["members present"] == (
        "old thread g_h-1-a-0 has no member in the Kafka group",
        "new member m1 is not mirrored under /ids",
    )
    assert "members present" in failed(gates(snapshot(), expected_members=3))


def test_owner_conflict_and_growing_lag_are_named():
    s = snapshot(
        zk_owners={TP: "a"},
        kafka_owners={TP: "b"},
        lag_start=100,
        lag_end=500,
        new_members=frozenset({"m1"}),
        mirrored_members=frozenset({"m1"}),
    )
    f = failed(gates(s))
    assert f["no owner conflicts"] == ("t-0: zookeeper says a, kafka says b",)
    assert f["lag not growing"] == ("lag grew from 100 to 500 (allowed up to 210)",)


@pytest.mark.parametrize(
    "members",
    [dict(), dict(old_threads=frozenset({"t-0"}), proxied_threads=frozenset({"t-0"}))],
    ids=["stopped", "old-thread"],
)
def test_growing_lag_says_nothing_of_a_group_with_no_member(members):
    """The old application stopped and the new one not started: lag grows with the
    producers, and the step (the usual start of a migration) must not wait for it."""
    refused = "lag not growing" in failed(gates(snapshot(lag_start=100, lag_end=5000, **members)))
    assert refused is bool(members)


def test_a_failed_gate_changes_nothing_and_says_why():
    rec = GroupRecord(Z)
    with pytest.raises(StepRefused, match="stores equal: t-0: zookeeper 5, kafka 9"):
        rec.step(D, "ops", 1, gates(snapshot(offsets={TP: Offsets(5, 9)})))
    assert rec.mode is Z and rec.history == []
    rec.step(D, "ops", 2, gates(snapshot()))
    assert rec.mode is D and rec.history[0].source == "zookeeper"
    assert GroupRecord.decode(rec.encode()).history[0].target == "dual"


def test_no_blind_commit_into_kafka_for_partitions_a_member_commits_itself():
    from bridge.decide.migration import offset_nodes

    tp1 = TopicPartition("t", 1)
    kw = dict(owned_offsets=set(), suggested={}, topics={"t"})
    zk, kafka = {TP: 10, tp1: 10}, {TP: 5, tp1: 5}
    plan = offset_nodes("g", D, zk, kafka_offsets=kafka, kafka_writers={TP}, **kw)
    assert plan.to_kafka == {tp1: 10}  # TP's owner commits in Kafka: never raced
    unknown = offset_nodes("g", D, zk, kafka_offsets=kafka, kafka_writers=None, **kw)
    assert unknown.to_kafka == {}  # mid-rebalance: owners unknown, nothing blind


def _member(client: str, assignment: dict[str, tuple[int, ...]] | None) -> MemberView:
    return MemberView(f"{client}-1", client, "/127.0.0.1", ("t",), assignment)


def test_kafka_writers_are_the_settled_members_partitions_without_the_proxies() -> None:
    members = (_member("app", {"t": (0, 1)}), _member("proxy", {"t": (2,)}))
    view = GroupView("g", "Stable", "consumer", "range", members)
    assert kafka_writers(view, "proxy") == {TopicPartition("t", 0), TopicPartition("t", 1)}
    assert kafka_writers(GroupView("g", "Dead", "", None), "proxy") == set()  # stopped group
    for state in ("PreparingRebalance", "CompletingRebalance", "Dead"):  # unknown: None
        assert kafka_writers(GroupView("g", state, "consumer", None, members), "proxy") is None


def test_offsets_after_take_the_larger_of_what_was_read_and_written() -> None:
    a, b, c = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)
    plan = OffsetPlan(to_kafka={a: 9}, written_zk={b: 7})
    after = offsets_after({a: 5, b: 3}, {a: 4, c: 2}, plan)
    assert after == {a: (5, 9), b: (7, -1), c: (-1, 2)}
    assert offsets_after({a: 5}, None, OffsetPlan()) == {a: (5, -1)}


def test_a_fleets_inferred_modes_are_one_log_line(caplog) -> None:
    """A fleet's first pass infers thousands of modes: one line with the counts, each
    group's at debug level; a single group is still named."""
    import logging

    from bridge.zookeeper.records import _log_inferred

    made = {f"g{i}": GroupRecord(StorageMode.KAFKA) for i in range(3)}
    made["old"] = GroupRecord(StorageMode.ZOOKEEPER)
    with caplog.at_level(logging.INFO, logger="bridge.zookeeper.records"):
        _log_inferred(made)
        _log_inferred({"alone": GroupRecord(StorageMode.DUAL)})
        _log_inferred({})
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "storage mode inferred for 4 groups (kafka 3, zookeeper 1)",
        "storage mode inferred",
    ]
    assert caplog.records[1].group == "alone" and caplog.records[1].mode == "dual"
