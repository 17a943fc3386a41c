"""The consumer-tree nodes the bridge owns, what it last read of them, and how it writes.

The groups flow plans against ``known`` (each node's data and version as last read) and the
fenced writer applies the plan conditional on those versions. Keeping ``known`` true is this
class's one job, at a cost that follows what changed: the ledger and the owned nodes are read
in full once per term; after that the bridge's own fenced writes keep them true, so the
periodic safety net verifies them a page of groups per tick, and a write ZooKeeper refuses (a
node was not as read: someone else changed it) re-reads only that group.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from functools import partial

from kazoo.exceptions import NoNodeError

import zkpaths
from bridge.decide.known import KnownNodes
from bridge.decide.plan import Desired, Node, plan_writes
from bridge.metrics import METRICS
from bridge.zookeeper.verification import GroupsRead, VerifyRead, group_of, read_groups
from bridge.zookeeper.writer import BatchRejected, FencedWriter, Sent, read_nodes

log = logging.getLogger(__name__)

#: (subject, message, kind): the flow's once-per-subject report
Report = Callable[[str, str, str], None]
#: groups cut into pages of about a budget of nodes (the flow's paging)
Pager = Callable[[list[str], dict[str, int], int], list[list[str]]]

#: a page of the background verification holds about this many owned nodes, each read
#: again with its ledger marker (about 0.1 ms of the tick's thread per read on a loaded
#: 2-core machine): a page delays a commit that arrives meanwhile by tens of milliseconds
VERIFY_PAGE_NODES = 200
#: and one page's read is started at most this often (on its own thread:
#: ``bridge.zookeeper.verification``). Unpaced, pages of 2,000 offsets back to
#: back took 78 % of an idle bridge's main thread at 10,000 groups x 100 partitions, and
#: commits waited behind them (p99 13.5 s). Paced, a pass over 1,000,000 offset nodes
#: takes about a quarter of an hour (the resync waits for it), 10,000 nodes a few seconds.
VERIFY_EVERY_S = 0.2


def _root_of(path: str) -> str:
    """``/consumers/<g>`` of a path below it ("" for ``/consumers`` itself)."""
    g = group_of(path)
    return zkpaths.consumer_group_path(g) if g else ""


class OwnedTree:
    """``known`` for the nodes under ``/consumers``, read in full once, then in pages."""

    def __init__(self, zk, writer: FencedWriter, scopes: tuple[str, ...], report: Report) -> None:
        self.zk = zk
        self.writer = writer
        self.scopes = scopes
        self.report = report
        self.known: KnownNodes = KnownNodes()
        #: the paths in ``known`` the bridge does not own (read for a decision); every
        #: other known path is owned, so pruning ``known`` costs what this set holds
        self.foreign: set[str] = set()
        #: how the nodes others write too (``refresh``) are read before a write: the flow
        #: reads them through its watches (only the ones changed since are read again)
        self.read_fresh: Callable[[list[str]], dict[str, Node]] = partial(read_nodes, zk)
        #: how a page of groups is read (the ledger below them, the nodes it lists)
        self.read_groups: Callable[[list[str]], GroupsRead] = partial(
            read_groups, zk, writer.ledger
        )
        self.verify_read = VerifyRead()  # the verification's page under way
        #: whether this term read the ledger in full yet; then the pages still to verify
        self.loaded = False
        self.verifying: list[list[str]] = []
        #: the pages queued at the term's start read only the groups still pending (the
        #: others were read at their first decision); when the last page was verified
        self._first_pass = False
        self._verified_at = float("-inf")
        #: groups taken over (with shares: another bridge wrote them since) whose ledger and
        #: nodes are not read yet: read at their first tick (``ensure``) or by a page
        self.pending: set[str] = set()
        #: groups whose owned nodes, read again, were not as known (someone else changed
        #: them, a write was refused): their decision is due again (``take_drifted``)
        self.drifted: set[str] = set()
        #: a deferred write's batches in flight (``write(defer=True)``), with the groups
        #: they write and what a refused batch is retried from; taken by ``land``
        self._landing: tuple[Sent, set[str], Mapping[str, Desired], set[str] | None] | None
        self._landing = None

    def land(self, groups: Iterable[str] | None = None) -> None:
        """Take the answers of the deferred write in flight (``write(defer=True)``) into
        ``known`` and the ledger: before anything reads them for its groups (``groups``,
        None: any), and before anything more is planned or sent. A refused batch is
        retried group by group, as in ``write``."""
        landing = self._landing
        if landing is None or (groups is not None and landing[1].isdisjoint(groups)):
            return
        self._landing = None
        self.writer.in_flight = None
        sent, _, desired, scope = landing
        try:
            self.writer.finish(sent, self.known)
        except BatchRejected as exc:
            log.warning("group batch rejected (%s); retrying group by group", exc)
            METRICS.zk_errors.labels(kind=type(exc.error).__name__).inc()
            self._apply_per_group(desired, scope)

    def owned(self, held: Callable[[str], bool] | None = None) -> set[str]:
        """The owned nodes under ``/consumers``; with ``held``, of the groups it holds."""
        self.land()
        groups = self.writer.ledger.owned.groups()
        if held is not None:
            groups = {g for g in groups if held(g)}
        return self.of_groups(groups, root=True)

    def of_groups(self, groups: Iterable[str], root: bool = False) -> set[str]:
        """The owned nodes of ``groups`` (and ``/consumers`` itself with ``root``), from
        the ledger's index: what those groups hold, not a pass over every owned node."""
        groups = groups if isinstance(groups, (set, frozenset, list)) else list(groups)
        self.land(groups)
        ledger = self.writer.ledger.owned
        out = ledger.of_groups(groups)
        if root and zkpaths.CONSUMERS in ledger:
            out.add(zkpaths.CONSUMERS)
        return out

    def resync(self, pager: Pager, held: Callable[[str], bool] | None = None) -> bool:
        """At a term's start, ``/consumers`` itself, every group with ledger markers (of
        ``held``) pending: read at its first decision (``ensure``) or by a background page,
        so a new leader decides its first groups (a mixed group's proxies must join within
        the old proxies' session) without reading every group first (20 s at 3,000
        groups under load). Later, every group queued for :meth:`verify_page` again
        (nothing is walked whole on the service's timer), unless a verification is still
        under way: at 1,000,000 offset nodes one outlasts ``bridge.resync_interval_s``,
        and starting over verified the first groups again and again, never the last.
        Returns whether a verification was queued."""
        self.land()
        if not self.loaded:
            self.writer.ledger.load(self.zk, [], nodes=self.scopes)
            self.known = KnownNodes(read_nodes(self.zk, sorted(self.owned())))
            self.foreign = set()
            self.pending = set(self.groups_where(held or (lambda g: True)))
            self.loaded = True
            pending = dict.fromkeys(self.pending, 1)
            self.verifying = pager(sorted(pending), pending, VERIFY_PAGE_NODES)
            self._first_pass = True
            return True
        if self.verifying:  # but groups taken over since are read by a page too
            queued = {g for page in self.verifying for g in page}
            if extra := sorted(self.pending - queued):
                self.verifying += pager(extra, dict.fromkeys(extra, 1), VERIFY_PAGE_NODES)
            return False
        sizes = self.writer.ledger.owned.sizes()  # /consumers itself: read at term start
        sizes.update({g: sizes.get(g, 1) for g in self.pending})
        if held is not None:
            sizes = {g: n for g, n in sizes.items() if held(g)}
        self.verifying = pager(sorted(sizes), sizes, VERIFY_PAGE_NODES)
        self._first_pass = False
        return True

    def take_over(self, groups: Iterable[str]) -> None:
        """Read ``groups`` again before their next decision (``ensure``), not now: a bridge
        taking over 1,500 groups read them all before its first tick (9 s here), while a
        mixed group among them must have its proxies started within the old proxies'
        session timeout."""
        groups = set(groups)
        self.land(groups)
        self.pending |= groups
        self.verify_read.touched(groups)  # another bridge wrote them since a page's read

    def ensure(self, groups: Iterable[str]) -> None:
        """Read the ones of ``groups`` taken over and not read yet (a tick's scope, before
        its decisions)."""
        todo = self.pending.intersection(groups)
        if todo:
            self.reload(sorted(todo))

    def groups_where(self, wanted: Callable[[str], bool]) -> list[str]:
        """The groups with ledger markers (in ZooKeeper now, or indexed) that ``wanted``
        keeps: with shares, a share's groups, including those another bridge created."""
        self.land()
        try:
            listed = self.zk.get_children(self.writer.ledger.marker(zkpaths.CONSUMERS))
        except NoNodeError:
            listed = []
        return sorted(g for g in set(listed) | self.writer.ledger.owned.groups() if wanted(g))

    def verify_page(self, now: float | None = None) -> None:
        """Compare the page whose read ended, then start reading the next page ``resync``
        queued, unless one was started less than ``VERIFY_EVERY_S`` ago. A deferred write
        lands only when the page compared has its groups (``_adopt_groups``): landed here
        at every tick's start, the service's writes waited for before the tick read Kafka
        (14 s of 60 s of commits at 10,000 groups). A page read is sent after any write in
        flight, on the same session: ZooKeeper answers it with those writes applied."""
        now = time.monotonic() if now is None else now
        if self.verify_read.ready():
            read, again = self.verify_read.take()
            if read is not None:
                self._adopt_groups(read)
            if again:
                self.verifying.append(again)
        if self.verify_read.pending or not self.verifying:
            return
        if now - self._verified_at < VERIFY_EVERY_S:
            return
        self._verified_at = now
        page = self.verifying.pop(0)
        if self._first_pass:
            page = [g for g in page if g in self.pending]
            self._first_pass = bool(self.verifying)
        if page:
            self.verify_read.start(page, self.read_groups)

    def reload(self, groups: list[str]) -> None:
        """The ledger below each of ``groups`` and their owned nodes, read again now."""
        self.land(groups)
        if groups:
            self.verify_read.touched(groups)
            self._adopt_groups(self.read_groups(list(groups)))

    def _adopt_groups(self, read: GroupsRead) -> None:
        """What was read of a page of groups replaces what was known of them; the groups
        whose owned nodes were not as known are due (``drifted``)."""
        chosen = set(read.groups)
        self.pending -= chosen
        owned = self.of_groups(chosen)
        before = owned | {p for p in self.foreign if group_of(p) in chosen}
        self.writer.ledger.adopt(read.ledger, read.scopes)
        was = {p: self.known.pop(p, None) for p in before}
        self.foreign -= before
        fresh = read.nodes
        self.known.update(fresh)
        self.drifted.update(group_of(p) for p in owned | set(fresh) if was.get(p) != fresh.get(p))

    def close(self) -> None:
        """The term ended: no page's read is compared after this, and a deferred write's
        answers are not taken (the flow and its known tree go with the term)."""
        self._landing = None
        self.writer.in_flight = None
        self.verify_read.drop()
        self.verify_read.close()

    def take_drifted(self) -> set[str]:
        """The groups found drifted since the last call (``drifted``)."""
        drifted, self.drifted = self.drifted, set()
        return drifted

    def write(
        self,
        desired: Mapping[str, Desired],
        refresh: set[str],
        owned: set[str],
        scope: set[str] | None,
        defer: bool = False,
    ) -> int:
        """Plan the difference between ``desired`` and the nodes as known (``refresh``:
        read again first) and apply it fenced; a rejected batch is retried group by group.
        The number of operations written. ``defer``: the batches are sent and their
        answers taken later (``land``): a cold start's page is written while the next
        one is decided (waiting for each page's answers was a third of the main thread,
        with ZooKeeper idle while the bridge decided and the bridge idle while it wrote)."""
        self.land()
        unknown = [p for p in desired if p not in self.known or p in refresh]
        self.verify_read.touched(self._adopt(self._read_present(unknown), refresh))
        plan = plan_writes(desired, self.known, owned, self.writer.session_id)
        for c in plan.conflicts:
            self.report(c.path, f"not writing node: {c.reason}", "conflict")
        self._forget_foreign(desired)
        if not plan.ops:
            return 0
        written = {group_of(op.path) for op in plan.ops}
        self.verify_read.touched(written)
        if defer:
            self._landing = (self.writer.send(plan.ops), written, desired, scope)
            self.writer.in_flight = self.land
            return len(plan.ops)
        try:
            self.writer.apply(plan.ops, self.known)
            return len(plan.ops)
        except BatchRejected as exc:
            log.warning("group batch rejected (%s); retrying group by group", exc)
            METRICS.zk_errors.labels(kind=type(exc.error).__name__).inc()
            return self._apply_per_group(desired, scope)

    def _apply_per_group(self, desired: Mapping[str, Desired], scope: set[str] | None) -> int:
        """After a rejected batch: re-read the groups, then write each on its own, so that
        one group's race with an old consumer does not hold back the others."""
        self.reload(sorted({group_of(p) for p in desired} - {""}))
        self._adopt(read_nodes(self.zk, [p for p in desired if p not in self.known]), set())
        owned = self.owned() if scope is None else self.of_groups(scope)
        plan = plan_writes(desired, self.known, owned, self.writer.session_id)
        self._forget_foreign(desired)
        by_group: dict[str, list] = {}
        for op in plan.ops:
            by_group.setdefault(group_of(op.path), []).append(op)
        written = 0
        for group, ops in by_group.items():
            try:
                self.writer.apply(ops, self.known)
                written += len(ops)
            except BatchRejected as exc:
                self.report(group, f"ZooKeeper refused a write ({exc}); will retry", "rejected")
                self.reload([group] if group else [])
                self.drifted.update([group] if group else [])
        return written

    def _read_present(self, paths: list[str]) -> dict[str, Node]:
        """``read_fresh`` of ``paths``, but a group's nodes only once its ``/consumers/<g>``
        is known to exist: the groups of a cold start's page are not in ZooKeeper yet, and
        reading each of their nodes was thousands of NoNode answers a page (py-spy at 1,000
        groups x 50: 45 % of the cold start). One round more, for new groups only."""
        roots = {zkpaths.consumer_group_path(g) for g in {group_of(p) for p in paths} - {""}}
        unsure = sorted(r for r in roots if r not in self.known)
        present = self.read_fresh(unsure) if unsure else {}
        absent = set(unsure) - set(present)
        rest = [p for p in paths if p not in present and _root_of(p) not in absent]
        return {**present, **self.read_fresh(rest)}

    def _adopt(self, fresh: dict[str, Node], refresh: set[str]) -> set[str]:
        """What was just read replaces what was known (``refresh``: read again, gone if
        absent now), so the planner and the known tree agree; updated in place, since
        ``known`` holds every owned node (a copy per tick cost what the tree holds).
        Returns the groups of the nodes found otherwise than known."""
        changed: set[str] = set()
        for p in refresh:
            if fresh.get(p) != self.known.pop(p, None):
                changed.add(group_of(p))
        for p, node in fresh.items():
            if p not in refresh and self.known.get(p) != node:
                changed.add(group_of(p))
        self.known.update(fresh)
        owned = self.writer.ledger.owned
        self.foreign.update(p for p in fresh if p not in owned)
        return changed

    def _forget_foreign(self, desired: Mapping[str, Desired]) -> None:
        """Drop the known nodes that are neither owned nor wanted now (others' nodes read
        for an earlier decision): read again when next wanted, never planned on stale."""
        owned = self.writer.ledger.owned
        for p in [p for p in self.foreign if p not in desired or p in owned]:
            self.foreign.discard(p)
            if p not in owned:
                self.known.pop(p, None)
