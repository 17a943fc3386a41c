"""A reconcile in pages: every group read again and decided, a page per tick.

At fleet size a full read blocks a tick for long (10,000 groups x 100 partitions: 15-30 s
of DescribeGroups and OffsetFetch, commits waiting behind it), and writing every group
before the first is visible holds them all in memory. A pass lists the groups once, then
reads each page's groups from Kafka (on a thread of its own: ``PagePrefetch``) and decides
them in the tick after that read; commits flow between pages.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

#: the groups flow's logger: a pass's lines are the flow's (reconcile progress)
log = logging.getLogger("bridge.flows.groups")

#: a page holds groups with about this many committed offsets (at most PAGE_GROUPS
#: groups, at least one): the first are written within a tick of the listing, not after
#: the last group was read, and a tick stays short enough for commits between pages
PAGE_OFFSETS = 2000
PAGE_GROUPS = 200
#: a later pass (the safety net at each ``bridge.resync_interval_s``) is a background
#: one: pages this small, taken at most every BACKGROUND_EVERY_S. At 10,000 groups full
#: pages back to back kept a pass under way 85 % of the time, each tick deciding 2,000
#: offsets beside the commits it was for; paced, a pass over 1,000,000 offsets takes
#: about 400 s and a commit waits behind at most a small page. The first pass (a cold
#: start: nothing is mirrored yet) keeps full pages back to back.
BACKGROUND_PAGE_OFFSETS = 500
BACKGROUND_EVERY_S = 0.2
#: the offsets a group is taken to hold before it was read, until the pass read some
#: groups (then their mean): a cold start's first page is not 200 groups of 100 partitions
FIRST_GUESS = 100
#: seconds between two progress lines of a pass
PROGRESS_EVERY_S = 5.0


class HasOffsets(Protocol):
    offsets: Mapping


def pages(groups: list[str], sizes: dict[str, int], budget: int = PAGE_OFFSETS) -> list[list[str]]:
    """``groups`` cut into pages of about ``budget`` offsets, ``PAGE_GROUPS`` groups."""
    out: list[list[str]] = []
    page: list[str] = []
    held = 0
    for g in groups:
        page.append(g)
        held += max(1, sizes.get(g, 0))
        if held >= budget or len(page) >= PAGE_GROUPS:
            out.append(page)
            page, held = [], 0
    if page:
        out.append(page)
    return out


class ReconcilePass:
    """One pass over the groups a resync listed, in order: ``take`` the next page (sized
    by each group's offsets as last read, or the pass's mean so far), ``read`` what the
    page's read gave, with a progress line every ``PROGRESS_EVERY_S``."""

    def __init__(
        self, groups: Iterable[str], budget: int = PAGE_OFFSETS, every_s: float = 0.0
    ) -> None:
        self.left = deque(sorted(groups))
        self.budget = budget  # offsets a page holds
        self.every_s = every_s  # seconds at least between two pages taken
        self._taken_at = -float("inf")
        self.total = len(self.left)
        self.started = self.logged = time.monotonic()
        self._read_groups = 0
        self._read_offsets = 0
        #: storage modes inferred during the pass (the first pass infers every group's)
        self.inferred: Counter[str] = Counter()

    @property
    def finished(self) -> bool:
        return not self.left

    @classmethod
    def background(cls, groups: Iterable[str]) -> ReconcilePass:
        """A later pass: small pages, paced (see ``BACKGROUND_PAGE_OFFSETS``)."""
        return cls(groups, BACKGROUND_PAGE_OFFSETS, BACKGROUND_EVERY_S)

    def due(self, now: float | None = None) -> bool:
        """Whether the next page may be taken now (a background pass is paced)."""
        now = time.monotonic() if now is None else now
        return now - self._taken_at >= self.every_s

    def take(self, views: Mapping[str, HasOffsets]) -> list[str]:
        """The next page: groups in order until about ``budget`` offsets."""
        self._taken_at = time.monotonic()
        guess = FIRST_GUESS
        if self._read_groups:
            guess = round(self._read_offsets / self._read_groups)
        page: list[str] = []
        held = 0
        while self.left and held < self.budget and len(page) < PAGE_GROUPS:
            g = self.left.popleft()
            page.append(g)
            view = views.get(g)
            held += max(1, len(view.offsets) if view is not None else guess)
        return page

    def read(self, page: Iterable[str], views: Mapping[str, HasOffsets]) -> None:
        """The page was read: its groups' sizes guess the next pages'; a progress line
        every ``PROGRESS_EVERY_S``."""
        for g in page:
            view = views.get(g)
            if view is not None:
                self._read_groups += 1
                self._read_offsets += len(view.offsets)
        now = time.monotonic()
        if now - self.logged >= PROGRESS_EVERY_S and not self.finished:
            done, took = self.total - len(self.left), now - self.started
            log.info(
                "reconciling groups: %d of %d done (%.0f s%s)",
                *(done, self.total, took, self._modes()),
            )
            self.logged = now

    def finish(self) -> None:
        """The last page was decided and written: the pass's last line."""
        took = time.monotonic() - self.started
        log.info("reconciled %d groups in %.1f s%s", self.total, took, self._modes())

    def _modes(self) -> str:
        """``; storage modes inferred: kafka 460`` when any were (none: "")."""
        if not self.inferred:
            return ""
        counts = ", ".join(f"{mode} {n}" for mode, n in sorted(self.inferred.items()))
        return f"; storage modes inferred: {counts}"


