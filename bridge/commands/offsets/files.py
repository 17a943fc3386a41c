"""``offsets export`` and ``offsets import``: the ExportZkOffsets line format out of and
into the stores (the format itself is :mod:`bridge.offsets_file`, pure)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Collection
from pathlib import Path

from bridge import offsets_file as of
from bridge.commands.offsets.clients import Clients, Failure, Key, chosen_stores, err, run
from bridge.commands.offsets.output import finish, plan_rows, status
from bridge.commands.offsets.stores import apply, current, live_warning, read_zk_groups
from zkpaths.names import node_name_problem


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
            err("export", p)
        summary = (
            f"{len(entries)} offsets of {len(found)} group(s) from {args.store} "
            f"written to {where}"
            + (f"; {len(problems)} problem(s) reported above" if problems else "")
        )
        print(f"offsets export: {summary}", file=sys.stderr if args.output == "-" else sys.stdout)
        return 1 if problems else 0

    return run("export", args, body)


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
    from bridge.kafka.cluster import partition_counts
    from bridge.kafka.offsets import log_ends

    source = "<stdin>" if name == "-" else name
    parsed = of.parse(_read_text(name), source, groups)
    topics = {e.topic for e in parsed.entries}
    counts = partition_counts(clients.admin, topics)
    errors = sorted(
        parsed.errors + of.check_cluster(parsed, counts), key=lambda e: (e.line, e.reason)
    )
    warnings = []
    if not errors:
        ends = log_ends(clients.admin, {e.key.tp for e in parsed.entries})
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


def valid_targets(
    clients: Clients, name: str, groups: Collection[str] | None
) -> tuple[of.ParsedFile, dict[Key, int]]:
    """The file's offsets once every line is valid; else each bad line is printed and the
    command refused, with nothing written."""
    parsed, errors = validate_file(clients, name, groups)
    if errors:
        for e in errors:
            print(e, file=sys.stderr)
        raise Failure(f"{parsed.source}: {len(errors)} bad line(s); nothing was written")
    return parsed, {e.key: e.offset for e in parsed.entries}


def cmd_import(args: argparse.Namespace) -> int:
    def body(clients: Clients) -> int:
        stores = chosen_stores(args.store)
        parsed, targets = valid_targets(clients, args.file, args.group)
        if not targets:
            print(f"offsets import: {parsed.source}: no offsets to import", file=sys.stderr)
            return 0
        for group in sorted({k.group for k in targets}):
            live = live_warning(clients, group, "zookeeper" in stores)
            if live:
                err(
                    "import",
                    f"warning: group {group!r} is live ({live}); "
                    "its consumers may commit over the imported offsets",
                )
        zk_now, kafka_now = current(clients, targets, stores)
        rows = plan_rows(targets, zk_now, kafka_now, stores)
        if not args.dry_run:
            apply(clients, stores, targets, zk_now)
        groups = len({k.group for k in targets})
        finish(
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
        status(
            args,
            f"{verb} {len(targets)} offsets of {groups} group(s) into "
            f"{' and '.join(stores)}" + (" (dry run: nothing written)" if args.dry_run else ""),
        )
        return 0

    return run("import", args, body)
