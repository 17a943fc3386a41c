"""CopiesToKafka: the groups flow's copies into Kafka, committed off the tick's thread.

A fake committer stands in for Kafka (the integration tests in test_zk_mode_commits.py and
test_copies_in_order.py commit for real, the latter a copy overtaken while it waited):
what matters here is which transactions the thread sends.
"""

from __future__ import annotations

import threading

from kafka.errors import KafkaError

from bridge.flows.to_kafka import CopiesToKafka
from zkpaths import TopicPartition

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


class FakeCommitter:
    """Records each transaction; the first one waits for ``release`` (a commit in flight)."""

    visible_within_s = 1.0

    def __init__(self, refuse: set[str] = frozenset()) -> None:
        self.transactions: list[dict] = []
        self.refuse = refuse
        self.release = threading.Event()

    def commit_ahead(self, per_group, direction, keep=None):
        self.release.wait(10)
        self.transactions.append({g: dict(o) for g, o in per_group.items()})
        if self.refuse & set(per_group):
            raise KafkaError("refused")
        return []


def copies(committer: FakeCommitter, reported: list) -> CopiesToKafka:
    return CopiesToKafka(None, committer, lambda *a: reported.append(a))  # type: ignore[arg-type]


def test_everything_handed_over_during_a_commit_goes_in_the_next_transaction() -> None:
    fake, reported = FakeCommitter(), []
    c = copies(fake, reported)
    c.submit({"a": {T0: 1}})  # in flight until released
    c.submit({"a": {T0: 2, T1: 5}})
    c.submit({"b": {T0: 7}})
    c.submit({"a": {T0: 3}})  # a later copy of a partition replaces the one not sent
    fake.release.set()
    assert c.wait_idle(10)
    assert fake.transactions[-1] == {"a": {T0: 3, T1: 5}, "b": {T0: 7}}
    assert len(fake.transactions) <= 2 and not reported
    c.close()


def test_a_refused_transaction_is_retried_group_by_group() -> None:
    fake, reported = FakeCommitter(refuse={"bad"}), []
    fake.release.set()
    c = copies(fake, reported)
    c.submit({"bad": {T0: 1}, "good": {T0: 2}})
    assert c.wait_idle(10)
    assert {"good": {T0: 2}} in fake.transactions[1:]  # the good group went in alone
    assert [r[0] for r in reported] == ["bad"]
    c.close()


def test_a_group_whose_share_moved_is_not_copied_and_nothing_after_close() -> None:
    fake, reported = FakeCommitter(), []
    fake.release.set()
    c = copies(fake, reported)
    c.holds = lambda g: g != "moved"
    c.submit({"moved": {T0: 1}, "kept": {T0: 2}})
    assert c.wait_idle(10)
    assert fake.transactions == [{"kept": {T0: 2}}]
    c.close()
    c.submit({"kept": {T0: 3}})
    assert c.wait_idle(1)
    assert fake.transactions == [{"kept": {T0: 2}}]


def test_copies_go_only_into_settled_groups_and_never_over_a_members_partition() -> None:
    """``unowned``: a copy waiting for its transaction while a rebalance gave its partition
    to a Kafka member would land after that member's commit (test_chaos saw 742 -> 659)."""
    from bridge.flows.to_kafka import unowned
    from bridge.kafka.proxy import PROXY_CLIENT_ID
    from bridge.kafka.views import GroupView, MemberView

    def view(state, *members, error=None):
        return GroupView("g", state, "consumer", "range", tuple(members), error=error)

    proxy = MemberView("p", PROXY_CLIENT_ID, "h", ("t",), {"t": (0,)}, "old-0")
    member = MemberView("m", "new", "h", ("t",), {"t": (1,)}, None)
    copies = {"g": {T0: 5, T1: 6}}
    assert unowned(copies, {"g": view("Stable", proxy, member)}) == {"g": {T0: 5}}
    assert unowned(copies, {"g": view("Empty")}) == copies
    assert unowned(copies, {"g": view("Dead")}) == copies  # a stopped group: no members
    for moving in ("PreparingRebalance", "CompletingRebalance", "Reconciling", "Assigning"):
        assert unowned(copies, {"g": view(moving, proxy)}) == {}
    assert unowned(copies, {"g": view("Stable", error="NOT_COORDINATOR")}) == {}
    assert unowned(copies, {}) == {}
