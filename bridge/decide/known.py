"""The known tree's nodes, kept where Python's cyclic garbage collector does not look.

At fleet size the known tree holds a node per owned znode, a million of them. As objects
(``plan.Node``) every one was tracked by the cyclic collector, and each full collection
walked them all: at 10,000 groups x 100 partitions one took 0.9-2.5 s, every 4-12 s, and
each held the bridge's every thread (the commit p99 of 1-2 s at that size was these
pauses). A node here is a plain tuple of bytes and ints, which the collector stops
tracking at its first collection, so a full collection walks what changed, not the tree.
Read, it is a ``Node`` again: a short-lived object freed as soon as it is dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, MutableMapping

from bridge.decide.plan import Create, Delete, Node, SetData, ZkOp, parent

#: an offset node (no owner session, no children): its data and version only
_Packed = tuple[bytes, int] | tuple[bytes, int, int, int]


def _pack(node: Node) -> _Packed:
    if node.ephemeral_owner or node.children:
        return (node.data, node.version, node.ephemeral_owner, node.children)
    return (node.data, node.version)


class KnownNodes(MutableMapping[str, Node]):
    """``path -> Node``, stored packed (see the module's docstring)."""

    __slots__ = ("_nodes",)

    def __init__(self, nodes: Mapping[str, Node] | None = None) -> None:
        self._nodes: dict[str, _Packed] = {}
        if nodes:
            self.update(nodes)

    def __getitem__(self, path: str) -> Node:
        return Node(*self._nodes[path])

    def get(self, path: str, default: Node | None = None) -> Node | None:  # type: ignore[override]
        packed = self._nodes.get(path)
        return default if packed is None else Node(*packed)

    def __setitem__(self, path: str, node: Node) -> None:
        self._nodes[path] = _pack(node)

    def __delitem__(self, path: str) -> None:
        del self._nodes[path]

    def pop(self, path: str, *default: Node | None) -> Node | None:  # type: ignore[override]
        packed = self._nodes.pop(path, None)
        if packed is not None:
            return Node(*packed)
        if default:
            return default[0]
        raise KeyError(path)

    def __contains__(self, path: object) -> bool:
        return path in self._nodes

    def __iter__(self) -> Iterator[str]:
        return iter(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    def update(self, nodes: Mapping[str, Node] | Iterable[tuple[str, Node]] = (), /) -> None:  # type: ignore[override]
        pairs = nodes.items() if isinstance(nodes, Mapping) else nodes
        self._nodes.update((path, _pack(node)) for path, node in pairs)

    def apply(self, done: Iterable[tuple[ZkOp, int]], session_id: int) -> None:
        """``plan.apply_to`` for each ``(op, new version)`` of a batch that succeeded, in
        order, at the packed level: no ``Node`` made per op, and a parent's child count
        written once per batch rather than unpacked and packed again per child (a cold
        start's batches create a topic's hundred offset nodes under one directory: that
        was a seventh of its main thread)."""
        nodes = self._nodes
        counts: dict[str, int] = {}  # parent -> its child count so far, written at the end
        for op, version in done:
            path = op.path
            if type(op) is Create:
                nodes[path] = (op.data, 0, session_id, 0) if op.ephemeral else (op.data, 0)
                counts.pop(path, None)
                delta = 1
            elif type(op) is SetData:
                old = nodes[path]
                nodes[path] = (op.data, version, *old[2:])
                continue
            elif type(op) is Delete:
                nodes.pop(path, None)  # a count kept for it is not written back
                delta = -1
            else:
                continue
            up = parent(path)
            count = counts.get(up)
            if count is None:
                packed = nodes.get(up)
                if packed is None:
                    continue
                count = packed[3] if len(packed) == 4 else 0
            counts[up] = max(0, count + delta)
        for path, count in counts.items():
            packed = nodes.get(path)
            if packed is not None:
                owner = packed[2] if len(packed) == 4 else 0
                nodes[path] = _pack(Node(packed[0], packed[1], owner, count))

    def __repr__(self) -> str:
        return f"KnownNodes({len(self._nodes)} nodes)"
