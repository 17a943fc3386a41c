"""Per-group storage-mode records under ``<root>/groups/<g>`` (see ``decide.migration``).

The active bridge creates a record, with the inferred mode, for every group it first sees;
operators change it with ``zk-bridge migrate``, one gated step at a time. Every write is
conditional on the version read, so two writers never lose each other's step; the bridge's
own writes are also fenced on its epoch (I3).
"""

from __future__ import annotations

import logging
import time
from collections import Counter

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.protocol.states import ZnodeStat

from bridge.decide.migration import GroupRecord, StorageMode, Transition
from bridge.decide.plan import Create, SetData
from bridge.zookeeper.answers import ABSENT, answer
from bridge.zookeeper.watched import WatchedChildren, WatchedData
from bridge.zookeeper.writer import BatchRejected, FencedWriter, OperatorWriter, missing_parents

log = logging.getLogger(__name__)


def records_path(root: str) -> str:
    return f"{root.rstrip('/')}/groups"


def record_path(root: str, group: str) -> str:
    return f"{records_path(root)}/{group}"


def read_records(zk: KazooClient, root: str) -> dict[str, tuple[GroupRecord, int]]:
    """Every group's record and its znode version; unreadable records are logged, skipped."""
    base = records_path(root)
    try:
        groups = zk.get_children(base)
    except NoNodeError:
        return {}
    pending = [(g, zk.get_async(f"{base}/{g}")) for g in groups]
    out: dict[str, tuple[GroupRecord, int]] = {}
    for g, result in pending:
        got = answer(result)
        if got is ABSENT:
            continue
        data, stat = got
        try:
            out[g] = (GroupRecord.decode(data), stat.version)
        except ValueError as exc:
            log.warning("unreadable storage-mode record: %s", exc, extra={"group": g})
    return out


#: a group's record and its znode version
Entry = tuple[GroupRecord, int]


class WatchedRecords:
    """Every group's record, kept true by the groups flow's watches: a read asks ZooKeeper
    only for the list and the records changed since, and decodes only those (at fleet
    scale the full read cost a request and a decode per group every second)."""

    def __init__(self, root: str, children: WatchedChildren, data: WatchedData) -> None:
        self.base = records_path(root)
        self.children = children
        self.data = data
        #: per group, the record's mzxid and its decoding (None: unreadable, logged once)
        self._decoded: dict[str, tuple[int, tuple[GroupRecord, int] | None]] = {}
        below = self.base + "/"

        def mine(path: str) -> bool:
            return path == self.base or path.startswith(below)

        #: the records' watches fired since the last read: only those records are read
        #: again (at 10,000 groups asking the cache about each record was 6 % of the main
        #: thread, and a cold start creates records every tick)
        self._fired = (children.counter(mine), data.counter(mine))
        #: whether the last answer is whole: every list and record read held a watch
        self._whole = False
        self._last: dict[str, tuple[GroupRecord, int]] = {}
        #: a new listing deferred (``list_every_s``), and when the list was last read
        self._relist = False
        self._listed_at = -float("inf")

    def read(
        self, fresh: bool = False, list_every_s: float = 0.0
    ) -> dict[str, tuple[GroupRecord, int]]:
        """Every group's record: the last answer with the records whose watches fired
        read again (``fresh``: every record asked of the cache, as for a forced sync).

        ``list_every_s`` (a cold start): the list, changed, is read again at most that
        often. The bridge records groups in every tick of a cold start, and its own
        records fire the list's watch: listing 10,000 records again each tick (and
        deriving what depends on them) was a tenth of the main thread. Its records are in
        the answer already (the flow adds them); the listing that follows reads them."""
        listed, changed = (counter.take() for counter in self._fired)
        now = time.monotonic()
        if listed is not None and (listed or self._relist):
            self._relist = now - self._listed_at < list_every_s and not fresh and self._whole
            listed = set() if self._relist else listed | {self.base}
        if fresh or not self._whole or listed is None or changed is None:
            self._listed_at, self._relist = now, False
            names = self.children.children([self.base])[self.base]
            self._decoded = {g: self._decoded[g] for g in names if g in self._decoded}
            self._last = {}
            todo = names
        elif not listed and not changed:
            return self._last
        else:
            self._last = dict(self._last)  # a new answer; the last one stays as it was
            todo = [p[len(self.base) + 1 :] for p in changed if p != self.base]
            if listed:
                self._listed_at = now
                names = set(self.children.children([self.base])[self.base])
                for g in self._decoded.keys() - names:
                    self._forget(g)
                todo += names - self._decoded.keys()
        paths = [f"{self.base}/{g}" for g in dict.fromkeys(todo)]
        got = self.data.get(paths)
        for path in paths:
            g = path[len(self.base) + 1 :]
            if path not in got:
                self._forget(g)  # deleted meanwhile
                continue
            data, stat = got[path]
            hit = self._decoded.get(g)
            if hit is None or hit[0] != stat.mzxid:
                hit = self._decoded[g] = self._decode(g, data, stat)
            if hit[1] is not None:
                self._last[g] = hit[1]
        # kept only when the list and every record read holds a watch (no records yet: no
        # directory to watch, and the first ones made would not fire anything); a read of
        # some records follows a whole one: those not read again kept their watches, and
        # one deleted meanwhile comes back through the list's
        present = [p for p in paths if p in got]
        # (a listing deferred is made later: the list is as good as held until then)
        listing = self._relist or self.children.held([self.base])
        held = listing and len(self.data.held(present)) == len(present)
        self._whole = held
        return self._last

    def _forget(self, g: str) -> None:
        self._decoded.pop(g, None)
        self._last.pop(g, None)

    @staticmethod
    def _decode(g: str, data: bytes, stat: ZnodeStat) -> tuple[int, Entry | None]:
        """A record's mzxid and decoding; None when unreadable (logged once per change)."""
        try:
            return stat.mzxid, (GroupRecord.decode(data), stat.version)
        except ValueError as exc:
            log.warning("unreadable storage-mode record: %s", exc, extra={"group": g})
            return stat.mzxid, None


