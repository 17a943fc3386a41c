"""Per-group storage-mode records under ``<root>/groups/<g>`` (see ``decide.migration``).

The active bridge creates a record, with the inferred mode, for every group it first sees;
operators change it with ``zk-bridge migrate``, one gated step at a time. Every write is
conditional on the version read, so two writers never lose each other's step; the bridge's
own writes are also fenced on its epoch (I3).
"""

from __future__ import annotations

import logging

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError

from bridge.decide.migration import GroupRecord, StorageMode
from bridge.decide.plan import SetData
from bridge.zookeeper.fence import Epoch, Fenced
from bridge.zookeeper.writer import OperatorWriter

log = logging.getLogger(__name__)


def records_path(root: str) -> str:
    return f"{root.rstrip('/')}/groups"


def record_path(root: str, group: str) -> str:
    return f"{records_path(root)}/{group}"


def read_records(zk: KazooClient, root: str) -> dict[str, tuple[GroupRecord, int]]:
    """Every group's record and its znode version; unreadable records are logged, skipped."""
    base = records_path(root)
    try:
        groups = zk.get_children(base)
    except NoNodeError:
        return {}
    pending = [(g, zk.get_async(f"{base}/{g}")) for g in groups]
    out: dict[str, tuple[GroupRecord, int]] = {}
    for g, result in pending:
        try:
            data, stat = result.get()
            out[g] = (GroupRecord.decode(data), stat.version)
        except NoNodeError:
            continue
        except ValueError as exc:
            log.warning("unreadable storage-mode record: %s", exc, extra={"group": g})
    return out


def create_record(
    zk: KazooClient, root: str, group: str, mode: StorageMode, epoch: Epoch, by: str, at_ms: int
) -> None:
    """Fenced create of a group's first record (the inferred mode)."""
    from bridge.decide.migration import Transition

    record = GroupRecord(mode, [Transition(at_ms, by, "none", mode.value, [])])
    if zk.exists(records_path(root)) is None:
        try:
            zk.create(records_path(root), b"", makepath=True)
        except NodeExistsError:
            pass
    txn = zk.transaction()
    txn.check(epoch.path, epoch.version)
    txn.create(record_path(root, group), record.encode())
    results = txn.commit()
    if isinstance(results[0], Exception):
        raise Fenced(f"epoch {epoch.value} is no longer current")
    if isinstance(results[1], Exception) and not isinstance(results[1], NodeExistsError):
        log.warning("could not record the mode of %s: %s", group, results[1])
    else:
        log.info("storage mode inferred", extra={"group": group, "mode": mode.value})
    return record


def write_step(
    writer: OperatorWriter, root: str, group: str, record: GroupRecord, version: int
) -> None:
    """An operator's step: conditional on the version the gates were evaluated against
    (``BatchRejected`` when the record changed meanwhile)."""
    writer.apply([SetData(record_path(root, group), record.encode(), version)])
