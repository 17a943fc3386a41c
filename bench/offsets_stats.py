"""bench.offsets' small measures: percentiles, the printed distributions and verdicts, and
CPU per phase from ``/proc``; shared with bench.fleet."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

now = time.perf_counter


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
