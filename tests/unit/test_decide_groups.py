"""Flows F2/F3's pure decision (``bridge.decide.groups``): a Kafka group as old consumers.

Expected trees are written out by hand from docs/LEGACY_LAYOUT.md (``/consumers/<g>/ids/<id>``
ephemeral registration JSON, ``owners/<t>/<p>`` ephemeral thread id) and the escaping table
of ``zkpaths.mirror_ids``, not recomputed with the code under test. Offsets are returned as
data: which become nodes is the storage mode's decision (``decide.migration``).
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

import zkpaths
from bridge.decide.groups import (
    OnGroupDeleted,
    decide_deleted_group,
    decide_group,
    frozen,
    keep_offsets,
    legacy_members,
    registration_data,
)
from bridge.decide.plan import Desired, Node
from bridge.kafka.groups import GroupView, MemberView
from zkpaths import TopicPartition as TP
from zkpaths.mirror_ids import mirrored_thread_id

NOW = 1_700_000_000_000
S = Desired(structural=True)


def member(
    member_id: str,
    topics: tuple[str, ...] | None = ("t",),
    assignment: dict[str, tuple[int, ...]] | None = None,
    instance: str | None = None,
) -> MemberView:
    return MemberView(member_id, "client", "/10.0.0.1", topics, assignment or {}, instance)


def group(*members: MemberView, offsets=None, state="Stable", **kw) -> GroupView:
    return GroupView("g", state, "consumer", "range", members, offsets or {}, **kw)


def registration(topics: dict[str, int], ms: int = NOW) -> bytes:
    """The 0.10 consumer's compact registration, as LEGACY_LAYOUT.md gives it."""
    return (
        b'{"version":1,"subscription":'
        + json.dumps(topics, separators=(",", ":")).encode()
        + b',"pattern":"static","timestamp":"'
        + str(ms).encode()
        + b'"}'
    )


def test_a_stable_group_is_the_layout_old_consumers_would_have_written() -> None:
    view = group(
        member("consumer-1-ab", ("t", "u"), {"t": (0, 1), "u": (0,)}),
        member("m2", ("t",), {"t": (2,)}, instance="inst-a"),
        offsets={TP("t", 0): 5, TP("t", 2): 0, TP("u", 0): 12},
    )
    decision = decide_group(view, {}, set(), [], {"t": 3, "u": 1}, NOW)
    assert (decision.skipped, decision.waiting, decision.problems) == (None, False, [])
    dyn = "g_~~consumer.-1.-ab"  # '-' is escaped as '.-'; dynamic members after '_~~'
    static = "g_inst.-a"  # static members: the escaped group.instance.id
    assert decision.desired == {
        "/consumers": S,
        "/consumers/g": S,
        "/consumers/g/ids": S,
        "/consumers/g/owners": S,
        "/consumers/g/offsets": S,
        f"/consumers/g/ids/{dyn}": Desired(registration({"t": 1, "u": 1}), ephemeral=True),
        f"/consumers/g/ids/{static}": Desired(registration({"t": 1}), ephemeral=True),
        "/consumers/g/owners/t": S,
        "/consumers/g/owners/u": S,
        "/consumers/g/owners/t/0": Desired(f"{dyn}-0".encode(), ephemeral=True),
        "/consumers/g/owners/t/1": Desired(f"{dyn}-0".encode(), ephemeral=True),
        "/consumers/g/owners/u/0": Desired(f"{dyn}-0".encode(), ephemeral=True),
        "/consumers/g/owners/t/2": Desired(f"{static}-0".encode(), ephemeral=True),
        "/consumers/g/offsets/t": S,
        "/consumers/g/offsets/u": S,
    }
    # offsets are data: the storage mode decides which become nodes (decide.migration)
    assert decision.offsets == {("t", 0): 5, ("t", 2): 0, ("u", 0): 12}


def test_an_idle_group_keeps_owners_of_topics_it_has_offsets_for() -> None:
    decision = decide_group(
        group(state="Empty", offsets={TP("t", 1): 7}), {}, set(), [], {"t": 2}, NOW
    )
    assert decision.desired["/consumers/g/owners/t"] == S
    assert decision.offsets == {("t", 1): 7}
    assert not [p for p in decision.desired if p.startswith("/consumers/g/ids/")]
    assert not [p for p in decision.desired if p.count("/") == 5 and "/owners/" in p]


