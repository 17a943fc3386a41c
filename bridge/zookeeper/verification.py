"""The owned tree's background verification, read off the tick's thread.

Each page of the verification reads the ledger below a few groups and the nodes it says
the bridge owns (a few hundred reads), then compares them with what the bridge knows. Read
on the tick's thread, a page held every commit that arrived meanwhile: 100-200 ms a page
with twenty groups of old consumers committing (``bench.fleet``, 1,000 x 100), 13 % of
the main thread at 5,000 updates/s. The reads now run here; the tick after they end
compares.

A group the tick writes (or reads again) while its page is read may have changed since
the read: ``touched`` marks it, and it is verified again in a later page instead, so the
known tree never goes back to an older read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import zkpaths
from bridge.decide.plan import Node
from bridge.zookeeper.writer import Ledger, LedgerRead, read_nodes

log = logging.getLogger(__name__)


def group_of(path: str) -> str:
    """The group of a ``/consumers/<g>/...`` path ("" for ``/consumers`` itself)."""
    parts = path.split("/", 3)
    return parts[2] if len(parts) > 2 else ""


@dataclass
class GroupsRead:
    """The ledger below each of ``groups`` and the owned nodes it lists there, as read."""

    groups: list[str]
    ledger: LedgerRead
    nodes: dict[str, Node]

    @property
    def scopes(self) -> list[str]:
        return [zkpaths.consumer_group_path(g) for g in self.groups]

    def only(self, keep: set[str]) -> GroupsRead:
        """The part of the read about the groups ``keep``."""
        owned = {p for p in self.ledger.owned if group_of(p) in keep}
        inner = {p for p in self.ledger.inner if group_of(p) in keep | {""}}
        nodes = {p: n for p, n in self.nodes.items() if group_of(p) in keep}
        return GroupsRead([g for g in self.groups if g in keep], LedgerRead(owned, inner), nodes)


def read_groups(zk, ledger: Ledger, groups: list[str]) -> GroupsRead:
    """Read ``groups``' ledger and owned nodes (reads only: any thread)."""
    found = ledger.read(zk, [zkpaths.consumer_group_path(g) for g in groups])
    return GroupsRead(list(groups), found, read_nodes(zk, sorted(found.owned)))


class VerifyRead:
    """One page of the verification read on a thread of its own."""

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="verify-read")
        self._future: Future[GroupsRead] | None = None
        self._page: list[str] = []
        self._touched: set[str] = set()

    @property
    def pending(self) -> bool:
        """A page is being read, or read and not taken yet."""
        return self._future is not None

    def start(self, page: list[str], read: Callable[[list[str]], GroupsRead]) -> None:
        self._page, self._touched = list(page), set()
        self._future = self._executor.submit(read, self._page)

    def touched(self, groups: Iterable[str]) -> None:
        """``groups`` were written or read again by the tick: the page's read may be older."""
        if self._future is not None:
            self._touched.update(g for g in groups if g in self._page)

    def ready(self) -> bool:
        return self._future is not None and self._future.done()

    def take(self) -> tuple[GroupsRead | None, list[str]]:
        """The read of the page's untouched groups (None if it failed) and the groups to
        verify again later. Call when ``ready``."""
        assert self._future is not None
        future, page, touched = self._future, self._page, self._touched
        self._future, self._page, self._touched = None, [], set()
        try:
            read = future.result()
        except Exception as exc:  # noqa: BLE001 - verified again in a later page
            log.debug("a verification page's read failed: %s: %s", type(exc).__name__, exc)
            return None, page
        keep = set(page) - touched
        return read.only(keep), sorted(touched)

    def drop(self) -> None:
        """Forget the page under way: its read ends on its own."""
        self._future, self._page, self._touched = None, [], set()

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
