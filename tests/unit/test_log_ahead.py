"""A group read behind its own records (flows.log_ahead): read again until a read shows
what the records said, and no longer CompletingRebalance, for at most LATE_FOR_S."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bridge.flows import log_ahead
from bridge.flows.log_ahead import LogAhead
from zkpaths import TopicPartition

TPS = [TopicPartition("t", p) for p in range(3)]

records = st.lists(
    st.tuples(st.sampled_from(TPS), st.one_of(st.none(), st.integers(-1, 20))), max_size=6
)
reads = st.dictionaries(st.sampled_from(TPS), st.integers(0, 20), max_size=3)


@given(st.lists(st.tuples(records, reads, st.booleans()), max_size=8))
def test_behind_until_a_read_shows_every_record_since_the_last_agreement(steps):
    """Against a reference that keeps every record since the last read in agreement and
    replays them: a read is behind when some partition's last record is not what it
    shows (a removed or negative offset shows as none), or when it found the group
    CompletingRebalance."""
    ahead = LogAhead()
    log: list[tuple[TopicPartition, int | None]] = []
    for polled, read, completing in steps:
        said: dict[TopicPartition, int | None] = {}
        for tp, off in polled:
            said[tp] = off
        ahead.add({"g": said} if said else {})
        log.extend(polled)
        last = dict(log)  # the last record of each partition

        def shown(tp, off, read=read):
            return read.get(tp) == (off if off is not None and off >= 0 else None)

        expected = any(not shown(tp, off) for tp, off in last.items()) or completing
        assert ahead.behind("g", read, dead=False, completing=completing) is expected
        assert ahead.waiting() is expected
        # in agreement: all forgotten; else the partitions shown already are not asked again
        log = [(tp, off) for tp, off in log if not shown(tp, last[tp])]


def test_a_read_before_the_coordinator_serves_the_commit_is_made_again():
    """The record said 9; OffsetFetch still answered 5; then 9."""
    ahead = LogAhead()
    ahead.add({"g": {TPS[0]: 9}})
    assert ahead.behind("g", {TPS[0]: 5}, dead=False)
    assert ahead.waiting()
    assert not ahead.behind("g", {TPS[0]: 9}, dead=False)
    assert not ahead.waiting() and not ahead.said


def test_a_dead_group_or_a_removed_commit_is_not_waited_for():
    ahead = LogAhead()
    ahead.add({"g": {TPS[0]: 9}, "h": {TPS[1]: None}})
    assert not ahead.behind("g", {}, dead=True)
    assert not ahead.behind("h", {}, dead=False)  # the removal shows as no offset
    assert not ahead.waiting()


def test_a_group_never_served_is_given_up_with_a_line(monkeypatch, caplog):
    ahead = LogAhead()
    ahead.add({"g": {TPS[0]: 9}})
    clock = [100.0]
    monkeypatch.setattr(log_ahead.time, "monotonic", lambda: clock[0])
    assert ahead.behind("g", {TPS[0]: 5}, dead=False)
    clock[0] += log_ahead.LATE_FOR_S - 0.1
    assert ahead.behind("g", {TPS[0]: 5}, dead=False)
    clock[0] += 0.2
    with caplog.at_level("WARNING"):
        assert not ahead.behind("g", {TPS[0]: 5}, dead=False)
    assert ahead.given_up == 1 and not ahead.waiting()
    [line] = [r.getMessage() for r in caplog.records]
    assert "offset 5 for t-0 where __consumer_offsets said 9" in line


def test_groups_not_read_again_are_forgotten():
    """Echoes of the bridge's own commits (applied from the records) and filtered groups."""
    ahead = LogAhead()
    ahead.add({"g": {TPS[0]: 9}, "echo": {TPS[0]: 3}})
    assert ahead.behind("g", {}, dead=False)
    ahead.keep_only({"g"})
    assert set(ahead.said) == {"g"} and ahead.waiting()


def test_a_rebalance_read_before_it_turned_stable_is_made_again():
    """The generation's record was read; the group still CompletingRebalance; then Stable.
    No record said an offset: the state alone keeps it to be read again."""
    ahead = LogAhead()
    assert ahead.behind("g", {TPS[0]: 5}, dead=False, completing=True)
    assert ahead.waiting() and not ahead.said
    assert not ahead.behind("g", {TPS[0]: 5}, dead=False, completing=False)
    assert not ahead.waiting()


def test_a_leader_that_never_syncs_is_given_up_with_a_line(monkeypatch, caplog):
    ahead = LogAhead()
    clock = [100.0]
    monkeypatch.setattr(log_ahead.time, "monotonic", lambda: clock[0])
    assert ahead.behind("g", {}, dead=False, completing=True)
    clock[0] += log_ahead.LATE_FOR_S + 0.1
    with caplog.at_level("INFO"):
        assert not ahead.behind("g", {}, dead=False, completing=True)
    assert ahead.given_up == 1 and not ahead.waiting()
    [line] = [r.getMessage() for r in caplog.records]
    assert "still CompletingRebalance after 10 s" in line
