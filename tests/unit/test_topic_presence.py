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


def test_a_topic_missing_for_less_than_the_grace_is_kept() -> None:
    p = TopicPresence(grace_s=1.0)
    p.settle(view(("a", "id-a")), 0.0)
    got, stale = p.settle(view(), 0.5)
    assert set(got.topics) == set() and got.unsettled == {"a"} and not stale
    got, _ = p.settle(view(("a", "id-a")), 0.7)  # the lagging broker's answer: it was there
    assert set(got.topics) == {"a"}
    got, _ = p.settle(view(), 0.9)
    assert got.unsettled == {"a"}, "the grace starts again from the new absence"


def test_a_deleted_topic_shown_again_by_a_lagging_broker_stays_deleted() -> None:
    p = TopicPresence(grace_s=1.0, tombstone_s=300.0)
    p.settle(view(("a", "id-a"), ("b", "id-b")), 0.0)
    p.settle(view(("a", "id-a")), 1.0)
    got, _ = p.settle(view(("a", "id-a")), 2.1)
    assert set(got.topics) == {"a"} and got.unsettled == set(), "b is deleted after the grace"
    got, stale = p.settle(view(("a", "id-a"), ("b", "id-b")), 2.2)
    assert set(got.topics) == {"a"} and stale == {"b"} and "b" not in got.unsettled


def test_a_topic_created_again_under_the_same_name_is_mirrored_at_once() -> None:
    p = TopicPresence(grace_s=1.0)
    p.settle(view(("b", "id-b1")), 0.0)
    p.settle(view(), 1.0)
    p.settle(view(), 2.5)
    got, stale = p.settle(view(("b", "id-b2")), 3.0)
    assert set(got.topics) == {"b"} and not stale


def test_a_deleted_topics_id_is_forgotten_after_the_tombstone_time() -> None:
    p = TopicPresence(grace_s=1.0, tombstone_s=10.0)
    p.settle(view(("b", "id-b")), 0.0)
    p.settle(view(), 1.0)
    p.settle(view(), 2.5)
    assert set(p.settle(view(("b", "id-b")), 5.0)[0].topics) == set()
    assert set(p.settle(view(("b", "id-b")), 13.0)[0].topics) == {"b"}


def test_a_topic_answered_with_an_error_is_not_counted_missing() -> None:
    """A topic a broker answers for with an error is there but not ready: it must not be
    taken as deleted, or its id refused once it settles."""
    p = TopicPresence(grace_s=1.0)
    p.settle(view(("a", "id-a")), 0.0)
    for t in (1.0, 2.0, 3.0):
        got, _ = p.settle(view(unsettled=("a",)), t)
        assert got.unsettled == {"a"}
    got, stale = p.settle(view(("a", "id-a")), 4.0)
    assert set(got.topics) == {"a"} and not stale


def test_topics_without_ids_are_never_refused() -> None:
    p = TopicPresence(grace_s=1.0)
    p.settle(view(("b", None)), 0.0)
    p.settle(view(), 1.0)
    p.settle(view(), 2.5)
    assert set(p.settle(view(("b", None)), 3.0)[0].topics) == {"b"}


# a history: each step, the cluster deletes, creates or keeps its topics; the answer is
# then either the fresh one or the one a lagging broker still holds (it catches up only
# now and then, so it can lag by many steps)
steps = st.lists(
    st.tuples(
        st.sampled_from(["keep", "create", "delete"]),
        st.sampled_from(["x", "x", "y"]),
        st.booleans(),  # the answer comes from the lagging broker
        st.booleans(),  # the lagging broker catches up before answering
        st.sampled_from([0.3, 0.6, 1.2]),
    ),
    max_size=40,
)


@settings(max_examples=400)
@given(steps)
def test_a_deleted_topic_id_never_comes_back_within_the_tombstone_time(history) -> None:
    """Reference: the set of ids the registry already mirrored and then took as deleted.
    None of them may be mirrored again, however the answers lag."""
    p = TopicPresence(grace_s=1.0, tombstone_s=1e9)
    live: dict[str, str] = {}
    lagging: dict[str, str] = {}
    serial, now = 0, 0.0
    mirrored_then_gone: set[str] = set()
    was_mirrored: dict[str, str] = {}
    for action, name, lag, catch_up, dt in history:
        now += dt
        if action == "create" and name not in live:
            serial += 1
            live[name] = f"{name}-{serial}"
        elif action == "delete":
            live.pop(name, None)
        if catch_up:
            lagging = dict(live)
        answer = lagging if lag else live
        got, _ = p.settle(view(*answer.items()), now)
        shown = {n: t.topic_id for n, t in got.topics.items()}
        assert not set(shown.values()) & mirrored_then_gone
        for n, i in was_mirrored.items():
            if n not in shown and n not in got.unsettled:
                mirrored_then_gone.add(i)
        was_mirrored = {**{n: i for n, i in was_mirrored.items() if n in got.unsettled}, **shown}
