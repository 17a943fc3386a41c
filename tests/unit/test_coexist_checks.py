"""``GroupChecks._check_assignment``: a leader's assignment judged against Kafka's range
once per generation (members, assignment, partition counts), reported while it differs.

The expected range is written out by hand (Kafka's ``RangeAssignor``: members
sorted, the first ``n % members`` get one more), not the bridge's ``range_mismatch``."""

from __future__ import annotations

import pytest

from bridge.decide import handover
from bridge.flows import coexist_checks
from bridge.flows.coexist_checks import GroupChecks
from bridge.kafka.views import GroupView, JoinedGeneration, KafkaMember, MemberView
from zkpaths import TopicPartition


class Checks(GroupChecks):
    def __init__(self) -> None:
        self.proxies = {}
        self.judged = {}
        self.reports: list[str] = []
        self.report = lambda group, message, kind: self.reports.append(kind)


def _gen(assignment: dict[int, str]) -> JoinedGeneration:
    members = (KafkaMember("a", None, ("t",)), KafkaMember("b", None, ("t",)))
    return JoinedGeneration(-1, members, {TopicPartition("t", p): m for p, m in assignment.items()})


VIEW = GroupView("g", "Stable", "consumer", "range", (MemberView("a", "c", "h", ("t",), {}),))
RANGE = {0: "a", 1: "a", 2: "b", 3: "b"}  # 4 partitions over a, b: two each, a first


@pytest.fixture
def judged(monkeypatch) -> list[int]:
    """How many times the range was computed."""
    calls: list[int] = []
    real = handover.range_mismatch

    def counted(gen, partitions):
        calls.append(1)
        return real(gen, partitions)

    monkeypatch.setattr(coexist_checks, "range_mismatch", counted)
    return calls


def test_a_generation_is_judged_once_and_reported_while_it_differs(judged):
    checks = Checks()
    off = {**RANGE, 1: "b"}  # a leader that gave b three
    for _ in range(3):
        checks._check_assignment("g", VIEW, _gen(off), {"t": 4})
    assert len(judged) == 1 and checks.reports == ["assignment_mismatch"] * 3
    checks._check_assignment("g", VIEW, _gen(RANGE), {"t": 4})  # the next generation: range
    assert len(judged) == 2 and len(checks.reports) == 3
    checks._check_assignment("g", VIEW, _gen(RANGE), {"t": 4})
    assert len(judged) == 2
    checks._check_assignment("g", VIEW, _gen(RANGE), {"t": 6})  # the topic grew: judged again
    assert len(judged) == 3 and len(checks.reports) == 3  # the leader knew of 4: no mismatch
