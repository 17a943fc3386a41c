"""The phases of one pass of a flow, timed into ``zkbridge_flow_phase_seconds``.

A pass's total (``zkbridge_flow_tick_seconds``) says that a commit waited; its phases say
for what: the verification's page, the Kafka read, ZooKeeper's side, the decisions, the
storage modes or the fenced writes. ``bench.fleet`` prints them for its sustained phases.
"""

from __future__ import annotations

import time

from bridge.metrics import METRICS


class TickPhases:
    """A stopwatch over one pass: each ``mark`` ends the phase begun at the mark before."""

    def __init__(self, flow: str) -> None:
        self.flow = flow
        self.took: list[tuple[str, float]] = []  # (phase, seconds), in order
        self._at = time.perf_counter()

    def mark(self, phase: str) -> None:
        """The phase that just ended is ``phase``: its time observed and kept."""
        at = time.perf_counter()
        self.took.append((phase, at - self._at))
        METRICS.phase_seconds.labels(flow=self.flow, phase=phase).observe(at - self._at)
        self._at = at
