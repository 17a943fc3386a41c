"""The write planner: ownership (I4), ordering, and convergence, over arbitrary trees."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.decide.plan import (
    Create,
    Delete,
    Desired,
    Node,
    SetData,
    apply_to,
    depth,
    parent,
    plan_writes,
)

ME = 0x1234


def test_creates_missing_parents_first():
    desired = {
        "/a/b/c": Desired(b"c"),
        "/a": Desired(b""),
        "/a/b": Desired(b"b"),
    }
    plan = plan_writes(desired, {}, set(), ME)
    assert [op.path for op in plan.ops] == ["/a", "/a/b", "/a/b/c"]
    assert all(isinstance(op, Create) for op in plan.ops)


def test_foreign_node_is_reported_not_written():
    current = {"/brokers/ids/1": Node(b'{"other":1}', 3, 77)}
    desired = {"/brokers/ids/1": Desired(b'{"ours":1}', ephemeral=True)}
    plan = plan_writes(desired, current, set(), ME)
    assert plan.ops == []
    assert [c.path for c in plan.conflicts] == ["/brokers/ids/1"]


def test_nothing_created_under_a_foreign_node():
    current = {"/t": Node(b"x", 0, 0)}
    desired = {"/t": Desired(b"y"), "/t/p": Desired(b"")}
    plan = plan_writes(desired, current, set(), ME)
    assert plan.ops == []
    assert {c.path for c in plan.conflicts} == {"/t", "/t/p"}


def test_identical_foreign_node_is_left_quietly():
    current = {"/cluster/id": Node(b"same", 0, 0)}
    plan = plan_writes({"/cluster/id": Desired(b"same")}, current, set(), ME)
    assert plan.ops == [] and plan.conflicts == []


def test_structural_foreign_node_is_fine():
    current = {"/brokers/ids": Node(b"", 0, 0)}
    desired = {"/brokers/ids": Desired(structural=True), "/brokers/ids/1": Desired(b"1", True)}
    plan = plan_writes(desired, current, set(), ME)
    assert plan.ops == [Create("/brokers/ids/1", b"1", True)]


def test_owned_changed_node_is_set_with_its_version():
    current = {"/x": Node(b"old", 5, 0)}
    plan = plan_writes({"/x": Desired(b"new")}, current, {"/x"}, ME)
    assert plan.ops == [SetData("/x", b"new", 5)]


def test_stale_owned_nodes_deleted_deepest_first_and_foreign_never():
    current = {
        "/t": Node(b"", 1, 0),
        "/t/p": Node(b"", 0, 0),
        "/t/p/0": Node(b"", 2, 0),
        "/foreign": Node(b"", 0, 0),
    }
    plan = plan_writes({}, current, {"/t", "/t/p", "/t/p/0"}, ME)
    assert plan.ops == [Delete("/t/p/0", 2), Delete("/t/p", 0), Delete("/t", 1)]


def test_ephemeral_of_an_earlier_session_is_replaced():
    current = {"/controller": Node(b"c", 0, 999)}
    plan = plan_writes({"/controller": Desired(b"c", ephemeral=True)}, current, {"/controller"}, ME)
    assert plan.ops == [Delete("/controller", 0), Create("/controller", b"c", True)]


def test_own_ephemeral_unchanged_needs_nothing():
    current = {"/controller": Node(b"c", 0, ME)}
    plan = plan_writes({"/controller": Desired(b"c", ephemeral=True)}, current, {"/controller"}, ME)
    assert not plan


# ---- properties --------------------------------------------------------------------

names = st.sampled_from(["a", "b", "c"])
paths = st.lists(names, min_size=1, max_size=3).map(lambda xs: "/" + "/".join(xs))


def closed(ps: set[str]) -> set[str]:
    """A set of paths plus all their ancestors (a tree ZooKeeper could hold)."""
    out = set()
    for p in ps:
        while p != "/":
            out.add(p)
            p = parent(p)
    return out


trees = st.sets(paths, max_size=8).map(closed)
datas = st.sampled_from([b"", b"1", b"2"])


@st.composite
def scenarios(draw):
    cur_paths = draw(trees)
    kids = {p: sum(parent(c) == p for c in cur_paths) for p in cur_paths}
    current = {p: Node(draw(datas), draw(st.integers(0, 3)), 0, kids[p]) for p in cur_paths}
    owned = {p for p in cur_paths if draw(st.booleans())}
    desired = {p: Desired(draw(datas)) for p in draw(trees)}
    return desired, current, owned


def run_ops(current: dict[str, Node], ops) -> dict[str, Node]:
    """Apply ops the way ZooKeeper would, failing on anything it would refuse."""
    tree = dict(current)
    for op in ops:
        if isinstance(op, Create):
            assert op.path not in tree, f"create of existing {op.path}"
            assert parent(op.path) == "/" or parent(op.path) in tree, f"orphan {op.path}"
            apply_to(tree, op, 0, ME)
        elif isinstance(op, SetData):
            assert tree[op.path].version == op.version
            apply_to(tree, op, op.version + 1, ME)
        else:
            assert tree[op.path].version == op.version
            assert not any(parent(p) == op.path for p in tree), f"delete of non-empty {op.path}"
            apply_to(tree, op, 0, ME)
    return tree


@settings(max_examples=400)
@given(scenarios())
def test_plan_is_valid_respects_ownership_and_converges(scenario):
    desired, current, owned = scenario
    plan = plan_writes(desired, current, owned, ME)
    touched = {op.path for op in plan.ops if not isinstance(op, Create)}
    assert touched <= owned, "only owned nodes are ever set or deleted (I4)"
    # executable as ZooKeeper would run it: no orphan creates, no non-empty deletes
    after = run_ops(current, plan.ops)
    conflicted = {c.path for c in plan.conflicts}
    for path, want in desired.items():
        if path in conflicted:
            assert path not in owned
            continue
        assert path in after and after[path].data == want.data
    # and a second plan against the result has nothing left to do
    new_owned = (owned | {op.path for op in plan.ops if isinstance(op, Create)}) - {
        op.path for op in plan.ops if isinstance(op, Delete) and op.path not in desired
    }
    again = plan_writes(desired, after, new_owned, ME)
    assert not again.ops


def test_owned_node_with_foreign_children_is_kept():
    current = {"/g/ids": Node(b"", 0, 0, children=1), "/g/ids/old-consumer": Node(b"x")}
    plan = plan_writes({}, current, {"/g/ids"}, ME)
    assert plan.ops == []


def test_depth_and_parent():
    assert depth("/a/b") == 2 and parent("/a/b") == "/a" and parent("/a") == "/"


def test_adopted_offset_node_is_set_but_never_deleted_or_owned():
    current = {"/consumers/g/offsets/t/0": Node(b"5", 3, 0)}
    desired = {"/consumers/g/offsets/t/0": Desired(b"9", adopt=True)}
    plan = plan_writes(desired, current, set(), ME)
    assert plan.ops == [SetData("/consumers/g/offsets/t/0", b"9", 3)]
    assert plan_writes({}, current, set(), ME).ops == []
