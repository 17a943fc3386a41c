"""The bridge's own commits coming back from ``__consumer_offsets`` (own_commits): a group
whose records were only those is not read again, its picture takes their offsets."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bridge.flows.kafka_groups import KafkaGroupsReader, KafkaPicture
from bridge.kafka import own_commits
from bridge.kafka.offsets_log import Event, GroupChanged, OffsetCommitted, OffsetsLogFollower
from bridge.kafka.own_commits import OwnCommits
from bridge.kafka.views import GroupView
from zkpaths import TopicPartition

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


class _Scripted(OffsetsLogFollower):
    """The follower's bookkeeping over records given by the test instead of a consumer."""

    def __init__(self, own: OwnCommits) -> None:
        self._new_state()
        self.own = own
        self.assigned = True
        self.batches: list[list[Event]] = []

    def poll(self, timeout_ms: int = 0, max_records: int = 100_000) -> list[Event]:
        return self.batches.pop(0) if self.batches else []


def test_an_expected_offset_is_taken_once_and_only_exactly():
    own = OwnCommits()
    own.expect("g", {T0: 5, T1: 7})
    assert not own.take("g", T0, 6)  # another offset: someone else's commit
    assert not own.take("h", T0, 5)  # another group
    assert own.take("g", T0, 5)
    assert not own.take("g", T0, 5)  # used up: a second record of it is not the echo
    own.expect("g", {T1: 8})  # a later copy replaces the one not seen yet
    assert not own.take("g", T1, 7) and own.take("g", T1, 8)


def test_expectations_past_the_bound_are_dropped(monkeypatch):
    monkeypatch.setattr(own_commits, "MAX_EXPECTED", 3)
    own = OwnCommits()
    own.expect("g", {T0: 1, T1: 1})
    own.expect("h", {T0: 1, T1: 1})  # would hold 4: the old ones go
    assert len(own) == 2 and not own.take("g", T0, 1) and own.take("h", T0, 1)


def test_echoes_are_kept_aside_and_anything_else_names_the_group():
    own = OwnCommits()
    own.expect("mixed", {T0: 5})
    own.expect("both", {T0: 3})
    f = _Scripted(own)
    f.batches = [
        [
            OffsetCommitted("mixed", T0, 5),  # the echo
            OffsetCommitted("both", T0, 3),  # an echo, but the same group also has ...
            GroupChanged("both"),  # ... a metadata record: read again
            OffsetCommitted("other", T0, 5),  # nobody expected it
        ]
    ]
    assert f.changed_groups() == {"both", "other"}
    assert f.take_echoes() == {"mixed": {T0: 5}}
    assert f.take_echoes() == {}
    # negative control: without the bridge's own commits every group is named
    plain = _Scripted(OwnCommits())
    plain.own = None
    plain.batches = [[OffsetCommitted("mixed", T0, 5)]]
    assert plain.changed_groups() == {"mixed"} and plain.take_echoes() == {}


def test_a_group_named_later_drops_its_echoes():
    own = OwnCommits()
    own.expect("g", {T0: 5})
    f = _Scripted(own)
    f.batches = [[OffsetCommitted("g", T0, 5)], [OffsetCommitted("g", T1, 9)]]
    assert f.changed_groups() == set()
    assert f.changed_groups() == {"g"}
    assert f.take_echoes() == {}  # the group APIs are asked: they say it all


_events = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from([T0, T1]), st.integers(0, 3)),
    max_size=12,
)


@given(expected=_events, records=_events, metadata=st.sets(st.sampled_from(["a", "b", "c"])))
def test_named_and_echoed_groups_match_a_reference(expected, records, metadata):
    own = OwnCommits()
    for g, tp, o in expected:
        own.expect(g, {tp: o})
    f = _Scripted(own)
    events: list[Event] = [OffsetCommitted(g, tp, o) for g, tp, o in records]
    events += [GroupChanged(g) for g in sorted(metadata)]
    f.batches = [events]
    # the reference: each expectation (the last per group and partition) used once, in order
    left = {(g, tp): o for g, tp, o in expected}
    named, echoed = set(metadata), {}
    for g, tp, o in records:
        if left.get((g, tp)) == o:
            del left[(g, tp)]
            echoed.setdefault(g, {})[tp] = o
        else:
            named.add(g)
    assert f.changed_groups() == named
    assert f.take_echoes() == {g: o for g, o in echoed.items() if g not in named}


def _reader(dirty: set[str]) -> KafkaGroupsReader:
    reader = KafkaGroupsReader(None, lambda g: True, None, None, 60.0)  # type: ignore[arg-type]
    reader.dirty = set(dirty)
    return reader


def test_the_picture_takes_echoes_but_not_for_a_group_read_again():
    views = {g: GroupView(g, "Stable", "consumer", "range", offsets={T0: 1, T1: 1}) for g in "abc"}
    views["c"] = GroupView("c", "Unknown", "", None, error="offset fetch failed")
    pic = KafkaPicture({g: "consumer" for g in "abc"}, list("abc"), views, {"t": 2}, 0.0)
    echoes = {"a": {T0: 5}, "b": {T0: 6}, "c": {T0: 7}, "gone": {T0: 8}}
    out = _reader({"b"})._with_echoes(pic, echoes)
    assert out is not None
    assert out.views["a"].offsets == {T0: 5, T1: 1}
    assert out.views["b"].offsets == {T0: 1, T1: 1}  # dirty: the group APIs answer for it
    assert out.views["c"].error and "gone" not in out.views
    assert pic.views["a"].offsets == {T0: 1, T1: 1}  # the picture before is not changed
