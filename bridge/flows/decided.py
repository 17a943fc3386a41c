"""What one tick of the groups flow works from and towards: ZooKeeper's side cut to the
tick's groups, and what the groups' decisions ask for (written by the flow, read by its
storage-mode and scope halves)."""

from __future__ import annotations

from dataclasses import dataclass, field

import zkpaths
from bridge.decide.plan import Desired
from zkpaths import TopicPartition


@dataclass(frozen=True)
class ZkPicture:
    """ZooKeeper's side of a tick, cut to the groups the tick reconciles."""

    wanted: list[str]  # Kafka's groups to mirror (not being deleted)
    dead: set[str]  # Kafka's groups being deleted (Dead)
    zk_groups: list[str]  # groups under /consumers passing the filter
    mirrored: set[str]  # groups the bridge has nodes of
    registered: dict[str, list[str]]  # group -> consumer ids under its /ids
    owned: set[str]  # the bridge's nodes of those groups
    scope: set[str] | None  # None: every group


@dataclass
class Decided:
    """What the groups' decisions of a tick ask for."""

    desired: dict[str, Desired] = field(
        default_factory=lambda: {zkpaths.CONSUMERS: Desired(structural=True)}
    )
    skipped: dict[str, str] = field(default_factory=dict)  # not mirrored: why
    mixed: set[str] = field(default_factory=set)  # shared with old consumers
    stopped: set[str] = field(default_factory=set)  # only in ZooKeeper, no live old consumer
    refresh: set[str] = field(default_factory=set)  # nodes others write too: read again
    suggested: dict[str, dict[TopicPartition, int]] = field(default_factory=dict)
    aside: dict[str, str] = field(default_factory=dict)  # dialects cannot share them: why
