"""What the offsets commands print: the plan table (or JSON) and progress lines."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from bridge.commands.offsets.clients import Key
from bridge.commands.offsets.stores import ZkOffset


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


def plan_rows(
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


def finish(
    args: argparse.Namespace, action: str, rows: list[Row], stores_read: list[str], extra: dict
) -> None:
    if args.output == "json":
        print(json.dumps({"action": action, **extra, "partitions": plan_json(rows)}, indent=2))
    else:
        print_plan(rows, stores_read, sys.stdout)


def status(args: argparse.Namespace, message: str) -> None:
    """A progress line: stdout for the table, stderr under --output json (keeps it parsable)."""
    out = sys.stderr if getattr(args, "output", "table") == "json" else sys.stdout
    print(f"offsets {args.offsets_action}: {message}", file=out, flush=True)
