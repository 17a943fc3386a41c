"""How fast committed offsets reach ``/consumers/<g>/offsets`` through the bridge.

    python -m bench.offsets [--groups 10 --partitions 20 --rate 1000 --seconds 10]
                            [--zookeeper H:P --bootstrap-server H:P]

Without addresses it starts a private local stack. The bridge always runs as a real
``python -m bridge.cli run`` child process in a fresh ZooKeeper chroot. One run, all on the
same ZooKeeper server:

1. raw ceiling: kazoo transactions of ``MAX_BATCH_OPS`` ``set_data`` ops (the bridge's own
   batch limit) rewriting G x P nodes back to back, from a separate process, before the
   bridge starts: ops/s;
2. sustained: G groups x P partitions of one topic; every ``P / rate`` seconds one group
   commits all P partitions in one OffsetCommit (admin ``alter_group_offsets``; the groups
   have no members), groups in turn, offsets rising by one per commit. Watches on the offset
   znodes record when each committed value (or a later one) becomes visible. Then a drain:
   every partition's last offset must reach ZooKeeper, else it counts as unseen;
3. burst: every G x P offset changes at once, round after round as fast as the committer
   can, for ``--burst-seconds``; offset znode writes landed per second (from znode versions
   and mtimes) is the peak mirror throughput, printed against the raw ceiling;
4. the raw ceiling again, under the burst's commit load, with the bridge paused (SIGSTOP,
   a few seconds, inside its session timeout): how much of the ceiling the machine leaves
   when Kafka is busy too. The bridge must then catch up.

Watches cost the watching process ~0.1 ms of CPU per change (kazoo), so above
``--watch-nodes`` nodes only a sample is watched (every group, partitions spread evenly);
the drains still read every node. Targets are printed as MET / MISSED; the exit status is 0
either way.
"""

from __future__ import annotations

import argparse
import bisect
import multiprocessing
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from itertools import accumulate
from pathlib import Path

from kafka import KafkaAdminClient, TopicPartition
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.interfaces import IAsyncResult
from kazoo.protocol.serialization import Watch
from kazoo.protocol.states import EventType, WatchedEvent

import zkpaths
from bench import bridge_command, create_topic, stack_unless_given
from bridge.zookeeper.writer import MAX_BATCH_OPS

TARGET_RATE = 5000.0  # offset updates/s the mirror must sustain ...
TARGET_P99 = 0.5  # ... with commit -> visible p99 at most this (s)
TARGET_RATIO = 0.70  # peak mirror throughput / raw ZooKeeper ceiling
POLL_INTERVAL = 0.25  # the bridge's default groups.poll_interval_s, for the printed bound

now = time.perf_counter
_CREATED_OR_CHANGED = (1, 3)  # ZooKeeper's NodeCreated and NodeDataChanged event types


# ---------------------------------------------------------------- small helpers


