"""The known tree's nodes, packed so the cyclic collector stops tracking them
(``decide.known``): the same mapping as a dict of ``Node``, at a fraction of a full
collection's walk."""

from __future__ import annotations

import gc

from hypothesis import given
from hypothesis import strategies as st

from bridge.decide.known import KnownNodes
from bridge.decide.plan import Create, Delete, Node, SetData, apply_to

paths = st.sampled_from([f"/consumers/g/offsets/t/{p}" for p in range(4)] + ["/consumers/g"])
nodes = st.builds(
    Node,
    st.binary(max_size=4),
    st.integers(0, 3),
    st.sampled_from([0, 0, 7]),
    st.integers(0, 2),
)
ops = st.one_of(
    st.tuples(st.just("set"), paths, nodes),
    st.tuples(st.just("del"), paths, st.none()),
    st.tuples(st.just("pop"), paths, st.none()),
    st.tuples(st.just("update"), st.dictionaries(paths, nodes, max_size=3), st.none()),
)


@given(st.dictionaries(paths, nodes, max_size=3), st.lists(ops, max_size=12))
def test_behaves_as_a_dict_of_nodes(start, steps):
    """Against a plain dict of Node: every read, write and removal answers the same."""
    known, reference = KnownNodes(start), dict(start)
    for kind, key, node in steps:
        if kind == "set":
            known[key] = reference[key] = node
        elif kind == "del" and key in reference:
            del known[key]
            del reference[key]
        elif kind == "pop":
            assert known.pop(key, None) == reference.pop(key, None)
        elif kind == "update":
            known.update(key)
            reference.update(key)
        assert dict(known.items()) == reference
        assert len(known) == len(reference) and set(known) == set(reference)
    for p in ["/consumers/g", "/nowhere"]:
        assert (p in known) is (p in reference)
        assert known.get(p) == reference.get(p)


def test_apply_to_updates_it_as_a_dict():
    """The writer's bookkeeping after each op, through the mapping."""
    known, reference = KnownNodes(), {}
    for op, version in [
        (Create("/consumers/g", b"", False), 0),
        (Create("/consumers/g/offsets", b"", False), 0),
        (SetData("/consumers/g/offsets", b"5", 0), 1),
        (Create("/consumers/g/ids", b"", False), 0),
        (Delete("/consumers/g/ids", 0), 0),
    ]:
        apply_to(known, op, version, 99)
        apply_to(reference, op, version, 99)
        assert dict(known.items()) == reference


def test_its_nodes_are_not_walked_by_a_full_collection():
    """After a collection the packed nodes are untracked; a Node object is tracked (the
    reason for packing: a million of them made each full collection 1-2.5 s)."""
    known = KnownNodes({f"/c/g/offsets/t/{p}": Node(b"%d" % p, p) for p in range(1000)})
    known["/c/g/ids/m"] = Node(b"{}", 1, 42, 0)
    gc.collect()
    assert not any(gc.is_tracked(packed) for packed in known._nodes.values())
    assert gc.is_tracked(Node(b"1", 1))  # the negative control
    assert known["/c/g/ids/m"] == Node(b"{}", 1, 42, 0)
    assert known["/c/g/offsets/t/7"] == Node(b"7", 7)


tree = st.sampled_from(["/c", "/c/g", "/c/g/o", "/c/g/o/0", "/c/g/o/1", "/c/g/i", "/c/g/i/m"])
zk_ops = st.one_of(
    st.builds(Create, tree, st.binary(max_size=2), st.booleans()),
    st.builds(SetData, tree, st.binary(max_size=2), st.integers(0, 3)),
    st.builds(Delete, tree, st.integers(0, 3)),
)


@given(
    st.dictionaries(tree, nodes, max_size=7),
    st.lists(st.tuples(zk_ops, st.integers(0, 5)), max_size=16),
)
def test_a_batch_applied_at_once_is_apply_to_op_by_op(start, batch):
    """``KnownNodes.apply`` (child counts written once per batch) against ``apply_to``
    per op on a plain dict of Node, the definition: the same tree after any batch of
    creates, sets and deletes, parents made and removed within it included."""
    reference = dict(start)
    done = []
    for op, version in batch:
        if isinstance(op, SetData) and op.path not in reference:
            continue  # a set of a node the tree does not know: not a batch that succeeded
        apply_to(reference, op, version, 7)
        done.append((op, version))
    known = KnownNodes(start)
    known.apply(done, 7)
    assert dict(known.items()) == reference