def test_registration_keeps_its_timestamp_while_the_subscription_is_unchanged() -> None:
    old = Node(registration({"t": 1}, ms=42), 3, 99)
    assert registration_data(("t",), old, NOW) == registration({"t": 1}, ms=42)
    assert registration_data(("t", "u"), old, NOW) == registration({"t": 1, "u": 1})
    assert registration_data(("t",), Node(b"{broken"), NOW) == registration({"t": 1})
    assert registration_data(("u", "t"), None, NOW) == registration({"t": 1, "u": 1})


def test_what_cannot_be_mirrored_is_reported_and_the_rest_is_written() -> None:
    view = group(
        member("a", None),  # subscription metadata undecodable
        MemberView("b", "c", "h", ("t",), None),  # assignment undecodable
        member("c", ("t", "gone"), {"t": (0, 9), "gone": (0,)}),
        member("d", ("t",), {"t": (0, 1)}),
        offsets={TP("t", 1): 3, TP("gone", 0): 8},
    )
    decision = decide_group(view, {}, set(), [], {"t": 2}, NOW)
    assert decision.problems == [
        "member a: subscription metadata undecodable",
        "member b: assignment undecodable",
        "member c: t-9 does not exist",
        "member c: topic gone no longer exists",
        "t-0 assigned to two members",
        "offset for deleted topic gone not mirrored",
    ]
    d = decision.desired
    assert "/consumers/g/ids/g_~~a" not in d
    assert d["/consumers/g/ids/g_~~b"].ephemeral  # registered, owns nothing
    assert d["/consumers/g/owners/t/0"].data == b"g_~~c-0"  # the first claim stands
    assert d["/consumers/g/owners/t/1"].data == b"g_~~d-0"
    assert decision.offsets == {("t", 1): 3}


def _owned_tree() -> tuple[dict[str, Node], set[str]]:
    """A previously mirrored group, plus one foreign node the bridge does not own."""
    current = {
        "/consumers/g": Node(b""),
        "/consumers/g/ids": Node(b""),
        "/consumers/g/ids/g_~~m": Node(registration({"t": 1}), 0, 77),
        "/consumers/g/owners": Node(b""),
        "/consumers/g/owners/t": Node(b""),
        "/consumers/g/owners/t/0": Node(b"g_~~m-0", 0, 77),
        "/consumers/g/owners/u": Node(b""),
        "/consumers/g/offsets": Node(b""),
        "/consumers/g/offsets/t": Node(b""),
        "/consumers/g/offsets/t/0": Node(b"4", 2),
        "/consumers/g/offsets/t/1": Node(b"6", 0),  # an old consumer's
    }
    return current, set(current) - {"/consumers/g/offsets/t/1"}


def test_groups_that_must_not_be_written_are_frozen_as_they_are() -> None:
    current, owned = _owned_tree()
    expected = {p: Desired(current[p].data, bool(current[p].ephemeral_owner)) for p in owned}
    assert frozen("g", current, owned) == expected
    for view in (
        group(error="coordinator not available"),
        group(state="PreparingRebalance"),
        GroupView("g", "Stable", "connect", "sessioned"),
    ):
        decision = decide_group(view, current, owned, [], {"t": 2}, NOW)
        assert decision.desired == expected, view
    assert decide_group(group(state="CompletingRebalance"), current, owned, [], {}, NOW).waiting
    assert "protocol type 'connect'" in str(
        decide_group(GroupView("g", "Stable", "connect", None), current, owned, [], {}, NOW).skipped
    )


def test_with_old_consumers_registered_members_and_owners_stand_aside() -> None:
    current, owned = _owned_tree()
    decision = decide_group(group(member("m")), current, owned, ["g_host-1-abcd"], {"t": 2}, NOW)
    assert "old ZooKeeper consumers are registered (g_host-1-abcd)" in str(decision.skipped)
    assert decision.desired == {
        "/consumers/g": Desired(b""),
        "/consumers/g/offsets": Desired(b""),
        "/consumers/g/offsets/t": Desired(b""),
        "/consumers/g/offsets/t/0": Desired(b"4"),
        "/consumers/g/owners": S,
        "/consumers/g/owners/t": S,  # t keeps offsets; u has none, so owners/u goes
    }


