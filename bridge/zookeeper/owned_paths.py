"""The set of legacy paths the bridge owns, indexed by group. Pure.

At fleet scale the ledger holds a million paths (every offset node of every group), while a
tick touches the few groups whose records or watches say they changed. A plain set made each
tick pay for the whole tree: every "the owned nodes of these groups" was a pass over all of
them (py-spy at 200 groups x 50 offsets: 40 % of the tick's CPU in such passes). Here each
path sits in one bucket, its group's (``/consumers/<g>``) or, outside ``/consumers/<g>``,
its top-level node's (``/consumers``, ``/brokers``), so those questions cost what the groups
asked about hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableSet
from collections.abc import Set as AbstractSet

CONSUMERS = "/consumers"


def bucket(path: str) -> str:
    """``/consumers/<g>`` for a group's paths, else the path's top-level node."""
    parts = path.split("/", 3)
    if len(parts) > 2 and parts[1] == "consumers":
        return f"{CONSUMERS}/{parts[2]}"
    return "/" + parts[1] if len(parts) > 1 else path


class OwnedPaths(MutableSet[str]):
    """A set of paths that also answers by group and by scope without a full pass. The
    buckets are the only copy (no flat set beside them: at a million paths that was 40 MB
    of the bridge's peak), so a lookup finds its bucket first."""

    def __init__(self, paths: Iterable[str] = ()) -> None:
        self._buckets: dict[str, set[str]] = {}
        self._len = 0
        #: the groups with a bucket, kept as buckets come and go (asked every tick)
        self._groups: set[str] = set()
        #: bumped whenever a group gains its first path or loses its last one
        self.groups_version = 0
        for p in paths:
            self.add(p)

    def __contains__(self, path: object) -> bool:
        if not isinstance(path, str):
            return False
        paths = self._buckets.get(bucket(path))
        return paths is not None and path in paths

    def __iter__(self) -> Iterator[str]:
        for paths in list(self._buckets.values()):
            yield from list(paths)

    def __len__(self) -> int:
        return self._len

    def add(self, path: str) -> None:
        key = bucket(path)
        paths = self._buckets.get(key)
        if paths is None:
            paths = self._buckets[key] = set()
            self._group_changed(key, True)
        if path not in paths:
            paths.add(path)
            self._len += 1

    def discard(self, path: str) -> None:
        key = bucket(path)
        paths = self._buckets.get(key)
        if paths is None or path not in paths:
            return
        paths.discard(path)
        self._len -= 1
        if not paths:
            del self._buckets[key]
            self._group_changed(key, False)

    def _group_changed(self, key: str, present: bool) -> None:
        if _below(key, CONSUMERS):
            group = key[len(CONSUMERS) + 1 :]
            if present:
                self._groups.add(group)
            else:
                self._groups.discard(group)
            self.groups_version += 1

    def groups(self) -> AbstractSet[str]:
        """The groups with at least one owned path below ``/consumers/<g>`` (the live set:
        copy it to keep it)."""
        return self._groups

    def sizes(self) -> dict[str, int]:
        """Each group's count of owned paths (the pages of a background verification)."""
        start = len(CONSUMERS) + 1
        return {k[start:]: len(v) for k, v in self._buckets.items() if _below(k, CONSUMERS)}

    def of_groups(self, groups: Iterable[str]) -> set[str]:
        """The owned paths at or below ``/consumers/<g>`` for each of ``groups``."""
        out: set[str] = set()
        for g in groups:
            out |= self._buckets.get(f"{CONSUMERS}/{g}", set())
        return out

    def under(self, scope: str) -> set[str]:
        """The owned paths at or below ``scope`` ("/" is every path)."""
        if scope == "/":
            return set().union(*self._buckets.values())
        scope = scope.rstrip("/")
        if scope == CONSUMERS:  # its own bucket and every group's
            out = set(self._buckets.get(CONSUMERS, ()))
            for key, paths in self._buckets.items():
                if _below(key, CONSUMERS):
                    out |= paths
            return out
        key = bucket(scope)  # the scope's bucket: the scope itself or an ancestor of it
        paths = self._buckets.get(key, set())
        if key == scope:
            return set(paths)
        return {p for p in paths if p == scope or _below(p, scope)}

    def drop(self, scopes: Iterable[str]) -> None:
        """Forget the paths at or below each of ``scopes`` ("/" is every path): a page of
        groups costs what those groups hold."""
        for scope in scopes:
            for p in self.under(scope):
                self.discard(p)


def _below(path: str, scope: str) -> bool:
    return path.startswith(scope + "/")
