"""bench.offsets_zk.windowed: the bench's large reads keep a bounded number in flight."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bench.offsets_zk import windowed


class Answer:
    """An answer counted as in flight from its request until the caller takes it."""

    def __init__(self, flight: list[int], item: str) -> None:
        self.flight, self.item = flight, item
        flight[0] += 1
        flight[1] = max(flight[1], flight[0])

    def get(self) -> str:
        self.flight[0] -= 1
        return self.item


@given(st.lists(st.text(max_size=3), max_size=60), st.integers(1, 10))
def test_every_item_answered_in_order_with_at_most_a_window_in_flight(items, window):
    flight = [0, 0]  # in flight now, most at once
    asked = windowed(items, lambda i: Answer(flight, i), window)
    taken = [(item, answer.get()) for item, answer in asked]
    assert taken == [(i, i) for i in items]
    assert flight[1] <= window
    if len(items) > window:  # the control: the window is actually used, not one at a time
        assert flight[1] == window
