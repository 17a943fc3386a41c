"""bench.offsets' ZooKeeper side: when each committed offset became visible (watches,
znode versions and mtimes), the drains that wait for the last values, and the scoring of a
phase's commits against what was seen."""

from __future__ import annotations

import bisect
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import partial
from itertools import accumulate
from typing import TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.interfaces import IAsyncResult
from kazoo.protocol.serialization import Watch
from kazoo.protocol.states import EventType, WatchedEvent

from bench.offsets_load import Commit

now = time.perf_counter
#: requests one of the bench's reads keeps in flight at most: a million reads sent at once
#: queued kazoo's heartbeat ping behind them, and on a slow day the connection dropped and
#: reconnected in a loop (ZooKeeper answers about 100,000 reads a second)
READ_WINDOW = 5000
#: the same for 1,000-op transactions: a ping is answered in its turn, after every
#: request sent before it, and a thousand transactions at once (a million operations,
#: 8-12 s of the server's work) held it past kazoo's read timeout
TXN_WINDOW = 50
T = TypeVar("T")
_CREATED_OR_CHANGED = (1, 3)  # ZooKeeper's NodeCreated and NodeDataChanged event types


@dataclass
class Seen:
    """One observed value of an offset znode."""

    value: int
    visible: float  # perf_counter time the change was seen by the watch
    version: int
    written: float  # the znode's mtime (ZooKeeper's clock, ms), in the perf_counter domain


class OffsetWatch:
    """One-shot watches on offset znodes, re-armed by each read of the changed node.

    A change's visible time is when its watch event arrived, if the read that followed
    returned exactly the next version; otherwise (a later write slipped in between) the
    read's own completion time, which can only overstate the latency.
    """

    def __init__(self, zk: KazooClient, paths: Sequence[str], wall_offset: float) -> None:
        self.zk = zk
        self.paths = list(paths)
        self.wall_offset = wall_offset  # time.time() - perf_counter()
        self.seen: dict[str, list[Seen]] = {p: [] for p in self.paths}
        self.delivery_lag: list[float] = []  # event arrival - znode mtime
        self.errors = 0
        #: the watching session expired: changes after it were not watched (the drains
        #: still read every node, so nothing is counted unseen that was not)
        self.session_lost = False
        self._pending: dict[str, deque[float]] = {p: deque() for p in self.paths}
        self._version = dict.fromkeys(self.paths, -1)
        self._lock = threading.Lock()
        self._stamped = False

    def start(self) -> None:
        self._stamped = self._stamp_arrivals()
        for p in self.paths:
            self._arm(p)

    def _stamp_arrivals(self) -> bool:
        """Time each watch event as kazoo's connection thread reads it off the socket.

        kazoo hands events to one callback thread; when a batch of hundreds lands at once
        the last waits its turn there, which would be counted as mirror latency. This
        wraps a private kazoo method; without it, events are timed in the callback thread.
        """
        conn = getattr(self.zk, "_connection", None)
        original = getattr(conn, "_read_watch_event", None)
        if original is None:
            return False

        def read_watch_event(buffer: bytes, offset: int) -> object:
            t = now()
            try:
                event, _ = Watch.deserialize(buffer, offset)
                path = self.zk.unchroot(event.path)
                if event.type in _CREATED_OR_CHANGED and path in self._pending:
                    with self._lock:
                        self._pending[path].append(t)
            except Exception:  # noqa: BLE001 - never break kazoo's reader
                pass
            return original(buffer, offset)

        conn._read_watch_event = read_watch_event  # type: ignore[union-attr]
        return True

    def _arm(self, path: str) -> None:
        self.zk.exists_async(path, watch=self._on_event).rawlink(partial(self._on_exists, path))

    def _read(self, path: str, paired: bool) -> None:
        self.zk.get_async(path, watch=self._on_event).rawlink(partial(self._on_data, path, paired))

    def _on_exists(self, path: str, result: IAsyncResult) -> None:
        try:
            stat = result.get()
        except Exception:  # noqa: BLE001 - counted, the run goes on
            self.errors += 1
            return
        if stat is not None:  # already there: read it, which also sets the data watch
            self._read(path, paired=False)

    def _on_event(self, event: WatchedEvent) -> None:
        t = now()
        if event.path is None:  # the session's own event (it expired): no node to read
            self.session_lost = True
            return
        if event.type == EventType.DELETED:
            self._arm(event.path)
            return
        if not self._stamped:
            with self._lock:
                self._pending[event.path].append(t)
        self._read(event.path, paired=True)

    def _on_data(self, path: str, paired: bool, result: IAsyncResult) -> None:
        t = now()
        try:
            data, stat = result.get()
        except NoNodeError:
            if paired:
                with self._lock:
                    if self._pending[path]:
                        self._pending[path].popleft()
            self._arm(path)
            return
        except Exception:  # noqa: BLE001
            self.errors += 1
            return
        with self._lock:
            pending = self._pending[path]
            event_t = pending.popleft() if paired and pending else None
            exact = event_t is not None and stat.version == self._version[path] + 1
            self._version[path] = stat.version
            try:
                value = int(data)
            except ValueError:
                self.errors += 1
                return
            written = stat.mtime / 1000 - self.wall_offset
            visible = event_t if exact and event_t is not None else t
            self.seen[path].append(Seen(value, visible, stat.version, written))
            if event_t is not None:
                self.delivery_lag.append(event_t - written)

    def wait_caught_up(self, want: dict[str, int], timeout: float) -> None:
        """Until every watched node has been seen at its wanted value: a drain's plain reads
        can overtake the reads that the last watch events queued."""
        deadline = now() + timeout
        while now() < deadline:
            with self._lock:
                behind = any(
                    not seen or seen[-1].value < want[p]
                    for p, seen in self.seen.items()
                    if p in want
                )
            if not behind:
                return
            time.sleep(0.05)

    def first_visible(self, path: str) -> tuple[list[int], list[Seen]]:
        """Running-max values and what was seen, for bisecting."""
        seen = self.seen[path]
        return list(accumulate((s.value for s in seen), max)), seen

    def backwards(self) -> int:
        """Observed values lower than the one before: the mirror went back in time."""
        return sum(
            1
            for seen in self.seen.values()
            for a, b in zip(seen, seen[1:], strict=False)
            if b.value < a.value
        )


