"""A reconcile in pages: every group read again and decided, a page per tick.

At fleet size a full read blocks a tick for long (10,000 groups x 100 partitions: 15-30 s
of DescribeGroups and OffsetFetch, commits waiting behind it), and writing every group
before the first is visible holds them all in memory. A pass lists the groups once, then
reads each page's groups from Kafka just before deciding them; the next page waits for the
next tick, so commits flow between pages.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from typing import Protocol

#: the groups flow's logger: a pass's lines are the flow's (reconcile progress)
log = logging.getLogger("bridge.flows.groups")

#: a page holds groups with about this many committed offsets (at most PAGE_GROUPS
#: groups, at least one): the first are written within a tick of the listing, not after
#: the last group was read, and a tick stays short enough for commits between pages
PAGE_OFFSETS = 2000
PAGE_GROUPS = 200
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

    def __init__(self, groups: Iterable[str]) -> None:
        self.left = deque(sorted(groups))
        self.total = len(self.left)
        self.started = self.logged = time.monotonic()
        self._read_groups = 0
        self._read_offsets = 0
        #: storage modes inferred during the pass (the first pass infers every group's)
        self.inferred: Counter[str] = Counter()

    @property
    def finished(self) -> bool:
        return not self.left

    def take(self, views: Mapping[str, HasOffsets]) -> list[str]:
        """The next page: groups in order until about ``PAGE_OFFSETS`` offsets."""
        guess = FIRST_GUESS
        if self._read_groups:
            guess = round(self._read_offsets / self._read_groups)
        page: list[str] = []
        held = 0
        while self.left and held < PAGE_OFFSETS and len(page) < PAGE_GROUPS:
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
