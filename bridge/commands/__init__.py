"""Operator subcommands of ``zk-bridge`` that live outside ``bridge/cli.py``.

Each module exposes ``register(subparsers, connection_options)``; ``cli.build_parser`` calls
it, so a subcommand's arguments and code stay together and ``cli.py`` stays small.
"""

from __future__ import annotations

import argparse
import os

from bridge.config import Settings, load

#: where a command finds its servers when no flag names them (``zk-bridge devstack status
#: --output env`` prints them for a shell to eval)
ENV_ZOOKEEPER = "ZK_BRIDGE_ZOOKEEPER"
ENV_BOOTSTRAP_SERVERS = "ZK_BRIDGE_BOOTSTRAP_SERVERS"


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The settings of every subcommand: a flag wins over ``ZK_BRIDGE_ZOOKEEPER`` /
    ``ZK_BRIDGE_BOOTSTRAP_SERVERS``, which win over ``ZK_BRIDGE__SECTION__KEY`` variables and
    the ``--config`` file, which win over the defaults."""
    overrides: dict = {}
    zookeeper = getattr(args, "zookeeper", None) or os.environ.get(ENV_ZOOKEEPER)
    bootstrap = getattr(args, "bootstrap_server", None) or os.environ.get(ENV_BOOTSTRAP_SERVERS)
    if zookeeper:
        overrides.setdefault("zookeeper", {})["connect"] = zookeeper
    if bootstrap:
        overrides.setdefault("kafka", {})["bootstrap_servers"] = bootstrap
    if getattr(args, "metrics_address", None):
        overrides.setdefault("metrics", {})["address"] = args.metrics_address
    if getattr(args, "gateway_listen", None):
        overrides["gateway"] = {"enabled": True, "listen": args.gateway_listen}
    return load(getattr(args, "config", None), overrides)
