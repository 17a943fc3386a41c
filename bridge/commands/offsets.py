"""``zk-bridge offsets export|import|reset``: Kafka's ExportZkOffsets/ImportZkOffsets and
``kafka-consumer-groups --reset-offsets``, for both offset stores.

The file format and its validation are in :mod:`bridge.offsets_file` (pure); this module
does the I/O. Policies an operator should know (also in ``--help``):

* **export** writes one line per partition, sorted. A ZooKeeper offset node that is not a
  usable offset (text, a negative number, a partition or topic name that cannot be one) is
  reported on stderr with its path and left out; the good lines are still written, and the
  exit code is 1 so that a script notices the export is incomplete. A node holding ``-1``
  ("no offset") is left out silently, like a partition without a commit in Kafka.
* **import** checks every line (format, topic and partition exist in Kafka, ``--group``)
  and writes nothing unless all are valid. ZooKeeper gets one multi-op transaction: nodes
  are created (parents too) or set with the version that was read, so a concurrent writer
  makes the import fail, with nothing written, instead of being overwritten blindly. Kafka
  gets one transactional offset commit for all groups (accepted for a live group too, and
  atomic across groups), then the tool waits until OffsetFetch shows the values.
* **reset** refuses a live group (old consumers under ``/consumers/<g>/ids`` or a Kafka
  group that is not Empty/Dead) unless ``--force``, and **always** writes a backup of each
  store it resets before writing: the group's whole offsets in that store, in the line
  format (exactly what ``offsets export GROUP --store S`` prints). ``--dry-run`` writes
  nothing, not even the backup. ``--to-offset`` is clamped into ``[earliest, latest]`` as
  ``kafka-consumer-groups`` does; ``--from-file`` is applied exactly (it is a restore).
  The default store is ``both``: while the bridge reconciles a group in ``dual`` mode a
  backward move in only one store would be undone by ``max(zk, kafka)``.

Exit codes: 0 done, 1 validation failed or refused (nothing written), 2 bad configuration,
3 ZooKeeper or Kafka unreachable.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import textwrap
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from kazoo.exceptions import KazooException

from bridge import offsets_file as of
from bridge.commands import settings_from_args
from bridge.config import Settings
from zkpaths import GroupPartition, TopicPartition
from zkpaths.names import node_name_problem, parse_id, topic_problem

if TYPE_CHECKING:  # kafka-python takes ~0.1 s to import: not for every ``zk-bridge --help``
    from kafka import KafkaAdminClient
    from kazoo.client import KazooClient

    from bridge.zookeeper.writer import OperatorWriter

Key = GroupPartition
STORES = ("zookeeper", "kafka")
#: one ZooKeeper request must fit in jute.maxbuffer (1 MiB by default); keep a margin
ZK_TXN_LIMIT = 900_000
#: one id for every offsets tool run, so two concurrent runs fence each other in Kafka
TRANSACTIONAL_ID = "kafka-zk-bridge-offsets"
KAFKA_VISIBLE_S = 30.0


class Failure(Exception):
    """Stops a command with a one-line message and an exit code (1 refused, 3 unreachable)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


# -- ZooKeeper ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ZkOffset:
    """An offset node as read: its version (for the write's check) and its value if usable."""

    version: int
    offset: int | None
    problem: str | None = None


def read_zk_groups(
    zk: KazooClient, groups: Iterable[str] | None
) -> tuple[dict[Key, ZkOffset], list[str]]:
    """Every usable offset node of ``groups`` (all groups when None), and the bad nodes
    (left out) as ``path: reason`` lines."""
    from bridge.zookeeper.reader import ConsumerTreeReader

    problems: list[str] = []
    reader = ConsumerTreeReader(zk, report=lambda p: problems.append(str(p)))
    names = sorted(groups) if groups is not None else reader.groups()
    nodes = reader.offsets(dict.fromkeys(names))
    out = {
        GroupPartition(g, *tp): ZkOffset(n.version, None if n.offset < 0 else n.offset)
        for g, per_group in nodes.items()
        for tp, n in per_group.items()
    }
    return out, problems


