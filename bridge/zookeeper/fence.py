"""Leadership and the epoch fence (invariant I3).

One bridge is active at a time. Winning the election is not enough to write: the winner
bumps the epoch node, and every batch it writes afterwards is a multi-op that first checks
the epoch node still has the version it set. A bridge that was deposed (paused past its
session, partitioned) finds its next batch rejected as a whole and steps down; it can never
interleave a write with its successor's. This is the same trick Kafka's own KRaft migration
plays on ``/controller_epoch``.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError

from bridge.decide.shares import epoch_path, share_of_group, share_of_path
from bridge.metrics import METRICS

log = logging.getLogger(__name__)


class Fenced(RuntimeError):
    """This bridge's epoch is no longer current: another bridge took over."""


@dataclass(frozen=True)
class Epoch:
    """The epoch this bridge won, and the znode version every batch must check."""

    path: str
    value: int
    version: int
    holder: str


def bridge_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def claim_epoch(client: KazooClient, path: str, holder: str) -> Epoch:
    """Bump the epoch node (conditional on the version read) and return what we now hold."""
    while True:
        try:
            client.create(path, b'{"epoch":0}', makepath=True)
        except NodeExistsError:
            pass
        data, stat = client.get(path)
        try:
            previous = int(json.loads(data or b"{}").get("epoch", 0))
        except (ValueError, AttributeError):
            previous = stat.version  # a damaged epoch node still has a usable version
        value = previous + 1
        body = json.dumps({"epoch": value, "holder": holder, "since_ms": int(time.time() * 1000)})
        try:
            new = client.set(path, body.encode(), version=stat.version)
        except BadVersionError:
            continue  # someone else bumped it between our read and write; read again
        log.info("claimed bridge epoch", extra={"epoch": value, "node": path})
        return Epoch(path=path, value=value, version=new.version, holder=holder)


class ShareMoved(RuntimeError):
    """A write for a share this bridge does not hold (any more): nothing was sent."""


class ShareFence:
    """The epochs of the shares this bridge holds (``[scale] mode = "shares"``).

    Claimed when Kafka's group coordinator assigns a share to this bridge, dropped when it
    revokes it (before the rebalance completes, so no two bridges hold one share); every
    batch checks the epoch of each share it writes for (I3 per share), so a bridge that
    lost a share without noticing (paused, partitioned) has its next write refused."""

    def __init__(self, client: KazooClient, root: str, holder: str, shares: int) -> None:
        self.client = client
        self.root = root
        self.holder = holder
        #: partitions of __consumer_offsets (0 until the first assignment says)
        self.shares = shares
        self.epochs: dict[int, Epoch] = {}
        #: counts changes of the shares held; a flow reconciles in full when it moved
        self.generation = 0
        #: called with the shares just released, right after their epochs were dropped
        #: (what a bridge runs for a share's groups besides writes stops there too)
        self.on_release: list[Callable[[set[int]], None]] = []
        #: each share's epoch as this bridge last claimed it (kept after a release)
        self._last: dict[int, int] = {}
        #: shares claimed since :meth:`take_over` was last asked whose epoch another bridge
        #: bumped since this one last held them: their groups' nodes were written by others
        self._taken: set[int] = set()

    def held(self) -> set[int]:
        return set(self.epochs)

    def holds_group(self, group: str) -> bool:
        if not self.shares:  # the topic's partition count is not known yet: none held
            return False
        return share_of_group(group, self.shares) in self.epochs

    def claim(self, shares: set[int]) -> None:
        """Bump the epoch of each share, all pipelined (each conditional on the version
        read, as :func:`claim_epoch`; a share bumped meanwhile by another is read again)."""
        todo = sorted(shares - set(self.epochs))
        for share in todo:
            METRICS.share_held.labels(share=str(share)).set(1)
        paths = {s: epoch_path(self.root, s) for s in todo}
        made = [self.client.create_async(p, b'{"epoch":0}', makepath=True) for p in paths.values()]
        for result in made:
            try:
                result.get()
            except NodeExistsError:
                pass
        while todo:
            reads = [(s, self.client.get_async(paths[s])) for s in todo]
            sets = []
            for share, result in reads:
                data, stat = result.get()
                try:
                    was = json.loads(data or b"{}")
                    value = int(was.get("epoch", 0)) + 1
                    ours = was.get("holder") == self.holder and self._last.get(share) == value - 1
                except (ValueError, AttributeError):
                    value = stat.version + 1  # a damaged epoch node still has a version
                    ours = False
                body = json.dumps({"epoch": value, "holder": self.holder})
                write = self.client.set_async(paths[share], body.encode(), version=stat.version)
                sets.append((share, value, ours, write))
            todo = []
            for share, value, ours, write in sets:
                try:
                    stat = write.get()
                except BadVersionError:
                    todo.append(share)  # bumped between our read and write: read again
                    continue
                self.epochs[share] = Epoch(paths[share], value, stat.version, self.holder)
                self._last[share] = value
                if not ours:  # another bridge held it since (or never this one)
                    self._taken.add(share)
        if shares:
            self.generation += 1
            log.info("claimed shares", extra={"shares": _ranges(shares), "held": len(self.epochs)})

    def take_over(self) -> set[int]:
        """The shares claimed since the last call that another bridge held in between (a
        rebalance revokes every share and deals most back: those it dealt back to this
        bridge, with no claim by another in between, kept their nodes as this bridge left
        them)."""
        taken, self._taken = self._taken, set()
        return taken

    def release(self, shares: set[int]) -> None:
        """Stop writing for ``shares`` (revoked): their batches are refused from now on."""
        dropped = {s for s in shares if self.epochs.pop(s, None) is not None}
        for share in dropped:
            METRICS.share_held.remove(str(share))
        if dropped:
            self.generation += 1
            log.info(
                "released shares", extra={"shares": _ranges(dropped), "held": len(self.epochs)}
            )
            for listener in self.on_release:
                listener(dropped)

    def epochs_for(self, paths: list[str]) -> list[Epoch]:
        """The epochs a batch of writes to ``paths`` checks; raises :class:`ShareMoved` for
        a path of a share not held. A batch of shared parents only checks every held one."""
        wanted: set[int] = set()
        for path in paths:
            share = share_of_path(path, self.root, self.shares)
            if share is None:
                continue
            if share not in self.epochs:
                raise ShareMoved(f"share {share} (of {path}) is not held by this bridge")
            wanted.add(share)
        if not wanted:
            if not self.epochs:
                raise ShareMoved("this bridge holds no share: nothing is written")
            wanted = set(self.epochs)
        return [self.epochs[s] for s in sorted(wanted)]


def _ranges(shares: set[int]) -> str:
    """``{0, 1, 2, 5}`` as ``"0-2,5"``: a short log field."""
    out: list[str] = []
    for s in sorted(shares):
        if out and out[-1].split("-")[-1] == str(s - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{s}"
        else:
            out.append(str(s))
    return ",".join(out)