@dataclass
class NodeState:
    value: int
    version: int
    mtime: float  # perf_counter domain
    mzxid: int  # the transaction that last wrote it


def windowed(
    items: Iterable[T], ask: Callable[[T], IAsyncResult], window: int = READ_WINDOW
) -> Iterator[tuple[T, IAsyncResult]]:
    """Each item with its pipelined answer, in order, with at most ``window`` asked and
    not yet taken (the caller's ``get`` of each answer paces the next requests)."""
    asked: deque[tuple[T, IAsyncResult]] = deque()
    for item in items:
        asked.append((item, ask(item)))
        if len(asked) >= window:
            yield asked.popleft()
    while asked:
        yield asked.popleft()


def read_all(zk: KazooClient, paths: Sequence[str], wall_offset: float) -> dict[str, NodeState]:
    out: dict[str, NodeState] = {}
    for p, r in windowed(paths, zk.get_async):
        try:
            data, stat = r.get()
            out[p] = NodeState(int(data), stat.version, stat.mtime / 1000 - wall_offset, stat.mzxid)
        except (NoNodeError, ValueError):
            pass
    return out


def present(zk: KazooClient, paths: Sequence[str]) -> list[str]:
    """Of ``paths``, the ones that exist now, from one listing per parent: during a cold
    start of a million offset nodes, reading each absent node every pass loaded the very
    server the bridge was timed against."""
    by_parent: dict[str, set[str]] = defaultdict(set)
    for p in paths:
        up, _, name = p.rpartition("/")
        by_parent[up].add(name)
    out: list[str] = []
    for up, answer in windowed(by_parent, zk.get_children_async):
        names = by_parent[up]
        try:
            out.extend(f"{up}/{c}" for c in names.intersection(answer.get()))
        except NoNodeError:
            continue
    return out


#: the share of wall time a cold start's observer may spend listing (see await_present)
OBSERVER_SHARE = 0.2


def await_present(
    zk: KazooClient, paths: Sequence[str], timeout: float, share: float = OBSERVER_SHARE
) -> bool:
    """Wait until every one of ``paths`` exists (True), listing each parent still missing
    some, passes spaced so that listing takes about ``share`` of the wall time. The bench
    shares its machine with the bridge it times: at 10,000 groups a pass lists 10,000
    parents, and passes back to back (and a read of every node as it appeared, 1,000,000
    reads) took about half a core from a cold start on a 2-core machine, which the raw
    ceiling's writes never compete with. The times reported are ZooKeeper's mtimes, read
    once everything exists: spacing only delays when the bench notices the end."""
    left = set(paths)
    deadline = now() + timeout
    while left and now() < deadline:
        t0 = now()
        left.difference_update(present(zk, list(left)))
        if left:
            time.sleep(max(0.1, (now() - t0) * (1 - share) / share))
    return not left


