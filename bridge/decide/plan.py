"""From "what ZooKeeper should hold" to the exact writes that get it there.

Pure: every flow computes a desired tree from its Kafka view, and this module turns the
difference with the known tree into an ordered list of ZooKeeper operations. Ownership (I4)
is decided here: a node the bridge did not create is never set or deleted, only reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import NamedTuple


class Node(NamedTuple):
    """A znode as ZooKeeper holds it now. A named tuple, not a dataclass: one is made for
    every node a tick reads or writes (the known tree hands them out, ``KnownNodes``), and
    a frozen dataclass's ``__init__`` was a seventh of the groups flow's main thread in
    ``bench.fleet`` (with the records' and paths' own)."""

    data: bytes
    version: int = 0
    ephemeral_owner: int = 0
    #: number of children as last read (nodes of others may hang below ours)
    children: int = 0


class Desired(NamedTuple):
    """A znode as a flow wants it (a named tuple: one is made per offset node decided, and a
    frozen dataclass's ``__init__`` costs three times as much).

    ``structural`` nodes (``/brokers/ids``, ``/consumers/<g>``) only need to exist: the bridge
    creates them when missing but never rewrites or reports one that someone else made.
    ``adopt`` marks the one case where a foreign node may be set: an offset the storage mode
    tells the bridge to move forward (the decision guarantees it only moves forward).
    """

    data: bytes = b""
    ephemeral: bool = False
    structural: bool = False
    adopt: bool = False


@dataclass(frozen=True)
class Create:
    path: str
    data: bytes
    ephemeral: bool = False


@dataclass(frozen=True)
class SetData:
    path: str
    data: bytes
    version: int


@dataclass(frozen=True)
class Delete:
    path: str
    version: int


ZkOp = Create | SetData | Delete


@dataclass(frozen=True)
class Conflict:
    """A node the bridge wanted to write but must not (I4); reported, never forced."""

    path: str
    reason: str


@dataclass
class Plan:
    ops: list[ZkOp] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.ops)


def depth(path: str) -> int:
    return path.count("/")


def parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r + "/") for r in roots)


def plan_writes(
    desired: Mapping[str, Desired],
    current: Mapping[str, Node],
    owned: AbstractSet[str],
    session_id: int,
) -> Plan:
    """Order the writes that turn ``current`` into ``desired`` within the owned scope.

    ``current`` holds the nodes known to exist among the desired and owned paths; a path
    absent from it does not exist. ``owned`` is the flow's part of the bridge's ledger:
    only those nodes may be changed or deleted. Deletes come first, deepest first; then
    creates and updates, parents before children. A desired ephemeral still held by an
    earlier session of the bridge is deleted and created again, so that it dies with us.
    """
    plan = Plan()
    blocked: list[str] = []  # conflicting paths: nothing is created beneath them
    creates: list[ZkOp] = []
    replaced: list[Delete] = []

    for path in sorted(desired, key=lambda p: (depth(p), p)):
        want = desired[path]
        if blocked and _under(path, blocked) and path not in owned:
            plan.conflicts.append(Conflict(path, "parent is held by another writer"))
            continue
        have = current.get(path)
        if have is None:
            creates.append(Create(path, want.data, want.ephemeral))
            continue
        if want.structural:
            continue
        if path not in owned and want.adopt and not want.ephemeral and not have.ephemeral_owner:
            if have.data != want.data:
                creates.append(SetData(path, want.data, have.version))
            continue
        if path not in owned:
            if have.data != want.data or bool(have.ephemeral_owner) != want.ephemeral:
                plan.conflicts.append(Conflict(path, "exists and was not written by the bridge"))
                blocked.append(path)
            continue
        if want.ephemeral and have.ephemeral_owner != session_id:
            replaced.append(Delete(path, have.version))
            creates.append(Create(path, want.data, True))
        elif not want.ephemeral and have.ephemeral_owner:
            replaced.append(Delete(path, have.version))
            creates.append(Create(path, want.data, False))
        elif have.data != want.data:
            creates.append(SetData(path, want.data, have.version))

    stale = sorted((p for p in owned if p not in desired and p in current), key=depth)
    deleted_children: dict[str, int] = {}
    deletes: list[Delete] = []
    for p in reversed(stale):  # deepest first
        if current[p].children > deleted_children.get(p, 0):
            continue  # someone else's nodes live below it: it stays (ZooKeeper would refuse)
        deletes.append(Delete(p, current[p].version))
        deleted_children[parent(p)] = deleted_children.get(parent(p), 0) + 1
    deletes.extend(replaced)
    deletes.sort(key=lambda op: (-depth(op.path), op.path))
    plan.ops = [*deletes, *creates]
    return plan


def apply_to(current: MutableMapping[str, Node], op: ZkOp, version: int, session_id: int) -> None:
    """Update a known tree after ``op`` succeeded (``version`` is the node's new version)."""
    match op:
        case Create(path, data, ephemeral):
            current[path] = Node(data, 0, session_id if ephemeral else 0)
            _count_child(current, parent(path), 1)
        case SetData(path, data, _):
            old = current[path]
            current[path] = Node(data, version, old.ephemeral_owner, old.children)
        case Delete(path, _):
            current.pop(path, None)
            _count_child(current, parent(path), -1)


def _count_child(current: MutableMapping[str, Node], path: str, delta: int) -> None:
    """One child more (or fewer) under ``path``, if it is known."""
    up = current.get(path)
    if up is not None:
        current[path] = up._replace(children=max(0, up.children + delta))
