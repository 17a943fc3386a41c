"""How fast committed offsets reach ``/consumers/<g>/offsets`` through the bridge.

    python -m bench.offsets [--groups 10 --partitions 20 --rate 1000 --seconds 10]
                            [--zookeeper H:P --bootstrap-server H:P]

Without addresses it starts a private local stack. The bridge always runs as a real
``python -m bridge.cli run`` child process in a fresh ZooKeeper chroot. One run, all on the
same ZooKeeper server:

1. raw ceiling: transactions of ``MAX_BATCH_OPS`` ``set_data`` ops, built and encoded as the
   bridge builds them (``bridge.zookeeper.txn.Multi``; the bridge's own
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
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from kafka import KafkaAdminClient
from kafka.errors import KafkaError
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

import zkpaths
from bench import bridge_command, create_topic, stack_unless_given
from bench.offsets_load import Commit, Committer
from bench.offsets_raw import RawWriter
from bench.offsets_report import report
from bench.offsets_stats import CpuMeter
from bench.offsets_zk import (
    NodeState,
    OffsetWatch,
    PhaseResult,
    analyse,
    await_present,
    count_unseen,
    delete_tree,
    drain,
    read_all,
)

POLL_INTERVAL = 0.25  # the bridge's default groups.poll_interval_s, for the printed bound

now = time.perf_counter


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
        self.initial: dict[str, NodeState] = {}  # the cold start's nodes (start_bridge)
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
        # the first commit per group finds its coordinator; from the workers' threads at
        # once (one after another, 10,000 groups took a quarter of an hour)
        with ThreadPoolExecutor(max(1, min(self.args.workers, self.G))) as pool:
            list(pool.map(self._first_commit, range(self.G)))

    def _first_commit(self, g: int) -> None:
        """Group ``g``'s first commit, retried while its coordinator is being found."""
        assert self.committer is not None
        deadline = now() + 60
        while True:
            try:
                if not self.committer.commit(g, self.offset[g]):
                    return
            except KafkaError as exc:
                if now() > deadline:
                    raise SystemExit(f"cannot commit for {self.group_ids[g]}: {exc}") from exc
            time.sleep(0.2)

    def start_bridge(self) -> float:
        """Start the bridge; seconds until every first offset was mirrored (the last
        node's mtime)."""
        t0 = now()
        self.bridge = start_bridge(
            self.connect, self.args.bootstrap_server, self.log_path, self.args.bridge_source
        )
        self.pids["bridge"] = self.bridge.pid
        print(f"bridge pid {self.bridge.pid}, log {self.log_path}", flush=True)
        self.cpu = CpuMeter(self.pids)
        timeout = 60 + self.G * self.P / 100
        await_present(self.zk, list(self.want()), timeout)  # light: see there
        states, _ = drain(self.zk, self.want(), self.wall_offset, timeout)
        if len(states) < self.G * self.P:
            raise SystemExit(f"the bridge did not mirror the groups; see {self.log_path}")
        self.phase("start + initial mirror")
        self.initial = states  # what the cold start wrote, for bench.fleet's figures
        return max(s.mtime for s in states.values()) - t0  # ZooKeeper's clock, not ours

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
                offsets = {self.chroot + p for ps in self.node.values() for p in ps}
                delete_tree(self.boot, self.chroot, offsets)
            except NoNodeError:
                pass
        self.boot.stop()
        self.boot.close()


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


def _exit_on_term(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def bench_session(args: argparse.Namespace) -> Iterator[OffsetBench]:
    """An ``OffsetBench`` on the cluster ``args`` name, or on a private local stack that
    is stopped and removed at the end, as is everything the bench started."""
    pids: dict[str, int] = {"bench": os.getpid()}
    signal.signal(signal.SIGTERM, _exit_on_term)  # so the finally below runs
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
