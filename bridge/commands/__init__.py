"""Operator subcommands of ``zk-bridge`` that live outside ``bridge/cli.py``.

Each module exposes ``register(subparsers, connection_options)``; ``cli.build_parser`` calls
it, so a subcommand's arguments and code stay together and ``cli.py`` stays small.
"""

from __future__ import annotations

import argparse

from bridge.config import Settings, load


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Settings from ``--config``, then ``--zookeeper``/``--bootstrap-server`` on top.

    The same precedence as ``cli._settings``; repeated here so that this package does not
    import ``bridge.cli`` (which imports it).
    """
    overrides: dict = {}
    if getattr(args, "zookeeper", None):
        overrides.setdefault("zookeeper", {})["connect"] = args.zookeeper
    if getattr(args, "bootstrap_server", None):
        overrides.setdefault("kafka", {})["bootstrap_servers"] = args.bootstrap_server
    return load(getattr(args, "config", None), overrides)
