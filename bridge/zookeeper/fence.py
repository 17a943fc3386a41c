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
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError

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