def create_record(
    writer: FencedWriter, root: str, group: str, mode: StorageMode, by: str, at_ms: int
) -> GroupRecord:
    """Fenced create of a group's first record (the inferred mode)."""
    record = GroupRecord(mode, [Transition(at_ms, by, "none", mode.value, [])])
    path = record_path(root, group)
    try:
        writer.apply_own([*missing_parents(writer.client, [path]), Create(path, record.encode())])
    except BatchRejected as exc:
        if not isinstance(exc.error, NodeExistsError):
            log.warning("could not record the mode of %s: %s", group, exc.error)
    else:
        log.info("storage mode inferred", extra={"group": group, "mode": mode.value})
    return record


#: records created per transaction: far below ZooKeeper's 1 MB request limit
RECORDS_PER_BATCH = 200


def create_records(
    writer: FencedWriter,
    root: str,
    modes: dict[str, StorageMode],
    by: str,
    at_ms: int,
    quiet: bool = False,
) -> dict[str, GroupRecord]:
    """:func:`create_record` of many groups, ``RECORDS_PER_BATCH`` to a transaction (a fleet
    of new groups is not one round trip per group); a batch refused as a whole (a record
    someone else created meanwhile) is written again group by group. Returns the records
    written: a group left out has a record already (or could not get one), read later.
    ``quiet``: no line of its own (a reconcile pass counts them in its progress lines)."""
    made: dict[str, GroupRecord] = {}
    groups = sorted(modes)
    if not groups:
        return made
    parents = missing_parents(writer.client, [record_path(root, groups[0])])
    for start in range(0, len(groups), RECORDS_PER_BATCH):
        chunk = groups[start : start + RECORDS_PER_BATCH]
        records = {
            g: GroupRecord(modes[g], [Transition(at_ms, by, "none", modes[g].value, [])])
            for g in chunk
        }
        ops = [Create(record_path(root, g), r.encode()) for g, r in records.items()]
        try:
            writer.apply_own([*parents, *ops])
        except BatchRejected:
            records = {g: r for g, r in records.items() if _create_one(writer, root, g, r)}
        else:
            for g in chunk:
                log.debug("storage mode inferred", extra={"group": g, "mode": modes[g].value})
        parents = []
        made.update(records)
    if not quiet:
        _log_inferred(made)
    return made


def _log_inferred(made: dict[str, GroupRecord]) -> None:
    """One line for the groups whose mode was just inferred (a fleet's first pass wrote a
    line per group: thousands at once); each group's own at debug level."""
    if len(made) == 1:
        ((group, record),) = made.items()
        log.info("storage mode inferred", extra={"group": group, "mode": record.mode.value})
    elif made:
        counts = Counter(r.mode.value for r in made.values())
        modes = ", ".join(f"{mode} {n}" for mode, n in sorted(counts.items()))
        log.info("storage mode inferred for %d groups (%s)", len(made), modes)


def _create_one(writer: FencedWriter, root: str, group: str, record: GroupRecord) -> bool:
    """One group's first record; False when it could not be written (one that exists
    already is not this bridge's to replace: it is read with the others later)."""
    path = record_path(root, group)
    try:
        writer.apply_own([*missing_parents(writer.client, [path]), Create(path, record.encode())])
    except BatchRejected as exc:
        if not isinstance(exc.error, NodeExistsError):
            log.warning("could not record the mode of %s: %s", group, exc.error)
        return False
    log.debug("storage mode inferred", extra={"group": group, "mode": record.mode.value})
    return True


def write_step(
    writer: OperatorWriter, root: str, group: str, record: GroupRecord, version: int
) -> None:
    """An operator's step: conditional on the version the gates were evaluated against
    (``BatchRejected`` when the record changed meanwhile)."""
    writer.apply([SetData(record_path(root, group), record.encode(), version)])
