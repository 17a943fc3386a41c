"""``zk-bridge``: the command line, shaped like Kafka's own tools (``--zookeeper``,
``--bootstrap-server``, ``--config``)."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
from pathlib import Path

from bridge import __version__, logs
from bridge.config import ConfigError, load

log = logging.getLogger("bridge.cli")


def _connection_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="TOML config file (see docs/config.toml)")
    p.add_argument("--zookeeper", metavar="HOST:PORT[/chroot]", help="ZooKeeper connect string")
    p.add_argument(
        "--bootstrap-server", metavar="HOST:PORT[,HOST:PORT]", help="Kafka bootstrap servers"
    )


def _settings(args: argparse.Namespace):
    overrides: dict = {}
    if getattr(args, "zookeeper", None):
        overrides.setdefault("zookeeper", {})["connect"] = args.zookeeper
    if getattr(args, "bootstrap_server", None):
        overrides.setdefault("kafka", {})["bootstrap_servers"] = args.bootstrap_server
    return load(args.config, overrides)


def cmd_run(args: argparse.Namespace) -> int:
    from bridge.connect import Unreachable
    from bridge.service import Bridge

    settings = _settings(args)
    bridge = Bridge(settings)
    signal.signal(signal.SIGTERM, lambda *_: bridge.stop())
    try:
        bridge.run()
    except Unreachable as exc:
        log.error("%s", exc)
        return 3
    except KeyboardInterrupt:
        bridge.stop()
    return 0


def cmd_devstack(args: argparse.Namespace) -> int:
    from bridge.devstack import Devstack, StackError

    stack = Devstack(args.dir)
    try:
        if args.action == "up":
            stack.up()
        elif args.action == "down":
            stopped = stack.down()
            print(f"stopped: {', '.join(stopped) if stopped else 'nothing was running'}")
            return 0
    except StackError as exc:
        print(f"devstack: {exc}", file=sys.stderr)
        return 1
    status = stack.status()
    if args.output == "json":
        print(json.dumps(status, indent=2))
    elif args.output == "env":
        print(f"ZOOKEEPER={status['zookeeper']}")
        print(f"BOOTSTRAP_SERVERS={status['bootstrap_servers']}")
    else:
        print(f"zookeeper.connect={status['zookeeper']}")
        print(f"bootstrap.servers={status['bootstrap_servers']}")
        for name, proc in status["processes"].items():
            health = "healthy" if proc["healthy"] else ("running" if proc["running"] else "down")
            print(f"  {name:<10} port {proc['port']:<6} pid {proc['pid'] or '-':<8} {health}")
    healthy = all(p["healthy"] for p in status["processes"].values())
    return 0 if healthy or args.action == "status" else 1


def cmd_config_check(args: argparse.Namespace) -> int:
    settings = load(args.file)
    print(f"{args.file}: OK")
    if args.verbose:
        print(settings.model_dump_json(indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zk-bridge",
        description="Keep Kafka's legacy ZooKeeper layout true beside a KRaft cluster.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("--log-format", choices=["text", "json"], default="text")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run the bridge (mirror Kafka into ZooKeeper)")
    _connection_options(run)
    run.set_defaults(func=cmd_run)

    dev = sub.add_parser("devstack", help="a local ZooKeeper + 3-node KRaft Kafka, no Docker")
    dev.add_argument("action", choices=["up", "down", "status"])
    dev.add_argument(
        "--dir",
        default=".devstack",
        type=Path,
        help="where the stack keeps config, data and logs (default .devstack)",
    )
    dev.add_argument(
        "--output",
        choices=["table", "json", "env"],
        default="table",
        help="env prints shell assignments ZOOKEEPER=... BOOTSTRAP_SERVERS=...",
    )
    dev.set_defaults(func=cmd_devstack)

    cfg = sub.add_parser("config", help="configuration tools")
    cfg_sub = cfg.add_subparsers(dest="config_command", required=True, metavar="ACTION")
    check = cfg_sub.add_parser("check", help="validate a config file and exit")
    check.add_argument("file", type=Path)
    check.add_argument("-v", "--verbose", action="store_true", help="print the result")
    check.set_defaults(func=cmd_config_check)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logs.setup(args.log_level, args.log_format)
    try:
        return args.func(args)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
