"""bench.offsets' printed report: each phase's figures, the throughput beside the raw
ceiling, CPU per phase, and the targets as MET / MISSED with the docs' markdown row."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from bench.offsets_stats import dist, pct, verdict
from bench.offsets_zk import PhaseResult

if TYPE_CHECKING:
    from bench.offsets import OffsetBench

TARGET_RATE = 5000.0  # offset updates/s the mirror must sustain ...
TARGET_P99 = 0.5  # ... with commit -> visible p99 at most this (s)
TARGET_RATIO = 0.70  # peak mirror throughput / raw ZooKeeper ceiling


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
