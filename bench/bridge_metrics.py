"""Where the bridge's time went in a bench's phase, read from its own ``/metrics``.

The bench's bridge serves its metrics on a free port and logs the address. Scraped before
and after a phase, the difference of ``zkbridge_flow_phase_seconds`` says which part of
the groups flow's passes the phase's latency went to, ``zkbridge_flow_tick_seconds`` how
many passes ran long, and ``zkbridge_gc_pause_seconds`` what the collector paused: the
figures docs/benchmarks.md used to get from a py-spy profile or a patched build.
"""

from __future__ import annotations

import re
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

_ADDRESS = re.compile(r"serving /metrics.*\[address=([\w.:-]+)\]")
SLOW_S = 0.1  # a pass longer than this held a commit back by as much (a bucket bound)

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def metrics_address(log: Path) -> str | None:
    """``host:port`` the bridge logged for its metrics, None before it did."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None
    m = _ADDRESS.search(text)
    return m.group(1) if m else None


def scrape(address: str, timeout: float = 10.0) -> Samples:
    """Every sample of the bridge's metrics, keyed by name and sorted labels."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=timeout) as r:
        return parse(r.read().decode())


def parse(text: str) -> Samples:
    """Prometheus' text format as samples keyed by name and sorted labels."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


@dataclass
class Window:
    """What the groups flow did between two scrapes."""

    ticks: int = 0
    slow_ticks: int = 0  # passes over SLOW_S
    tick_s: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)  # seconds per phase
    gc_count: int = 0
    gc_s: float = 0.0
    wall_s: float = 0.0  # the window's length
    taken: int = 0  # offsets taken from commit records as they are (flows.read_marks)
    echoes: int = 0  # records that were the bridge's own commits (kafka.own_commits)


def window(before: Samples, after: Samples, flow: str = "groups") -> Window:
    """The difference of two scrapes for ``flow``."""

    def delta(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    w = Window()
    w.ticks = round(delta("zkbridge_flow_tick_seconds_count", flow=flow))
    w.tick_s = delta("zkbridge_flow_tick_seconds_sum", flow=flow)
    fast = delta("zkbridge_flow_tick_seconds_bucket", flow=flow, le=str(SLOW_S))
    w.slow_ticks = w.ticks - round(fast)
    for name, labels in after:
        lab = dict(labels)
        if name == "zkbridge_flow_phase_seconds_sum" and lab.get("flow") == flow:
            w.phases[lab["phase"]] = delta(name, **lab)
    w.gc_count = round(delta("zkbridge_gc_pause_seconds_count"))
    w.gc_s = delta("zkbridge_gc_pause_seconds_sum")
    w.taken = round(delta("zkbridge_commit_records_taken_total"))
    w.echoes = round(delta("zkbridge_own_commit_records_total"))
    return w


def describe(w: Window | None) -> list[str]:
    """The window as report lines: passes, their phases by time spent, the collector."""
    if w is None:
        return ["    (the bridge's metrics could not be read: no breakdown)"]
    wall_s = max(w.wall_s, 1e-9)
    if w.ticks == 0:
        return ["    the groups flow ran no pass (metrics not scraped?)"]
    lines = [
        f"    groups flow: {w.ticks} passes, {w.tick_s:.1f} s of {wall_s:.1f} s "
        f"({w.tick_s / wall_s:.0%}), {w.slow_ticks} over {SLOW_S * 1000:.0f} ms"
    ]
    ranked = sorted(w.phases.items(), key=lambda kv: -kv[1])
    lines.append("      by phase: " + ", ".join(f"{p} {s:.2f} s" for p, s in ranked if s >= 0.005))
    lines.append(f"    full collections: {w.gc_count}, {w.gc_s:.2f} s paused")
    lines.append(
        f"    offsets taken from their records, not read: {w.taken}; "
        f"records of the bridge's own commits: {w.echoes}"
    )
    return lines


class Watcher:
    """Scrapes the bench's bridge around a phase; silent when it cannot (no figures)."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self._before: Samples | None = None
        self._at = 0.0

    def _scrape(self) -> Samples | None:
        address = metrics_address(self.log)
        if address is None:
            return None
        try:
            return scrape(address)
        except OSError:
            return None

    def start(self) -> None:
        self._before = self._scrape()
        self._at = time.perf_counter()

    def stop(self) -> Window | None:
        after = self._scrape()
        if self._before is None or after is None:
            return None
        w = window(self._before, after)
        w.wall_s = time.perf_counter() - self._at
        return w
