"""Which share each write belongs to (``bridge.decide.shares``) and which epochs a batch
checks (``ShareFence.epochs_for``); the share of a group is ``coordinator_partition``, which
``test_zkpaths_javahash`` compares with the JVM's own answers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge.decide.shares import REGISTRY_SHARE, group_of_path, share_of_group, share_of_path
from bridge.zookeeper.fence import Epoch, ShareFence, ShareMoved

ROOT = "/kafka-zk-bridge"
N = 50
groups = st.text(st.characters(blacklist_characters="/", blacklist_categories=("Cs",)), min_size=1)


@given(groups)
def test_every_node_of_a_group_is_in_its_share(g: str) -> None:
    share = share_of_group(g, N)
    for path in (
        f"/consumers/{g}",
        f"/consumers/{g}/offsets/t/0",
        f"/consumers/{g}/ids/{g}_~~m",
        f"{ROOT}/owned/consumers/{g}/owners/t/3",  # the ledger's marker
        f"{ROOT}/groups/{g}",
        f"{ROOT}/sync-requests/{g}",
        f"{ROOT}/sync-results/{g}",
    ):
        assert group_of_path(path, ROOT) == g, path
        assert share_of_path(path, ROOT, N) == share, path


def test_shared_parents_and_single_writer_nodes() -> None:
    for shared in (
        "/consumers",
        ROOT,
        f"{ROOT}/owned",
        f"{ROOT}/owned/consumers",
        f"{ROOT}/groups",
    ):
        assert share_of_path(shared, ROOT, N) is None, shared
    for single in ("/brokers/ids/1", "/brokers/topics/t", "/cluster/id", f"{ROOT}/acl"):
        assert share_of_path(single, ROOT, N) == REGISTRY_SHARE, single


def _fence(held: set[int]) -> ShareFence:
    fence = ShareFence(None, ROOT, "me", N)  # type: ignore[arg-type] - no ZooKeeper asked
    fence.epochs = {s: Epoch(f"{ROOT}/shares/{s}", 1, 1, "me") for s in held}
    return fence


def _group_in(share: int) -> str:
    return next(f"g{i}" for i in range(10_000) if share_of_group(f"g{i}", N) == share)


def test_a_batch_checks_the_epochs_of_its_shares_and_refuses_one_not_held() -> None:
    fence = _fence({0, 3, 7})
    g3, g7, g9 = _group_in(3), _group_in(7), _group_in(9)
    checked = fence.epochs_for([f"/consumers/{g3}/offsets/t/0", f"{ROOT}/groups/{g7}"])
    assert [e.path for e in checked] == [f"{ROOT}/shares/3", f"{ROOT}/shares/7"]
    assert [e.path for e in fence.epochs_for(["/consumers"])] == [
        f"{ROOT}/shares/{s}" for s in (0, 3, 7)
    ]  # a shared parent alone: every held epoch
    with pytest.raises(ShareMoved):
        fence.epochs_for([f"/consumers/{g3}", f"/consumers/{g9}"])
    assert fence.holds_group(g3) and not fence.holds_group(g9)
    with pytest.raises(ShareMoved):
        _fence(set()).epochs_for(["/consumers"])
    assert not ShareFence(None, ROOT, "me", 0).holds_group(g3)  # type: ignore[arg-type]
