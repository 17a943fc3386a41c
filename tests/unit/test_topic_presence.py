"""Flow F1's guard against lagging brokers' Metadata answers (``TopicPresence``).

CI once found a deleted topic back in ``/brokers/topics`` right after the registry had
deleted it: a broker still applying the deletion answered the bridge's next Metadata call
with the topic in it.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.decide.topic_presence import TopicPresence
from bridge.kafka.views import ClusterView, PartitionView, TopicView

P = {0: PartitionView(leader=1, leader_epoch=0, replicas=(1,), isr=(1,))}


def view(*topics: tuple[str, str | None], unsettled: tuple[str, ...] = ()) -> ClusterView:
    return ClusterView(
        cluster_id="c",
        controller_id=1,
        controller_epoch=1,
        topics={n: TopicView(name=n, topic_id=i, partitions=P) for n, i in topics},
        unsettled=frozenset(unsettled),
    )


def settle(p: TopicPresence, v: ClusterView, now: float, listed=()):
    assert set(listed) <= p.missing(v), "the flow asks only about the missing ones"
    return p.settle(v, now, set(listed))


def test_a_missing_topic_a_broker_still_lists_is_kept() -> None:
    """A topic created a moment ago, missing from a lagging broker's answer: another broker
    lists it, so its nodes stay."""
    p = TopicPresence(max_missing_s=30.0)
    settle(p, view(("a", "id-a")), 0.0)
    got, stale = settle(p, view(), 0.5, listed={"a"})
    assert set(got.topics) == set() and got.unsettled == {"a"} and not stale
    got, _ = settle(p, view(("a", "id-a")), 0.7)
    assert set(got.topics) == {"a"}


def test_a_missing_topic_no_broker_lists_is_deleted_at_once() -> None:
    p = TopicPresence()
    settle(p, view(("a", "id-a"), ("b", "id-b")), 0.0)
    got, _ = settle(p, view(("a", "id-a")), 0.1, listed=())
    assert set(got.topics) == {"a"} and got.unsettled == set()
    assert p.missing(view(("a", "id-a"))) == set(), "nothing left to ask about"


def test_a_missing_topic_is_deleted_after_the_longest_wait_if_a_broker_keeps_listing_it() -> None:
    """A broker that cannot be asked counts as listing every name: the nodes go only
    after ``max_missing_s``."""
    p = TopicPresence(max_missing_s=30.0)
    settle(p, view(("b", "id-b")), 0.0)
    for t in (1.0, 10.0, 29.0):
        assert settle(p, view(), t, listed={"b"})[0].unsettled == {"b"}
    assert settle(p, view(), 31.5, listed={"b"})[0].unsettled == set()


def test_a_deleted_topic_shown_again_by_a_lagging_broker_stays_deleted() -> None:
    p = TopicPresence(tombstone_s=300.0)
    settle(p, view(("a", "id-a"), ("b", "id-b")), 0.0)
    got, _ = settle(p, view(("a", "id-a")), 1.0)
    assert set(got.topics) == {"a"} and got.unsettled == set()
    got, stale = settle(p, view(("a", "id-a"), ("b", "id-b")), 1.1)
    assert set(got.topics) == {"a"} and stale == {"b"} and "b" not in got.unsettled


def test_a_topic_created_again_under_the_same_name_is_mirrored_at_once() -> None:
    p = TopicPresence()
    settle(p, view(("b", "id-b1")), 0.0)
    settle(p, view(), 1.0)
    got, stale = settle(p, view(("b", "id-b2")), 1.5)
    assert set(got.topics) == {"b"} and not stale


def test_a_deleted_topics_id_is_forgotten_after_the_tombstone_time() -> None:
    p = TopicPresence(tombstone_s=10.0)
    settle(p, view(("b", "id-b")), 0.0)
    settle(p, view(), 1.0)
    assert set(settle(p, view(("b", "id-b")), 5.0)[0].topics) == set()
    assert set(settle(p, view(("b", "id-b")), 12.0)[0].topics) == {"b"}


def test_a_topic_answered_with_an_error_is_not_counted_missing() -> None:
    """A topic a broker answers for with an error is there but not ready: it must not be
    taken as deleted, or its id refused once it settles."""
    p = TopicPresence(max_missing_s=1.0)
    settle(p, view(("a", "id-a")), 0.0)
    for t in (1.0, 2.0, 3.0):
        got, _ = settle(p, view(unsettled=("a",)), t)
        assert got.unsettled == {"a"}
    got, stale = settle(p, view(("a", "id-a")), 4.0)
    assert set(got.topics) == {"a"} and not stale


def test_topics_without_ids_are_never_refused() -> None:
    p = TopicPresence()
    settle(p, view(("b", None)), 0.0)
    settle(p, view(), 1.0)
    assert set(settle(p, view(("b", None)), 3.0)[0].topics) == {"b"}


# a history: each step, the cluster deletes, creates or keeps its topics; the answer is
# then either the fresh one or the one a lagging broker still holds (it catches up only
# now and then, so it can lag by many steps); asking the brokers about the missing topics
# may fail (a broker that cannot be asked counts as listing them all)
steps = st.lists(
    st.tuples(
        st.sampled_from(["keep", "create", "delete"]),
        st.sampled_from(["x", "x", "y"]),
        st.booleans(),  # the answer comes from the lagging broker
        st.booleans(),  # the lagging broker catches up before answering
        st.booleans(),  # every broker could be asked
        st.sampled_from([0.3, 0.6, 1.2]),
    ),
    max_size=40,
)


@settings(max_examples=400)
@given(steps)
def test_a_deleted_topic_id_never_comes_back_within_the_tombstone_time(history) -> None:
    """Reference: the set of ids the registry already mirrored and then took as deleted.
    None of them may be mirrored again, however the answers lag; and a topic no broker
    lists any more is not kept."""
    p = TopicPresence(max_missing_s=1.0, tombstone_s=1e9)
    live: dict[str, str] = {}
    lagging: dict[str, str] = {}
    serial, now = 0, 0.0
    mirrored_then_gone: set[str] = set()
    was_mirrored: dict[str, str] = {}
    for action, name, lag, catch_up, asked, dt in history:
        now += dt
        if action == "create" and name not in live:
            serial += 1
            live[name] = f"{name}-{serial}"
        elif action == "delete":
            live.pop(name, None)
        if catch_up:
            lagging = dict(live)
        answer = view(*(lagging if lag else live).items())
        listed = p.missing(answer) & (set(live) | set(lagging)) if asked else p.missing(answer)
        got, _ = p.settle(answer, now, listed)
        shown = {n: t.topic_id for n, t in got.topics.items()}
        assert not set(shown.values()) & mirrored_then_gone
        if asked:
            assert got.unsettled <= set(live) | set(lagging)
        for n, i in was_mirrored.items():
            if n not in shown and n not in got.unsettled:
                mirrored_then_gone.add(i)
        was_mirrored = {**{n: i for n, i in was_mirrored.items() if n in got.unsettled}, **shown}
