"""Old consumers' ZooKeeper commits -> Kafka (storage mode ``zookeeper``), for bench.fleet.

G' groups, each with one old consumer registered exactly as a 0.10.2.2 Scala consumer
registers (``/consumers/<g>/ids/<group>_<host>-<ms>-<uuid8>`` ephemeral, the compact v1
JSON, ``owners/<t>/<p>`` ephemeral holding its thread id by the range assignment) and its
offsets under ``offsets/<t>/<p>``. The bench writes those nodes itself as the load
generator: it measures the bridge, not an old consumer. Such a group is inferred to be in
``zookeeper`` mode (old consumers registered), so the bridge copies each ZooKeeper offset
into Kafka.

Load: every ``P / rate`` s one group commits all P partitions, one ``setData`` per offset
node as the old consumer does (``updatePersistentPath``), groups in turn, each commit one
higher. Each write's time is taken when ZooKeeper acknowledged it.

Visible in Kafka: a follower of ``__consumer_offsets`` (``bridge.kafka.offsets_log``'s, on
its own thread, positioned at the end before the groups exist) records when the first
record carrying that offset or a later one arrived. It reads ``read_committed``: the bridge
commits as a group's proxy (a plain OffsetCommit, shown as soon as it is answered) or, for a
group without a joined proxy, with TxnOffsetCommit, whose offsets OffsetFetch shows only once
the transaction's commit marker is written, and a read_committed fetch returns the record
only then too. So the arrival is the honest "visible" time (it can only overstate by the
fetch's own delay). The record's commit timestamp (the broker's clock when it took the
commit, before any marker) is printed beside it as a lower bound, not used for the target.
"""

from __future__ import annotations

import bisect
import socket
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial
from itertools import accumulate

from kazoo.client import KazooClient

import zkpaths
from bench.bridge_metrics import Watcher, Window
from bench.offsets_stats import dist, pct, verdict
from bridge.audit.records import OffsetCommitKey, OffsetCommitValue, decode_key, decode_value
from bridge.audit.wire import RecordError
from bridge.kafka.offsets_log import OffsetsLogFollower
from zkpaths.codecs.consumer import ConsumerRegistration, encode_consumer_registration

TARGET_P99_S = 0.200  # old consumer commit in ZooKeeper -> Kafka

wall = time.time


@dataclass
class Arrival:
    offset: int
    arrived: float  # wall clock, when the follower's poll returned it
    committed: float  # the record's commit timestamp (broker clock), s


@dataclass
class ZkResult:
    groups: int
    partitions: int
    writes: int = 0
    rate: float = 0.0  # acknowledged offset writes/s
    behind: float = 0.0  # worst send behind schedule (s)
    lat_arrival: list[float] = field(default_factory=list)
    lat_commit_ts: list[float] = field(default_factory=list)
    unseen: int = 0
    warmup_s: float = 0.0
    warm: bool = True
    busy: Window | None = None  # the bridge's groups flow during the timed commits


class KafkaSide:
    """The follower thread: every offset commit record of the bench's groups, timed."""

    def __init__(self, bootstrap: str, prefix: str) -> None:
        self.prefix = prefix
        self.follower = OffsetsLogFollower(bootstrap, start="end", wait=True)
        self.seen: dict[tuple[str, int], list[Arrival]] = defaultdict(list)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        consumer = self.follower.consumer
        while not self._stop.is_set():
            fetched = consumer.poll(timeout_ms=50, max_records=100_000)
            t = wall()
            for records in fetched.values():
                for rec in records:
                    self._record(rec.key, rec.value, t)

    def _record(self, key: bytes | None, value: bytes | None, t: float) -> None:
        if key is None or value is None:
            return
        try:
            k = decode_key(key)
            if not isinstance(k, OffsetCommitKey) or not k.group.startswith(self.prefix):
                return
            v = decode_value(k, value)
        except RecordError:
            return
        if isinstance(v, OffsetCommitValue):
            with self._lock:
                self.seen[(k.group, k.partition)].append(
                    Arrival(v.offset, t, v.commit_timestamp / 1000)
                )

    def first_at_least(self, group: str, partition: int, offset: int) -> Arrival | None:
        with self._lock:
            seen = list(self.seen.get((group, partition), ()))
        running = list(accumulate((a.offset for a in seen), max))
        i = bisect.bisect_left(running, offset)
        return seen[i] if i < len(seen) else None

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.follower.close()


