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