def pct(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


def dist(xs: Sequence[float]) -> str:
    if not xs:
        return "n=0"
    ms = [x * 1000 for x in xs]
    return (
        f"n={len(ms):<7} p50={pct(ms, 50):7.1f} ms  p99={pct(ms, 99):7.1f} ms  "
        f"max={max(ms):7.1f} ms"
    )


def verdict(ok: bool | None) -> str:
    return "MET" if ok else ("MISSED" if ok is not None else "NOT TESTED")


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (Linux /proc), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def machine_busy_seconds() -> float | None:
    """CPU seconds all cores spent not idle (Linux /proc/stat), or None."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class CpuMeter:
    """CPU used per phase by the processes we know, as a share of one core."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.rows: list[tuple[str, float, dict[str, float]]] = []
        self._mark = self._sample()

    def _sample(self) -> tuple[float, dict[str, float]]:
        out = {n: c for n, pid in self.pids.items() if (c := cpu_seconds(pid)) is not None}
        if (busy := machine_busy_seconds()) is not None:
            out["machine"] = busy
        return now(), out

    def phase(self, name: str) -> None:
        t0, c0 = self._mark
        self._mark = t1, c1 = self._sample()
        wall = max(t1 - t0, 1e-9)
        self.rows.append((name, wall, {n: (c1[n] - c0[n]) / wall for n in c1 if n in c0}))


# ---------------------------------------------------------------- load generator


@dataclass
class Commit:
    """One OffsetCommit: group ``group`` sets all P partitions to ``offset``."""

    group: int
    offset: int
    due: float
    sent: float = 0.0
    acked: float = 0.0
    error: str | None = None


class Committer:
    """Worker threads sending OffsetCommits through one admin client.

    Group ``g`` always goes to worker ``g % workers``, so one group's commits never overtake
    each other and its offsets rise monotonically in Kafka.
    """

    def __init__(
        self, admin: KafkaAdminClient, topic: str, groups: list[str], partitions: int, workers: int
    ) -> None:
        self.admin = admin
        self.groups = groups
        self.tps = [TopicPartition(topic, p) for p in range(partitions)]
        self.done: list[Commit] = []
        self._lock = threading.Lock()
        self._outstanding = 0
        self._queues: list[queue.Queue[Commit | None]] = [queue.Queue() for _ in range(workers)]
        self._threads = [
            threading.Thread(target=self._work, args=(q,), daemon=True) for q in self._queues
        ]
        for t in self._threads:
            t.start()

    def commit(self, group: int, offset: int) -> list[type[KafkaError]]:
        offsets = {tp: OffsetAndMetadata(offset, "", -1) for tp in self.tps}
        result = self.admin.alter_group_offsets(self.groups[group], offsets)
        return [e for e in result.values() if getattr(e, "errno", 0) != 0]

    def submit(self, c: Commit) -> None:
        with self._lock:
            self._outstanding += 1
        self._queues[c.group % len(self._queues)].put(c)

    def wait_idle(self, timeout: float) -> None:
        """Until every submitted commit has its answer (or ``timeout``)."""
        deadline = now() + timeout
        while self._outstanding and now() < deadline:
            time.sleep(0.005)

    def backlog(self) -> int:
        return sum(q.qsize() for q in self._queues)

    def close(self, timeout: float) -> None:
        for q in self._queues:
            q.put(None)
        deadline = now() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - now()))

    def take(self) -> list[Commit]:
        with self._lock:
            out, self.done = self.done, []
        return out

    def _work(self, q: queue.Queue[Commit | None]) -> None:
        while (c := q.get()) is not None:
            c.sent = now()
            try:
                errors = self.commit(c.group, c.offset)
                if errors:
                    c.error = ", ".join(sorted({e.__name__ for e in errors}))
            except KafkaError as exc:
                c.error = f"{type(exc).__name__}: {exc}"
            c.acked = now()
            with self._lock:
                self.done.append(c)
                self._outstanding -= 1


# ---------------------------------------------------------------- ZooKeeper side


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


def read_all(zk: KazooClient, paths: Sequence[str], wall_offset: float) -> dict[str, NodeState]:
    pending = [(p, zk.get_async(p)) for p in paths]
    out: dict[str, NodeState] = {}
    for p, r in pending:
        try:
            data, stat = r.get()
            out[p] = NodeState(int(data), stat.version, stat.mtime / 1000 - wall_offset, stat.mzxid)
        except (NoNodeError, ValueError):
            pass
    return out


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
        got = read_all(zk, list(left), wall_offset)
        for p, s in got.items():
            if s.value >= left[p]:
                states[p] = s
                del left[p]
                last = now()
        if left:
            time.sleep(0.1)
    return states, last


