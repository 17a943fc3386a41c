"""What the bridge holds for good, kept out of the cyclic collector's full collections.

At fleet size the bridge holds a few million long-lived references (the owned paths and
their markers, the known tree, Kafka's committed offsets of every group). CPython's full
collection walks every one: at 10,000 groups x 100 partitions each took 0.5-2.5 s and came
every 1-12 s, a pause of every thread (the commit p99 of 1-2 s at that size). Most of it
is the same data each time, held from one pass to the next.

So every ``settle_s`` (15 s), between ticks, the bridge collects in full what is not frozen
yet and freezes what survived (``gc.freeze``): each collection walks only what came since
the last one. Frozen objects are still freed when dropped (reference counting); only a
cycle that was alive at a freeze (a request in flight) and dies later waits, until the
next refresh (``refresh_s``, an hour) unfreezes everything and collects it in full once.
Every full collection's pause is in ``zkbridge_gc_pause_seconds``.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable

from bridge.metrics import METRICS

log = logging.getLogger(__name__)

#: how often what came since the last freeze is collected and frozen
SETTLE_S = 15.0
#: how often everything frozen is collected again (a cycle frozen alive waits this long)
REFRESH_S = 3600.0
#: CPython's third threshold (young collections of the middle generation per full one;
#: its default 10). With the long-lived data frozen, CPython's other condition for a full
#: collection (survivors since the last one a quarter of what it walks) always holds, so at
#: 5,000 offset updates/s a full collection came every 0.8 s: 75 pauses of about 60 ms in
#: a minute at 10,000 groups x 100 (``bench.fleet``). Ten times fewer; the settle every
#: ``SETTLE_S`` still collects what came since.
FULL_EVERY = 100


class LongLivedHeap:
    """Collect and freeze when due (``between_ticks``); time every full collection."""

    def __init__(
        self,
        settle_s: float = SETTLE_S,
        refresh_s: float = REFRESH_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settle_s = settle_s
        self.refresh_s = refresh_s
        self.clock = clock
        self._refreshed = self._settled = clock()
        self._started: float | None = None
        self.freezes = 0
        self._thresholds = gc.get_threshold()  # CPython's, put back at ``uninstall``

    def install(self) -> None:
        """Time the process's full collections (``zkbridge_gc_pause_seconds``), and make
        CPython's own ones rarer (``FULL_EVERY``)."""
        if self._timed not in gc.callbacks:
            gc.callbacks.append(self._timed)
            self._thresholds = gc.get_threshold()
            young, middle, _ = self._thresholds
            gc.set_threshold(young, middle, FULL_EVERY)

    def uninstall(self) -> None:
        """The flows stopped (a standby now): the collector walks everything again."""
        if self._timed in gc.callbacks:
            gc.callbacks.remove(self._timed)
            gc.set_threshold(*self._thresholds)
        gc.unfreeze()

    def between_ticks(self) -> None:
        """Settle when ``settle_s`` passed since the last time."""
        if self.clock() - self._settled >= self.settle_s:
            self.settle()

    def settle(self) -> float:
        """Collect what is not frozen yet (everything, once per ``refresh_s``), then freeze
        the survivors. Returns the collection's seconds."""
        now = self._settled = self.clock()
        refresh = now - self._refreshed >= self.refresh_s
        if refresh:
            gc.unfreeze()
            self._refreshed = now
        started = time.perf_counter()
        collected = gc.collect()
        gc.freeze()
        spent = time.perf_counter() - started
        self.freezes += 1
        log.debug(
            "heap settled: %d collected in %.3f s, %d objects frozen%s",
            *(collected, spent, gc.get_freeze_count(), " (refreshed)" if refresh else ""),
        )
        return spent

    def _timed(self, phase: str, info: dict) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        elif self._started is not None:
            METRICS.gc_pause.observe(time.perf_counter() - self._started)
            self._started = None
