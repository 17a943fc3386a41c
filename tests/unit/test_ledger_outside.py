"""``writer.outside``: the ledger's owned paths less a page of scopes, in one pass, against
the plain definition (a path at or below a scope) applied scope by scope."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bridge.zookeeper.writer import outside

segment = st.sampled_from(["consumers", "g", "g1", "g10", "ids", "owners", "t", "0", "1"])
path = st.lists(segment, min_size=1, max_size=5).map(lambda parts: "/" + "/".join(parts))


def reference(paths: set[str], scopes: list[str]) -> set[str]:
    out = set(paths)
    for scope in scopes:
        prefix = "" if scope == "/" else scope
        out = {p for p in out if not (p + "/").startswith(prefix + "/")}
    return out


@given(st.sets(path, max_size=40), st.lists(path | st.just("/"), max_size=6))
def test_outside_drops_exactly_the_paths_at_or_below_a_scope(paths, scopes) -> None:
    assert outside(paths, scopes) == reference(paths, scopes)


def test_a_sibling_with_a_longer_name_is_kept() -> None:
    assert outside({"/consumers/g1/ids", "/consumers/g10/ids"}, ["/consumers/g1"]) == {
        "/consumers/g10/ids"
    }
