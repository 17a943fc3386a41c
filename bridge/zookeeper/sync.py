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
from kazoo.exceptions import NodeExistsError, NoNodeError, RolledBackError, RuntimeInconsistency

from bridge.decide.plan import Create, SetData
from bridge.zookeeper.fence import Epoch, Fenced
from bridge.zookeeper.writer import BatchRejected, OperatorWriter
from zkpaths import TopicPartition

# what ZooKeeper reports for the other ops of a multi-op that failed elsewhere
_KNOCK_ON = (RolledBackError, RuntimeInconsistency)


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


def pending_requests(zk: KazooClient, root: str) -> dict[str, tuple[str, int]]:
    """Open requests: group -> (token, node version), read at the start of a tick."""
    base = f"{root.rstrip('/')}/sync-requests"
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
    zk: KazooClient,
    root: str,
    group: str,
    request: tuple[str, int],
    offsets: Mapping[TopicPartition, tuple[int, int]],
    epoch: Epoch,
) -> None:
    """Fenced: publish the report and retire the request (at the version read), in one
    transaction; a request withdrawn meanwhile is left unanswered."""
    token, version = request
    report = SyncReport(token, int(time.time() * 1000), dict(offsets))
    results_dir = f"{root.rstrip('/')}/sync-results"
    if zk.exists(results_dir) is None:
        try:
            zk.create(results_dir, b"", makepath=True)
        except NodeExistsError:
            pass
    path = result_path(root, group)
    txn = zk.transaction()
    txn.check(epoch.path, epoch.version)
    txn.delete(request_path(root, group), version=version)
    if zk.exists(path) is None:
        txn.create(path, report.encode())
    else:
        txn.set_data(path, report.encode())
    results = txn.commit()
    check = results[0]
    if isinstance(check, Exception) and not isinstance(check, _KNOCK_ON):
        raise Fenced(f"epoch {epoch.value} is no longer current")
    # the epoch held and another op failed: the request was withdrawn or replaced by a newer
    # one since it was read (not a lost leadership); the next tick answers the newer one
