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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError, RolledBackError

from bridge.decide.plan import Create, Delete, Node, SetData, ZkOp, apply_to, parent
from bridge.zookeeper.fence import Epoch, Fenced

log = logging.getLogger(__name__)

OWNED = b"owned"

#: ZooKeeper rejects requests over jute.maxbuffer (1 MiB by default); stay well below.
MAX_BATCH_BYTES = 512 * 1024
MAX_BATCH_OPS = 1000


class BatchRejected(RuntimeError):
    """ZooKeeper refused a batch because a node was not as we knew it; resync and retry."""

    def __init__(self, op: ZkOp, error: Exception) -> None:
        super().__init__(f"{type(op).__name__} {op.path} rejected: {type(error).__name__}")
        self.op = op
        self.error = error


@dataclass
class BatchStats:
    batches: int = 0
    ops: int = 0


class Ledger:
    """What the bridge created, as recorded under ``<root>/owned``."""

    def __init__(self, root: str) -> None:
        self.base = root.rstrip("/") + "/owned"
        self.owned: set[str] = set()
        self.markers: set[str] = set()  # every marker node that exists (owned or parent)

    def marker(self, path: str) -> str:
        return self.base + path

    def load(self, client: KazooClient, scopes: Iterable[str] = ("/",)) -> None:
        """Walk the ledger (below each scope) and rebuild the owned set."""
        for scope in scopes:
            prefix = "" if scope == "/" else scope
            self.owned = {p for p in self.owned if not (p + "/").startswith(prefix + "/")}
        frontier = [self.marker("" if s == "/" else s) for s in scopes]
        while frontier:
            reads = [(m, client.get_async(m), client.get_children_async(m)) for m in frontier]
            frontier = []
            for m, data_async, children_async in reads:
                try:
                    data, _ = data_async.get()
                    children = children_async.get()
                except NoNodeError:
                    continue
                self.markers.add(m)
                legacy = m[len(self.base) :] or "/"
                if data == OWNED:
                    self.owned.add(legacy)
                frontier.extend(f"{m.rstrip('/')}/{c}" for c in children)


class FencedWriter:
    """Applies planned operations in fenced, ledgered batches and keeps a known tree."""

    def __init__(self, client: KazooClient, epoch: Epoch, ledger: Ledger) -> None:
        self.client = client
        self.epoch = epoch
        self.ledger = ledger
        self.stats = BatchStats()

    @property
    def session_id(self) -> int:
        return self.client.client_id[0] if self.client.client_id else 0

    def apply(self, ops: Sequence[ZkOp], known: dict[str, Node]) -> None:
        """Write ``ops`` in order, batch by batch, updating ``known`` as each batch lands.

        Raises ``Fenced`` when the epoch moved (we are deposed) and ``BatchRejected`` when a
        node was not as ``known`` said; the batch that failed changed nothing.
        """
        for batch in _batches(ops):
            self._commit(batch, known)

    def _commit(self, batch: list[ZkOp], known: dict[str, Node]) -> None:
        txn = self.client.transaction()
        txn.check(self.epoch.path, self.epoch.version)
        pending_markers: set[str] = set()
        slots: list[tuple[int, ZkOp]] = []  # index of each legacy op's result
        index = 1
        for op in batch:
            if isinstance(op, Create):
                for m in self._missing_marker_parents(op.path, pending_markers):
                    txn.create(m, b"")
                    index += 1
                txn.create(op.path, op.data, ephemeral=op.ephemeral)
                slots.append((index, op))
                txn.create(self.ledger.marker(op.path), OWNED)
                pending_markers.add(self.ledger.marker(op.path))
                index += 2
            elif isinstance(op, SetData):
                txn.set_data(op.path, op.data, op.version)
                slots.append((index, op))
                index += 1
            else:
                txn.delete(op.path, op.version)
                slots.append((index, op))
                txn.delete(self.ledger.marker(op.path))
                index += 2
        results = txn.commit()
        if isinstance(results[0], BadVersionError | NoNodeError):
            raise Fenced(f"epoch {self.epoch.value} at {self.epoch.path} is no longer current")
        failed = [
            (op, results[i]) for i, op in slots if isinstance(results[i], Exception)
        ] or [(batch[0], r) for r in results if isinstance(r, Exception)]
        real = [(op, e) for op, e in failed if not isinstance(e, RolledBackError)]
        if failed:
            op, err = (real or failed)[0]
            raise BatchRejected(op, err)
        self.stats.batches += 1
        self.stats.ops += len(batch)
        session = self.session_id
        for i, op in slots:
            version = results[i].version if hasattr(results[i], "version") else 0
            apply_to(known, op, version, session)
            marker = self.ledger.marker(op.path)
            if isinstance(op, Delete):
                self.ledger.owned.discard(op.path)
                self.ledger.markers.discard(marker)
            elif isinstance(op, Create):
                self.ledger.owned.add(op.path)
                self.ledger.markers.add(marker)
        self.ledger.markers.update(pending_markers)

    def _missing_marker_parents(self, path: str, pending: set[str]) -> list[str]:
        missing: list[str] = []
        p = parent(path)
        while p != "/":
            m = self.ledger.marker(p)
            if m in self.ledger.markers or m in pending:
                break
            missing.append(m)
            p = parent(p)
        else:
            m = self.ledger.base
            if m not in self.ledger.markers and m not in pending:
                missing.append(m)
        missing.reverse()
        pending.update(missing)
        return missing


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
        try:
            data, stat = result.get()
        except NoNodeError:
            continue
        out[path] = Node(data or b"", stat.version, stat.ephemeralOwner)
    return out


def children(client: KazooClient, paths: Iterable[str]) -> dict[str, list[str]]:
    """List children of many znodes concurrently; absent parents map to []."""
    pending = [(p, client.get_children_async(p)) for p in paths]
    out: dict[str, list[str]] = {}
    for path, result in pending:
        try:
            out[path] = sorted(result.get())
        except NoNodeError:
            out[path] = []
    return out