class PagePrefetch:
    """The pass's next page read from Kafka on a thread of its own while ticks go on.

    A page's read (DescribeGroups and OffsetFetch of ~20 groups of 100 partitions: 30-220
    ms at 10,000 groups, decoded in kafka-python) made the tick that took it that much
    longer, and every commit waiting for that tick (commit -> visible p50 167 ms with the
    safety-net pass under way). Now the tick after the read ended decides the page.

    A group read here is as of the read: one whose records arrive later is read again for
    them, as any group. But one read again by a tick meanwhile (its records, a forced
    sync) may be newer than this read: ``touched`` marks it, and ``take`` leaves it to the
    tick (read there again), so no view ever goes back in time.
    """

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="page-read")
        self._future: Future | None = None
        self.page: list[str] = []
        self._asked: set[str] = set()
        self._stale: set[str] = set()

    @property
    def pending(self) -> bool:
        """A page is taken and not handed to a tick yet."""
        return self._future is not None

    def start(
        self,
        page: list[str],
        ask: Iterable[str],
        read: Callable[[list[str]], tuple[Mapping, Mapping[str, int]]],
    ) -> None:
        """``read`` of ``ask`` (the page's groups Kafka describes), for ``page``."""
        self.page, self._asked, self._stale = page, set(ask), set()
        self._future = self._executor.submit(read, sorted(self._asked))

    def touched(self, groups: Iterable[str]) -> None:
        """``groups`` were read by a tick, or are to be: their views here may be older."""
        if self._future is not None:
            self._stale.update(self._asked.intersection(groups))

    def ready(self) -> bool:
        return self._future is not None and self._future.done()

    def take(self) -> tuple[list[str], dict[str, object], set[str], dict[str, int]]:
        """The page, the views read for it still usable, the groups left to the tick
        (touched since, or the read failed: read in the tick instead), and the read's
        marks (``read_marks``). Call when ``ready``; ``read`` answered (views, marks)."""
        assert self._future is not None
        try:
            views, marks = self._future.result()
        except Exception as exc:  # noqa: BLE001 - the tick reads them itself and says so
            log.debug("a page's read failed (read in the tick): %s: %s", type(exc).__name__, exc)
            views, marks = {}, {}
        usable = {g: v for g, v in views.items() if g in self._asked and g not in self._stale}
        page, left = self.page, self._asked - usable.keys()
        self._future, self.page, self._asked, self._stale = None, [], set(), set()
        return page, usable, left, marks

    def reading(self, group: str) -> bool:
        """Whether ``group`` is in the page being read."""
        return self._future is not None and group in self._asked

    def drop(self) -> None:
        """Forget the page under way (a new pass): its read ends on its own."""
        self._future, self.page, self._asked, self._stale = None, [], set(), set()

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