def drain(
    zk: KazooClient,
    want: dict[str, int],
    wall_offset: float,
    timeout: float,
) -> tuple[dict[str, NodeState], float]:
    """Wait until every node holds at least its wanted value; returns the final states and
    when the last one was confirmed (perf_counter)."""
    left = dict(want)
    states: dict[str, NodeState] = {}
    deadline = now() + timeout
    last = now()
    while left and now() < deadline:
        got = read_all(zk, present(zk, list(left)), wall_offset)
        for p, s in got.items():
            if s.value >= left[p]:
                states[p] = s
                del left[p]
                last = now()
        if left:
            time.sleep(0.1)
    return states, last


def count_unseen(
    zk: KazooClient,
    commits: list[Commit],
    node: dict[int, list[str]],
    confirmed: dict[str, NodeState],
    wall_offset: float,
) -> int:
    """Acknowledged (commit, partition) pairs whose value never reached ZooKeeper."""
    late = read_all(zk, [p for ps in node.values() for p in ps if p not in confirmed], wall_offset)
    final = {p: s.value for p, s in {**late, **confirmed}.items()}
    return sum(
        1 for c in commits if c.error is None for p in node[c.group] if final.get(p, -1) < c.offset
    )


# ---------------------------------------------------------------- analysis


@dataclass
class PhaseResult:
    commits: int = 0
    failed: int = 0
    updates: int = 0  # partition offsets committed and acknowledged
    rate: float = 0.0  # acknowledged updates/s
    behind: float = 0.0  # worst lateness of a send against the schedule (s)
    rtt: list[float] = field(default_factory=list)  # OffsetCommit round trips
    lat_ack: list[float] = field(default_factory=list)
    lat_sent: list[float] = field(default_factory=list)
    lat_written: list[float] = field(default_factory=list)  # ack -> znode mtime
    errors: Counter[str] = field(default_factory=Counter)
    unseen_watched: int = 0
    unseen_final: int = 0
    drain: float = 0.0  # last ack -> every final offset confirmed


def analyse(
    commits: list[Commit],
    watch: OffsetWatch,
    watched: dict[int, list[str]],
    partitions: int,
) -> PhaseResult:
    ok = [c for c in commits if c.error is None]
    r = PhaseResult(commits=len(commits), failed=len(commits) - len(ok))
    r.errors.update(c.error[:80] for c in commits if c.error is not None)
    r.updates = len(ok) * partitions
    if ok:
        span = max(c.acked for c in ok) - min(c.sent for c in ok)
        r.rate = r.updates / span if span > 0 else 0.0
        r.behind = max(c.sent - c.due for c in commits)
        r.rtt = [c.acked - c.sent for c in ok]
    curves = {p: watch.first_visible(p) for ps in watched.values() for p in ps}
    for c in ok:
        for path in watched.get(c.group, []):
            values, seen = curves[path]
            i = bisect.bisect_left(values, c.offset)
            if i == len(values):
                r.unseen_watched += 1
                continue
            r.lat_ack.append(seen[i].visible - c.acked)
            r.lat_sent.append(seen[i].visible - c.sent)
            r.lat_written.append(seen[i].written - c.acked)
    return r


def delete_tree(
    zk: KazooClient, root: str, leaves: AbstractSet[str] = frozenset(), batch: int = 1000
) -> int:
    """Delete ``root`` and everything below it; returns the nodes deleted. Each level is
    listed with pipelined reads (but ``leaves``, known to have no children) and the nodes
    deleted deepest first in pipelined ``batch``-op transactions: kazoo's
    ``delete(recursive=True)`` waits for each node's answer in turn, which at a million
    nodes takes a quarter of an hour."""
    levels: list[list[str]] = []
    level = [root] if zk.exists(root) else []
    while level:
        levels.append(level)
        asked = windowed([p for p in level if p not in leaves], zk.get_children_async)
        level = []
        for p, answer in asked:
            try:
                level.extend(f"{p.rstrip('/')}/{c}" for c in answer.get())
            except NoNodeError:
                pass
    deleted = 0
    for paths in reversed(levels):
        chunks = [paths[i : i + batch] for i in range(0, len(paths), batch)]
        for chunk, result in windowed(chunks, partial(_delete_all, zk), TXN_WINDOW):
            results = result.get()
            if all(r is True for r in results):
                deleted += len(results)
                continue  # else one node was gone (an ephemeral): the others one by one
            for answer in [zk.delete_async(p) for p in chunk]:
                try:
                    answer.get()
                    deleted += 1
                except NoNodeError:
                    pass
    return deleted


def _delete_all(zk: KazooClient, paths: list[str]) -> IAsyncResult:
    txn = zk.transaction()
    for p in paths:
        txn.delete(p)
    return txn.commit_async()
