"""Children lists kept true by ZooKeeper child watches, so a tick lists only what changed.

The groups flow needs ``/consumers`` and every group's ``/ids`` on every tick. Listing them
all costs one request per group per tick whatever changed; with a watch on each list, a
tick asks ZooKeeper again only for the lists whose watch fired since (an old consumer
joined or left, a group appeared). Nothing can be missed for long:

- a list is cached only together with its watch, armed by the same read, so a change after
  that read fires it; a list is served only while its watch is still set, so a fired watch
  makes the next read list again (even before kazoo has called it: read-your-writes holds
  for the bridge's own changes, see :meth:`WatchedChildren._armed`);
- a path that does not exist is never cached (ZooKeeper arms no child watch on it);
- when the connection is lost, kazoo drops every watch (it does not set them again on
  reconnect) and calls each with an event of no path: every entry is dropped then, and the
  next read lists again;
- the owner's periodic full reconcile calls :meth:`WatchedChildren.clear`, a safety net
  against a watch lost any other way (a bug here, a server bug).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.protocol.states import WatchedEvent

#: requests in flight at once, as the reader's window
WINDOW = 512


class WatchedChildren:
    """Sorted children of ZooKeeper paths, listed once and then only after a change."""

    def __init__(
        self,
        zk: KazooClient,
        on_change: Callable[[str], None] | None = None,
        window: int = WINDOW,
    ) -> None:
        self.zk = zk
        self.on_change = on_change
        self.window = window
        self._lock = threading.Lock()
        self._lists: dict[str, list[str]] = {}
        #: per path, how many times its watch fired; plus one count for every clear():
        #: a read whose watch fired (or that a clear() overtook) before its answer was
        #: handled is returned but not cached, its watch being spent already
        self._fired_count: dict[str, int] = {}
        self._cleared = 0
        #: lists read from ZooKeeper (not served from the cache), for metrics and tests
        self.listed = 0

    def children(
        self, paths: Sequence[str], denied: Callable[[str], None] | None = None
    ) -> dict[str, list[str]]:
        """Sorted children of each path (none for an absent one); ``denied`` is told of a
        path this identity may not list."""
        with self._lock:
            out = {p: self._lists[p] for p in paths if p in self._lists and self._armed(p)}
        missing = [p for p in dict.fromkeys(paths) if p not in out]
        for start in range(0, len(missing), self.window):
            chunk = missing[start : start + self.window]
            with self._lock:
                marks = {p: (self._fired_count.get(p, 0), self._cleared) for p in chunk}
            pending = [(p, self.zk.get_children_async(p, watch=self._fired)) for p in chunk]
            for path, result in pending:
                out[path] = self._settle(path, result, marks[path], denied)
        return {p: out[p] for p in paths}

    def _settle(
        self, path: str, result, mark: tuple[int, int], denied: Callable[[str], None] | None
    ) -> list[str]:
        self.listed += 1
        try:
            names = sorted(result.get())
        except NoNodeError:
            return []
        except NoAuthError:
            if denied is not None:
                denied(path)
            return []
        with self._lock:
            # armed by this very read: a change since fires it, and _fired drops the entry
            if (self._fired_count.get(path, 0), self._cleared) == mark:
                self._lists[path] = names
        return names

    def _armed(self, path: str) -> bool:
        """Whether this cache's watch on ``path`` is still set. kazoo takes a fired watch
        off its table in its reader thread, before it hands over the answer of any later
        request, but calls the watch itself later, on its callback thread: so a list read
        after this session's own change (ZooKeeper sends the watch event before the
        change's answer) is never served stale, whether or not :meth:`_fired` ran yet.
        (kazoo internals: ``_child_watchers`` keyed by the path with the chroot.)"""
        full = (self.zk.chroot or "") + path
        return self._fired in self.zk._child_watchers.get(full, ())

    def clear(self) -> None:
        """Forget every list: the next read of each asks ZooKeeper (the full reconcile)."""
        with self._lock:
            self._lists.clear()
            self._cleared += 1

    def __len__(self) -> int:
        with self._lock:
            return len(self._lists)

    def _fired(self, event: WatchedEvent) -> None:
        if event.path is None:  # the connection was lost: kazoo dropped every watch
            self.clear()
            return
        with self._lock:
            self._lists.pop(event.path, None)
            self._fired_count[event.path] = self._fired_count.get(event.path, 0) + 1
        if self.on_change is not None:
            self.on_change(event.path)
