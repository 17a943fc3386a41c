"""``bridge.heap``: what survives a reconcile pass is frozen out of the cyclic collector's
full collections; cycles that die later are still collected, at the latest at a refresh."""

from __future__ import annotations

import gc
import weakref

import pytest

from bridge.heap import LongLivedHeap
from bridge.metrics import METRICS


class Cycle:
    def __init__(self) -> None:
        self.me = self


@pytest.fixture(autouse=True)
def _unfrozen():
    """Freezing is process-wide: the rest of the session gets its collector back."""
    yield
    gc.unfreeze()


def _pauses() -> float:
    return METRICS.registry.get_sample_value("zkbridge_gc_pause_seconds_count") or 0.0


def test_what_survives_is_frozen_and_what_comes_after_is_collected():
    heap = LongLivedHeap()
    held = [Cycle() for _ in range(100)]  # the long-lived state
    heap.settle()
    assert gc.get_freeze_count() >= len(held)
    walked = {id(o) for o in gc.get_objects()}  # what a full collection walks
    assert not any(id(c) in walked for c in held)
    later = Cycle()
    gone = weakref.ref(later)
    del later
    gc.collect()  # walks what came after the freeze only: the new cycle is found
    assert gone() is None


def test_a_cycle_frozen_alive_waits_for_the_refresh():
    clock = [0.0]
    heap = LongLivedHeap(refresh_s=3600, clock=lambda: clock[0])
    alive = Cycle()
    dies = weakref.ref(alive)
    heap.settle()  # frozen while alive
    del alive
    gc.collect()
    assert dies() is not None  # frozen: not walked (the price, bounded by the refresh)
    clock[0] += 1800
    heap.settle()
    assert dies() is not None  # not yet an hour
    clock[0] += 1800
    heap.settle()  # the refresh: unfrozen, collected in full
    assert dies() is None


def test_every_full_collection_is_timed():
    heap = LongLivedHeap()
    heap.install()
    try:
        before = _pauses()
        gc.collect()
        assert _pauses() == before + 1
        gc.collect(0)  # a young collection is not a full one
        assert _pauses() == before + 1
    finally:
        heap.uninstall()
    gc.collect()
    assert _pauses() == before + 1  # uninstalled


def test_settles_between_ticks_when_due():
    clock = [0.0]
    heap = LongLivedHeap(settle_s=15, clock=lambda: clock[0])
    heap.between_ticks()
    assert heap.freezes == 0
    clock[0] += 15
    heap.between_ticks()
    heap.between_ticks()
    assert heap.freezes == 1


def test_installed_full_collections_are_rarer_and_uninstalled_cpythons_own_again():
    """While installed, CPython starts a full collection after ``FULL_EVERY`` collections
    of the middle generation (its third threshold), not its default 10; a standby (flows
    stopped) gets the thresholds it had."""
    from bridge.heap import FULL_EVERY

    before = gc.get_threshold()
    heap = LongLivedHeap()
    heap.install()
    try:
        assert gc.get_threshold() == (before[0], before[1], FULL_EVERY)
        heap.install()  # installed twice (a new term): still CPython's to put back
    finally:
        heap.uninstall()
    assert gc.get_threshold() == before
