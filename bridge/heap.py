"""What the bridge holds for good, kept out of the cyclic collector's full collections.

At fleet size the bridge holds a few million long-lived references (the owned paths and
their markers, the known tree, Kafka's committed offsets of every group). CPython's full
collection walks every one: at 10,000 groups x 100 partitions each took 0.5-2.5 s and came
every 1-12 s, a pause of every thread (the commit p99 of 1-2 s at that size). Most of it
is the same data each time, held from one pass to the next.

So what survives a full collection is frozen right after it (``gc.freeze``, from the
collector's own callback: at that moment the younger generations are empty and nothing
but survivors is left to freeze), and each full collection walks only what survived since
the last one. Frozen objects are still freed when dropped (reference counting); only a
cycle that was alive at a freeze (a request in flight) and dies later waits, until the
next refresh (``refresh_s``, an hour) unfreezes everything and collects it in full once,
between ticks. Every full collection's pause is in ``zkbridge_gc_pause_seconds``.

A freeze every ``settle_s`` (15 s) after a collection of its own was tried first (run 10,
docs/benchmarks.md): the collections between two freezes walked up to 15 s of survivors,
30-90 ms each, every ~0.6 s.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable

from bridge.metrics import METRICS

log = logging.getLogger(__name__)

#: how often everything frozen is collected again (a cycle frozen alive waits this long)
REFRESH_S = 3600.0


class LongLivedHeap:
    """Once installed, what survives each full collection is frozen and every full
    collection timed; ``between_ticks`` collects everything again every ``refresh_s``."""

    def __init__(
        self, refresh_s: float = REFRESH_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.refresh_s = refresh_s
        self.clock = clock
        self._refreshed = clock()
        self._started: float | None = None
        self.freezes = 0

    def install(self) -> None:
        """Freeze the survivors of every full collection from now on, and time each one."""
        if self._collected not in gc.callbacks:
            gc.callbacks.append(self._collected)

    def uninstall(self) -> None:
        """The flows stopped (a standby now): the collector walks everything again."""
        if self._collected in gc.callbacks:
            gc.callbacks.remove(self._collected)
        gc.unfreeze()

    def between_ticks(self) -> None:
        """Refresh when ``refresh_s`` passed since the last time."""
        if self.clock() - self._refreshed >= self.refresh_s:
            self.refresh()

    def refresh(self) -> float:
        """Unfreeze and collect everything once: the cycles frozen alive that died since
        are freed, and (installed) the survivors frozen again. Returns the seconds."""
        self._refreshed = self.clock()
        gc.unfreeze()
        started = time.perf_counter()
        collected = gc.collect()
        spent = time.perf_counter() - started
        log.debug(
            "heap refreshed: %d collected in %.3f s, %d objects frozen",
            *(collected, spent, gc.get_freeze_count()),
        )
        return spent

    def _collected(self, phase: str, info: dict) -> None:
        """The collector's callback: a full collection timed, its survivors frozen (the
        younger generations were merged into the oldest and are empty now)."""
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
            return
        if self._started is not None:
            METRICS.gc_pause.observe(time.perf_counter() - self._started)
            self._started = None
        gc.freeze()
        self.freezes += 1