class OldConsumers:
    """G' groups of one registered old consumer each, committing into ZooKeeper."""

    def __init__(self, connect: str, topic: str, prefix: str, groups: int, partitions: int):
        self.zk = KazooClient(connect)  # its session holds the ephemerals
        self.zk.start()
        self.topic = topic
        self.P = partitions
        self.groups = [f"{prefix}{g:03d}" for g in range(groups)]
        self.offset = [1] * groups
        #: (group index, partition, offset, wall time ZooKeeper acknowledged the write)
        self.acked: list[tuple[int, int, int, float]] = []
        self._lock = threading.Lock()

    def register(self) -> None:
        """Each group's old consumer as 0.10.2.2 leaves it after its rebalance: id,
        owners by the range assignment (one thread owns all), offsets at 1."""
        host = socket.gethostname()
        for g, group in enumerate(self.groups):
            cid = zkpaths.make_consumer_id(group, host, int(wall() * 1000), uuid.uuid4())
            reg = ConsumerRegistration({self.topic: 1}, timestamp_ms=int(wall() * 1000))
            self.zk.create(
                zkpaths.consumer_id_path(group, cid),
                encode_consumer_registration(reg),
                ephemeral=True,
                makepath=True,
            )
            thread = zkpaths.thread_id(cid, 0)
            owners = zkpaths.legacy_range_assign({self.topic: [thread]}, {self.topic: self.P})
            for tp, owner in sorted(owners.items()):
                self.zk.create(
                    zkpaths.owner_path(group, tp.topic, tp.partition),
                    zkpaths.encode_owner(owner),
                    ephemeral=True,
                    makepath=True,
                )
            self.commit(g, wait=True)

    def commit(self, g: int, wait: bool = False) -> None:
        """Group ``g``'s consumer commits every partition at its current offset."""
        data = zkpaths.encode_offset(self.offset[g])
        pending = []
        for p in range(self.P):
            path = zkpaths.offset_path(self.groups[g], self.topic, p)
            if wait:
                self.zk.ensure_path(path)
                self.zk.set(path, data)
                continue
            r = self.zk.set_async(path, data)
            r.rawlink(partial(self._acked, g, p, self.offset[g]))
            pending.append(r)

    def _acked(self, g: int, p: int, offset: int, result) -> None:
        t = wall()
        if result.exception is None:
            with self._lock:
                self.acked.append((g, p, offset, t))

    def close(self) -> None:
        self.zk.stop()
        self.zk.close()


def wait_visible(kafka: KafkaSide, zk: OldConsumers, timeout: float) -> bool:
    """Until every group's every partition shows its last offset in Kafka."""
    deadline = wall() + timeout
    while wall() < deadline:
        if all(
            kafka.first_at_least(group, p, zk.offset[g]) is not None
            for g, group in enumerate(zk.groups)
            for p in range(zk.P)
        ):
            return True
        time.sleep(0.1)
    return False


def run_phase(
    connect: str,
    bootstrap: str,
    topic: str,
    run: str,
    groups: int,
    partitions: int,
    rate: float,
    seconds: float,
    drain_s: float = 30.0,
    meter: Watcher | None = None,
) -> ZkResult:
    """Register the old consumers, let the bridge take them in, then the timed commits
    (``meter``: the bridge's metrics scraped around those alone, into ``r.busy``)."""
    prefix = f"bench-zk-{run}-"
    r = ZkResult(groups, partitions)
    kafka = KafkaSide(bootstrap, prefix)  # at the end before any of the groups exist
    zk = OldConsumers(connect, topic, prefix, groups, partitions)
    try:
        t0 = wall()
        zk.register()
        r.warm = wait_visible(kafka, zk, 60 + groups * partitions / 100)
        r.warmup_s = wall() - t0
        with zk._lock:
            zk.acked.clear()
        if meter is not None:
            meter.start()
        _load(zk, rate, seconds, r)
        if meter is not None:
            r.busy = meter.stop()
        wait_visible(kafka, zk, drain_s)
        _score(kafka, zk, r)
    finally:
        zk.close()
        kafka.close()
    return r


