"""Groups whose decision cannot change (flows.settled): skipped by a pass only while their
view, nodes and topics are as when their decision was written."""

from __future__ import annotations

from bridge.flows.settled import SettledGroups


def test_only_written_groups_read_as_they_were_are_skipped():
    s = SettledGroups()
    s.topics({"t": 3})
    s.written({"a", "b"})
    assert s.unchanged({"a", "c"}) == {"a"}  # c was never written: decided


def test_a_group_being_decided_is_settled_again_only_once_written():
    """A tick whose write failed (raised) leaves its groups unsettled: the next pass decides
    them again even though the picture already holds their new views."""
    s = SettledGroups()
    s.written({"a"})
    s.deciding({"a"})
    assert s.unchanged({"a"}) == set()
    s.written({"a"})
    assert s.unchanged({"a"}) == {"a"}


def test_drift_unsettles_and_makes_the_group_due_until_a_tick_wrote_it():
    s = SettledGroups()
    s.written({"a", "b"})
    s.drifted({"a"})
    assert s.unchanged({"a", "b"}) == {"b"}
    assert s.take_due() == {"a"}
    # that tick failed before writing: the next tick takes the group again
    assert s.take_due() == {"a"}
    s.drifted({"c"})  # found while the tick ran (a write refused): for the next one
    s.written({"a"})
    assert s.take_due() == {"c"}
    s.written(set())
    assert s.take_due() == set()


def test_a_change_of_partition_counts_or_shares_unsettles_every_group():
    s = SettledGroups()
    s.topics({"t": 3})
    s.written({"a"})
    s.topics({"t": 3})  # read again, the same counts
    assert s.unchanged({"a"}) == {"a"}
    s.topics({"t": 4})
    assert s.unchanged({"a"}) == set()
    s.written({"a"})
    s.forget()
    assert s.unchanged({"a"}) == set()


def test_a_mixed_group_is_quiet_only_on_the_view_and_record_its_decision_read():
    s = SettledGroups()
    view, record = ("view", 1), ("zookeeper", 0)
    s.mixed_written({"m": (view, record), "n": (view, record)})
    views, records = {"m": ("view", 1), "n": ("view", 2)}, {"m": record, "n": record}
    # an equal view (described again, the same answer) is the same view; n's changed
    assert s.quiet_mixed({"m", "n", "x"}, views, records) == {"m"}
    assert s.quiet_mixed({"m"}, views, {"m": ("dual", 1)}) == set()  # a migrate
    assert s.quiet_mixed({"m"}, {}, records) == set()  # the group gone from Kafka


def test_whatever_unsettles_a_group_ends_a_mixed_groups_quiet():
    """Decided again (its tick may fail before writing), drifted (a refused write, the
    verification), topics changed, shares moved: each drops it until written again."""
    view, record = "view", "record"
    views, records = {"m": view}, {"m": record}
    s = SettledGroups()
    s.topics({"t": 3})
    for unsettle in (
        lambda: s.deciding({"m"}),
        lambda: s.drifted({"m"}),
        lambda: s.topics({"t": 4}),
        s.forget,
    ):
        s.mixed_written({"m": (view, record)})
        assert s.quiet_mixed({"m"}, views, records) == {"m"}
        unsettle()
        assert s.quiet_mixed({"m"}, views, records) == set()
