"""Children lists and node data kept true by ZooKeeper watches, so a tick reads only what
changed.

The groups flow needs ``/consumers``, every group's ``/ids`` and the old consumers' offset
nodes on every tick. Reading them all costs one request per node per tick whatever
changed; with a watch on each, a tick asks ZooKeeper again only for the lists and nodes
whose watch fired since (an old consumer joined, left or committed, a group appeared), and
``on_change`` wakes the flow when one fires. Nothing can be missed for long:

- a list is cached only together with its watch, armed by the same read, so a change after
  that read fires it; a list is served only while its watch is still set, so a fired watch
  makes the next read list again (even before kazoo has called it: read-your-writes holds
  for the bridge's own changes, see :meth:`_Watched._armed`);
- a path that does not exist arms no watch when read, so its absence is kept only behind
  an ``exists`` watch set after the read (:meth:`_Watched._watch_absent`): its creation
  fires it, and until then the path is not asked again (a tick asked ``sync-requests``,
  absent unless a ``migrate`` is under way, a round trip each: a tenth of the groups
  flow's time under a commit load);
- when the connection is lost, kazoo drops every watch (it does not set them again on
  reconnect) and calls each with an event of no path: every entry is dropped then, and the
  next read lists again;
- the owner's periodic full reconcile calls :meth:`_Watched.expire`, a safety net
  against a watch lost any other way (a bug here, a server bug): every answer is
  forgotten, a batch per tick.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.protocol.states import EventType, WatchedEvent, ZnodeStat

from bridge.decide.plan import Node
from bridge.zookeeper import answers

#: requests in flight at once, as the reader's window
WINDOW = 512
#: answers forgotten per second after the full reconcile's :meth:`_Watched.expire`
#: (per second, not per tick: under a commit load the flow ticks 30+ times a second, and
#: 500 a tick forgot 30,000 answers in two seconds, each mixed group's offset nodes read
#: again in a burst: old consumers' commits waited 100-400 ms per tick behind it)
EXPIRE_PER_S = 1000
_GONE = object()


class FireCounter:
    """Which watches fired on the paths ``matches`` keeps (and whether every answer was
    forgotten at once): an answer derived from many cached reads (every group's ``/ids``,
    every storage-mode record) is derived again only for the paths that changed, instead
    of asking the cache about each path every tick (at 10,000 groups, during a cold start
    that creates groups and records every tick, that was 18 % of the main thread).

    It counts when kazoo *calls* the watch, a moment after its reader thread took the
    watch off: a derivation made in between is one tick late, and the call then wakes the
    flow for the next tick. A reader that must see its own change at once (a forced sync)
    derives afresh."""

    def __init__(self, matches: Callable[[str], bool]) -> None:
        self.matches = matches
        self.value = 0
        self._lock = threading.Lock()
        self._paths: set[str] = set()
        self._everything = False

    def fired(self, path: str | None) -> None:
        """A watch on ``path`` fired (None: every answer was forgotten)."""
        with self._lock:
            self.value += 1
            if path is None:
                self._everything = True
            else:
                self._paths.add(path)

    def pending(self) -> bool:
        """Whether a watch fired (or everything was forgotten) since the last take."""
        with self._lock:
            return self._everything or bool(self._paths)

    def take(self) -> set[str] | None:
        """The paths fired since the last take; None when every answer was forgotten
        meanwhile (derive everything again). Take it before reading: a watch that fires
        during the read is in the next take."""
        with self._lock:
            paths, everything = self._paths, self._everything
            self._paths, self._everything = set(), False
        return None if everything else paths


class _Watched:
    """What a ZooKeeper watch keeps true: the answer of one read per path, served again only
    while the watch that read armed is still set (see the module's docstring). Subclasses
    say which read (children or data) and which of kazoo's watch tables arms it."""

    #: kazoo's table of this kind of watch (``_child_watchers`` / ``_data_watchers``)
    _table = ""

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
        self._cache: dict[str, Any] = {}
        #: per path, how many times its watch fired; plus one count for every clear():
        #: a read whose watch fired (or that a clear() overtook) before its answer was
        #: handled is returned but not cached, its watch being spent already
        self._fired_count: dict[str, int] = {}
        self._cleared = 0
        #: reads sent to ZooKeeper (not served from the cache), for metrics and tests
        self.listed = 0
        self._counters: list[FireCounter] = []
        #: paths a read found with their watch taken off by kazoo, not called yet: that
        #: call is for an event older than the read made then (see _fired)
        self._taken_off: set[str] = set()
        #: the answers :meth:`expire` queued, forgotten a batch per :meth:`expire_some`
        self._expiring: deque[str] = deque()
        self._expired_at = 0.0  # when expire_some last forgot (or expire queued)
        #: paths read absent whose ``exists`` watch (``_created``) is armed: absent still
        self._absent: set[str] = set()
        #: which changed nodes to read again at once, when their watch fires (see
        #: :meth:`_refresh`); None: none, they are read when next asked
        self.refresh: Callable[[str], bool] | None = None
        #: those reads in flight: path -> (result, the marks when sent)
        self._refreshing: dict[str, tuple[Any, tuple[int, int]]] = {}
        #: ``exists`` watches sent ahead of a read (``watch_ahead``): path -> (result,
        #: the clear count when sent)
        self._ahead: dict[str, tuple[Any, int]] = {}

    def _read(self, paths: Sequence[str], denied: Callable[[str], None] | None) -> dict[str, Any]:
        """Each path's answer (absent paths left out): cached ones, the others read with a
        watch, ``window`` requests in flight."""
        out: dict[str, Any] = {}
        gone: set[str] = set()  # absent, as its armed exists watch says
        if self._ahead:
            self._take_ahead(paths)
        with self._lock:
            for p in paths:
                if p in self._absent:
                    if self._armed_absent(p):
                        gone.add(p)
                    else:  # created: the event came, kazoo has not called _created yet
                        self._absent.discard(p)
                if p not in self._cache:
                    continue
                if self._armed(p):
                    out[p] = self._cache[p]
                else:  # see _fired: the event came; kazoo has not called the watch yet
                    del self._cache[p]
                    self._taken_off.add(p)
        missing = [p for p in dict.fromkeys(paths) if p not in out and p not in gone]
        absent: list[str] = []
        for start in range(0, len(missing), self.window):
            chunk = missing[start : start + self.window]
            with self._lock:  # a read sent at a fire (refresh) is taken, with its marks
                sent = {p: self._refreshing.pop(p) for p in chunk if p in self._refreshing}
                marks = {p: (self._fired_count.get(p, 0), self._cleared) for p in chunk}
                marks.update({p: mark for p, (_, mark) in sent.items()})
            pending = [(p, sent[p][0] if p in sent else self._send(p)) for p in chunk]
            for path, result in pending:
                self.listed += 1
                try:
                    got = answers.answer(result)
                except NoAuthError:
                    if denied is not None:
                        denied(path)
                    continue
                if got is answers.ABSENT:
                    absent.append(path)  # no watch is armed on an absent node by a read
                    continue
                answer = self._answer(got)
                with self._lock:
                    # armed by this very read: a change since fires it, and _fired drops it
                    if (self._fired_count.get(path, 0), self._cleared) == marks[path]:
                        self._cache[path] = answer
                out[path] = answer
        if absent:
            self._watch_absent(absent)
        return out

    def _watch_absent(self, paths: list[str]) -> None:
        """Keep ``paths`` as absent behind an ``exists`` watch each (``_created``): one
        still absent when asked is not read again until that watch fires. One created
        meanwhile is left to the next read (its watch, armed on the node, fires on its
        next change: a wake, and nothing kept)."""
        with self._lock:
            cleared = self._cleared
        pending = [(p, self.zk.exists_async(p, watch=self._created)) for p in paths]
        for path, result in pending:
            try:
                stat = answers.answer(result)
            except NoAuthError:
                continue
            with self._lock:
                # a creation since is caught at the next read (its watch is off the table
                # then: _armed_absent); the counters hear it from _created either way
                if stat is None and self._cleared == cleared:
                    self._absent.add(path)

    def watch_ahead(self, paths: Iterable[str]) -> None:
        """Set an ``exists`` watch on each of ``paths`` not held, without waiting for the
        answers: one found absent is held as absent when next read (as after a read's
        ``_watch_absent``). A cold start's next page's groups, asked before the page
        written now: ZooKeeper answers a session's requests in order, so that page's
        reads do not wait behind these writes (``OwnedTree.write(defer=True)``)."""
        with self._lock:
            cleared = self._cleared
            todo = [
                p
                for p in dict.fromkeys(paths)
                if p not in self._cache and p not in self._absent and p not in self._ahead
            ]
        sent = {p: self.zk.exists_async(p, watch=self._created) for p in todo}
        with self._lock:
            if self._cleared == cleared:
                self._ahead.update({p: (result, cleared) for p, result in sent.items()})

    def _take_ahead(self, paths: Sequence[str]) -> None:
        """The answers ``watch_ahead`` asked for ``paths``: the absent ones held so."""
        with self._lock:
            taken = [(p, self._ahead.pop(p)) for p in paths if p in self._ahead]
        for path, (result, cleared) in taken:
            try:
                stat = answers.answer(result)
            except NoAuthError:
                continue
            with self._lock:  # a creation since: its watch is off the table (_armed_absent)
                if stat is None and self._cleared == cleared:
                    self._absent.add(path)

    def _armed_absent(self, path: str) -> bool:
        """Whether this cache's ``exists`` watch on ``path`` is still set (kazoo keeps it
        with the data watches, and takes it off when the creation's event arrives)."""
        full = (self.zk.chroot or "") + path
        return self._created in self.zk._data_watchers.get(full, ())

    def _created(self, event: WatchedEvent) -> None:
        """An absent path's ``exists`` watch fired: created (or, if it was created before
        the watch was set, changed or deleted). Read again when next asked, and what was
        derived from its absence is derived again."""
        if event.path is None:  # the connection was lost: kazoo dropped every watch
            self.clear()
            if self.on_change is not None:
                self.on_change("")
            return
        with self._lock:  # counted even before _watch_absent kept it: see there
            self._absent.discard(event.path)
            for counter in self._counters:
                if counter.matches(event.path):
                    counter.fired(event.path)
        if self.on_change is not None:
            self.on_change(event.path)

    def _send(self, path: str):
        raise NotImplementedError

    def _answer(self, got: Any) -> Any:
        return got

    def _armed(self, path: str) -> bool:
        """Whether this cache's watch on ``path`` is still set. kazoo takes a fired watch
        off its table in its reader thread, before it hands over the answer of any later
        request, but calls the watch itself later, on its callback thread: so an answer read
        after this session's own change (ZooKeeper sends the watch event before the
        change's answer) is never served stale, whether or not :meth:`_fired` ran yet.
        (kazoo internals: ``_child_watchers`` / ``_data_watchers`` keyed by the path with
        the chroot.)"""
        full = (self.zk.chroot or "") + path
        return self._fired in getattr(self.zk, self._table).get(full, ())

    def held(self, paths: Iterable[str]) -> set[str]:
        """Of ``paths``, the ones whose answer is held (its watch armed): a path that did
        not exist when read, or could not be read, has no watch, and nothing fires when
        it changes (what was derived from it must be read again)."""
        with self._lock:
            return {p for p in paths if p in self._cache or p in self._absent}

    def counter(self, matches: Callable[[str], bool]) -> FireCounter:
        """A count of the watches fired on paths ``matches`` keeps, and of every
        :meth:`clear` (which forgets them all): what was derived from those answers is
        still true while the count is the same (see :class:`FireCounter`)."""
        counter = FireCounter(matches)
        self._counters.append(counter)
        return counter

    def clear(self) -> None:
        """Forget every answer at once: the next read of each asks ZooKeeper (a lost
        connection: kazoo dropped every watch)."""
        with self._lock:
            self._cache.clear()
            self._absent.clear()
            self._refreshing.clear()
            self._ahead.clear()
            self._expiring.clear()
            self._taken_off.clear()
            self._cleared += 1
            for counter in self._counters:
                counter.fired(None)

    def expire(self) -> None:
        """Forget every answer held now, ``EXPIRE_PER_S`` a second (:meth:`expire_some`,
        once a tick): the full reconcile's net for a watch lost any other way (a bug here,
        a server bug). Forgotten at once, the next tick read every list and record again
        (at 10,000 groups about 30,000 reads: seconds, with commits waiting behind it).
        One under way is not started over."""
        with self._lock:
            if not self._expiring:
                self._expiring = deque([*self._cache, *self._absent])
                self._expired_at = time.monotonic()

    def expire_some(self, count: int | None = None) -> None:
        """Forget the next ``count`` answers :meth:`expire` queued (read again when next
        asked for; what was derived from them is derived again: ``FireCounter``); by
        default as many as ``EXPIRE_PER_S`` since the last call that forgot any (at most
        a second's worth)."""
        with self._lock:
            if count is None:
                now = time.monotonic()
                self._expired_at = max(self._expired_at, now - 1.0)  # a second's worth
                count = int((now - self._expired_at) * EXPIRE_PER_S + 1e-9)
                self._expired_at += count / EXPIRE_PER_S  # the rest adds up to the next
            for _ in range(min(count, len(self._expiring))):
                path = self._expiring.popleft()
                was_absent = path in self._absent
                self._absent.discard(path)
                if self._cache.pop(path, _GONE) is not _GONE or was_absent:
                    for counter in self._counters:
                        if counter.matches(path):
                            counter.fired(path)

    def __len__(self) -> int:
        with self._lock:
            return len(self._cache)

    def _fired(self, event: WatchedEvent) -> None:
        if event.path is None:  # the connection was lost: kazoo dropped every watch
            self.clear()
            if self.on_change is not None:
                self.on_change("")
            return
        # kazoo takes a watch off its table when the event arrives and calls it later, on
        # another thread; set again meanwhile, it was armed by a read answered after the
        # event, so that answer shows the change: dropping it made the next read list again
        # for nothing (CI, loaded machine: an old consumer's join listed twice)
        #
        # A read that found the watch taken off before this call (the event had arrived)
        # read again at once: its answer shows the change, so this call must not count as
        # a fire during that read (the answer was not kept, and a third read listed again:
        # 2 in 10 runs of test_watched_children on a loaded machine)
        with self._lock:
            for counter in self._counters:
                if counter.matches(event.path):
                    counter.fired(event.path)
            early = event.path in self._taken_off
            self._taken_off.discard(event.path)
            again = not early and not self._armed(event.path)
            if again:
                self._cache.pop(event.path, None)
                self._fired_count[event.path] = self._fired_count.get(event.path, 0) + 1
            elif not self._armed(event.path):
                self._cache.pop(event.path, None)
        if again and event.type == EventType.CHANGED and self._refresh(event.path):
            return  # on_change is told once the node was read again (``_refresh``)
        if self.on_change is not None:
            self.on_change(event.path)

    def _refresh(self, path: str) -> bool:
        """Read a changed node again now, on kazoo's thread, if ``refresh`` says so (an old
        consumer's offset node: its commit is read by the next tick, which found it read
        already, not a hundred round trips it waited for; the bridge's own nodes are not
        read again: their data is what it wrote). The answer is kept as :meth:`_read`
        keeps one (not after a fire since it was sent); a tick asking meanwhile takes this
        read instead of sending another. ``on_change`` is told when the answer came (or
        failed), not at the fire: the tick it wakes finds the node read, instead of waiting
        for it (a mixed group's commits, 28 % of the old consumers' ticks in bench.fleet).
        Returns whether the node is read again."""
        if self.refresh is None or not self.refresh(path):
            return False
        with self._lock:
            mark = (self._fired_count.get(path, 0), self._cleared)
            result = self._send(path)
            self._refreshing[path] = (result, mark)

        def landed(done: Any) -> None:
            try:
                keep(done)
            finally:  # told in every case: the tick reads what it needs
                if self.on_change is not None:
                    self.on_change(path)

        def keep(done: Any) -> None:
            with self._lock:
                if self._refreshing.get(path, (None,))[0] is not done:
                    return  # taken by a tick's read, which keeps it
                del self._refreshing[path]
            try:
                got = answers.answer(done)
            except Exception:  # noqa: BLE001 - a lost connection, an ACL: read when asked
                return
            if got is answers.ABSENT:
                return
            answer = self._answer(got)
            with self._lock:
                if (self._fired_count.get(path, 0), self._cleared) == mark:
                    self._cache[path] = answer

        result.rawlink(landed)
        return True


class WatchedChildren(_Watched):
    """Sorted children of ZooKeeper paths, listed once and then only after a change."""

    _table = "_child_watchers"

    def children(
        self, paths: Sequence[str], denied: Callable[[str], None] | None = None
    ) -> dict[str, list[str]]:
        """Sorted children of each path (none for an absent one); ``denied`` is told of a
        path this identity may not list."""
        got = self._read(paths, denied)
        return {p: got.get(p, []) for p in paths}

    def _send(self, path: str):
        return self.zk.get_children_async(path, watch=self._fired)

    def _answer(self, got: Any) -> list[str]:
        return sorted(got)


class WatchedData(_Watched):
    """Data and stat of ZooKeeper nodes, read once and then only after the node changed
    (the old consumers' offset nodes: a tick reads only the ones committed since)."""

    _table = "_data_watchers"

    def get(
        self, paths: Sequence[str], denied: Callable[[str], None] | None = None
    ) -> dict[str, tuple[bytes, ZnodeStat]]:
        """``(data, stat)`` of each present path; ``denied`` is told of a path this
        identity may not read."""
        return self._read(paths, denied)

    def nodes(self, paths: Sequence[str]) -> dict[str, Node]:
        """:meth:`get` as the planner's nodes. The count of children is as last read: a
        child added since fires no data watch, so a delete planned on it is refused by
        ZooKeeper (not empty) and the group is read again, as any rejected batch."""
        return {
            p: Node(data or b"", st.version, st.ephemeralOwner, st.numChildren)
            for p, (data, st) in self.get(paths).items()
        }

    def _send(self, path: str):
        return self.zk.get_async(path, watch=self._fired)


def children_data(
    children: WatchedChildren, data: WatchedData, base: str
) -> dict[str, tuple[bytes, ZnodeStat]]:
    """Each child of ``base``, by name, with its data and stat, through both caches: a
    directory of small nodes read on every tick (storage-mode records, sync requests)
    costs a request only for what changed."""
    paths = {f"{base}/{c}": c for c in children.children([base])[base]}
    return {paths[p]: got for p, got in data.get(list(paths)).items()}