def _load(zk: OldConsumers, rate: float, seconds: float, r: ZkResult) -> None:
    interval = zk.P / rate
    n = max(1, round(seconds * rate / zk.P))
    print(
        f"old consumers: {n} ZooKeeper commits of {zk.P} offsets, one every "
        f"{interval * 1000:.1f} ms ({rate:.0f} updates/s for {seconds:.0f} s) ...",
        flush=True,
    )
    t0 = time.perf_counter() + 0.05
    for i in range(n):
        due = t0 + i * interval
        if (wait := due - time.perf_counter()) > 0:
            time.sleep(wait)
        r.behind = max(r.behind, time.perf_counter() - due)
        g = i % len(zk.groups)
        zk.offset[g] += 1
        zk.commit(g)
    deadline = wall() + 30
    while len(zk.acked) < n * zk.P and wall() < deadline:
        time.sleep(0.01)


def _score(kafka: KafkaSide, zk: OldConsumers, r: ZkResult) -> None:
    with zk._lock:
        acked = list(zk.acked)
    r.writes = len(acked)
    if acked:
        span = max(a[3] for a in acked) - min(a[3] for a in acked)
        r.rate = len(acked) / span if span > 0 else 0.0
    for g, p, offset, t in acked:
        a = kafka.first_at_least(zk.groups[g], p, offset)
        if a is None:
            r.unseen += 1
            continue
        r.lat_arrival.append(a.arrived - t)
        r.lat_commit_ts.append(a.committed - t)


def report(r: ZkResult, rate: float, seconds: float) -> tuple[float, bool]:
    """The phase's printed figures; returns the p99 and whether the target was met."""
    lat = r.lat_arrival
    p99 = pct(lat, 99) if lat else float("inf")
    print(
        f"  old consumers' ZooKeeper commits -> Kafka ({r.groups} groups x {r.partitions} "
        "partitions, storage mode zookeeper):"
    )
    print(f"    registered -> every first offset in Kafka   {r.warmup_s:9.2f} s")
    print(f"    ZooKeeper offset writes acknowledged        {r.writes} ({r.rate:.0f}/s)")
    print(f"    worst send behind schedule                 {r.behind * 1000:9.1f} ms")
    print(f"    write acked -> record in Kafka (follower)  {dist(lat)}")
    split = [a - c for a, c in zip(lat, r.lat_commit_ts, strict=True)]
    print(f"      of which: -> the bridge's commit         {dist(r.lat_commit_ts)}")
    print(f"      and then: -> visible (markers, fetch)    {dist(split)}")
    print(f"    unseen in Kafka (must be 0)                {r.unseen}")
    if lat and p99 > TARGET_P99_S:
        print(
            "    where the time goes: up to the bridge's commit, the tick in progress when the\n"
            "      write's data watch fired (it wakes the next one at once) and that tick's\n"
            "      work for every group in scope (Kafka reads, decisions, the fenced writes;\n"
            "      only the nodes whose watch fired are read again), then the copier's\n"
            "      OffsetFetch (and DescribeGroups of partitions no proxy holds) under its\n"
            "      lock, behind the cycle before\n"
            "      (docs/benchmarks.md)"
        )
    if not r.warm:
        print("  ! the bridge did not copy the registered groups' first offsets into Kafka")
    return p99, p99 <= TARGET_P99_S and r.unseen == 0 and r.writes > 0


def markdown(r: ZkResult, rate: float) -> str:
    lat = r.lat_arrival
    p50, p99 = (pct(lat, 50), pct(lat, 99)) if lat else (float("inf"), float("inf"))
    return (
        f"| {time.strftime('%Y-%m-%d')} | {r.groups}x{r.partitions} old consumers | "
        f"{rate:.0f}/s: {r.rate:.0f}/s | p50 {p50 * 1000:.0f} / p99 {p99 * 1000:.0f} ms, "
        f"{r.unseen} unseen |"
    )


def target_line(r: ZkResult, p99: float, ok: bool) -> str:
    return (
        f"  old consumer commit in ZooKeeper -> Kafka (zookeeper mode) p99 <= "
        f"{TARGET_P99_S * 1000:.0f} ms: p99 {p99 * 1000:.0f} ms, {r.unseen} unseen"
        f"{'':<2}{verdict(ok)}"
    )


__all__ = ["TARGET_P99_S", "ZkResult", "markdown", "report", "run_phase", "target_line", "pct"]