def read_zk_keys(zk: KazooClient, keys: Iterable[Key]) -> dict[Key, ZkOffset]:
    """The offset nodes of exactly these partitions, read before writing them: an absent
    node is left out, a bad one is kept (its row shows ``bad``; the write replaces it)."""
    from bridge.zookeeper.reader import ConsumerTreeReader

    reader = ConsumerTreeReader(zk, report=lambda _problem: None)  # shown in the plan
    nodes = reader.offsets_at((k.group, k.tp) for k in keys)
    return {
        GroupPartition(g, *tp): ZkOffset(n.version, None if n.offset < 0 else n.offset, n.problem)
        for (g, tp), n in nodes.items()
    }


def write_zk(
    writer: OperatorWriter, targets: Mapping[Key, int], current: Mapping[Key, ZkOffset]
) -> None:
    """All targets in one transaction; fails as a whole if any node changed since ``current``
    was read (set with its version, or created where it was absent)."""
    from bridge.decide.plan import Create, SetData
    from bridge.zookeeper.writer import BatchRejected, Check, TooLarge

    paths = {k: f"/consumers/{k.group}/offsets/{k.topic}/{k.partition}" for k in targets}
    ops: list = writer.missing_parents(paths[k] for k in targets if k not in current)
    for key in sorted(targets):
        data = str(targets[key]).encode("ascii")
        node = current.get(key)
        if node is None:
            ops.append(Create(paths[key], data))
        elif node.offset == targets[key]:
            ops.append(Check(paths[key], node.version))  # unchanged, but still as read
        else:
            ops.append(SetData(paths[key], data, node.version))
    try:
        writer.apply(ops)
    except TooLarge as exc:
        raise Failure(f"{exc}: split the file by group") from None
    except BatchRejected as exc:
        verb = {"Create": "create", "SetData": "set", "Check": "check"}[type(exc.op).__name__]
        raise Failure(
            f"ZooKeeper transaction refused at '{verb} {exc.op.path}' "
            f"({type(exc.error).__name__}): the node changed since it was read (a concurrent "
            "writer?); nothing was written, run again"
        ) from None


def zk_live_ids(zk: KazooClient, group: str) -> list[str]:
    """Old consumers registered for ``group`` (ephemeral ``/consumers/<g>/ids`` children)."""
    from bridge.zookeeper.reader import ConsumerTreeReader

    return ConsumerTreeReader(zk).consumer_ids([group])[group]


# -- Kafka --------------------------------------------------------------------------------


def partition_counts(admin: KafkaAdminClient, topics: Iterable[str]) -> dict[str, int]:
    """Existing topics among ``topics`` with their number of partitions."""
    from bridge.kafka.cluster import partition_counts as counts

    return counts(admin, topics)


def log_offsets(
    admin: KafkaAdminClient, tps: Iterable[TopicPartition], spec: str
) -> dict[TopicPartition, int]:
    """Earliest or latest offset of each partition (``spec`` = "earliest" | "latest")."""
    from bridge.kafka.offsets import log_offsets as offsets

    return offsets(admin, tps, "earliest" if spec == "earliest" else "latest")


def kafka_group_offsets(admin: KafkaAdminClient, group: str) -> dict[TopicPartition, int]:
    """A group's committed offsets in Kafka; partitions without a commit are left out."""
    from bridge.kafka.groups import group_offsets

    return group_offsets(admin, group)


def kafka_live(admin: KafkaAdminClient, group: str) -> str | None:
    """Why the Kafka group counts as live (state and members), or None when Empty/Dead."""
    from bridge.kafka.groups import describe_group

    desc = describe_group(admin, group)
    if desc.get("error"):
        return f"Kafka cannot describe it ({desc['error']})"
    state = desc.get("group_state") or "Unknown"
    members = desc.get("members") or []
    if state in ("Empty", "Dead") and not members:
        return None
    ids = ", ".join(sorted(m.get("client_id") or m.get("member_id", "?") for m in members))
    return f"Kafka group is {state} with {len(members)} member(s){': ' + ids if ids else ''}"


def write_kafka(settings: Settings, admin: KafkaAdminClient, targets: Mapping[Key, int]) -> None:
    """One transactional offset commit for every group (``bridge.kafka.commit``, as the
    bridge commits), then wait until OffsetFetch shows exactly these offsets."""
    from bridge.kafka.commit import OffsetCommitter

    per_group: dict[str, dict[TopicPartition, int]] = {}
    for key, o in targets.items():
        per_group.setdefault(key.group, {})[key.tp] = o
    committer = OffsetCommitter(
        admin, settings.kafka.client_options(), TRANSACTIONAL_ID, KAFKA_VISIBLE_S
    )
    try:
        late = committer.commit_groups(per_group, "command", exact=True)
    finally:
        committer.close()
    if late:
        raise Failure(
            f"Kafka accepted the commit but OffsetFetch of {', '.join(late)} "
            f"did not show it within {KAFKA_VISIBLE_S:.0f}s"
        )


