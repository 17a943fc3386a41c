"""The benches' ZooKeeper helpers against the real server: at a million nodes they decide
whether a run finishes (a tree deleted node by node took a quarter of an hour)."""

from __future__ import annotations

import threading
import time

from bench.offsets_zk import await_present, delete_tree, present


def test_a_tree_is_deleted_whole_with_or_without_its_leaves_named(zk):
    for root, named in (("/a", False), ("/b", True)):
        leaves = {f"{root}/g{g}/offsets/t/{p}" for g in range(3) for p in range(1200)}
        for g in range(3):
            zk.ensure_path(f"{root}/g{g}/offsets/t")
        for path in sorted(leaves):
            zk.create_async(path, b"1")
        zk.create(f"{root}/g0/ids", ephemeral=True)
        assert zk.exists(f"{root}/g2/offsets/t/1199")
        # every node: 3,600 leaves, 3 x 3 directories and their parents, the ephemeral
        assert delete_tree(zk, root, leaves if named else frozenset()) == 3600 + 9 + 1 + 1
        assert zk.exists(root) is None


def test_present_lists_parents_instead_of_reading_each_node(zk):
    zk.ensure_path("/p/a")
    zk.create("/p/a/1")
    zk.create("/p/a/2")
    asked = ["/p/a/1", "/p/a/3", "/p/b/1", "/p/a/2"]
    assert sorted(present(zk, asked)) == ["/p/a/1", "/p/a/2"]


def test_await_present_returns_once_every_path_exists_and_not_before(zk):
    """The cold start's light observer: true when the last path appears (created by
    another thread a moment later), false at its deadline while one is still missing."""
    zk.ensure_path("/w/g0")
    paths = [f"/w/g{g}/{p}" for g in range(3) for p in range(5)]
    missing = paths[-1]

    def create_later() -> None:
        time.sleep(0.3)
        for p in paths[:-1]:
            zk.create(p, makepath=True)

    maker = threading.Thread(target=create_later)
    maker.start()
    assert not await_present(zk, paths, timeout=1.0)  # control: one never created
    maker.join()
    assert zk.exists(paths[0]) and not zk.exists(missing)
    threading.Timer(0.3, zk.create, args=(missing,)).start()
    t0 = time.monotonic()
    assert await_present(zk, paths, timeout=10.0)
    assert zk.exists(missing) and time.monotonic() - t0 < 10.0