def raw_ceiling(zk: KazooClient, root: str, n: int, seconds: float) -> tuple[float, int]:
    """Back-to-back transactions of ``MAX_BATCH_OPS`` set_data ops over ``n`` nodes: ops/s."""
    paths = [f"{root}/{i}" for i in range(n)]
    batches = [paths[i : i + MAX_BATCH_OPS] for i in range(0, n, MAX_BATCH_OPS)]
    zk.ensure_path(root)
    for b in batches:
        txn = zk.transaction()
        for p in b:
            txn.create(p, b"0")
        txn.commit()
    ops, value = 0, 0
    t0 = now()
    warm = True  # the first half second warms the JIT of a freshly started server
    while now() - t0 < seconds or ops == 0:
        if warm and now() - t0 > min(0.5, seconds / 4):
            warm, ops, t0 = False, 0, now()
        value += 1
        data = str(value).encode()
        for b in batches:
            txn = zk.transaction()
            for p in b:
                txn.set_data(p, data)
            results = txn.commit()
            if any(isinstance(r, Exception) for r in results):
                raise SystemExit(f"raw ceiling: a transaction failed: {results[:3]}")
            ops += len(b)
    elapsed = now() - t0
    for b in batches:
        txn = zk.transaction()
        for p in b:
            txn.delete(p)
        txn.commit()
    zk.delete(root)
    return ops / elapsed, len(batches[0])


def raw_ceiling_at(connect: str, root: str, n: int, seconds: float) -> tuple[float, int]:
    zk = KazooClient(connect)
    zk.start()
    try:
        return raw_ceiling(zk, root, n, seconds)
    finally:
        zk.stop()
        zk.close()


class RawWriter:
    """A separate process for the raw ceiling, so it never shares a GIL with the load."""

    def __init__(self) -> None:
        self.pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        self.pool.submit(time.sleep, 0).result(60)  # pay for the start-up now

    def ceiling(self, connect: str, root: str, n: int, seconds: float) -> tuple[float, int]:
        return self.pool.submit(raw_ceiling_at, connect, root, n, seconds).result(120 + seconds)

    def close(self) -> None:
        self.pool.shutdown()


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


# ---------------------------------------------------------------- the run


def start_bridge(
    zk_connect: str, bootstrap: str, log: Path, source: Path
) -> subprocess.Popen[bytes]:
    out = log.open("wb")
    try:
        return subprocess.Popen(
            bridge_command(zk_connect, bootstrap),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=source,  # python -m puts it first on sys.path
        )
    finally:
        out.close()


