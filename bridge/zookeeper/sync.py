"""The forced-sync handshake between ``zk-bridge migrate`` and the active bridge, in one place.

A migration step's gate must judge a state the bridge actually reached, not one it is about
to overwrite. So the command *requests* a sync (``<root>/sync-requests/<g>``, a fresh token),
the groups flow *answers* at the end of the first tick that began after the request
(``<root>/sync-results/<g>``: both stores' offsets as that tick left them, with the token;
the request is retired in the same fenced transaction), and the command *evaluates* the
answer carrying its token. ``SyncReport`` is the answer's format, both ways.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from bridge.decide.plan import Create, Delete, SetData
from bridge.zookeeper.watched import WatchedChildren, WatchedData, children_data
from bridge.zookeeper.writer import BatchRejected, FencedWriter, OperatorWriter, missing_parents
from zkpaths import TopicPartition


def request_path(root: str, group: str) -> str:
    return f"{root.rstrip('/')}/sync-requests/{group}"


def result_path(root: str, group: str) -> str:
    return f"{root.rstrip('/')}/sync-results/{group}"


@dataclass(frozen=True)
class SyncReport:
    """Both stores' offsets of a group as one tick of the bridge left them: per partition
    (ZooKeeper, Kafka), -1 where a store has none; ``request`` is the token answered."""

    request: str
    at_ms: int
    offsets: dict[TopicPartition, tuple[int, int]] = field(default_factory=dict)

    def encode(self) -> bytes:
        return json.dumps(
            {
                "request": self.request,
                "at_ms": self.at_ms,
                "offsets": {
                    f"{tp.topic}/{tp.partition}": list(v) for tp, v in sorted(self.offsets.items())
                },
            }
        ).encode()

    @classmethod
    def decode(cls, data: bytes) -> SyncReport:
        """Raises ``ValueError`` on a node that is no report."""
        try:
            raw = json.loads(data)
            offsets = {}
            for key, (zk, kafka) in raw["offsets"].items():
                topic, partition = key.rsplit("/", 1)
                offsets[TopicPartition(topic, int(partition))] = (int(zk), int(kafka))
            return cls(str(raw["request"]), int(raw["at_ms"]), offsets)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a sync report: {exc!r}") from None


# ---- the command's side ------------------------------------------------------------------


def request_sync(zk: KazooClient, root: str, group: str, timeout_s: float) -> SyncReport | None:
    """Ask the active bridge to reconcile ``group`` now; its report, or None if none came
    within ``timeout_s``."""
    token = uuid.uuid4().hex
    _write_request(OperatorWriter(zk), request_path(root, group), token.encode())
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            report = SyncReport.decode(zk.get(result_path(root, group))[0])
            if report.request == token:
                return report
        except (NoNodeError, ValueError):
            pass
        time.sleep(0.1)
    return None


def _write_request(writer: OperatorWriter, path: str, data: bytes) -> None:
    """Create or replace the request node, conditional on what was read; a concurrent
    change (the bridge retiring an older request) is read again."""
    for attempt in range(5):
        stat = writer.client.exists(path)
        if stat is None:
            ops: list = [*writer.missing_parents([path]), Create(path, data)]
        else:
            ops = [SetData(path, data, stat.version)]
        try:
            writer.apply(ops)
            return
        except BatchRejected:
            if attempt == 4:
                raise


# ---- the bridge's side -------------------------------------------------------------------


def pending_requests(
    zk: KazooClient, root: str, watched: tuple[WatchedChildren, WatchedData] | None = None
) -> dict[str, tuple[str, int]]:
    """Open requests: group -> (token, node version), read at the start of a tick. With
    ``watched`` (the groups flow's caches) only what changed since is read again; a stale
    version only makes the answer's conditional delete fail, and the next tick answers."""
    base = f"{root.rstrip('/')}/sync-requests"
    if watched is not None:
        read = children_data(*watched, base)
        return {g: (data.decode(errors="replace"), st.version) for g, (data, st) in read.items()}
    try:
        groups = zk.get_children(base)
    except NoNodeError:
        return {}
    out = {}
    for g in groups:
        try:
            data, stat = zk.get(f"{base}/{g}")
        except NoNodeError:
            continue
        out[g] = (data.decode(errors="replace"), stat.version)
    return out


def answer(
    writer: FencedWriter,
    root: str,
    group: str,
    request: tuple[str, int],
    offsets: Mapping[TopicPartition, tuple[int, int]],
) -> bool:
    """Publish the report and retire the request (at the version read) in one transaction
    behind the bridge's epoch check (``FencedWriter.apply_own``; ``Fenced`` when deposed).
    False when the request was withdrawn or replaced meanwhile: the next tick answers the
    newer one."""
    token, version = request
    report = SyncReport(token, int(time.time() * 1000), dict(offsets))
    path = result_path(root, group)
    stat = writer.client.exists(path)
    ops: list = [Delete(request_path(root, group), version)]
    if stat is None:
        ops += [*missing_parents(writer.client, [path]), Create(path, report.encode())]
    else:
        ops.append(SetData(path, report.encode(), stat.version))
    try:
        writer.apply_own(ops)
    except BatchRejected:
        return False
    return True
