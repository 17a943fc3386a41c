"""Iteration order of the JVM hash maps whose order decides Kafka's protocol vote on a tie.

Only what ``protocol_vote`` needs: ``java.util.HashMap`` and Scala 2.13's mutable and
immutable ``HashMap``, keyed by strings and built by insertion alone. Checked against
OpenJDK 17 and scala-library 2.13.15.
"""

from __future__ import annotations

from collections.abc import Iterable

from zkpaths.javahash import java_string_hashcode

_MASK32 = 0xFFFFFFFF


def _unique(keys: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(keys))


def java_hashmap_order(keys: Iterable[str]) -> list[str]:
    """Order of a ``java.util.HashMap`` (default capacity and load factor) after inserting
    ``keys`` in the given order.

    Buckets are visited by index ``(h ^ h >>> 16) & (capacity - 1)``; a bucket keeps its keys
    in insertion order, and resizing preserves it. Bins large enough to be turned into trees
    (8+ keys sharing a bucket) are not modelled.
    """
    ordered = _unique(keys)
    capacity = 16
    while len(ordered) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = java_string_hashcode(key) & _MASK32
        return (h ^ (h >> 16)) & (capacity - 1)

    position = {key: i for i, key in enumerate(ordered)}
    return sorted(ordered, key=lambda k: (bucket(k), position[k]))


def _signed(h: int) -> int:
    return h - (1 << 32) if h & 0x80000000 else h


def scala_mutable_hashmap_order(keys: Iterable[str]) -> list[str]:
    """Order of a Scala 2.13 ``mutable.HashMap`` after inserting ``keys`` in the given order.

    The improved hash is ``h ^ h >>> 16``; buckets are visited by index, a bucket is kept
    sorted by (signed) improved hash, equal hashes in insertion order. The table starts at 16
    and doubles before an insertion that would reach three quarters of it.
    """
    ordered = _unique(keys)
    length = 16
    for size in range(len(ordered)):
        if size + 1 >= int(length * 0.75):
            length *= 2

    def improved(key: str) -> int:
        h = java_string_hashcode(key) & _MASK32
        return h ^ (h >> 16)

    position = {key: i for i, key in enumerate(ordered)}
    return sorted(
        ordered,
        key=lambda k: (improved(k) & (length - 1), _signed(improved(k)), position[k]),
    )


def scala_improve(hcode: int) -> int:
    """``scala.collection.Hashing.improve`` on a 32-bit hash, as an unsigned int."""
    h = hcode & _MASK32
    h = (h + (~(h << 9) & _MASK32)) & _MASK32
    h ^= h >> 14
    h = (h + (h << 4)) & _MASK32
    return h ^ (h >> 10)


def scala_immutable_hashmap_order(keys: Iterable[str]) -> list[str]:
    """Order of a Scala 2.13 ``immutable.HashMap`` (a CHAMP trie) built from ``keys``.

    At each level (5 bits of the improved hash, lowest first) a node lists the keys alone in
    their slot, by slot, before descending into its sub-nodes, by slot. Keys whose hashes
    are fully equal share a collision node in insertion order.
    """
    ordered = _unique(keys)
    hashes = {key: scala_improve(java_string_hashcode(key)) for key in ordered}

    def walk(group: list[str], shift: int) -> list[str]:
        if shift >= 32:
            return group
        slots: dict[int, list[str]] = {}
        for key in group:
            slots.setdefault((hashes[key] >> shift) & 31, []).append(key)
        payload = [slots[s][0] for s in sorted(slots) if len(slots[s]) == 1]
        out = list(payload)
        for s in sorted(slots):
            if len(slots[s]) > 1:
                out.extend(walk(slots[s], shift + 5))
        return out

    return walk(ordered, 0)
