"""The only way the bridge writes ZooKeeper: fenced multi-op batches with a ledger.

Each batch is one ZooKeeper transaction that starts with a version check on the epoch node
(I3) and carries, next to every create or delete of a legacy node, the create or delete of
its marker in the bridge's ownership ledger (I4). The ledger mirrors the legacy tree under
``<root>/owned``: the marker of ``/brokers/topics/t`` is ``<root>/owned/brokers/topics/t``
with data ``owned``; markers with empty data are only parents of markers. Because node and
marker change in the same transaction, the ledger can never disagree with what the bridge
actually created.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    NoNodeError,
    RolledBackError,
    RuntimeInconsistency,
)
from kazoo.interfaces import IAsyncResult

from bridge.decide.known import KnownNodes
from bridge.decide.plan import Create, Delete, Node, SetData, ZkOp, apply_to, parent
from bridge.metrics import METRICS
from bridge.zookeeper.answers import ABSENT, answer
from bridge.zookeeper.fence import Epoch, Fenced, ShareFence
from bridge.zookeeper.owned_paths import OwnedPaths
from bridge.zookeeper.txn import Multi

log = logging.getLogger(__name__)

OWNED = b"owned"

#: ZooKeeper rejects requests over jute.maxbuffer (1 MiB by default); stay well below.
MAX_BATCH_BYTES = 512 * 1024
MAX_BATCH_OPS = 1000

# what ZooKeeper reports for the other ops of a multi-op that failed elsewhere
_KNOCK_ON = (RolledBackError, RuntimeInconsistency)


class BatchRejected(RuntimeError):
    """ZooKeeper refused a batch because a node was not as we knew it; resync and retry."""

    def __init__(self, op: ZkOp | Check, error: Exception) -> None:
        super().__init__(f"{type(op).__name__} {op.path} rejected: {type(error).__name__}")
        self.op = op
        self.error = error


@dataclass
class BatchStats:
    batches: int = 0
    ops: int = 0


@dataclass
class LedgerRead:
    """What a read of part of the ledger found, by legacy path: the paths owned, and the
    other marker nodes there (parents only; "" is the ledger's root)."""

    owned: set[str]
    inner: set[str]


class Ledger:
    """What the bridge created, as recorded under ``<root>/owned``."""

    def __init__(self, root: str) -> None:
        self.base = root.rstrip("/") + "/owned"
        self.owned = OwnedPaths()  # indexed by group: a page costs what its groups hold
        #: the marker nodes that exist and own nothing (parents of markers), by legacy path;
        #: the owned paths' markers are not kept twice: at a million offset nodes a second
        #: set of full marker paths was 190 MB of the bridge's peak
        self.inner = OwnedPaths()

    def marker(self, path: str) -> str:
        return self.base + path

    def has_marker(self, path: str) -> bool:
        """Whether the marker node of ``path`` exists ("" is the ledger's root)."""
        return path in self.owned or path in self.inner

    def load(
        self, client: KazooClient, scopes: Iterable[str] = ("/",), nodes: Iterable[str] = ()
    ) -> None:
        """Walk the ledger (below each scope) and rebuild the owned set; ``nodes`` are read
        alone, not below (with shares, ``/consumers`` itself without every group)."""
        scopes, nodes = list(scopes), list(nodes)
        self.adopt(self.read(client, scopes, nodes), scopes, nodes)

    def read(
        self, client: KazooClient, scopes: Iterable[str] = ("/",), nodes: Iterable[str] = ()
    ) -> LedgerRead:
        """The ledger below each scope (and ``nodes`` alone) as it is now. Reads only:
        safe on another thread than the one writing (the verification's pages)."""
        out = LedgerRead(set(), set())
        cut = len(self.base)
        frontier = [self.marker("" if s == "/" else s) for s in scopes]
        alone = {self.marker(n) for n in nodes}
        frontier += sorted(alone)
        ancestors = {self.base}
        for m in frontier:
            while m != self.base and m.startswith(self.base):
                m = parent(m)
                ancestors.add(m)
        exists = [(m, client.exists_async(m)) for m in sorted(ancestors)]
        out.inner.update(m[cut:] for m, e in exists if answer(e) not in (None, ABSENT))
        while frontier:
            reads = [
                (
                    m,
                    client.get_async(m),
                    None if m in alone or self._leaf(m) else client.get_children_async(m),
                )
                for m in frontier
            ]
            frontier = []
            for m, data_async, children_async in reads:
                got = answer(data_async)
                children = answer(children_async) if children_async is not None else []
                if got is ABSENT or children is ABSENT:
                    continue
                data, _ = got
                if data == OWNED:
                    out.owned.add(m[cut:] or "/")
                else:
                    out.inner.add(m[cut:])
                frontier.extend(f"{m.rstrip('/')}/{c}" for c in children)
        return out

    def adopt(self, read: LedgerRead, scopes: Iterable[str], nodes: Iterable[str] = ()) -> None:
        """``read`` (of ``scopes`` and ``nodes``) replaces what the ledger held there."""
        scopes = list(scopes)
        for index in (self.owned, self.inner):
            index.drop(scopes)
            for path in nodes:
                index.discard(path)
        for path in read.owned:
            self.owned.add(path)
        for path in read.inner:
            self.inner.add(path)

    def _leaf(self, marker: str) -> bool:
        """Whether ``marker`` records a node that never has children in the legacy layout
        (``ids/<id>``, ``owners/<t>/<p>``, ``offsets/<t>/<p>``): the bridge creates nothing
        below those, so their markers have no children to list (a third of the requests
        of a page of verification)."""
        parts = marker[len(self.base) :].split("/")
        if len(parts) < 5 or parts[1] != "consumers":
            return False
        return (len(parts) == 5 and parts[3] == "ids") or (
            len(parts) == 6 and parts[3] in ("owners", "offsets")
        )


#: batches sent by :meth:`FencedWriter.send`, each with what its answer is checked against
Sent = list[tuple[list[ZkOp], Any, list, set[str], IAsyncResult]]


class FencedWriter:
    """Applies planned operations in fenced, ledgered batches and keeps a known tree."""

    def __init__(
        self,
        client: KazooClient,
        epoch: Epoch | None,
        ledger: Ledger,
        halted: threading.Event | None = None,
        shares: ShareFence | None = None,
    ) -> None:
        """``halted``: once set (the bridge is stopping), nothing more is written.
        ``shares`` (``[scale] mode = "shares"``, ``epoch`` None): each batch checks the
        epochs of the shares its writes belong to instead of the one bridge epoch."""
        if (epoch is None) == (shares is None):
            raise ValueError("a fenced writer checks one epoch or the shares' epochs")
        self.client = client
        self.epoch = epoch
        self.shares = shares
        self.ledger = ledger
        self.stats = BatchStats()
        self.halted = halted
        #: takes the answers of a write sent and not finished yet (``OwnedTree.land``), set
        #: by whoever sent it: called before anything else is sent, so that no batch (the
        #: registry flow's, on the same writer) is built on a ledger without its markers
        self.in_flight: Callable[[], None] | None = None

    @property
    def session_id(self) -> int:
        return self.client.client_id[0] if self.client.client_id else 0

    def apply(self, ops: Sequence[ZkOp], known: MutableMapping[str, Node]) -> None:
        """Write ``ops`` in order, batch by batch, updating ``known`` as each batch lands.

        Batches are pipelined: all are sent before the first answer is awaited. ZooKeeper
        applies one session's requests in order, so a batch still sees every earlier one.
        Raises ``Fenced`` when the epoch moved (we are deposed) and ``BatchRejected`` when a
        node was not as ``known`` said; a batch that failed changed nothing, and the batches
        that succeeded are reflected in ``known`` before the error is raised.
        """
        self.finish(self.send(ops), known)

    def send(self, ops: Sequence[ZkOp]) -> Sent:
        """:meth:`apply`'s first half: every batch sent, no answer awaited. Their answers
        are taken by :meth:`finish` (before anything else is sent or planned: a batch
        built meanwhile would not know the markers these create)."""
        if self.halted is not None and self.halted.is_set():
            raise Fenced("the bridge is stopping: nothing more is written")
        if self.in_flight is not None:  # another write's answers first
            land, self.in_flight = self.in_flight, None
            land()
        if self.shares is not None:  # every share held, checked before a batch is sent
            self.shares.epochs_for([op.path for op in ops])
        pending: set[str] = set()
        dropped: set[str] = set()  # markers deleted earlier in this apply
        sent: Sent = []
        for batch in _batches(ops):
            txn, checked, slots, created = self._build(batch, pending, dropped)
            sent.append((batch, checked, slots, created, txn.commit_async()))
        return sent

    def finish(self, sent: Sent, known: MutableMapping[str, Node]) -> None:
        """:meth:`apply`'s second half: each batch's answer, in order, into ``known`` and
        the ledger; raises as :meth:`apply` does."""
        failure: BaseException | None = None
        for batch, checked, slots, created, result in sent:
            try:
                self._finish(batch, checked, slots, created, result.get(), known)
            except (Fenced, BatchRejected) as exc:
                if isinstance(exc, Fenced):
                    raise
                failure = failure or exc
        if failure is not None:
            raise failure

    def apply_own(self, ops: Sequence[ZkOp | Check]) -> None:
        """The bridge's own state under its root (storage-mode records, sync answers): one
        transaction behind the same epoch check (I3), without ledger markers, since the root
        is the bridge's own namespace and not the legacy tree the ledger records (I4).
        Raises ``Fenced`` when the epoch moved, ``BatchRejected`` naming the op refused."""
        if self.halted is not None and self.halted.is_set():
            raise Fenced("the bridge is stopping: nothing more is written")
        txn = Multi(self.client)
        epochs = self._epochs([op.path for op in ops])
        for epoch in epochs:
            txn.check(epoch.path, epoch.version)
        for op in ops:
            _add(txn, op)
        results = txn.commit()
        _raise_fenced(epochs, results)
        _raise_refused(ops, results[len(epochs) :])

    def _epochs(self, paths: list[str]) -> list[Epoch]:
        """The epochs a transaction writing ``paths`` checks first (I3)."""
        if self.shares is not None:
            return self.shares.epochs_for(paths)
        assert self.epoch is not None
        return [self.epoch]

    def _build(self, batch: list[ZkOp], pending: set[str], dropped: set[str]):
        """One transaction: the epoch check, then each op with its ledger marker."""
        txn = Multi(self.client)
        epochs = self._epochs([op.path for op in batch])
        for epoch in epochs:
            txn.check(epoch.path, epoch.version)
        # which planned op each transaction slot serves (None: an epoch's check)
        owners: list[ZkOp | None] = [None] * len(epochs)
        slots: list[tuple[int, ZkOp]] = []  # slot of each legacy op's own result
        created: set[str] = set()  # parent markers created (legacy paths)
        ledger = self.ledger
        marker = ledger.marker
        for op in batch:
            path = op.path  # pending, dropped and created hold legacy paths, not markers
            if isinstance(op, Create):
                for m in self._missing_marker_parents(path, pending):
                    txn.create(marker(m), b"")
                    owners.append(op)
                    created.add(m)
                txn.create(path, op.data, op.ephemeral)
                slots.append((len(owners), op))
                owners.append(op)
                if path in dropped:
                    # re-created in the same apply (ephemeral <-> persistent): the Delete
                    # before took the marker with it, so it is created again
                    txn.create(marker(path), OWNED)
                    dropped.discard(path)
                    pending.add(path)
                elif path in ledger.owned:
                    continue  # marker survived the node (an ephemeral of an expired session)
                elif path in pending or ledger.has_marker(path):
                    txn.set_data(marker(path), OWNED)  # was a parent only
                else:
                    txn.create(marker(path), OWNED)
                    pending.add(path)
                owners.append(op)
            elif isinstance(op, SetData):
                txn.set_data(path, op.data, op.version)
                slots.append((len(owners), op))
                owners.append(op)
            else:
                txn.delete(path, op.version)
                slots.append((len(owners), op))
                txn.delete(marker(path))
                owners += (op, op)
                dropped.add(path)
                pending.discard(path)
        return txn, (epochs, owners), slots, created

    def _finish(
        self, batch, checked, slots, created, results, known: MutableMapping[str, Node]
    ) -> None:
        epochs, owners = checked
        _raise_fenced(epochs, results)
        for i, r in enumerate(results):
            if isinstance(r, Exception) and not isinstance(r, _KNOCK_ON):
                raise BatchRejected(owners[i] or batch[0], r)
        if any(isinstance(r, Exception) for r in results):
            raise BatchRejected(batch[0], next(r for r in results if isinstance(r, Exception)))
        self.stats.batches += 1
        self.stats.ops += len(batch)
        METRICS.batches.observe(len(batch))
        session = self.session_id
        owned, inner = self.ledger.owned, self.ledger.inner
        for m in created:
            inner.add(m)
        done = [(op, getattr(results[i], "version", 0)) for i, op in slots]
        if isinstance(known, KnownNodes):
            known.apply(done, session)
        else:
            for op, version in done:
                apply_to(known, op, version, session)
        for op, _ in done:
            if isinstance(op, Delete):
                owned.discard(op.path)
                inner.discard(op.path)
            elif isinstance(op, Create):
                owned.add(op.path)

    def _missing_marker_parents(self, path: str, pending: set[str]) -> list[str]:
        """The parents of ``path`` whose markers neither exist nor are about to (legacy
        paths, "" for the ledger's root), outermost first."""
        missing: list[str] = []
        p = parent(path)
        while p != "/":
            if p in pending or self.ledger.has_marker(p):
                break
            missing.append(p)
            p = parent(p)
        else:
            if "" not in pending and not self.ledger.has_marker(""):
                missing.append("")
        missing.reverse()
        pending.update(missing)
        return missing


@dataclass(frozen=True)
class Check:
    """A condition only: the node still has the version that was read."""

    path: str
    version: int


class TooLarge(ValueError):
    """An operator's write does not fit in one ZooKeeper transaction; nothing was written."""


class OperatorWriter:
    """How operator commands write ZooKeeper (``offsets import|reset``, ``migrate``).

    A command is not a bridge: it holds no epoch and does not take one (that would depose
    the active bridge), so I3's epoch check does not apply to it. Instead each ``apply`` is
    exactly one transaction in which every set or delete carries the version the command
    read, unchanged nodes it relied on carry a :class:`Check`, and creates fail on a node
    that appeared meanwhile: a concurrent writer (bridge, consumer, another command) makes
    the whole write fail, with nothing written. No ledger marker is made (I4): the ledger is
    what the bridge created, and an operator's node is not the bridge's to delete.
    """

    def __init__(self, client: KazooClient, max_bytes: int = MAX_BATCH_BYTES) -> None:
        self.client = client
        self.max_bytes = max_bytes

    def missing_parents(self, paths: Iterable[str]) -> list[Create]:
        """Creates of every absent ancestor of ``paths``, parents first."""
        return missing_parents(self.client, paths)

    def apply(self, ops: Sequence[ZkOp | Check]) -> None:
        """All of ``ops`` in one transaction, or nothing: raises ``TooLarge`` before sending
        when it would exceed one request, ``BatchRejected`` naming the first op refused."""
        size = sum(len(op.path) * 2 + 64 + len(getattr(op, "data", b"")) for op in ops)
        if size > self.max_bytes:
            raise TooLarge(
                f"the ZooKeeper write is about {size} bytes, more than one transaction may "
                "carry (jute.maxbuffer, 1 MiB by default); nothing was written"
            )
        txn = Multi(self.client)
        for op in ops:
            _add(txn, op)
        _raise_refused(ops, txn.commit())


def missing_parents(client: KazooClient, paths: Iterable[str]) -> list[Create]:
    """Creates of every absent ancestor of ``paths``, parents first (read pipelined)."""
    ancestors: set[str] = set()
    for path in paths:
        p = parent(path)
        while p != "/":
            ancestors.add(p)
            p = parent(p)
    ordered = sorted(ancestors, key=lambda p: (p.count("/"), p))
    exists = [(p, client.exists_async(p)) for p in ordered]
    return [Create(p, b"") for p, result in exists if result.get() is None]


def _add(txn: Multi, op: ZkOp | Check) -> None:
    """One op into a multi-op."""
    if isinstance(op, Create):
        txn.create(op.path, op.data, op.ephemeral)
    elif isinstance(op, SetData):
        txn.set_data(op.path, op.data, op.version)
    elif isinstance(op, Delete):
        txn.delete(op.path, op.version)
    else:
        txn.check(op.path, op.version)


def _raise_fenced(epochs: Sequence[Epoch], results: Sequence[object]) -> None:
    """``Fenced`` when one of the transaction's epoch checks (its first results) failed."""
    for epoch, result in zip(epochs, results, strict=False):
        if isinstance(result, BadVersionError | NoNodeError):
            raise Fenced(f"epoch {epoch.value} at {epoch.path} is no longer current")


def _raise_refused(ops: Sequence[ZkOp | Check], results: Sequence[object]) -> None:
    """``BatchRejected`` for the first op ZooKeeper refused (not the rolled-back others)."""
    for op, result in zip(ops, results, strict=True):
        if isinstance(result, Exception) and not isinstance(result, _KNOCK_ON):
            raise BatchRejected(op, result)


def _batches(ops: Sequence[ZkOp]) -> list[list[ZkOp]]:
    out: list[list[ZkOp]] = []
    cur: list[ZkOp] = []
    size = 0
    for op in ops:
        weight = len(op.path) * 2 + 64 + (len(op.data) if not isinstance(op, Delete) else 0)
        if cur and (len(cur) >= MAX_BATCH_OPS or size + weight > MAX_BATCH_BYTES):
            out.append(cur)
            cur, size = [], 0
        cur.append(op)
        size += weight
    if cur:
        out.append(cur)
    return out


def read_nodes(client: KazooClient, paths: Iterable[str]) -> dict[str, Node]:
    """Read many znodes concurrently; absent ones are left out."""
    pending = [(p, client.get_async(p)) for p in paths]
    out: dict[str, Node] = {}
    for path, result in pending:
        got = answer(result)
        if got is ABSENT:
            continue
        data, stat = got
        out[path] = Node(data or b"", stat.version, stat.ephemeralOwner, stat.numChildren)
    return out


def children(client: KazooClient, paths: Iterable[str]) -> dict[str, list[str]]:
    """List children of many znodes concurrently; absent parents map to []."""
    pending = [(p, client.get_children_async(p)) for p in paths]
    out: dict[str, list[str]] = {}
    for path, result in pending:
        got = answer(result)
        out[path] = [] if got is ABSENT else sorted(got)
    return out
