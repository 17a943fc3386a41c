"""The ZooKeeper side of the audit, written to files: ``zk-bridge snapshot``.

One row per znode of ``/consumers/<g>`` (the group node, ``ids/<id>``, ``owners/<t>/<p>``,
``offsets/<t>/<p>``) and of ``/brokers/ids/<id>`` and ``/brokers/topics/<t>``, with the znode's
stat (``ctime``/``mtime`` in ms, ``mzxid``, data ``version``, data length). Data is decoded with
:mod:`zkpaths`' codecs; a node they refuse (a non-numeric or huge offset, bad JSON, non-UTF-8,
a path outside the layout) is still a row, with ``error`` saying why, never dropped.

For the roll-back verdict each group row carries ``writable``: whether this snapshot's
identity may write the group's offsets (the session is read-write, the ``offsets`` directory
and every topic directory grant CREATE, every offset node grants WRITE), with ``note`` naming
the first node that does not. ACLs are read per node; an ACL entry counts as ours when it is
``world:anyone`` or names the digest/SASL user we connected as.

Reads go through the one reader of the tree (``bridge.zookeeper.reader``), pipelined (many
async requests in flight), so a snapshot of thousands of groups costs round trips per tree
level, not per node. ZooKeeper has no point-in-time read, so the
manifest records the zxid range seen and the wall-clock start and end.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.security import Permissions

from bridge.zookeeper.reader import ConsumerTreeReader, NodeProblem
from zkpaths import (
    CodecError,
    ZkPathError,
    decode_broker,
    decode_consumer_registration,
    decode_offset,
    decode_owner,
    decode_topic,
    parse_path,
)

log = logging.getLogger(__name__)

SNAPSHOT_FORMAT = "kafka-zk-bridge/zk-snapshot"
SNAPSHOT_VERSION = 1
MANIFEST = "manifest.json"
NODES_JSONL = "nodes.jsonl"
NODES_PARQUET = "nodes.parquet"

#: node kinds a snapshot holds
KINDS = ("group", "consumer", "owner", "offset", "broker", "topic")


class SnapshotError(RuntimeError):
    """A snapshot cannot be taken or read; the message says which and why."""


@dataclass(slots=True)
class NodeRow:
    """One znode. ``value`` is the decoded data as text (JSON for structured data)."""

    kind: str
    path: str
    group: str | None = None
    topic: str | None = None
    partition: int | None = None
    consumer_id: str | None = None
    broker_id: int | None = None
    #: offset nodes: the committed offset (-1 is the old consumer's "none yet")
    offset: int | None = None
    value: str | None = None
    #: why the node's path or data is not what the legacy layout says; None when fine
    error: str | None = None
    ctime: int | None = None
    mtime: int | None = None
    mzxid: int | None = None
    data_version: int | None = None
    data_length: int | None = None
    #: group rows: may this identity write the group's offsets; offset rows: the node itself
    writable: bool | None = None
    #: group rows: the first node that makes the group not writable
    note: str | None = None


COLUMNS = tuple(f.name for f in fields(NodeRow))


def arrow_schema():
    """The Parquet schema of a snapshot (pyarrow is part of the audit extra)."""
    import pyarrow as pa

    types = {
        "partition": pa.int32(),
        "broker_id": pa.int32(),
        "offset": pa.int64(),
        "ctime": pa.int64(),
        "mtime": pa.int64(),
        "mzxid": pa.int64(),
        "data_version": pa.int32(),
        "data_length": pa.int32(),
        "writable": pa.bool_(),
    }
    return pa.schema([(c, types.get(c, pa.string())) for c in COLUMNS])


# -- ACLs (pure) ------------------------------------------------------------------------------


def identities(auth_scheme: str | None, username: str | None) -> set[tuple[str, str]]:
    """The ACL ids that name this client: ``world:anyone`` plus the user it authenticates as."""
    ids = {("world", "anyone")}
    if username and auth_scheme == "digest":
        ids.add(("digest", username))
    elif username and auth_scheme == "sasl":
        ids.add(("sasl", username))
    return ids


def acl_grants(acls: Iterable[Any], perm: int, ids: set[tuple[str, str]]) -> bool:
    """Whether an ACL list grants ``perm`` to one of ``ids`` (digest ids match by user)."""
    for acl in acls:
        scheme, ident = acl.id.scheme, acl.id.id
        if scheme == "digest":
            ident = ident.split(":", 1)[0]
        if (scheme, ident) in ids and acl.perms & perm:
            return True
    return False


# -- reading ----------------------------------------------------------------------------------


def _stat(row: NodeRow, stat: Any) -> NodeRow:
    row.ctime, row.mtime, row.mzxid = stat.ctime, stat.mtime, stat.mzxid
    row.data_version, row.data_length = stat.version, stat.dataLength
    return row


def _decode_into(row: NodeRow, data: bytes) -> None:
    """Fill ``value``/``offset`` from node data, or ``error`` with the codec's reason."""
    try:
        if row.kind == "offset":
            row.offset = decode_offset(data, path=row.path)
            row.value = str(row.offset)
        elif row.kind == "owner":
            row.value = decode_owner(data, path=row.path)
        elif row.kind == "consumer":
            reg = decode_consumer_registration(data, path=row.path)
            row.value = json.dumps(
                {"pattern": reg.pattern, "subscription": reg.subscription}, sort_keys=True
            )
        elif row.kind == "broker":
            b = decode_broker(row.broker_id, data, path=row.path)
            row.value = json.dumps({"host": b.host, "port": b.port, "endpoints": b.endpoints})
        elif row.kind == "topic":
            t = decode_topic(data, path=row.path)
            row.value = json.dumps({"partitions": len(t.partitions)})
    except CodecError as exc:
        row.error = str(exc)