def test_a_deleted_group_follows_the_policy() -> None:
    current, owned = _owned_tree()
    assert decide_deleted_group("g", current, owned, OnGroupDeleted.DELETE) == {}
    kept = decide_deleted_group("g", current, owned, OnGroupDeleted.KEEP_OFFSETS)
    assert kept == keep_offsets("g", current, owned)
    assert "/consumers/g/offsets/t/0" in kept and "/consumers/g/owners/t/0" not in kept
    assert "/consumers/g/offsets/t/1" not in kept  # not the bridge's: never desired


def test_a_group_id_that_cannot_be_a_znode_name_is_skipped() -> None:
    view = GroupView("a/b", "Stable", "consumer", "range", (member("m", ("t",), {"t": (0,)}),))
    decision = decide_group(view, {}, set(), [], {"t": 1}, NOW)
    assert decision.desired == {} and "cannot be a znode name" in str(decision.skipped)


def test_legacy_members_are_the_ids_the_bridge_did_not_write() -> None:
    owned = {"/consumers/g/ids/g_~~m"}
    ids = ["g_~~m", "g_host-1-abcd", "g_other"]
    assert legacy_members("g", ids, owned) == ["g_host-1-abcd", "g_other"]


# -- properties -------------------------------------------------------------------------------

_names = st.text("abcXYZ019-._!~ ", min_size=1, max_size=8)


@st.composite
def _groups(draw) -> tuple[GroupView, dict[str, int]]:
    partitions = draw(st.dictionaries(st.sampled_from("tuv"), st.integers(1, 4), min_size=1))
    ids = draw(st.lists(_names, min_size=0, max_size=5, unique=True))
    free = [(t, p) for t, n in partitions.items() for p in range(n)]
    free = draw(st.permutations(free))
    members = []
    for i, mid in enumerate(ids):
        mine = free[i :: len(ids)]
        assignment: dict[str, tuple[int, ...]] = {}
        for t, p in mine:
            assignment[t] = (*assignment.get(t, ()), p)
        static = f"i{mid}" if draw(st.booleans()) else None  # instance ids are unique
        members.append(member(mid, tuple(partitions), assignment, static))
    offsets = draw(
        st.dictionaries(
            st.sampled_from(free).map(lambda tp: TP(*tp)),
            st.integers(0, 2**63 - 1),
            max_size=len(free),
        )
    )
    return group(*members, offsets=offsets), partitions


@settings(max_examples=200, deadline=None)
@given(_groups())
def test_every_partition_has_its_one_owner_and_every_offset_its_node(case) -> None:
    view, partitions = case
    decision = decide_group(view, {}, set(), [], partitions, NOW)
    d = decision.desired
    assert decision.problems == []
    owners = {p: w.data.decode() for p, w in d.items() if p.count("/") == 5 and "/owners/" in p}
    expected = {
        f"/consumers/g/owners/{t}/{p}": mirrored_thread_id("g", m.member_id, m.group_instance_id)
        for m in view.members
        for t, ps in (m.assignment or {}).items()
        for p in ps
    }
    assert owners == expected
    assert decision.offsets == view.offsets
    for t, _p in view.offsets:  # where the mode writes them, the parents are desired
        assert {f"/consumers/g/offsets/{t}", f"/consumers/g/owners/{t}"} <= set(d)
    for path, want in d.items():
        parsed = zkpaths.parse_path(path)  # every node is in the legacy layout
        assert want.ephemeral == isinstance(parsed, zkpaths.OwnerPath | zkpaths.ConsumerIdPath)
        if want.ephemeral:
            assert zkpaths.parse_path(path.rsplit("/", 1)[0]).path in d  # parent desired too
    # every registration is a single-stream consumer whose one thread owns what it owns
    for path, want in d.items():
        if "/ids/" in path:
            reg = zkpaths.decode_consumer_registration(want.data)
            assert reg.subscription == dict.fromkeys(sorted(partitions), 1)
