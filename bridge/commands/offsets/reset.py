"""``offsets reset``: a group's offsets moved (the only way backward), after a backup."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bridge import offsets_file as of
from bridge.commands.offsets.clients import STORES, Clients, Failure, Key, chosen_stores, err, run
from bridge.commands.offsets.files import valid_targets
from bridge.commands.offsets.output import finish, plan_rows, status
from bridge.commands.offsets.stores import (
    ZkOffset,
    apply,
    live_warning,
    read_zk_groups,
    read_zk_keys,
)
from zkpaths import GroupPartition
from zkpaths.names import node_name_problem, parse_id, topic_problem


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
    from bridge.kafka.cluster import partition_counts

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
        err("reset", f"warning: {t}/{p} has an offset but no longer exists in Kafka; left alone")
    return keys - set(gone)


def _targets(
    clients: Clients, args: argparse.Namespace, group: str, keys: set[Key]
) -> tuple[dict[Key, int], dict[Key, str]]:
    """Each partition's target offset, and a note where ``--to-offset`` was clamped."""
    from bridge.kafka.offsets import log_offsets

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


def _check_args(args: argparse.Namespace) -> None:
    """Refuse what cannot be a reset before anything is read."""
    if node_name_problem(args.group, "group"):
        raise Failure(f"{node_name_problem(args.group, 'group')}")
    if args.to_offset is not None and args.to_offset < 0:
        raise Failure(f"--to-offset {args.to_offset}: an offset is >= 0")
    if args.from_file and args.topic:
        raise Failure("--topic cannot be combined with --from-file (the file names the partitions)")


def _refuse_live(clients: Clients, args: argparse.Namespace) -> None:
    """A live group would commit over the reset: refused unless ``--force``."""
    live = live_warning(clients, args.group, check_zk=True)
    if live and not args.force:
        raise Failure(
            f"group {args.group!r} is live: {live}. Stop its consumers, or pass --force "
            "(they may then commit over the reset); nothing was written"
        )


def _from_file(clients: Clients, name: str, group: str) -> dict[Key, int]:
    """``--from-file``: the file's offsets, exactly (a restore), once every line is valid."""
    parsed, targets = valid_targets(clients, name, [group])
    if not targets:
        raise Failure(f"{parsed.source}: no offsets for group {group!r}")
    return targets


def _write_backups(
    args: argparse.Namespace,
    paths: Mapping[str, Path],
    zk_nodes: Mapping[Key, ZkOffset],
    kafka_now: Mapping[Key, int],
) -> None:
    """Each reset store's current offsets in the line format, durable before any write."""
    for store, path in paths.items():
        if store == "zookeeper":
            backup = [
                of.OffsetEntry(*k, n.offset) for k, n in zk_nodes.items() if n.offset is not None
            ]
        else:
            backup = [of.OffsetEntry(*k, o) for k, o in kafka_now.items()]
        write_backup(path, of.format_entries(backup))
        status(
            args,
            f"backup of {len(backup)} {store} offsets written to {path} "
            f"(restore: zk-bridge offsets import {path} --store {store})",
        )


def _reset(clients: Clients, args: argparse.Namespace) -> int:
    """Read both stores, plan the targets, back up, then write (or only show, dry run)."""
    from bridge.kafka.groups import group_offsets

    _check_args(args)
    group, stores = args.group, chosen_stores(args.store)
    _refuse_live(clients, args)
    zk_nodes, problems = read_zk_groups(clients.zk, [group])
    for p in problems:
        err("reset", f"{p}; not in the backup")
    kafka_now = {
        GroupPartition(group, *tp): o for tp, o in group_offsets(clients.admin, group).items()
    }
    notes: dict[Key, str] = {}
    if args.from_file:
        targets = _from_file(clients, args.from_file, group)
    else:
        keys = _scope(clients, args, group, stores, zk_nodes, kafka_now)
        targets, notes = _targets(clients, args, group, keys)
    # what the write is conditional on: the nodes as backed up, and the bad or absent
    # ones (a bad node is not in the backup but is replaced) as read now
    others = read_zk_keys(clients.zk, [k for k in targets if k not in zk_nodes])
    zk_now = {**others, **{k: n for k, n in zk_nodes.items() if k in targets}}
    rows = plan_rows(targets, zk_now, kafka_now, STORES, notes)
    paths = backup_paths(args.backup, group, stores, datetime.now(UTC))
    extra: dict[str, Any] = {"group": group, "stores": stores, "dry_run": args.dry_run}
    if args.dry_run:
        extra["backups"] = {}
        finish(args, "reset", rows, list(STORES), extra)
        status(
            args,
            f"dry run: nothing written; a real run first backs up {' and '.join(stores)} "
            f"to {', '.join(str(p) for p in paths.values())}",
        )
        return 0
    _write_backups(args, paths, zk_nodes, kafka_now)
    extra["backups"] = {s: str(p) for s, p in paths.items()}
    apply(clients, stores, targets, zk_now)
    finish(args, "reset", rows, list(STORES), extra)
    status(args, f"reset {len(targets)} partition(s) of group {group!r} in {' and '.join(stores)}")
    return 0


def cmd_reset(args: argparse.Namespace) -> int:
    return run("reset", args, lambda clients: _reset(clients, args))
