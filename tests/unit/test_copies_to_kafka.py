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
        self.started = threading.Event()  # a transaction is in flight

    def commit_ahead(self, per_group, direction, keep=None):
        self.started.set()
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
    assert fake.started.wait(10)  # (else the thread may take the next copy with it)
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


class FakeProxy:
    """A joined proxy: its identity moves to ``later`` once the group was read (a
    rebalance in between), and it answers each commit with ``answer``."""

    def __init__(self, answer: str | None = None, later: tuple[str, int] | None = None):
        self.at = ("member-1", 7)
        self.later = later
        self.answer = answer
        self.commits: list[tuple[dict, tuple[str, int]]] = []

    def identity(self):
        return (*self.at, frozenset())

    def commit(self, offsets, at=None):
        self.commits.append((dict(offsets), at))
        return self.answer


class ProxyAwareCommitter(FakeCommitter):
    """The fake committer with what the proxies' path uses of the real one."""

    transaction_s = 5.0

    def __init__(self, proxies: dict[str, FakeProxy]) -> None:
        super().__init__()
        self.release.set()
        self.lock = threading.RLock()
        self.proxies = proxies
        self.recorded: list[str] = []

    def ahead(self, per_group):
        for p in self.proxies.values():  # the group is read: a rebalance may come after
            if p.later:
                p.at = p.later
        return {g: dict(o) for g, o in per_group.items()}

    def committed(self, group, offsets, direction):
        self.recorded.append(group)


def proxied(
    proxies: dict[str, FakeProxy], reported: list
) -> tuple[CopiesToKafka, ProxyAwareCommitter]:
    fake = ProxyAwareCommitter(proxies)
    c = copies(fake, reported)
    c.described: list[dict] = []  # type: ignore[attr-defined]

    def described(per_group):  # as the real one: nothing to describe, no DescribeGroups
        if per_group:
            c.described.append({g: dict(o) for g, o in per_group.items()})  # type: ignore[attr-defined]
        return {g: dict(o) for g, o in per_group.items()}

    c._unowned = described  # type: ignore[method-assign]
    c.proxy_for = proxies.get
    c.commit_as = lambda commits: {g: p.commit(o, at) for g, (p, o, at) in commits.items()}
    return c, fake


def test_a_group_with_a_joined_proxy_is_committed_as_it_the_others_in_a_transaction() -> None:
    p = FakeProxy()
    reported: list = []
    c, fake = proxied({"mixed": p}, reported)
    c.submit({"mixed": {T0: 4}, "alone": {T0: 9}})
    assert c.wait_idle(10)
    assert p.commits == [({T0: 4}, ("member-1", 7))]
    assert fake.transactions == [{"alone": {T0: 9}}] and fake.recorded == ["mixed"]
    assert c.proxy_commits == 1 and not reported
    c.close()


def test_a_commit_as_a_proxy_is_made_at_the_generation_read_before_the_group() -> None:
    """The generation is taken before the group is read (``_unowned``, ``ahead``): a
    rebalance after the read makes Kafka refuse the commit, never take it at the new one."""
    p = FakeProxy(answer="t-0: IllegalGenerationError", later=("member-1", 8))
    reported: list = []
    c, fake = proxied({"mixed": p}, reported)
    c.submit({"mixed": {T0: 4}})
    assert c.wait_idle(10)
    assert p.commits == [({T0: 4}, ("member-1", 7))]
    # refused: tried in a transaction, under the same checks read again
    assert fake.transactions == [{"mixed": {T0: 4}}] and fake.recorded == []
    c.close()


def test_the_partitions_a_generation_gave_the_proxies_are_committed_without_describing() -> None:
    """A partition the proxies' generation holds needs no DescribeGroups: no Kafka member
    holds it while that generation lasts, and the commit is made at it. The others of the
    group are described first, as before."""
    p = FakeProxy()
    reported: list = []
    c, fake = proxied({"mixed": p}, reported)
    seen: list[tuple[str, int]] = []

    def dealt(group: str, generation: int) -> frozenset:
        seen.append((group, generation))
        return frozenset({T0})

    c.proxy_dealt = dealt
    c.submit({"mixed": {T0: 4, T1: 6}})
    assert c.wait_idle(10)
    assert seen == [("mixed", 7)]  # the generation read before the group
    assert c.described == [{"mixed": {T1: 6}}]  # type: ignore[attr-defined]
    assert p.commits == [({T0: 4, T1: 6}, ("member-1", 7))] and not reported
    c.close()


def test_a_group_all_of_whose_partitions_the_proxies_hold_is_not_described() -> None:
    p, q = FakeProxy(), FakeProxy()
    reported: list = []
    c, fake = proxied({"a": p, "b": q}, reported)
    c.proxy_dealt = lambda group, generation: frozenset({T0})
    c.submit({"a": {T0: 4}, "b": {T0: 5}})
    assert c.wait_idle(10)
    assert c.described == []  # type: ignore[attr-defined]
    assert p.commits == [({T0: 4}, ("member-1", 7))] and q.commits == [({T0: 5}, ("member-1", 7))]
    assert sorted(fake.recorded) == ["a", "b"] and c.proxy_commits == 2
    c.close()