def sample_partitions(groups: int, partitions: int, limit: int) -> dict[int, list[int]]:
    """Which partitions of each group to watch: all, or an even spread within ``limit``."""
    per_group = max(1, min(partitions, limit // max(1, groups)))
    step = partitions / per_group
    return {g: sorted({int(i * step) for i in range(per_group)}) for g in range(groups)}


class OffsetBench:
    """One run: a topic, G empty groups committing to it, a bridge, a watching reader."""

    def __init__(self, args: argparse.Namespace, pids: dict[str, int]) -> None:
        self.args = args
        self.G, self.P = args.groups, args.partitions
        run = uuid.uuid4().hex[:8]
        self.chroot = f"/bench-offsets-{run}"
        self.connect = args.zookeeper + self.chroot
        self.topic = f"bench-offsets-{run}"
        self.group_ids = [f"bench-offsets-{run}-{g:03d}" for g in range(self.G)]
        self.wall_offset = time.time() - now()
        self.pids = pids
        self.boot = KazooClient(args.zookeeper)
        self.boot.start()
        self.boot.ensure_path(self.chroot)
        self.zk = KazooClient(self.connect)  # the legacy reader: watches and drains
        self.zk.start()
        workers = max(1, min(args.workers, self.G))
        self.admin = KafkaAdminClient(
            bootstrap_servers=args.bootstrap_server.split(","),
            max_in_flight_requests_per_connection=workers + 2,
        )
        self.log_path = Path(tempfile.mkstemp(prefix="bench-offsets-bridge-", suffix=".log")[1])
        self.raw = RawWriter()
        self.bridge: subprocess.Popen[bytes] | None = None
        self.committer: Committer | None = None
        self.node = {
            g: [zkpaths.offset_path(gid, self.topic, p) for p in range(self.P)]
            for g, gid in enumerate(self.group_ids)
        }
        sample = sample_partitions(self.G, self.P, args.watch_nodes)
        self.watched = {g: [self.node[g][p] for p in sample[g]] for g in range(self.G)}
        self.watch = OffsetWatch(
            self.zk, [p for ps in self.watched.values() for p in ps], self.wall_offset
        )
        self.offset = [1] * self.G
        self.cpu: CpuMeter | None = None

    # -- phases

    def raw_ceiling(self, root: str, seconds: float) -> tuple[float, int]:
        return self.raw.ceiling(self.connect, root, self.G * self.P, seconds)

    def prepare(self) -> None:
        create_topic(self.admin, self.topic, self.P)
        # watches are set before anything is mirrored, so no change goes unseen
        self.watch.start()
        self.committer = Committer(
            self.admin, self.topic, self.group_ids, self.P, max(1, min(self.args.workers, self.G))
        )
        for g in range(self.G):  # the first commit per group finds its coordinator
            deadline = now() + 60
            while True:
                try:
                    if not self.committer.commit(g, self.offset[g]):
                        break
                except KafkaError as exc:
                    if now() > deadline:
                        raise SystemExit(f"cannot commit for {self.group_ids[g]}: {exc}") from exc
                time.sleep(0.2)

    def start_bridge(self) -> float:
        """Start the bridge; seconds until every first offset is mirrored."""
        t0 = now()
        self.bridge = start_bridge(
            self.connect, self.args.bootstrap_server, self.log_path, self.args.bridge_source
        )
        self.pids["bridge"] = self.bridge.pid
        print(f"bridge pid {self.bridge.pid}, log {self.log_path}", flush=True)
        self.cpu = CpuMeter(self.pids)
        states, t_done = drain(self.zk, self.want(), self.wall_offset, 60 + self.G * self.P / 100)
        if len(states) < self.G * self.P:
            raise SystemExit(f"the bridge did not mirror the groups; see {self.log_path}")
        self.phase("start + initial mirror")
        return t_done - t0

    def sustained(self) -> list[Commit]:
        """One group's P partitions every P / rate seconds, groups in turn."""
        assert self.committer is not None
        a = self.args
        interval = self.P / a.rate
        n = max(1, round(a.seconds * a.rate / self.P))
        print(
            f"sustained: {n} commits of {self.P} partitions, one every {interval * 1000:.1f} ms "
            f"({a.rate:.0f} updates/s for {a.seconds:.0f} s) ...",
            flush=True,
        )
        t0 = now() + 0.05
        stop_at = t0 + a.seconds * 1.5 + 5
        for i in range(n):
            due = t0 + i * interval
            if due > stop_at:
                break
            if (wait := due - now()) > 0:
                time.sleep(wait)
            g = i % self.G
            self.offset[g] += 1
            self.committer.submit(Commit(g, self.offset[g], due))
        self.committer.wait_idle(stop_at + 30 - now())
        self.phase("sustained")
        return self.committer.take()

    def burst(self, seconds: float, stop: threading.Event | None = None) -> int:
        """Every offset changes at once, round after round, one round queued ahead."""
        assert self.committer is not None
        t0 = now()
        rounds = 0
        while now() - t0 < seconds and rounds < 10_000 and not (stop and stop.is_set()):
            for g in range(self.G):
                self.offset[g] += 1
                self.committer.submit(Commit(g, self.offset[g], now()))
            rounds += 1
            while self.committer.backlog() > self.G and now() - t0 < seconds:
                time.sleep(0.002)
        self.committer.wait_idle(seconds * 2 + 30)
        return rounds

    def settle(self, commits: list[Commit], name: str) -> tuple[PhaseResult, dict[str, NodeState]]:
        """Drain, then score the phase's commits against what the watches saw."""
        last_ack = max((c.acked for c in commits), default=now())
        states, t_done = drain(self.zk, self.want(), self.wall_offset, self.args.drain_seconds)
        self.watch.wait_caught_up(self.want(), 10)
        r = analyse(commits, self.watch, self.watched, self.P)
        r.unseen_final = count_unseen(self.zk, commits, self.node, states, self.wall_offset)
        r.drain = t_done - last_ack
        self.phase(name)
        return r, states

    def loaded_ceiling(self, seconds: float) -> tuple[float, float, float]:
        """The raw ceiling again, with the burst's commit load running and the bridge paused
        (SIGSTOP, kept well inside its ZooKeeper session timeout). Returns ops/s, how long
        the bridge was paused and how long it then took to catch up."""
        assert self.bridge is not None and self.committer is not None
        stop = threading.Event()
        load = threading.Thread(target=self.burst, args=(seconds + 30, stop), daemon=True)
        os.kill(self.bridge.pid, signal.SIGSTOP)
        t_paused = now()
        try:
            load.start()
            time.sleep(0.3)  # let the load build up
            rate, _ = self.raw_ceiling("/bench-raw-loaded", seconds)
        finally:
            stop.set()
            os.kill(self.bridge.pid, signal.SIGCONT)
        paused = now() - t_paused
        load.join(60)
        self.committer.take()
        self.phase("raw under load (paused)")
        t0 = now()
        states, t_done = drain(self.zk, self.want(), self.wall_offset, self.args.drain_seconds)
        if len(states) < self.G * self.P:
            print(f"  ! the bridge did not catch up after its pause; see {self.log_path}")
        self.phase("catch-up")
        return rate, paused, t_done - t0

    def backlog(self) -> tuple[int, int, float, float]:
        """Peak write throughput: with the bridge paused, every offset changes once; the
        bridge is resumed and writes the whole backlog in one pass. Returns the nodes
        written, the transactions they came in, the span from the first to the last znode
        mtime (ZooKeeper's own clock, 1 ms) and the time from resume to the last write."""
        assert self.bridge is not None and self.committer is not None
        before = read_all(self.zk, list(self.want()), self.wall_offset)
        os.kill(self.bridge.pid, signal.SIGSTOP)
        try:
            for g in range(self.G):
                self.offset[g] += 1
                self.committer.submit(Commit(g, self.offset[g], now()))
            self.committer.wait_idle(60)
            self.committer.take()
        finally:
            t_resume = now()
            os.kill(self.bridge.pid, signal.SIGCONT)
        states, _ = drain(self.zk, self.want(), self.wall_offset, self.args.drain_seconds)
        fresh = [s for p, s in states.items() if p not in before or s.mzxid != before[p].mzxid]
        self.phase("backlog")
        if not fresh:
            return 0, 0, 0.0, 0.0
        mtimes = [s.mtime for s in fresh]
        return (
            len(fresh),
            len({s.mzxid for s in fresh}),
            max(mtimes) - min(mtimes),
            (max(mtimes) - t_resume),
        )

    # -- helpers

    def want(self) -> dict[str, int]:
        return {p: self.offset[g] for g in range(self.G) for p in self.node[g]}

    def phase(self, name: str) -> None:
        if self.cpu is not None:
            self.cpu.phase(name)

    def close(self, private_stack: bool) -> None:
        if self.committer is not None:
            self.committer.close(10)
        if self.bridge is not None:
            if self.bridge.poll() is None:
                os.kill(self.bridge.pid, signal.SIGCONT)
                self.bridge.terminate()
            try:
                self.bridge.wait(20)
            except subprocess.TimeoutExpired:
                self.bridge.kill()
                self.bridge.wait()
        self.raw.close()
        try:
            self.admin.delete_groups(self.group_ids)
            self.admin.delete_topics([self.topic])
        except KafkaError:
            pass
        self.admin.close()
        self.zk.stop()
        self.zk.close()
        if not private_stack:  # a private stack goes away as a whole
            try:
                self.boot.delete(self.chroot, recursive=True)
            except NoNodeError:
                pass
        self.boot.stop()
        self.boot.close()


def report(
    b: OffsetBench,
    initial: float,
    raw: tuple[float, int],
    sustained: PhaseResult,
    burst: PhaseResult,
    peak: tuple[int, int, float, float],
    loaded: tuple[float, float, float],
    txns: int,
    backlog: tuple[int, int, float, float],
) -> None:
    a, G, P = b.args, b.G, b.P
    raw_rate = raw[0]
    loaded_rate = loaded[0]
    bl_nodes, bl_txns, bl_span, bl_e2e = backlog
    # peak = the rate at which the mirror lands a backlog in ZooKeeper, timed by ZooKeeper's
    # own mtimes from its first to its last write. A backlog that fits in one transaction
    # cannot be timed that way (1 ms clock): then the end-to-end rate counts, Kafka reads
    # included, which is the conservative figure.
    e2e_rate = bl_nodes / bl_e2e if bl_e2e > 0 else 0.0
    mirror_rate = bl_nodes / bl_span if bl_txns >= 2 and bl_span > 0 else e2e_rate
    ratio = mirror_rate / raw_rate if raw_rate else 0.0
    assert b.bridge is not None
    print()
    print(
        f"offset mirror, G={G} groups x P={P} partitions = {G * P} offset znodes, "
        f"{len(b.watch.paths)} of them watched"
    )
    state = "running" if b.bridge.poll() is None else f"EXITED {b.bridge.returncode}"
    print(f"  bridge pid {b.bridge.pid} ({state}), log {b.log_path}")
    if a.bridge_source.resolve() != Path(__file__).resolve().parents[1]:
        print(f"  bridge run from {a.bridge_source}")
    print(f"  initial mirror of {G * P} offsets after bridge start     {initial:9.2f} s")
    for name, r in (("sustained", sustained), ("burst", burst)):
        _print_phase(name, r)
    _print_throughput(b, raw, peak, loaded, txns, backlog, mirror_rate, e2e_rate, ratio)
    _print_cpu(b)
    _print_targets(b, sustained, raw_rate, mirror_rate, ratio, loaded_rate, bl_txns)


def _print_phase(name: str, r: PhaseResult) -> None:
    """One load phase: commits, their rate and each latency's distribution."""
    print(f"  {name}:")
    print(
        f"    commits sent / failed                    {r.commits} / {r.failed}"
        f"   ({r.updates} offset updates acknowledged)"
    )
    if r.errors:
        kinds = ", ".join(f"{k} x{v}" for k, v in r.errors.most_common(3))
        print(f"    commit errors                            {kinds}")
    print(f"    acknowledged commit rate                 {r.rate:9.0f} updates/s")
    if name == "sustained":
        print(f"    worst send behind schedule               {r.behind * 1000:9.1f} ms")
    print(f"    OffsetCommit round trip                  {dist(r.rtt)}")
    print(f"    commit acked -> visible in ZooKeeper     {dist(r.lat_ack)}")
    print(f"    commit sent  -> visible in ZooKeeper     {dist(r.lat_sent)}")
    print(f"    commit acked -> znode mtime (1 ms clock) {dist(r.lat_written)}")
    print(f"    unseen: watched / final (must be 0)      {r.unseen_watched} / {r.unseen_final}")
    print(f"    last ack -> all final offsets visible    {r.drain:9.2f} s")


def _print_throughput(
    b: OffsetBench,
    raw: tuple[float, int],
    peak: tuple[int, int, float, float],
    loaded: tuple[float, float, float],
    txns: int,
    backlog: tuple[int, int, float, float],
    mirror_rate: float,
    e2e_rate: float,
    ratio: float,
) -> None:
    """The burst, the backlog's peak and the raw ZooKeeper ceiling beside them."""
    G, P = b.G, b.P
    raw_rate, raw_batch = raw
    rounds, landed, span, burst_rate = peak
    loaded_rate, paused, catch_up = loaded
    bl_nodes, bl_txns, bl_span, bl_e2e = backlog
    print("  throughput:")
    print(f"    burst rounds of {G * P} commits             {rounds}")
    print(f"    offset znode writes landed in the burst  {landed} over {span:.2f} s")
    print(
        f"    the burst's last writes came in {txns} transactions "
        f"(~{G * P / max(txns, 1):.0f} offset ops each)"
    )
    print(f"    commit-driven mirror throughput (burst)  {burst_rate:9.0f} ops/s")
    print(
        f"    backlog of {bl_nodes} changed offsets written in {bl_txns} transactions over "
        f"{bl_span * 1000:.0f} ms (ZooKeeper mtimes); resume -> last write {bl_e2e * 1000:.0f} ms"
    )
    print(f"    peak mirror throughput (backlog)         {mirror_rate:9.0f} ops/s")
    print(f"    end-to-end catch-up rate incl. Kafka reads {e2e_rate:7.0f} ops/s")
    print(f"    raw ceiling, {raw_batch}-op set_data transactions {raw_rate:9.0f} ops/s")
    print(f"    mirror / raw ceiling                     {ratio:9.1%}")
    print(
        f"    raw ceiling under the burst's commit load {loaded_rate:8.0f} ops/s"
        f"  (burst mirror / that: {burst_rate / loaded_rate if loaded_rate else 0:.1%})"
    )
    print(f"    bridge paused for that / caught up in    {paused:.1f} s / {catch_up:.2f} s")
    print(f"  watch delivery lag (event - znode mtime)   {dist(b.watch.delivery_lag)}")
    print(f"  watch errors / values going backwards      {b.watch.errors} / {b.watch.backwards()}")


def _print_cpu(b: OffsetBench) -> None:
    """Each phase's CPU share per process, when it was measured."""
    if b.cpu is not None:
        print(
            f"  CPU, share of one core (machine: all {os.cpu_count()} cores together, "
            "shared by everything):"
        )
        for name, wall, shares in b.cpu.rows:
            cells = "  ".join(f"{k} {v:4.0%}" for k, v in shares.items())
            print(f"    {name:<24} {wall:6.1f} s  {cells}")


def _print_targets(
    b: OffsetBench,
    sustained: PhaseResult,
    raw_rate: float,
    mirror_rate: float,
    ratio: float,
    loaded_rate: float,
    bl_txns: int,
) -> None:
    """MET/MISSED against the issue's targets, and the docs' markdown row."""
    a, G, P = b.args, b.G, b.P
    if sustained.behind > 0.5:
        print(
            f"  ! the load generator fell {sustained.behind:.1f} s behind its schedule: this "
            "machine was short of CPU, so latencies include queueing outside the bridge"
        )
    lat = sustained.lat_ack
    p50, p99 = (pct(lat, 50), pct(lat, 99)) if lat else (float("inf"), float("inf"))
    unseen = sustained.unseen_watched + sustained.unseen_final
    rate_ok: bool | None = None
    if a.rate >= TARGET_RATE:
        rate_ok = sustained.rate >= TARGET_RATE * 0.98 and unseen == 0 and not sustained.failed
    print("\ntargets")
    note = "" if rate_ok is not None else f"  (needs --rate >= {TARGET_RATE:.0f})"
    print(
        f"  sustain >= {TARGET_RATE:.0f} updates/s: {sustained.rate:.0f}/s, {unseen} unseen"
        f"{'':<14}{verdict(rate_ok)}{note}"
    )
    print(
        f"  commit -> visible p99 <= {TARGET_P99 * 1000:.0f} ms: p99 {p99 * 1000:.0f} ms"
        f"{'':<14}{verdict(p99 <= TARGET_P99 and unseen == 0)}"
    )
    timed = bl_txns >= 2  # a backlog in one transaction has no write span to time
    print(
        f"  peak mirror >= {TARGET_RATIO:.0%} of raw ceiling: {ratio:.1%}"
        f"{'':<17}{verdict(ratio >= TARGET_RATIO if timed else None)}"
        + ("" if timed else "  (backlog fit one transaction; needs G x P > 1000)")
    )
    print(
        "\nmarkdown row: "
        f"| {time.strftime('%Y-%m-%d')} | {G}x{P} | {a.rate:.0f}/s x {a.seconds:.0f} s "
        f"| {sustained.rate:.0f}/s | {p50 * 1000:.0f} / {p99 * 1000:.0f} / "
        f"{max(lat, default=0) * 1000:.0f} ms | {unseen} | {mirror_rate:.0f} ops/s "
        f"| {raw_rate:.0f} ops/s | {ratio:.1%} | {loaded_rate:.0f} ops/s |"
    )


def parse_common(ap: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``ap`` with the options every offsets bench shares (where to run, how to watch)
    added, parsed from ``argv`` and checked."""
    ap.add_argument("--watch-nodes", type=int, default=1000, help="watch at most ~this many")
    ap.add_argument("--workers", type=int, default=8, help="committer threads")
    ap.add_argument("--zookeeper", help="HOST:PORT of ZooKeeper (default: a private stack)")
    ap.add_argument("--bootstrap-server", help="Kafka bootstrap servers")
    ap.add_argument(
        "--bridge-source",
        type=Path,
        default=Path(__file__).resolve().parents[1],
        help="run the bridge from this source tree (default: this one), to compare a change",
    )
    args = ap.parse_args(argv)
    if min(args.groups, args.partitions) < 1 or min(args.rate, args.seconds) <= 0:
        ap.error("--groups, --partitions, --rate and --seconds must be positive")
    if bool(args.zookeeper) != bool(args.bootstrap_server):
        ap.error("give both --zookeeper and --bootstrap-server, or neither")
    return args


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m bench.offsets", description=(__doc__ or "").split("\n")[0]
    )
    ap.add_argument("--groups", type=int, default=10, help="consumer groups (G)")
    ap.add_argument("--partitions", type=int, default=20, help="partitions of the topic (P)")
    ap.add_argument("--rate", type=float, default=1000.0, help="offset updates/s to commit")
    ap.add_argument("--seconds", type=float, default=10.0, help="length of the sustained phase")
    ap.add_argument("--burst-seconds", type=float, default=5.0, help="length of the burst")
    ap.add_argument("--raw-seconds", type=float, default=3.0, help="length of a raw ceiling")
    ap.add_argument("--drain-seconds", type=float, default=30.0, help="wait for stragglers")
    return parse_common(ap, argv)


def _burst(
    b: OffsetBench, states: dict[str, NodeState]
) -> tuple[PhaseResult, tuple[int, int, float, float], int]:
    """Every offset committed per round for ``--burst-seconds``: the phase's results, the
    peak (rounds, writes landed, their span, rate) and the transactions of its last writes."""
    print(f"burst: all {b.G * b.P} offsets per round for {b.args.burst_seconds:.0f} s", flush=True)
    before = {p: s.version for p, s in states.items()}
    t_burst = now()
    rounds = b.burst(b.args.burst_seconds)
    b.phase("burst")
    assert b.committer is not None
    burst, states = b.settle(b.committer.take(), "burst drain")
    landed = sum(s.version - before.get(p, s.version) for p, s in states.items())
    firsts = [s.written for ps in b.watch.seen.values() for s in ps if s.written >= t_burst]
    last = max((s.mtime for s in states.values()), default=t_burst)
    span = last - min(firsts) if firsts else 0.0
    peak = (rounds, landed, span, landed / span if span > 0 else 0.0)
    return burst, peak, len({s.mzxid for s in states.values()})


@contextmanager
def bench_session(args: argparse.Namespace) -> Iterator[OffsetBench]:
    """An ``OffsetBench`` on the cluster ``args`` name, or on a private local stack that
    is stopped and removed at the end, as is everything the bench started."""
    pids: dict[str, int] = {"bench": os.getpid()}
    stack = stack_unless_given(args)
    if stack is not None:
        pids.update({n: pid for n, pid in stack.state.pids.items() if pid})
    b: OffsetBench | None = None
    try:
        b = OffsetBench(args, pids)
        yield b
    finally:
        if b is not None:
            b.close(private_stack=stack is not None)
        if stack is not None:
            stack.discard()


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    with bench_session(args) as b:
        nodes = b.G * b.P
        print(f"raw ZooKeeper ceiling over {nodes} nodes ...", flush=True)
        raw = b.raw_ceiling("/bench-raw", args.raw_seconds)  # before the bridge exists
        b.prepare()
        print("starting the bridge ...", flush=True)
        initial = b.start_bridge()
        sustained, states = b.settle(b.sustained(), "sustained drain")
        burst, peak, txns = _burst(b, states)
        loaded_seconds = min(args.raw_seconds, 3.0)
        print(
            f"raw ceiling again under the commit load, bridge paused ~{loaded_seconds + 1:.0f} s",
            flush=True,
        )
        loaded = b.loaded_ceiling(loaded_seconds)
        print(f"backlog: bridge paused while all {nodes} offsets change, then resumed", flush=True)
        backlog = b.backlog()
        report(b, initial, raw, sustained, burst, peak, loaded, txns, backlog)
        return 0


if __name__ == "__main__":
    sys.exit(main())
