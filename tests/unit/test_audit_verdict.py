"""The verdict rules of :mod:`bridge.audit.verdict`, one case per rule and per blocker."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge.audit.verdict import (
    BLOCKED,
    READY_TO_FINALIZE,
    READY_TO_MIGRATE,
    READY_TO_ROLL_BACK,
    GroupFacts,
    PartitionState,
    decide,
)


def p(part: int, zk=None, kafka=None, end=1000, **kw) -> PartitionState:
    return PartitionState("t", part, zk_offset=zk, kafka_offset=kafka, log_end=end, **kw)


def facts(*parts: PartitionState, **kw) -> GroupFacts:
    kw.setdefault("zk_writable", True)
    return GroupFacts("g", tuple(parts), **kw)


def test_equal_everywhere_is_ready_to_finalize_and_everything_else_is_safe_too() -> None:
    v = decide(facts(p(0, 10, 10), p(1, 20, 20)))
    assert v.verdict == READY_TO_FINALIZE
    assert (v.can_finalize, v.can_migrate, v.can_roll_back) == (True, True, True)
    assert v.reasons == ("both stores equal on all 2 partition(s)",)


def test_registered_old_consumers_keep_a_group_from_finalizing() -> None:
    v = decide(facts(p(0, 10, 10), zk_consumers=2))
    assert v.verdict == READY_TO_MIGRATE
    assert "2 old consumer(s) still registered in ZooKeeper" in v.blockers[READY_TO_FINALIZE]
    assert "2 old consumer(s) registered in ZooKeeper" in v.notes


@pytest.mark.parametrize(
    "parts",
    [
        (p(0, 10), p(1, 20)),  # Kafka has nothing yet
        (p(0, 10, 5), p(1, 20, 20)),  # Kafka behind on one, equal on the other
        (p(0, -1), p(1, 3, 2)),  # -1: owned, nothing fetched yet
    ],
)
def test_zookeeper_complete_and_not_behind_is_ready_to_migrate(parts) -> None:
    v = decide(facts(*parts))
    assert v.verdict == READY_TO_MIGRATE
    assert v.can_migrate and not v.can_finalize
    assert "ZooKeeper holds offsets for all 2 partition(s)" in v.reasons[0]


@pytest.mark.parametrize(
    "parts",
    [
        (p(0, None, 10), p(1, None, 20)),  # ZooKeeper has nothing
        (p(0, 5, 10), p(1, 20, 20)),  # Kafka ahead on one
        (p(0, -1, 0),),
    ],
)
def test_kafka_complete_and_not_behind_is_ready_to_roll_back(parts) -> None:
    v = decide(facts(*parts))
    assert v.verdict == READY_TO_ROLL_BACK
    assert v.can_roll_back and not v.can_migrate
    assert v.reasons[0].endswith("ZooKeeper writable")


def test_roll_back_needs_a_writable_zookeeper() -> None:
    v = decide(facts(p(0, 5, 10), zk_writable=False, zk_not_writable="/x does not grant WRITE"))
    assert v.verdict == BLOCKED
    assert v.reasons == (
        "cannot migrate: Kafka ahead of ZooKeeper on t-0 (10 > 5)",
        "cannot roll back: ZooKeeper offsets not writable: /x does not grant WRITE",
    )


def test_diverged_both_ways_blocks_with_the_partitions_named() -> None:
    v = decide(facts(p(0, 5, 10), p(1, 30, 20), p(2, 7)))
    assert v.verdict == BLOCKED
    assert not (v.can_migrate or v.can_roll_back or v.can_finalize)
    assert v.reasons == (
        "cannot migrate: Kafka ahead of ZooKeeper on t-0 (10 > 5)",
        "cannot roll back: no Kafka offset for t-2 (ZooKeeper has 7); "
        "ZooKeeper ahead of Kafka on t-1 (30 > 20)",
    )


def test_bad_zookeeper_nodes_block_every_operation() -> None:
    bad = "bad committed offset at /consumers/g/offsets/t/1: not an offset"
    v = decide(facts(p(0, 10, 10), p(1, zk_error=bad), zk_bad_nodes=(bad,)))
    assert v.verdict == BLOCKED
    assert v.reasons[0] == f"1 bad ZooKeeper node(s): {bad}"
    assert all(b[0].startswith("1 bad ZooKeeper node") for b in v.blockers.values())


def test_offset_past_the_log_end_blocks_the_operation_that_would_use_it() -> None:
    v = decide(facts(p(0, 1500, end=1000)))
    assert v.verdict == BLOCKED
    assert "cannot migrate: t-0: ZooKeeper offset 1500 is past the log end 1000" in v.reasons
    roll = decide(facts(p(0, 900, 950, end=1000), p(1, 10, 2000, end=1000)))
    assert roll.verdict == BLOCKED
    assert any("Kafka offset 2000 is past the log end 1000" in r for r in roll.reasons)


def test_partitions_the_cluster_lost_are_noted_not_judged() -> None:
    v = decide(facts(p(0, 10, 10), p(1, 99, end=None)))
    assert v.verdict == READY_TO_FINALIZE
    assert "offsets for partitions the cluster does not have: t-1" in v.notes
    only_gone = decide(facts(p(0, 10, end=None)))
    assert only_gone.verdict == BLOCKED
    assert only_gone.reasons == (
        "no committed offsets in either store for partitions the cluster has",
    )


def test_without_log_ends_no_partition_is_dropped_and_end_checks_are_skipped() -> None:
    v = decide(facts(p(0, 10**12, end=None), log_ends_known=False))
    assert v.verdict == READY_TO_MIGRATE
    assert "log-end offsets unknown: end checks skipped, no lag" in v.notes


def test_kafka_tombstones_make_an_offset_absent_and_are_noted() -> None:
    v = decide(facts(p(0, 10, None, kafka_deleted=True), p(1, None, None, kafka_deleted=True)))
    # t-1 has nothing left in either store: it no longer belongs to the group
    assert v.verdict == READY_TO_MIGRATE
    assert v.reasons[0].startswith("ZooKeeper holds offsets for all 1 partition(s)")
    assert "Kafka offsets deleted or expired (tombstone) for t-0, t-1" in v.notes


def test_no_offsets_anywhere_blocks() -> None:
    v = decide(facts())
    assert v.verdict == BLOCKED
    assert v.reasons == ("no committed offsets in either store",)


def test_undecodable_kafka_record_blocks() -> None:
    v = decide(facts(p(0, 10, kafka_error="offset commit value v9 is newer than this decoder")))
    assert v.verdict == BLOCKED
    assert v.reasons[0].startswith("undecodable last Kafka record: t-0 (offset commit value v9")


def test_long_lists_are_summarised() -> None:
    v = decide(facts(*(p(i, 5, 10) for i in range(8)), zk_writable=False))
    assert (
        "t-0 (10 > 5), t-1 (10 > 5), t-2 (10 > 5), t-3 (10 > 5), t-4 (10 > 5) and 3 more"
        in (v.reasons[0])
    )


def test_a_next_generation_group_is_judged_as_a_classic_one_but_for_its_note() -> None:
    """The bridge keeps a mixed group of either type the same way (the e2e
    test_coexistence_next_gen, test_migration_next_gen): a consumer-type group's members
    block nothing a classic group's would not."""
    parts = (p(0, 5, 10), p(1, 20, 20))  # Kafka ahead: ready to roll back
    v = decide(facts(*parts, kafka_members=2, kafka_group_type="consumer"))
    assert v.verdict == READY_TO_ROLL_BACK and v.can_roll_back
    assert "2 member(s) in the Kafka group (next-generation)" in v.notes
    classic = decide(facts(*parts, kafka_members=2, kafka_group_type="classic"))
    assert "2 member(s) in the Kafka group" in classic.notes
    mixed = decide(
        facts(p(0, 10), p(1, 20), zk_consumers=1, kafka_members=1, kafka_group_type="consumer")
    )
    assert mixed.verdict == READY_TO_MIGRATE


offsets = st.one_of(st.none(), st.integers(-1, 30))


@given(
    st.lists(st.tuples(offsets, offsets, st.one_of(st.none(), st.integers(0, 30))), max_size=4),
    st.integers(0, 3),
    st.integers(0, 3),
    st.sampled_from([True, False, None]),
)
def test_the_group_type_changes_only_the_note(rows, zk_consumers, kafka_members, writable) -> None:
    """Against the classic group as the reference: same facts, same verdict and blockers."""
    parts = tuple(p(i, zk, kafka, end) for i, (zk, kafka, end) in enumerate(rows))
    kw = dict(zk_consumers=zk_consumers, kafka_members=kafka_members, zk_writable=writable)
    classic = decide(facts(*parts, kafka_group_type="classic", **kw))
    next_gen = decide(facts(*parts, kafka_group_type="consumer", **kw))
    assert (next_gen.verdict, next_gen.reasons, next_gen.blockers) == (
        classic.verdict,
        classic.reasons,
        classic.blockers,
    )
    renamed = tuple(n.replace(" (next-generation)", "") for n in next_gen.notes)
    assert renamed == classic.notes
