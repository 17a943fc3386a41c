"""``bridge.heap``: what survives a full collection is frozen out of the cyclic collector's
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


@pytest.fixture
def heap():
    heap = LongLivedHeap()
    heap.install()
    yield heap
    heap.uninstall()


def test_what_survives_a_full_collection_is_frozen_and_what_comes_after_is_collected(heap):
    held = [Cycle() for _ in range(100)]  # the long-lived state
    gc.collect()
    assert heap.freezes >= 1
    assert gc.get_freeze_count() >= len(held)
    walked = {id(o) for o in gc.get_objects()}  # what a full collection walks
    assert not any(id(c) in walked for c in held)
    later = Cycle()
    gone = weakref.ref(later)
    del later
    gc.collect()  # walks what came after the freeze only: the new cycle is found
    assert gone() is None


def test_a_young_collection_freezes_nothing(heap):
    freezes, frozen = heap.freezes, gc.get_freeze_count()
    gc.collect(0)
    gc.collect(1)
    assert (heap.freezes, gc.get_freeze_count()) == (freezes, frozen)


def test_a_cycle_frozen_alive_waits_for_the_refresh():
    clock = [0.0]
    heap = LongLivedHeap(refresh_s=3600, clock=lambda: clock[0])
    heap.install()
    try:
        alive = Cycle()
        dies = weakref.ref(alive)
        gc.collect()  # frozen while alive
        del alive
        gc.collect()
        assert dies() is not None  # frozen: not walked (the price, bounded by the refresh)
        clock[0] += 1800
        heap.between_ticks()
        assert dies() is not None  # not yet an hour
        clock[0] += 1800
        heap.between_ticks()  # the refresh: unfrozen, collected in full
        assert dies() is None
        assert gc.get_freeze_count() > 0  # and what survived it frozen again
    finally:
        heap.uninstall()


def test_every_full_collection_is_timed_while_installed():
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
    assert gc.get_freeze_count() == 0  # a standby's collector walks everything again
    gc.collect()
    assert _pauses() == before + 1  # uninstalled
    assert gc.get_freeze_count() == 0
