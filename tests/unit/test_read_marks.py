"""Commit records taken as a group's offsets (``flows.read_marks``): the marks, and the
follower's split of a poll's records into groups to read and commits taken.

The property test replays a log of commits against an independent reference: a model of
the coordinator (a read shows some prefix of the log, below the high watermark asked
after it) and of a follower a little behind. Whatever the interleaving, the offset the
view holds for a partition is never older, in log order, than what the last read showed.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.flows.read_marks import ReadMarks
from bridge.kafka.offsets_log import GroupChanged, OffsetCommitted
from bridge.kafka.own_commits import OwnCommits
from bridge.metrics import METRICS
from tests.unit.test_own_commits import _Scripted
from zkpaths import TopicPartition
from zkpaths.javahash import coordinator_partition

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def _marks(ends: dict[int, int], partitions: int = 1) -> ReadMarks:
    return ReadMarks(lambda parts: {p: ends[p] for p in parts if p in ends}, lambda: partitions)


def test_a_mark_only_rises_and_one_not_asked_drops_it():
    ends = {0: 10}
    marks = _marks(ends)
    marks.mark(["g"], marks.ask(["g"]))
    assert not marks.past("g", 9) and marks.past("g", 10)
    ends[0] = 4  # a lower answer (never for one partition; but a mark is never lowered)
    marks.mark(["g"], marks.ask(["g"]))
    assert not marks.past("g", 9)
    marks.mark(["g"], {})  # read, but no mark asked: its records are read again
    assert not marks.past("g", 1_000)
    assert not marks.past("never-read", 1_000)


def test_a_mark_that_cannot_be_asked_is_none():
    def away(parts):
        raise ConnectionError("Kafka away")

    marks = ReadMarks(away, lambda: 50)
    assert marks.ask(["g"]) == {}


def test_each_group_is_marked_by_its_own_partition():
    groups = [f"g{i}" for i in range(20)]
    ends = {p: 100 + p for p in range(5)}
    marks = _marks(ends, partitions=5)
    asked = marks.ask(groups)
    assert asked == {g: 100 + coordinator_partition(g, 5) for g in groups}


def _scripted() -> _Scripted:
    return _Scripted(OwnCommits())


def test_commits_taken_and_anything_else_names_the_group():
    f = _scripted()
    f.direct = lambda group, at: group != "unmarked" and at >= 10
    f.own.expect("echoed", {T0: 3})
    f.batches = [
        [
            OffsetCommitted("taken", T0, 5, at=10),
            OffsetCommitted("taken", T1, 6, at=11),
            OffsetCommitted("taken", T0, 7, at=12),  # the later one of a partition wins
            OffsetCommitted("early", T0, 1, at=9),  # before the mark: read again
            OffsetCommitted("early", T0, 2, at=13),
            OffsetCommitted("unmarked", T0, 1, at=20),
            OffsetCommitted("reshaped", T0, 1, at=20),
            GroupChanged("reshaped"),
            OffsetCommitted("removed", T0, None, at=20),
            OffsetCommitted("echoed", T0, 3, at=20),  # an echo ...
            OffsetCommitted("echoed", T1, 4, at=21),  # ... and a commit: read again
        ]
    ]
    before = METRICS.commit_records_taken._value.get()
    changed = f.changed_groups()
    assert METRICS.commit_records_taken._value.get() - before == 2  # counted per partition
    assert changed == {"early", "unmarked", "reshaped", "removed", "echoed"}
    assert f.direct_groups() == {"taken"}
    assert f.take_direct() == {"taken": {T0: 7, T1: 6}}
    assert f.take_direct() == {}
    assert f.take_echoes() == {}


def test_without_direct_every_commit_names_its_group():
    """The control: the same records with nothing taken."""
    f = _scripted()
    f.batches = [[OffsetCommitted("g", T0, 5, at=10)]]
    assert f.changed_groups() == {"g"} and f.take_direct() == {}


def test_a_taken_group_named_in_a_later_poll_is_read_instead():
    f = _scripted()
    f.direct = lambda group, at: True
    f.batches = [[OffsetCommitted("g", T0, 5, at=10)], [GroupChanged("g")]]
    assert f.changed_groups() == set()
    assert f.changed_groups() == {"g"}
    assert f.take_direct() == {}  # the read says it all


# -- the property: a view never goes back behind its last read -----------------------------


@st.composite
def _histories(draw):
    """A log of one group's commits (partition 0 or 1, rising offsets per partition), and
    a schedule of steps: append a commit, the follower reads some records, a read."""
    steps = draw(
        st.lists(st.sampled_from(["append", "follow", "read", "served"]), min_size=1, max_size=60)
    )
    partitions = draw(st.lists(st.sampled_from([T0, T1]), min_size=len(steps), max_size=60))
    return steps, partitions


@settings(max_examples=400)
@given(_histories(), st.integers(1, 4))
def test_taken_offsets_never_fall_behind_the_last_read(history, chunk):
    steps, partitions = history
    log: list[tuple[TopicPartition, int]] = []  # the topic's partition, in order
    applied = 0  # the coordinator has applied the first `applied` records (<= readable)
    followed = 0  # the follower has read the first `followed` records
    view: dict[TopicPartition, tuple[int, int]] = {}  # tp -> (offset, log position)
    floor: dict[TopicPartition, int] = {}  # tp -> log position of what the last read showed
    ends = {0: 0}
    marks = ReadMarks(lambda parts: dict(ends), lambda: 1)
    next_offset = {T0: 0, T1: 0}
    for step, tp in zip(steps, partitions, strict=False):
        if step == "append":
            next_offset[tp] += 1
            log.append((tp, next_offset[tp]))
            ends[0] = len(log)  # replicated at once: readable (the high watermark)
        elif step == "served":  # the coordinator applies what is readable, lagging
            applied = len(log)
        elif step == "read":  # the reference: the last record per partition applied
            shown = {}
            for pos, (p, off) in enumerate(log[:applied]):
                shown[p] = (off, pos)
            view = dict(shown)
            floor = {p: pos for p, (_, pos) in shown.items()}
            marks.mark(["g"], marks.ask(["g"]))
        else:  # the follower reads up to `chunk` records; taken if at or past the mark
            batch = log[followed : followed + chunk]
            first = followed
            followed += len(batch)
            if batch and marks.past("g", first):
                for i, (p, off) in enumerate(batch):
                    view[p] = (off, first + i)
        for p, (_, pos) in view.items():
            assert pos >= floor.get(p, -1), (steps, log, view, floor)