def _classify(path: str) -> NodeRow:
    """A row for ``path`` with names parsed from it; a path outside the layout is an error."""
    parts = path.split("/")
    if parts[1] == "brokers":
        kind = "broker" if parts[2] == "ids" else "topic"
    else:
        kind = {"ids": "consumer", "owners": "owner", "offsets": "offset"}.get(
            parts[3] if len(parts) > 3 else "", "group"
        )
    row = NodeRow(kind=kind, path=path)
    if kind != "broker" and kind != "topic":
        row.group = parts[2]
    try:
        parsed = parse_path(path)
    except ZkPathError as exc:
        row.error = str(exc)
        if kind in ("owner", "offset"):
            row.topic = parts[4] if len(parts) > 4 else None
        return row
    for name in ("topic", "partition", "consumer_id", "broker_id"):
        if hasattr(parsed, name):
            setattr(row, name, getattr(parsed, name))
    return row


class _Walk:
    """One snapshot's reads: the rows so far and the two pipelined readers (nodes and ACLs).

    A node this identity may not list or read is still a row, with the reason."""

    def __init__(self, client: KazooClient, ids: set[tuple[str, str]], window: int) -> None:
        self.ids = ids
        self.rows: list[NodeRow] = []
        self.reader = ConsumerTreeReader(client, report=self._unreadable, window=window)
        self.acl_reader = ConsumerTreeReader(client, report=lambda _problem: None, window=window)

    def _unreadable(self, problem: NodeProblem) -> None:
        row = _classify(problem.path)
        row.error = str(problem)
        self.rows.append(row)

    def children(self, paths: list[str]) -> dict[str, list[str]]:
        """Children of the paths that exist (an absent one is left out)."""
        return {p: sorted(c) for p, c in self.reader.pipelined("get_children", paths).items()}

    def read(self, paths: list[str], acl: bool = False) -> None:
        """A row per node, decoded; with ``acl``, whether this identity may write it."""
        data = self.reader.pipelined("get", paths)
        acls = self.acl_reader.pipelined("get_acls", paths) if acl else {}
        for path in paths:
            if path not in data:
                continue  # deleted since it was listed, or unreadable (a row already)
            value, stat = data[path]
            row = _stat(_classify(path), stat)
            if row.error is None:
                _decode_into(row, value)
            if path in acls:
                row.writable = acl_grants(acls[path][0], Permissions.WRITE, self.ids)
            self.rows.append(row)

    def consumers(self, progress: Callable[[str], None]) -> int:
        """Every group under /consumers with its ids, owners and offsets; the group count."""
        groups = self.children(["/consumers"]).get("/consumers", [])
        progress(f"snapshot: {len(groups)} groups under /consumers")
        group_paths = [f"/consumers/{g}" for g in groups]
        self.read(group_paths)
        group_rows = {r.path: r for r in self.rows if r.kind == "group"}
        subdirs = [f"{g}/{d}" for g in group_paths for d in ("ids", "owners", "offsets")]
        listed = self.children(subdirs)
        leaves = [f"{d}/{k}" for d, kids in listed.items() if d.endswith("/ids") for k in kids]
        topic_dirs = [
            f"{d}/{k}" for d, kids in listed.items() if not d.endswith("/ids") for k in kids
        ]
        topic_listing = self.children(topic_dirs)
        offset_dirs = [t for t in topic_dirs if "/offsets/" in t]
        offset_leaves = [f"{t}/{p}" for t in offset_dirs for p in topic_listing.get(t, [])]
        owner_leaves = [
            f"{t}/{p}" for t in topic_dirs if "/owners/" in t for p in topic_listing.get(t, [])
        ]
        progress(
            f"snapshot: reading {len(leaves)} registrations, {len(owner_leaves)} owners, "
            f"{len(offset_leaves)} offsets"
        )
        self.read(leaves + owner_leaves)
        self.read(offset_leaves, acl=True)
        self.offsets_writable(group_rows, set(listed), offset_dirs, offset_leaves)
        return len(groups)

    def offsets_writable(
        self,
        group_rows: dict[str, NodeRow],
        listed: set[str],
        offset_dirs: list[str],
        offset_leaves: list[str],
    ) -> None:
        """May we write each group's offsets? Creating what is missing needs CREATE on the
        parent (the group node when there is no offsets directory yet), updating needs WRITE."""
        needs: dict[str, list[tuple[str, int]]] = {}
        for gpath in group_rows:
            top = f"{gpath}/offsets" if f"{gpath}/offsets" in listed else gpath
            needs[gpath] = [(top, Permissions.CREATE)]
            needs[gpath] += [
                (t, Permissions.CREATE) for t in offset_dirs if t.startswith(gpath + "/")
            ]
        dirs = [path for need in needs.values() for path, _ in need]
        dir_acls = self.acl_reader.pipelined("get_acls", dirs)
        offset_rows = {r.path: r for r in self.rows if r.kind == "offset"}
        for gpath, grow in group_rows.items():
            grow.writable, grow.note = True, None
            for path, perm in needs[gpath]:
                got = dir_acls.get(path)
                if got is None or not acl_grants(got[0], perm, self.ids):
                    grow.writable, grow.note = False, f"{path} does not grant CREATE"
                    break
            else:
                for path in offset_leaves:
                    leaf = offset_rows.get(path)
                    if path.startswith(gpath + "/") and leaf is not None and not leaf.writable:
                        grow.writable, grow.note = False, f"{path} does not grant WRITE"
                        break

    def brokers(self, progress: Callable[[str], None]) -> None:
        """The broker registrations and topics under /brokers."""
        broker_ids = self.children(["/brokers/ids"]).get("/brokers/ids", [])
        topics = self.children(["/brokers/topics"]).get("/brokers/topics", [])
        self.read(
            [f"/brokers/ids/{b}" for b in broker_ids] + [f"/brokers/topics/{t}" for t in topics]
        )
        progress(f"snapshot: {len(broker_ids)} brokers, {len(topics)} topics under /brokers")