# -- output ------------------------------------------------------------------------------


@dataclass
class Row:
    group: str
    topic: str
    partition: int
    target: int
    current: dict[str, int | str | None] = field(default_factory=dict)
    note: str = ""


def _show(value: int | str | None) -> str:
    return "-" if value is None else str(value)


def print_plan(rows: list[Row], stores_read: Iterable[str], out: IO[str]) -> None:
    """The table: per partition, each store's current offset and the target."""
    read = list(stores_read)
    head = ["GROUP", "TOPIC", "PARTITION", *(s.upper() for s in read), "TARGET", "NOTE"]
    body = [
        [r.group, r.topic, str(r.partition), *(_show(r.current.get(s)) for s in read)]
        + [str(r.target), r.note]
        for r in rows
    ]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    for line in [head, *body]:
        print("  ".join(x.ljust(w) for x, w in zip(line, widths, strict=True)).rstrip(), file=out)


def plan_json(rows: list[Row]) -> list[dict[str, Any]]:
    return [
        {
            "group": r.group,
            "topic": r.topic,
            "partition": r.partition,
            "current": r.current,
            "target": r.target,
            "note": r.note,
        }
        for r in rows
    ]


def _err(action: str, message: str) -> None:
    print(f"offsets {action}: {message}", file=sys.stderr)


def _stores(choice: str) -> list[str]:
    return list(STORES) if choice == "both" else [choice]


# -- connections ---------------------------------------------------------------------------


