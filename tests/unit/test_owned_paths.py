"""``OwnedPaths``: the ledger's owned paths indexed by group, against a plain set and the
plain definitions (a path at or below a scope; a group's paths) applied path by path."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bridge.flows.group_modes import owned_offset_paths, owned_topic_dirs
from bridge.zookeeper.owned_paths import OwnedPaths
from zkpaths import TopicPartition

segment = st.sampled_from(["consumers", "brokers", "g", "g1", "g10", "ids", "owners", "t", "0"])
path = st.lists(segment, min_size=1, max_size=5).map(lambda parts: "/" + "/".join(parts))
group = st.sampled_from(["g", "g1", "g10", "ids", "consumers"])


def at_or_below(p: str, scope: str) -> bool:
    prefix = "" if scope == "/" else scope.rstrip("/")
    return (p + "/").startswith(prefix + "/")


def reference_outside(paths: set[str], scopes: list[str]) -> set[str]:
    return {p for p in paths if not any(at_or_below(p, s) for s in scopes)}


@given(st.sets(path, max_size=40), st.lists(path | st.just("/"), max_size=6))
def test_drop_forgets_exactly_the_paths_at_or_below_a_scope(paths, scopes) -> None:
    owned = OwnedPaths(paths)
    owned.drop(scopes)
    assert set(owned) == reference_outside(paths, scopes)
    assert set(owned.under("/")) == set(owned)  # the index agrees with the set


@given(st.sets(path, max_size=40), st.lists(path, max_size=20), st.sets(group, max_size=3))
def test_the_index_follows_adds_and_discards(paths, discarded, groups) -> None:
    owned = OwnedPaths(paths)
    plain = set(paths)
    for p in discarded:
        owned.discard(p)
        plain.discard(p)
    assert set(owned) == plain and len(owned) == len(plain)
    assert all(p in owned for p in paths | set(discarded)) == (plain == paths | set(discarded))
    assert {p for p in paths | set(discarded) if p in owned} == plain  # found via its bucket
    in_group = {p for p in plain if p.count("/") >= 2 and p.startswith("/consumers/")}
    assert owned.groups() == {p.split("/")[2] for p in in_group}
    assert owned.of_groups(groups) == {
        p for p in in_group if any(at_or_below(p, f"/consumers/{g}") for g in groups)
    }
    assert owned.sizes() == {
        g: sum(1 for p in in_group if p.split("/")[2] == g) for g in owned.groups()
    }
    for scope in ("/consumers", "/brokers", "/consumers/g", "/consumers/g/ids", "/g"):
        assert owned.under(scope) == {p for p in plain if at_or_below(p, scope)}


def test_a_sibling_with_a_longer_name_is_kept() -> None:
    owned = OwnedPaths({"/consumers/g1/ids", "/consumers/g10/ids"})
    owned.drop(["/consumers/g1"])
    assert set(owned) == {"/consumers/g10/ids"}


@given(st.lists(st.tuples(st.booleans(), path), max_size=30))
def test_groups_version_moves_exactly_when_the_groups_change(steps) -> None:
    """The flow derives per-tick sets from ``groups()`` again only when this moves."""
    owned = OwnedPaths()
    for add, p in steps:
        before, version = set(owned.groups()), owned.groups_version
        owned.add(p) if add else owned.discard(p)
        assert (owned.groups_version != version) == (set(owned.groups()) != before)


def test_the_ledger_root_key_is_a_path_like_any_other() -> None:
    """The ledger keeps the marker of its own root as "" (``Ledger.inner``)."""
    owned = OwnedPaths({"", "/consumers"})
    assert "" in owned and "/consumers" in owned and len(owned) == 2
    owned.discard("")
    assert "" not in owned and set(owned) == {"/consumers"}
    assert 3 not in owned  # type: ignore[operator]


def test_the_topics_of_a_groups_owned_offset_nodes():
    """What ``ConsumerTreeReader`` is told to list with a group's offsets dir: only the
    topics of the asked groups' offset nodes (not their owners, ids or other groups)."""
    owned = [
        "/consumers/g/offsets/t/0",
        "/consumers/g/offsets/t/1",
        "/consumers/g/offsets/u/0",
        "/consumers/g/owners/v/0",
        "/consumers/g/ids/c1",
        "/consumers/h/offsets/w/0",
        "/consumers/g/offsets",
    ]
    assert owned_topic_dirs(["g"], owned) == {"g": {"t", "u"}}
    assert owned_topic_dirs(["g", "h", "x"], owned) == {"g": {"t", "u"}, "h": {"w"}}


def test_a_groups_owned_offset_nodes_by_partition():
    """What ``_told`` takes from the ledger instead of a listing: the group's own offset
    nodes, each by its partition; not its owners, ids, other groups' nodes or a name
    that is no partition (such a node has the group listed and reported as before)."""
    owned = [
        "/consumers/g/offsets/t/0",
        "/consumers/g/offsets/t/12",
        "/consumers/g/offsets/u/0",
        "/consumers/g/offsets/u/07",
        "/consumers/g/owners/t/0",
        "/consumers/g/ids/c1",
        "/consumers/gg/offsets/t/1",
        "/consumers/g/offsets/t",
    ]
    assert owned_offset_paths("g", owned) == {
        TopicPartition("t", 0): "/consumers/g/offsets/t/0",
        TopicPartition("t", 12): "/consumers/g/offsets/t/12",
        TopicPartition("u", 0): "/consumers/g/offsets/u/0",
    }
    assert owned_offset_paths("x", owned) == {}
