"""A mixed next-generation group read with an error is left as it is.

``Coexistence.decide`` used to take any read that was not a clean ``consumer``-type view
(an error, a consumer group described without members) as the group turning classic
again: its proxies were told to stop reporting what their old threads own, which lets
the broker hand those partitions to a new member while the old threads still fetch them
(I1). Only a clean classic read does that now; the control is that one.
"""

from __future__ import annotations

from types import SimpleNamespace

from bridge.decide.handover import OwnerNode, ZkGroupState
from bridge.flows.coexist import Coexistence, classic_again
from bridge.kafka.views import CLASSIC, CONSUMER, GroupView
from zkpaths import TopicPartition

G = "g"
TP = TopicPartition("t", 0)
THREAD = "g_old-1-0"


class Proxy:
    """Stands in for a ProxyMember: records what it is told to report as owned."""

    last_error = None
    closed = False

    def __init__(self) -> None:
        self.owned: list[frozenset | None] = []
        self.pace: list = []

    def set_owned(self, owned, conditional) -> None:
        self.owned.append(None if owned is None else frozenset(owned))

    def keep_pace(self, ms) -> None:
        self.pace.append(ms)


def coexistence() -> tuple[Coexistence, Proxy]:
    admin = SimpleNamespace(config={"request_timeout_ms": 30000})
    c = Coexistence(None, admin, {}, "t")  # type: ignore[arg-type]
    proxy = Proxy()
    c.proxies[(G, THREAD)] = proxy  # type: ignore[assignment]
    state = ZkGroupState(frozenset({THREAD}), {TP: OwnerNode(THREAD, False)}, {TP: 5})
    c.next_gen[G] = (state, {TP: 5})
    return c, proxy


def decide(c: Coexistence, view: GroupView | None):
    state = c.next_gen[G][0] if G in c.next_gen else ZkGroupState(frozenset({THREAD}))
    return c.decide(G, view, state, {"t": 1}, {}, 0)


def test_an_unreadable_group_keeps_its_proxies_holding() -> None:
    for view in (
        GroupView(G, "", "consumer", None, error="COORDINATOR_LOAD_IN_PROGRESS"),
        GroupView(G, "", "", None, error="GROUP_ID_NOT_FOUND", group_type=CONSUMER),
        GroupView(G, "Stable", "consumer", "range", group_type=CONSUMER),  # no members
        None,
    ):
        c, proxy = coexistence()
        assert decide(c, view) is None, view
        assert proxy.owned == [] and G in c.next_gen, view


def test_a_clean_classic_read_lets_the_proxies_go() -> None:
    c, proxy = coexistence()
    decide(c, GroupView(G, "PreparingRebalance", "consumer", "range", group_type=CLASSIC))
    assert proxy.owned == [None] and proxy.pace == [None]  # back to reporting what it holds
    assert G not in c.next_gen


def test_classic_again_only_without_error() -> None:
    assert classic_again(GroupView(G, "Stable", "consumer", "range"))
    assert not classic_again(GroupView(G, "Stable", "consumer", "range", error="x"))
    assert not classic_again(GroupView(G, "Stable", "consumer", "range", group_type=CONSUMER))
    assert not classic_again(None)