class Clients:
    """Opens what a command needs, maps unreachable servers to exit 3, closes everything."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._zk: KazooClient | None = None
        self._admin: KafkaAdminClient | None = None

    @property
    def zk(self) -> KazooClient:
        from bridge.connect import Unreachable, command_zookeeper

        if self._zk is None:
            try:
                self._zk = command_zookeeper(self.settings.zookeeper)
            except Unreachable as exc:
                raise Failure(str(exc), 3) from None
        return self._zk

    @property
    def zk_writer(self) -> OperatorWriter:
        """Writes go through the operator mode of the writer (one conditional transaction)."""
        from bridge.zookeeper.writer import OperatorWriter

        return OperatorWriter(self.zk, max_bytes=ZK_TXN_LIMIT)

    @property
    def admin(self) -> KafkaAdminClient:
        from bridge.connect import Unreachable, command_kafka

        if self._admin is None:
            try:
                self._admin = command_kafka(self.settings.kafka)
            except Unreachable as exc:
                raise Failure(str(exc), 3) from None
        return self._admin

    def close(self) -> None:
        if self._zk is not None:
            self._zk.stop()
            self._zk.close()
        if self._admin is not None:
            self._admin.close()


def _run(action: str, args: argparse.Namespace, body: Callable[[Clients], int]) -> int:
    """Run ``body`` with clients; every failure becomes one line on stderr and an exit code."""
    from kafka.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError
    from kazoo.exceptions import ConnectionLoss, SessionExpiredError
    from kazoo.handlers.threading import KazooTimeoutError

    clients = Clients(settings_from_args(args))
    try:
        return body(clients)
    except Failure as exc:
        _err(action, str(exc))
        return exc.code
    except (
        KafkaConnectionError,
        KafkaTimeoutError,
        ConnectionLoss,
        SessionExpiredError,
        KazooTimeoutError,
    ) as exc:
        _err(
            action,
            f"lost the connection ({type(exc).__name__}: {exc}); if that was during a "
            "write, check what the stores hold with 'zk-bridge offsets export'",
        )
        return 3
    except (KafkaError, KazooException) as exc:
        _err(action, f"{type(exc).__name__}: {exc}")
        return 1
    finally:
        clients.close()


# -- export ---------------------------------------------------------------------------------


def collect(
    clients: Clients, store: str, groups: list[str] | None
) -> tuple[list[of.OffsetEntry], list[str]]:
    """The entries of one store for ``groups`` (all when None) and the problems met."""
    problems: list[str] = []
    entries: list[of.OffsetEntry] = []
    if store == "zookeeper":
        nodes, found = read_zk_groups(clients.zk, groups)
        problems = [f"{p}; skipped" for p in found]
        entries = [of.OffsetEntry(*k, n.offset) for k, n in nodes.items() if n.offset is not None]
    else:
        from bridge.kafka.groups import list_group_ids, read_offsets

        names = sorted(groups) if groups is not None else sorted(list_group_ids(clients.admin))
        for group, offsets in read_offsets(clients.admin, names).items():
            if isinstance(offsets, str):
                problems.append(f"group {group!r}: cannot fetch its offsets: {offsets}; skipped")
                continue
            if offsets and node_name_problem(group, "group"):
                problems.append(
                    f"group {group!r}: cannot be written as a ZooKeeper path "
                    f"({node_name_problem(group, 'group')}); skipped"
                )
                continue
            entries += [of.OffsetEntry(group, *tp, o) for tp, o in offsets.items()]
    return of.select(entries, groups), problems


def _write_output(target: str, text: str) -> str:
    """To stdout for '-', else to a file replaced atomically (never half a file)."""
    if target == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return "stdout"
    path = Path(target)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would surprise whoever reads the export
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return str(path)


def cmd_export(args: argparse.Namespace) -> int:
    def body(clients: Clients) -> int:
        groups = args.groups or None
        for g in groups or []:
            if node_name_problem(g, "group"):
                raise Failure(f"{node_name_problem(g, 'group')}")
        entries, problems = collect(clients, args.store, groups)
        found = {e.group for e in entries}
        for g in groups or []:
            if g not in found:
                problems.append(f"group {g!r} has no committed offsets in {args.store}")
        try:
            where = _write_output(args.output, of.format_entries(entries))
        except OSError as exc:
            raise Failure(f"cannot write {args.output}: {exc.strerror or exc}") from None
        for p in problems:
            _err("export", p)
        summary = (
            f"{len(entries)} offsets of {len(found)} group(s) from {args.store} "
            f"written to {where}"
            + (f"; {len(problems)} problem(s) reported above" if problems else "")
        )
        print(f"offsets export: {summary}", file=sys.stderr if args.output == "-" else sys.stdout)
        return 1 if problems else 0

    return _run("export", args, body)


# -- import ---------------------------------------------------------------------------------


def _read_text(name: str) -> str:
    try:
        if name == "-":
            return sys.stdin.buffer.read().decode("utf-8")
        return Path(name).read_bytes().decode("utf-8")
    except OSError as exc:
        raise Failure(f"{name}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise Failure(f"{name}: not UTF-8 text (byte {exc.start})") from None


def validate_file(
    clients: Clients, name: str, groups: Collection[str] | None
) -> tuple[of.ParsedFile, list[of.LineError]]:
    """Parse and check against the cluster; every bad line is printed, nothing is written."""
    source = "<stdin>" if name == "-" else name
    parsed = of.parse(_read_text(name), source, groups)
    topics = {e.topic for e in parsed.entries}
    counts = partition_counts(clients.admin, topics)
    errors = sorted(
        parsed.errors + of.check_cluster(parsed, counts), key=lambda e: (e.line, e.reason)
    )
    warnings = []
    if not errors:
        ends = log_offsets(clients.admin, {e.key.tp for e in parsed.entries}, "latest")
        warnings = of.beyond_log_end(parsed, ends)
    if parsed.ignored:
        warnings.append(
            of.LineError(
                source,
                parsed.stopped_at or 0,
                f"warning: empty line ends the file (as in ImportZkOffsets); "
                f"the {parsed.ignored} non-empty line(s) after it are not read",
            )
        )
    for w in warnings:
        print(w, file=sys.stderr)
    return parsed, errors


def _current(
    clients: Clients, keys: Iterable[Key], stores: Iterable[str]
) -> tuple[dict[Key, ZkOffset], dict[Key, int]]:
    """What each store now holds for ``keys``."""
    keys = sorted(set(keys))
    zk_now: dict[Key, ZkOffset] = {}
    kafka_now: dict[Key, int] = {}
    if "zookeeper" in stores:
        zk_now = read_zk_keys(clients.zk, keys)
    if "kafka" in stores:
        for group in sorted({k.group for k in keys}):
            for tp, o in kafka_group_offsets(clients.admin, group).items():
                kafka_now[GroupPartition(group, *tp)] = o
    return zk_now, kafka_now


def _rows(
    targets: Mapping[Key, int],
    zk_now: Mapping[Key, ZkOffset],
    kafka_now: Mapping[Key, int],
    stores: Iterable[str],
    notes: Mapping[Key, str] | None = None,
) -> list[Row]:
    rows = []
    for key in sorted(targets):
        current: dict[str, int | str | None] = {}
        if "zookeeper" in stores:
            node = zk_now.get(key)
            current["zookeeper"] = (
                None if node is None else ("bad" if node.problem else node.offset)
            )
        if "kafka" in stores:
            current["kafka"] = kafka_now.get(key)
        rows.append(Row(*key, targets[key], current, (notes or {}).get(key, "")))
    return rows


def _apply(
    clients: Clients,
    stores: list[str],
    targets: Mapping[Key, int],
    zk_now: Mapping[Key, ZkOffset],
) -> None:
    """ZooKeeper first (atomic), then Kafka; a Kafka failure says that ZooKeeper was written."""
    from kafka.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError

    if "zookeeper" in stores:
        write_zk(clients.zk_writer, targets, zk_now)
    if "kafka" in stores:
        try:
            write_kafka(clients.settings, clients.admin, targets)
        except (Failure, KafkaError) as exc:
            done = "ZooKeeper was written; " if "zookeeper" in stores else ""
            lost = isinstance(exc, (KafkaConnectionError, KafkaTimeoutError))
            raise Failure(f"{done}the Kafka commit failed: {exc}", 3 if lost else 1) from None


def _live_warning(clients: Clients, group: str, check_zk: bool) -> str | None:
    why = []
    if check_zk:
        ids = zk_live_ids(clients.zk, group)
        if ids:
            why.append(
                f"{len(ids)} old consumer(s) registered under /consumers/{group}/ids: "
                + ", ".join(ids[:5])
                + (", ..." if len(ids) > 5 else "")
            )
    live = kafka_live(clients.admin, group)
    if live:
        why.append(live)
    return "; ".join(why) or None


def _finish(
    args: argparse.Namespace, action: str, rows: list[Row], stores_read: list[str], extra: dict
) -> None:
    if args.output == "json":
        print(json.dumps({"action": action, **extra, "partitions": plan_json(rows)}, indent=2))
    else:
        print_plan(rows, stores_read, sys.stdout)


def cmd_import(args: argparse.Namespace) -> int:
    def body(clients: Clients) -> int:
        stores = _stores(args.store)
        parsed, errors = validate_file(clients, args.file, args.group)
        if errors:
            for e in errors:
                print(e, file=sys.stderr)
            raise Failure(f"{parsed.source}: {len(errors)} bad line(s); nothing was written")
        targets = {e.key: e.offset for e in parsed.entries}
        if not targets:
            print(f"offsets import: {parsed.source}: no offsets to import", file=sys.stderr)
            return 0
        for group in sorted({k.group for k in targets}):
            live = _live_warning(clients, group, "zookeeper" in stores)
            if live:
                _err(
                    "import",
                    f"warning: group {group!r} is live ({live}); "
                    "its consumers may commit over the imported offsets",
                )
        zk_now, kafka_now = _current(clients, targets, stores)
        rows = _rows(targets, zk_now, kafka_now, stores)
        if not args.dry_run:
            _apply(clients, stores, targets, zk_now)
        groups = len({k.group for k in targets})
        _finish(
            args,
            "import",
            rows,
            stores,
            {
                "file": parsed.source,
                "stores": stores,
                "dry_run": args.dry_run,
            },
        )
        verb = "would import" if args.dry_run else "imported"
        _status(
            args,
            f"{verb} {len(targets)} offsets of {groups} group(s) into "
            f"{' and '.join(stores)}" + (" (dry run: nothing written)" if args.dry_run else ""),
        )
        return 0

    return _run("import", args, body)


def _status(args: argparse.Namespace, message: str) -> None:
    """A progress line: stdout for the table, stderr under --output json (keeps it parsable)."""
    out = sys.stderr if getattr(args, "output", "table") == "json" else sys.stdout
    print(f"offsets {args.offsets_action}: {message}", file=out, flush=True)


# -- reset ----------------------------------------------------------------------------------


def parse_topic_specs(specs: list[str]) -> dict[str, set[int] | None]:
    """``T`` (every partition) or ``T:P,P`` as kafka-consumer-groups takes them."""
    out: dict[str, set[int] | None] = {}
    for spec in specs:
        topic, colon, parts = spec.partition(":")
        if topic_problem(topic):
            raise Failure(f"--topic {spec!r}: {topic_problem(topic)}")
        if not colon:
            out[topic] = None
            continue
        numbers = [parse_id(p.strip()) for p in parts.split(",")]
        if any(n is None for n in numbers):
            raise Failure(f"--topic {spec!r}: expected TOPIC or TOPIC:PARTITION[,PARTITION...]")
        if topic in out and out[topic] is None:
            continue  # the whole topic was named already
        out[topic] = (out.get(topic) or set()) | {n for n in numbers if n is not None}
    return out


def backup_paths(
    requested: str | None, group: str, stores: list[str], now: datetime
) -> dict[str, Path]:
    """Where each store's backup goes: FILE itself for one store; ``<stem>-<store><suffix>``
    for both, so that each file restores exactly one store."""
    if requested:
        base = Path(requested)
    else:
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", group)
        base = Path(f"{safe}-offsets-backup-{now.strftime('%Y%m%dT%H%M%SZ')}.txt")
    if len(stores) == 1:
        return {stores[0]: base}
    return {s: base.with_name(f"{base.stem}-{s}{base.suffix}") for s in stores}


def write_backup(path: Path, text: str) -> None:
    """Create ``path`` (never overwrite an older backup) and make it durable before any write."""
    try:
        with path.open("x", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    except FileExistsError:
        raise Failure(
            f"backup {path} already exists; nothing was written (choose --backup)"
        ) from None
    except OSError as exc:
        raise Failure(
            f"cannot write backup {path}: {exc.strerror or exc}; nothing was written"
        ) from None


def _scope(
    clients: Clients,
    args: argparse.Namespace,
    group: str,
    stores: list[str],
    zk_nodes: Mapping[Key, ZkOffset],
    kafka_now: Mapping[Key, int],
) -> set[Key]:
    """The partitions to reset: the named topics, else every partition the group has an
    offset for in the stores being reset (kafka-consumer-groups' --all-topics)."""
    if args.topic:
        specs = parse_topic_specs(args.topic)
        counts = partition_counts(clients.admin, specs)
        keys: set[Key] = set()
        for topic, parts in specs.items():
            if topic not in counts:
                raise Failure(f"topic {topic!r} does not exist")
            bad = sorted(p for p in parts or () if p >= counts[topic])
            if bad:
                raise Failure(
                    f"topic {topic!r} has {counts[topic]} partitions; "
                    f"no partition {', '.join(map(str, bad))}"
                )
            keys |= {
                GroupPartition(group, topic, p)
                for p in (parts if parts is not None else range(counts[topic]))
            }
        return keys
    keys = set()
    if "zookeeper" in stores:
        keys |= set(zk_nodes)
    if "kafka" in stores:
        keys |= set(kafka_now)
    if not keys:
        raise Failure(
            f"group {group!r} has no committed offsets in {' or '.join(stores)}; "
            "name the partitions with --topic"
        )
    counts = partition_counts(clients.admin, {k.topic for k in keys})
    gone = sorted(k for k in keys if k.partition >= counts.get(k.topic, 0))
    for _g, t, p in gone:
        _err("reset", f"warning: {t}/{p} has an offset but no longer exists in Kafka; left alone")
    return keys - set(gone)


def _targets(
    clients: Clients, args: argparse.Namespace, group: str, keys: set[Key]
) -> tuple[dict[Key, int], dict[Key, str]]:
    tps = {k.tp for k in keys}
    notes: dict[Key, str] = {}
    if args.to_earliest or args.to_latest:
        ends = log_offsets(clients.admin, tps, "earliest" if args.to_earliest else "latest")
        return {k: ends[k.tp] for k in keys}, notes
    first = log_offsets(clients.admin, tps, "earliest")
    last = log_offsets(clients.admin, tps, "latest")
    targets = {}
    for k in keys:
        value, why = of.clamp(args.to_offset, first[k.tp], last[k.tp])
        targets[k] = value
        if why:
            notes[k] = f"clamped: {why}"
    return targets, notes


def cmd_reset(args: argparse.Namespace) -> int:
    def body(clients: Clients) -> int:
        group = args.group
        if node_name_problem(group, "group"):
            raise Failure(f"{node_name_problem(group, 'group')}")
        if args.to_offset is not None and args.to_offset < 0:
            raise Failure(f"--to-offset {args.to_offset}: an offset is >= 0")
        if args.from_file and args.topic:
            raise Failure(
                "--topic cannot be combined with --from-file (the file names the partitions)"
            )
        stores = _stores(args.store)
        live = _live_warning(clients, group, check_zk=True)
        if live and not args.force:
            raise Failure(
                f"group {group!r} is live: {live}. Stop its consumers, or pass --force "
                "(they may then commit over the reset); nothing was written"
            )
        zk_nodes, problems = read_zk_groups(clients.zk, [group])
        for p in problems:
            _err("reset", f"{p}; not in the backup")
        kafka_now = {
            GroupPartition(group, *tp): o
            for tp, o in kafka_group_offsets(clients.admin, group).items()
        }
        notes: dict[Key, str] = {}
        if args.from_file:
            parsed, errors = validate_file(clients, args.from_file, [group])
            if errors:
                for e in errors:
                    print(e, file=sys.stderr)
                raise Failure(f"{parsed.source}: {len(errors)} bad line(s); nothing was written")
            targets = {e.key: e.offset for e in parsed.entries}
            if not targets:
                raise Failure(f"{parsed.source}: no offsets for group {group!r}")
        else:
            keys = _scope(clients, args, group, stores, zk_nodes, kafka_now)
            targets, notes = _targets(clients, args, group, keys)
        # what the write is conditional on: the nodes as backed up, and the bad or absent
        # ones (a bad node is not in the backup but is replaced) as read now
        others = read_zk_keys(clients.zk, [k for k in targets if k not in zk_nodes])
        zk_now = {**others, **{k: n for k, n in zk_nodes.items() if k in targets}}
        rows = _rows(targets, zk_now, kafka_now, STORES, notes)
        paths = backup_paths(args.backup, group, stores, datetime.now(UTC))
        extra: dict[str, Any] = {"group": group, "stores": stores, "dry_run": args.dry_run}
        if args.dry_run:
            extra["backups"] = {}
            _finish(args, "reset", rows, list(STORES), extra)
            _status(
                args,
                f"dry run: nothing written; a real run first backs up {' and '.join(stores)} "
                f"to {', '.join(str(p) for p in paths.values())}",
            )
            return 0
        for store, path in paths.items():
            if store == "zookeeper":
                backup = [
                    of.OffsetEntry(*k, n.offset)
                    for k, n in zk_nodes.items()
                    if n.offset is not None
                ]
            else:
                backup = [of.OffsetEntry(*k, o) for k, o in kafka_now.items()]
            write_backup(path, of.format_entries(backup))
            _status(
                args,
                f"backup of {len(backup)} {store} offsets written to {path} "
                f"(restore: zk-bridge offsets import {path} --store {store})",
            )
        extra["backups"] = {s: str(p) for s, p in paths.items()}
        _apply(clients, stores, targets, zk_now)
        _finish(args, "reset", rows, list(STORES), extra)
        _status(
            args, f"reset {len(targets)} partition(s) of group {group!r} in {' and '.join(stores)}"
        )
        return 0

    return _run("reset", args, body)


# -- registration ---------------------------------------------------------------------------


def _desc(text: str) -> str:
    """Paragraphs (separated by blank lines) wrapped for the terminal; argparse would join them."""
    return "\n\n".join(textwrap.fill(p, 88) for p in text.split("\n\n"))


_EXIT = (
    "Exit codes: 0 done, 1 invalid input or refused (nothing written), 2 bad config, 3 unreachable."
)


def register(
    subparsers: Any, connection_options: Callable[[argparse.ArgumentParser], None]
) -> None:
    """Add ``offsets export|import|reset`` to the ``zk-bridge`` parser."""
    fmt = argparse.RawDescriptionHelpFormatter
    offsets = subparsers.add_parser(
        "offsets",
        help="export, import or reset committed offsets (ExportZkOffsets line format)",
        description="Committed offsets as lines /consumers/<g>/offsets/<t>/<p>:<offset>, the "
        "format of Kafka's ExportZkOffsets/ImportZkOffsets, for ZooKeeper and Kafka storage.",
    )
    actions = offsets.add_subparsers(dest="offsets_action", required=True, metavar="ACTION")

    exp = actions.add_parser(
        "export",
        help="write groups' offsets, one line per partition",
        formatter_class=fmt,
        description=_desc(
            "Write the committed offsets of GROUPs (every group when none is named), "
            "sorted, one line per partition.\n\nA ZooKeeper node that is not a usable offset is "
            "reported on stderr with its path and skipped; the rest is still written and the exit "
            "code is 1. Nodes holding -1 ('no offset') are left out. A named group without offsets "
            "is reported the same way.\n\n" + _EXIT
        ),
    )
    connection_options(exp)
    exp.add_argument("groups", nargs="*", metavar="GROUP")
    exp.add_argument(
        "-o",
        "--output",
        "--output-file",
        default="-",
        metavar="FILE|-",
        help="where to write (default '-', stdout); a file is replaced atomically",
    )
    exp.add_argument(
        "--store",
        choices=list(STORES),
        default="zookeeper",
        help="read ZooKeeper nodes (default) or Kafka's committed offsets",
    )
    exp.set_defaults(func=cmd_export)

    imp = actions.add_parser(
        "import",
        help="write offsets from a file, all or nothing",
        formatter_class=fmt,
        description=_desc(
            "Write the offsets in FILE ('-' for stdin). Every line is checked first "
            "(format, offset, topic and partition exist in Kafka, --group) and each bad one is "
            "reported as FILE:LINE: reason; nothing is written unless all are valid.\n\n"
            "The file ends at the first empty line, as in ImportZkOffsets (a warning says how many "
            "lines after it were not read). Path and offset are split at the last ':'. Offsets are "
            "0..2^63-1: -1 ('no committed offset') is refused; leave such a line out.\n\n"
            "ZooKeeper: one transaction, creating missing nodes and setting the others with the "
            "version read, so a concurrent change fails the import as a whole. Kafka: one "
            "transactional offset commit (accepted for a live group too).\n\n" + _EXIT
        ),
    )
    connection_options(imp)
    imp.add_argument("file", metavar="FILE")
    imp.add_argument(
        "--store",
        choices=[*STORES, "both"],
        default="zookeeper",
        help="where to write (default zookeeper, like ImportZkOffsets)",
    )
    imp.add_argument(
        "--group",
        action="append",
        metavar="G",
        help="only this group may appear in the file (repeatable)",
    )
    imp.add_argument("--dry-run", action="store_true", help="check and show; write nothing")
    imp.add_argument("--output", choices=["table", "json"], default="table")
    imp.set_defaults(func=cmd_import)

    rst = actions.add_parser(
        "reset",
        help="move a group's offsets (the only way backward), after a backup",
        formatter_class=fmt,
        description=_desc(
            "Reset GROUP's offsets on the partitions of --topic (default: every "
            "partition the group has an offset for in the stores reset).\n\n"
            "Refused while the group is live (old consumers under /consumers/<g>/ids, or a Kafka "
            "group that is not Empty/Dead) unless --force. Before writing, the group's current "
            "offsets in each store being reset are ALWAYS saved in the line format: to --backup "
            "FILE (default ./<group>-offsets-backup-<UTC time>.txt) for one store, or to "
            "<stem>-zookeeper<suffix> and <stem>-kafka<suffix> for both; restore with "
            "'offsets import FILE --store S'. --dry-run writes nothing, not even the backup.\n\n"
            "--to-offset is clamped into [earliest, latest] like kafka-consumer-groups "
            "(the NOTE column says so); --from-file is applied exactly.\n\n" + _EXIT
        ),
    )
    connection_options(rst)
    rst.add_argument("group", metavar="GROUP")
    how = rst.add_mutually_exclusive_group(required=True)
    how.add_argument("--to-earliest", action="store_true")
    how.add_argument("--to-latest", action="store_true")
    how.add_argument("--to-offset", type=int, metavar="N")
    how.add_argument("--from-file", metavar="F", help="a file in the line format, of GROUP only")
    rst.add_argument(
        "--topic",
        action="append",
        metavar="T[:P,P...]",
        help="reset only these topics/partitions (repeatable)",
    )
    rst.add_argument(
        "--store",
        choices=[*STORES, "both"],
        default="both",
        help="which store(s) to reset (default both)",
    )
    rst.add_argument("--force", action="store_true", help="reset even a live group")
    rst.add_argument("--backup", metavar="FILE", help="where the backup goes (never overwritten)")
    rst.add_argument("--dry-run", action="store_true", help="show the plan; write nothing")
    rst.add_argument("--output", choices=["table", "json"], default="table")
    rst.set_defaults(func=cmd_reset)