def take(
    client: KazooClient,
    *,
    ids: set[tuple[str, str]] | None = None,
    window: int = 512,
    progress: Callable[[str], None] = log.info,
) -> tuple[list[NodeRow], dict[str, Any]]:
    """Read the legacy tree under ``client``'s chroot into rows; returns (rows, manifest)."""
    started = int(time.time() * 1000)
    walk = _Walk(client, ids or identities(None, None), window)
    groups = walk.consumers(progress)
    walk.brokers(progress)
    rows = walk.rows
    zxids = [r.mzxid for r in rows if r.mzxid is not None]
    manifest = {
        "format": SNAPSHOT_FORMAT,
        "version": SNAPSHOT_VERSION,
        "started_ms": started,
        "finished_ms": int(time.time() * 1000),
        "groups": groups,
        "nodes": len(rows),
        "bad_nodes": sum(r.error is not None for r in rows),
        "max_mzxid": max(zxids, default=0),
        "counts": {k: sum(r.kind == k for r in rows) for k in KINDS},
    }
    return rows, manifest


# -- files ------------------------------------------------------------------------------------


def write(directory: Path, rows: list[NodeRow], manifest: dict[str, Any], fmt: str) -> Path:
    """Write ``nodes.jsonl`` or ``nodes.parquet`` and ``manifest.json``; returns the data file."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        path = directory / NODES_JSONL
        with path.open("w") as out:
            for r in rows:
                out.write(json.dumps(asdict(r), ensure_ascii=True) + "\n")
    elif fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = directory / NODES_PARQUET
        cols = {c: [getattr(r, c) for r in rows] for c in COLUMNS}
        pq.write_table(pa.table(cols, schema=arrow_schema()), path)
    else:
        raise SnapshotError(f"unknown snapshot format {fmt!r} (parquet or jsonl)")
    (directory / MANIFEST).write_text(
        json.dumps({**manifest, "nodes_file": path.name}, indent=2) + "\n"
    )
    return path


def read_manifest(directory: Path) -> dict[str, Any]:
    """A snapshot's manifest, checked; SnapshotError says what is missing or wrong."""
    directory = Path(directory)
    path = directory / MANIFEST
    if not directory.is_dir():
        raise SnapshotError(f"snapshot {directory} does not exist or is not a directory")
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise SnapshotError(
            f"{path} is missing: {directory} is not a snapshot (write one with "
            "'zk-bridge snapshot --zookeeper HOST:PORT --out DIR')"
        ) from None
    except ValueError as exc:
        raise SnapshotError(f"{path} is not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != SNAPSHOT_FORMAT:
        raise SnapshotError(f"{path} is not a ZooKeeper snapshot manifest")
    if manifest.get("version") != SNAPSHOT_VERSION:
        raise SnapshotError(f"{path}: snapshot version {manifest.get('version')} not supported")
    if not (directory / str(manifest.get("nodes_file"))).exists():
        raise SnapshotError(f"{directory}: data file {manifest.get('nodes_file')} is missing")
    return manifest


def read_rows(directory: Path) -> list[NodeRow]:
    """A snapshot's rows, without Spark (tests and small tools)."""
    manifest = read_manifest(directory)
    path = Path(directory) / manifest["nodes_file"]
    if path.suffix == ".jsonl":
        return [NodeRow(**json.loads(line)) for line in path.read_text().splitlines() if line]
    import pyarrow.parquet as pq

    return [NodeRow(**row) for row in pq.read_table(path).to_pylist()]
