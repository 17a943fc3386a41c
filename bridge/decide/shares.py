"""Shares (``[scale] mode = "shares"``): which share each ZooKeeper write belongs to (pure).

A group's share is the partition of ``__consumer_offsets`` whose leader coordinates it
(Kafka's ``Utils.abs(hashCode) % offsets.topic.num.partitions``), so a share holds exactly
the groups one coordinator partition holds, and the bridges, as one consumer group of that
topic, are dealt shares by Kafka's own group coordinator. Every write is checked against the
epoch of the share it belongs to (I3 per share); the registry's and the bridge's other
writes belong to share 0, whose holder alone runs the registry flow.
"""

from __future__ import annotations

from functools import lru_cache

import zkpaths
from zkpaths.javahash import coordinator_partition

#: the share whose holder runs the registry flow and owns the writes of no group
REGISTRY_SHARE = 0

#: the bridge's own nodes named after a group, under its root (storage-mode records, sync)
_GROUP_DIRS = ("groups", "sync-requests", "sync-results")


@lru_cache(maxsize=1 << 17)
def share_of_group(group: str, shares: int) -> int:
    """The share (coordinator partition of ``__consumer_offsets``) of ``group``. Cached:
    the flows ask it of every group several times a tick (7 % of a bridge's first tick
    at 3,000 groups went to Java's string hash in Python)."""
    return coordinator_partition(group, shares)


def epoch_path(root: str, share: int) -> str:
    """The epoch node of one share, under the bridge's own tree."""
    return f"{root.rstrip('/')}/shares/{share}"


def group_of_path(path: str, root: str) -> str | None:
    """The group a written path belongs to, or None (a node of no one group).

    ``/consumers/<g>/...``, the ledger's marker of such a node, and the bridge's per-group
    nodes ``<root>/groups/<g>``, ``<root>/sync-requests/<g>``, ``<root>/sync-results/<g>``."""
    base = root.rstrip("/")
    owned = f"{base}/owned"
    if path.startswith(owned + "/"):
        path = path[len(owned) :]
    if path.startswith(zkpaths.CONSUMERS + "/"):
        return path.split("/")[2] or None
    if path.startswith(base + "/"):
        parts = path[len(base) + 1 :].split("/")
        if len(parts) >= 2 and parts[0] in _GROUP_DIRS and parts[1]:
            return parts[1]
    return None


def share_of_path(path: str, root: str, shares: int) -> int | None:
    """The share a write of ``path`` is checked against: its group's, share 0 for the
    registry's and other single-writer nodes, None for a shared parent every holder may
    create (``/consumers``, ``<root>/groups``, the ledger's parents of those)."""
    group = group_of_path(path, root)
    if group is not None:
        return share_of_group(group, shares)
    base = root.rstrip("/")
    shared = {
        zkpaths.CONSUMERS,
        base,
        f"{base}/owned",
        f"{base}/owned{zkpaths.CONSUMERS}",
        *(f"{base}/{d}" for d in _GROUP_DIRS),
    }
    return None if path in shared else REGISTRY_SHARE
