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
import textwrap
from collections.abc import Callable
from typing import Any

from bridge.commands.offsets.clients import STORES
from bridge.commands.offsets.files import cmd_export, cmd_import
from bridge.commands.offsets.reset import cmd_reset


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
    offsets = subparsers.add_parser(
        "offsets",
        help="export, import or reset committed offsets (ExportZkOffsets line format)",
        description="Committed offsets as lines /consumers/<g>/offsets/<t>/<p>:<offset>, the "
        "format of Kafka's ExportZkOffsets/ImportZkOffsets, for ZooKeeper and Kafka storage.",
    )
    actions = offsets.add_subparsers(dest="offsets_action", required=True, metavar="ACTION")
    for add in (_add_export, _add_import, _add_reset):
        add(actions, connection_options)


_FMT = argparse.RawDescriptionHelpFormatter
Options = Callable[[argparse.ArgumentParser], None]


def _add_export(actions: Any, connection_options: Options) -> None:
    exp = actions.add_parser(
        "export",
        help="write groups' offsets, one line per partition",
        formatter_class=_FMT,
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


def _add_import(actions: Any, connection_options: Options) -> None:
    imp = actions.add_parser(
        "import",
        help="write offsets from a file, all or nothing",
        formatter_class=_FMT,
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


def _add_reset(actions: Any, connection_options: Options) -> None:
    rst = actions.add_parser(
        "reset",
        help="move a group's offsets (the only way backward), after a backup",
        formatter_class=_FMT,
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
