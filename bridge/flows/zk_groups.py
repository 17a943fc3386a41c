"""Which groups ZooKeeper holds, and which have old consumers registered, for every tick:
derived again only when a watch says a listing changed.

Each tick the groups flow needs the groups under ``/consumers`` (passing its filter) and
the ones with real old consumers under their ``/ids`` (they are reconciled every tick).
Asking the watched cache about every group's ``/ids`` and filtering every group again cost
about 15 % of the main thread at 10,000 groups, though neither changes unless ``/consumers``
or an ``/ids`` list does, and each such change fires a watch: only what fired is read
again. A tick that must see its own changes at once (a forced sync) derives them afresh; a
group reconciled in a tick has its ``/ids`` read through the cache as before
(``ConsumerTreeReader.consumer_ids``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from collections.abc import Set as AbstractSet

import zkpaths
from bridge.decide.groups import legacy_members
from bridge.zookeeper.reader import ConsumerTreeReader
from bridge.zookeeper.watched import WatchedChildren

#: during the term's first pass, seconds at least between two listings of ``/consumers``
COLD_LIST_EVERY_S = 1.0


def _lists_who(path: str) -> bool:
    """``/consumers`` and every ``/consumers/<g>/ids``: the lists that say who is there."""
    return path == zkpaths.CONSUMERS or (
        path.startswith(zkpaths.CONSUMERS + "/") and path.endswith("/ids")
    )


def _group_of(ids_path: str) -> str | None:
    """``g`` of ``/consumers/<g>/ids``; None for ``/consumers`` itself."""
    if ids_path == zkpaths.CONSUMERS:
        return None
    return ids_path[len(zkpaths.CONSUMERS) + 1 : -len("/ids")]


class ZkGroups:
    """The groups under ``/consumers`` that ``wanted`` keeps, and the ones of them with old
    consumers registered, each derived again only for what changed."""

    def __init__(
        self,
        reader: ConsumerTreeReader,
        watched: WatchedChildren,
        wanted: Callable[[str], bool],
    ) -> None:
        self.reader = reader
        self.filter = wanted
        self.watched = watched
        self._fired = watched.counter(_lists_who)
        #: groups whose /ids holds no watch (absent when read): read again every tick
        self._unwatched: list[str] = []
        #: bumped when the filter answers otherwise (the shares held changed)
        self.generation = 0
        self._listed: list[str] | None = None
        self._listed_at = -1
        self._changed_at = -float("inf")  # when the listing last changed (monotonic)
        self.groups: list[str] = []
        self.group_set: frozenset[str] = frozenset()
        #: the groups ``legacy`` was derived for, and the filter's generation then
        self._derived: frozenset[str] | None = None
        self._derived_at = -1
        self.legacy: set[str] = set()

    def refilter(self) -> None:
        self.generation += 1

    def listed(self, cold: bool = False) -> tuple[list[str], frozenset[str]]:
        """The groups under ``/consumers`` that the filter keeps (the listing comes from
        the watched cache: the same list while ``/consumers`` did not change).

        ``cold`` (the term's first pass): a listing that changed less than
        ``COLD_LIST_EVERY_S`` ago is served again without asking. A cold start creates
        groups under ``/consumers`` in every tick, and listing 10,000 children again
        (and what is derived from them) each tick was a tenth of its main thread. Nothing is
        missed: the next listing holds every group created meanwhile."""
        now = time.monotonic()
        if cold and now - self._changed_at < COLD_LIST_EVERY_S:
            if self._listed is not None and self._listed_at == self.generation:
                return self.groups, self.group_set
        listed = self.reader.groups()
        if listed is not self._listed or self._listed_at != self.generation:
            self.groups = [g for g in listed if self.filter(g)]
            self.group_set = frozenset(self.groups)
            self._listed, self._listed_at = listed, self.generation
            self._changed_at = now
        return self.groups, self.group_set

    def derives(self) -> bool:
        """Whether :meth:`with_old_consumers` reads some group's ``/ids`` again now (a group
        listed since, a fired or unwatched ``/ids``): what it derives then is kept until
        that ``/ids`` changes, so it must be derived from every write landed
        (``OwnedTree.land``: a member the bridge wrote, taken for an old consumer)."""
        return (
            self._derived is None
            or self._derived_at != self.generation
            or self.group_set is not self._derived
            or bool(self._unwatched)
            or self._fired.pending()
        )

    def with_old_consumers(self, owned: AbstractSet[str], fresh: bool = False) -> set[str]:
        """Of :meth:`listed`, the groups with consumer ids under ``/ids`` that the bridge did
        not write (``owned``): real old consumers. Read again: the groups listed since, the
        ones whose ``/ids`` fired, and those whose ``/ids`` holds no watch; everything
        after a lost connection, a change of filter, or when ``fresh``."""
        fired = self._fired.take()  # before the reads: a watch firing during them counts
        if fresh or fired is None or self._derived is None or self._derived_at != self.generation:
            todo = self.groups
            self.legacy = set()
        else:
            again = set(self._unwatched) | {g for g in map(_group_of, fired) if g is not None}
            if self.group_set is not self._derived:
                again |= self.group_set - self._derived
                self.legacy &= self.group_set
            todo = sorted(again & self.group_set)
        self._derived, self._derived_at = self.group_set, self.generation
        for g, ids in (self.reader.consumer_ids(todo) if todo else {}).items():
            if legacy_members(g, ids, owned):
                self.legacy.add(g)
            else:
                self.legacy.discard(g)
        self._unwatched = self._without_watch(todo)
        return self.legacy

    def _without_watch(self, groups: list[str]) -> list[str]:
        paths = {g: zkpaths.consumer_ids_path(g) for g in groups}
        held = self.watched.held(paths.values())
        return [g for g, p in paths.items() if p not in held]
