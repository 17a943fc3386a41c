"""The negative control of the watched caches' absent paths, shared by their tests."""

from __future__ import annotations

from bridge.zookeeper.watched import WatchedChildren


class Blind(WatchedChildren):
    """Lists kept as they are, but an absent path kept absent without an ``exists``
    watch: its creation is never heard of."""

    def _watch_absent(self, paths) -> None:
        self._absent.update(paths)

    def _armed_absent(self, path: str) -> bool:
        return True
