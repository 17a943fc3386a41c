"""Next-generation (``consumer``-type, KIP-848) groups in flows F2/F3, without a broker:
a ConsumerGroupDescribe answer as the ``GroupView`` the decisions read, and the decision
mirroring owners from current assignments in every state of such a group.

Expected trees are written out by hand as in ``test_decide_groups`` (LEGACY_LAYOUT.md and
the escaping table of ``zkpaths.mirror_ids``).
"""

from __future__ import annotations

import uuid

from bridge.decide.groups import decide_group, settled
from bridge.decide.plan import Desired
from bridge.kafka.consumer_groups import describe_error
from bridge.kafka.groups import _consumer_view
from bridge.kafka.messages import ConsumerGroupDescribeResponse
from bridge.kafka.views import CLASSIC, CONSUMER, GroupView, MemberView

NOW = 1_700_000_000_000
G = ConsumerGroupDescribeResponse.DescribedGroup
M = G.Member
A = M.Assignment
TOPIC_ID = uuid.UUID(int=7)


def assignment(**topics: list[int]):
    return A(
        topic_partitions=[
            A.TopicPartitions(topic_id=TOPIC_ID, topic_name=t, partitions=ps)
            for t, ps in topics.items()
        ]
    )


def described(state: str = "Reconciling", error_code: int = 0) -> G:
    """A group mid-reconciliation: m1 keeps t-0, m2 is still waiting for t-1 (its target),
    which m1 is revoking (so t-1 is in nobody's current assignment)."""
    members = [
        M(
            member_id="m1",
            instance_id=None,
            rack_id=None,
            member_epoch=4,
            client_id="c1",
            client_host="/10.0.0.1",
            subscribed_topic_names=["t"],
            subscribed_topic_regex=None,
            assignment=assignment(t=[0]),
            target_assignment=assignment(t=[0]),
            member_type=1,
        ),
        M(
            member_id="m2",
            instance_id="i2",
            rack_id="r",
            member_epoch=5,
            client_id="c2",
            client_host="/10.0.0.2",
            subscribed_topic_names=["t"],
            subscribed_topic_regex="",
            assignment=assignment(),
            target_assignment=assignment(t=[1]),
            member_type=0,
        ),
    ]
    return G(
        error_code=error_code,
        error_message=None,
        group_id="g",
        group_state=state,
        group_epoch=5,
        assignment_epoch=5,
        assignor_name="range",
        members=members,
        authorized_operations=-(2**31),
    )


def test_a_described_group_becomes_a_group_view() -> None:
    view = _consumer_view("g", described())
    assert (view.group_type, view.state, view.protocol_type, view.protocol) == (
        CONSUMER,
        "Reconciling",
        "consumer",
        "range",
    )
    assert (view.group_epoch, view.assignment_epoch, view.error) == (5, 5, None)
    m1, m2 = view.members
    assert m1 == MemberView(
        "m1",
        "c1",
        "/10.0.0.1",
        ("t",),
        {"t": (0,)},
        None,
        target_assignment={"t": (0,)},
        member_epoch=4,
        topic_regex=None,
        member_type="consumer",
    )
    assert (m2.assignment, m2.target_assignment) == ({}, {"t": (1,)})
    assert (m2.group_instance_id, m2.member_type, m2.topic_regex) == ("i2", "classic", None)


def test_a_group_the_coordinator_does_not_have_is_dead_and_other_errors_are_errors() -> None:
    assert _consumer_view("g", described(error_code=69)).state == "Dead"
    failed = _consumer_view("g", described(error_code=15))  # COORDINATOR_NOT_AVAILABLE
    assert failed.error and "CoordinatorNotAvailable" in failed.error
    assert describe_error(described(error_code=69)) is None


def test_owners_follow_current_assignments_in_every_state_of_a_consumer_group() -> None:
    """t-1 is in m2's target only: it has no owner node until m1 has revoked it."""
    dyn = "g_~~m1"
    static = "g_i2"
    for state in ("Assigning", "Reconciling", "Stable"):
        view = _consumer_view("g", described(state))
        decision = decide_group(view, {}, set(), [], {"t": 2}, NOW)
        assert (decision.waiting, decision.skipped, decision.problems) == (False, None, [])
        owners = {
            p: d for p, d in decision.desired.items() if p.startswith("/consumers/g/owners/t/")
        }
        assert owners == {"/consumers/g/owners/t/0": Desired(f"{dyn}-0".encode(), ephemeral=True)}
        ids = {p for p in decision.desired if p.startswith("/consumers/g/ids/")}
        assert ids == {f"/consumers/g/ids/{dyn}", f"/consumers/g/ids/{static}"}


def test_only_classic_groups_wait_out_a_rebalance() -> None:
    for state, classic, consumer in (
        ("Stable", True, True),
        ("Empty", True, True),
        ("PreparingRebalance", False, True),  # a consumer group has no such state: shown
        ("Reconciling", False, True),
        ("Assigning", False, True),
        ("Dead", False, False),
        ("Unknown", False, False),
    ):
        assert settled(GroupView("g", state, "consumer", None, group_type=CLASSIC)) is classic
        assert settled(GroupView("g", state, "consumer", None, group_type=CONSUMER)) is consumer


def test_a_group_that_changed_type_since_it_was_listed_is_asked_with_the_other_api(
    monkeypatch,
) -> None:
    """ListGroups said one type, the coordinator now has the other: the group is described
    again with the other API instead of reading as Dead (a Dead read would take its mirrored
    members and owners away until the next full read)."""
    from bridge.kafka import groups

    now_consumer, now_classic, gone = "to-consumer", "to-classic", "gone"
    asked: list[tuple[str, tuple[str, ...]]] = []

    def consumer_api(admin, ids):
        asked.append(("ConsumerGroupDescribe", tuple(ids)))
        return {g: described(error_code=0 if g == now_consumer else 69) for g in ids}

    def classic_api(admin, ids):
        asked.append(("DescribeGroups", tuple(ids)))
        answers = {
            now_consumer: {
                "error": "GroupIdNotFoundError: Group to-consumer is not a classic group."
            },
            now_classic: {"error": None, "group_state": "Stable", "protocol_type": "consumer"},
            gone: {"error": "GroupIdNotFoundError: Group gone not found."},
        }
        return {g: {"members": [], **answers[g]} for g in ids}

    monkeypatch.setattr(groups, "describe_consumer_groups", consumer_api)
    monkeypatch.setattr(groups, "_describe_classic", classic_api)
    listed = {now_consumer: CLASSIC, now_classic: CONSUMER, gone: CONSUMER}
    views = groups.describe_groups(None, listed, listed)
    assert (views[now_consumer].group_type, views[now_consumer].state) == (CONSUMER, "Reconciling")
    assert (views[now_classic].group_type, views[now_classic].state) == (CLASSIC, "Stable")
    assert views[gone].state == "Dead" and views[gone].error is None
    # without types every group is asked as classic first, then as what it says it is
    asked.clear()
    assert groups.describe_groups(None, [now_consumer])[now_consumer].group_type == CONSUMER
    assert asked == [
        ("DescribeGroups", (now_consumer,)),
        ("ConsumerGroupDescribe", (now_consumer,)),
    ]
