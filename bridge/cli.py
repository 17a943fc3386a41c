"""``zk-bridge``: the command line, shaped like Kafka's own tools (``--zookeeper``,
``--bootstrap-server``, ``--config``)."""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from bridge import __version__, logs
from bridge.commands import settings_from_args
from bridge.commands.groups import register as register_groups
from bridge.commands.migrate import register as register_migrate
from bridge.commands.offsets import register as register_offsets
from bridge.config import ConfigError, load
from bridge.connect import Unreachable

log = logging.getLogger("bridge.cli")


def _connection_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="TOML config file (see docs/config.toml)")
    p.add_argument("--zookeeper", metavar="HOST:PORT[/chroot]", help="ZooKeeper connect string")
    p.add_argument(
        "--bootstrap-server", metavar="HOST:PORT[,HOST:PORT]", help="Kafka bootstrap servers"
    )


_settings = settings_from_args


#: how long a stopping bridge may take to finish cleanly before it exits anyway
STOP_GRACE_S = 4.0


def _stop_within(bridge, grace_s: float, signum: int) -> None:
    """Ask the bridge to stop; if something (ZooKeeper or Kafka gone, a long resync) holds
    it past ``grace_s``, exit without the rest of the clean-up. Nothing more is written
    either way (the writer is halted first); the ZooKeeper session then expires by itself,
    as after a crash, and a standby takes over."""
    if bridge.stop_event.is_set():
        return
    log.info("%s: stopping", signal.Signals(signum).name)
    bridge.stop()

    def hard_exit() -> None:
        log.warning(
            "still stopping after %.0fs (%s); exiting without a clean shutdown: the ZooKeeper "
            "session expires by itself and a standby takes over",
            grace_s,
            bridge.state,
        )
        logging.shutdown()
        os._exit(0)

    timer = threading.Timer(grace_s, hard_exit)
    timer.daemon = True
    timer.start()


def cmd_run(args: argparse.Namespace) -> int:
    from bridge.service import Bridge, GatewayError

    settings = _settings(args)
    bridge = Bridge(settings)
    endpoint = None
    if settings.metrics.enabled:
        from bridge.http import bridge_readiness, serve

        try:
            endpoint = serve(
                settings.metrics.address, lambda: bridge_readiness(bridge, settings.metrics)
            )
        except OSError as exc:
            log.error(
                "cannot serve metrics on %s: %s; set --metrics-address or [metrics] address, "
                "or [metrics] enabled = false",
                settings.metrics.address,
                exc.strerror or exc,
            )
            return 2
        log.info("serving /metrics, /healthz and /readyz", extra={"address": endpoint.address})
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _: _stop_within(bridge, STOP_GRACE_S, signum))
    # `kill -USR1 <pid>` prints every thread's stack to stderr: what a stuck bridge is doing
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        bridge.run()
    except Unreachable as exc:
        log.error("%s", exc)
        return 3
    except GatewayError as exc:
        log.error("%s", exc)
        return 2
    finally:
        if endpoint is not None:
            endpoint.close()
    return 0


def cmd_devstack(args: argparse.Namespace) -> int:
    from bridge.devstack import Devstack, StackError

    try:
        stack = Devstack(args.dir, kafka_version=args.kafka_version)
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
        # what every zk-bridge subcommand reads when no flag names the servers
        print(f"export ZK_BRIDGE_ZOOKEEPER={status['zookeeper']}")
        print(f"export ZK_BRIDGE_BOOTSTRAP_SERVERS={status['bootstrap_servers']}")
        # the SASL_PLAINTEXT listener; the password is a local dev credential of this stack
        print(f"SASL_BOOTSTRAP_SERVERS={status['sasl_bootstrap_servers']}")
        print(f"SASL_MECHANISM={status['sasl_mechanism']}")
        print(f"SASL_USERNAME={status['sasl_username']}")
        print(f"SASL_PASSWORD={status['sasl_password']}")
    else:
        print(f"zookeeper.connect={status['zookeeper']}")
        print(f"bootstrap.servers={status['bootstrap_servers']} (Kafka {status['kafka_version']})")
        print(
            f"sasl bootstrap.servers={status['sasl_bootstrap_servers']} "
            f"(SASL_PLAINTEXT, {status['sasl_mechanism']}, user {status['sasl_username']}, "
            f"dev password {status['sasl_password']})"
        )
        for name, proc in status["processes"].items():
            health = "healthy" if proc["healthy"] else ("running" if proc["running"] else "down")
            ports = f"{proc['port']}" + (f"/{proc['sasl_port']}" if "sasl_port" in proc else "")
            print(f"  {name:<10} port {ports:<12} pid {proc['pid'] or '-':<8} {health}")
    healthy = all(p["healthy"] for p in status["processes"].values())
    return 0 if healthy or args.action == "status" else 1


def cmd_config_check(args: argparse.Namespace) -> int:
    settings = load(args.file)
    print(f"{args.file}: OK")
    if args.verbose:
        print(settings.model_dump_json(indent=2))
    return 0


def cmd_snapshot(args: argparse.Namespace) -> int:
    from kazoo.exceptions import KazooException
    from kazoo.handlers.threading import KazooTimeoutError

    from bridge.audit import snapshot
    from bridge.connect import command_zookeeper

    settings = _settings(args)
    zk = settings.zookeeper
    try:
        client = command_zookeeper(zk)
    except Unreachable as exc:
        print(f"snapshot: {exc}", file=sys.stderr)
        return 3
    try:
        rows, manifest = snapshot.take(client, ids=snapshot.identities(zk.auth_scheme, zk.username))
        manifest["zookeeper"] = zk.connect
        path = snapshot.write(args.out, rows, manifest, args.format)
    except (snapshot.SnapshotError, OSError) as exc:
        print(f"snapshot: {exc}", file=sys.stderr)
        return 2
    except (KazooException, KazooTimeoutError) as exc:
        print(f"snapshot: reading ZooKeeper failed: {type(exc).__name__} {exc}", file=sys.stderr)
        return 3
    finally:
        client.stop()
        client.close()
    print(
        f"snapshot: {manifest['groups']} groups, {manifest['nodes']} nodes "
        f"({manifest['bad_nodes']} bad) written to {path}"
    )
    return 0


def _spark_conf(pairs: list[str] | None) -> dict[str, str]:
    conf = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--conf {pair!r}: expected KEY=VALUE")
        conf[key] = value
    return conf


def cmd_audit(args: argparse.Namespace) -> int:
    from bridge.audit import dump, snapshot
    from bridge.audit.errors import AuditError
    from bridge.audit.pipeline import AuditConfig, check_inputs, run
    from bridge.audit.session import active_session, spark_session

    settings = _settings(args)
    logging.getLogger("py4j").setLevel(logging.WARNING)  # one INFO line per connection
    # an explicit address (flag or config file) only: never audit a default localhost:9092
    bootstrap = args.bootstrap_server or (settings.kafka.bootstrap_servers if args.config else None)
    client = {k: v for k, v in settings.kafka.client_options().items() if k != "bootstrap_servers"}
    if args.audit_command == "dump":
        return _audit_dump(args, settings, bootstrap, client)
    missing = [f for f in ("snapshot", "out") if getattr(args, f) is None]
    if missing:
        print(f"audit: --{' and --'.join(missing)} required", file=sys.stderr)
        return 2
    cfg = AuditConfig(
        snapshot=args.snapshot,
        out=args.out,
        bootstrap_servers=None if args.dump else bootstrap,
        dump=args.dump,
        groups=args.groups,
        client_options=client,
    )
    try:
        info = check_inputs(cfg)
        existing = active_session()  # embedded (tests, notebooks): leave it running
        spark = spark_session(args.master, conf=_spark_conf(args.conf))
        try:
            result = run(spark, cfg, info)
        finally:
            if existing is None:
                spark.stop()
    except (AuditError, snapshot.SnapshotError, dump.DumpError) as exc:
        print(f"audit: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 2)
    except Exception as exc:  # Spark/py4j failures: one line, not a JVM stack trace
        if type(exc).__module__.split(".")[0] not in ("pyspark", "py4j"):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"audit: the Spark job failed: {first[:500]}", file=sys.stderr)
        return 5
    s = result.summary
    counts = ", ".join(f"{n} {v}" for v, n in sorted(s["verdicts"].items()))
    print(f"audit: {s['groups']} groups ({counts}); report {result.out / 'report.html'}")
    return 0


def _audit_dump(args: argparse.Namespace, settings, bootstrap: str | None, client: dict) -> int:
    from kafka.errors import KafkaError

    from bridge.audit import dump
    from bridge.connect import command_kafka

    if not bootstrap or args.out is None:
        print("audit dump: --bootstrap-server and --out are required", file=sys.stderr)
        return 2
    try:
        admin = command_kafka(settings.kafka.model_copy(update={"bootstrap_servers": bootstrap}))
    except Unreachable as exc:
        print(f"audit dump: {exc}", file=sys.stderr)
        return 3
    try:
        ends = dump.log_end_offsets(admin)
        manifest = dump.write_dump(
            args.out,
            dump.read_offsets_topic(
                bootstrap, **{k: v for k, v in client.items() if k != "client_id"}
            ),
            ends,
            fmt=args.format,
            source=bootstrap,
        )
    except (dump.DumpError, KafkaError, OSError) as exc:
        print(f"audit dump: {exc}", file=sys.stderr)
        return 4 if isinstance(exc, dump.DumpError) else 3
    finally:
        admin.close()
    print(
        f"audit dump: {manifest['records']} records ({manifest['tombstones']} tombstones) and "
        f"{len(ends)} log-end offsets written to {args.out}"
    )
    return 0


def add_audit_commands(sub) -> None:
    """``snapshot`` and ``audit`` (with ``audit dump``): the migration audit of issue 6."""
    snap = sub.add_parser(
        "snapshot", help="write the ZooKeeper side (/consumers, /brokers) to files for an audit"
    )
    _connection_options(snap)
    snap.add_argument("--out", required=True, type=Path, metavar="DIR")
    snap.add_argument("--format", choices=["jsonl", "parquet"], default="jsonl")
    snap.set_defaults(func=cmd_snapshot)

    audit = sub.add_parser(
        "audit",
        help="per-group migrate/finalize/roll-back verdicts (Spark) and an HTML report",
        description="Compare __consumer_offsets with a ZooKeeper snapshot on Spark. "
        "Exit codes: 2 bad input, 3 cluster unreachable, 4 nothing to audit, 5 Spark failed.",
    )
    _connection_options(audit)
    audit.add_argument("--snapshot", type=Path, metavar="DIR", help="from 'zk-bridge snapshot'")
    audit.add_argument("--out", type=Path, metavar="DIR", help="Parquet tables and report.html")
    audit.add_argument(
        "--dump", type=Path, metavar="DIR", help="read a dump ('audit dump') instead of Kafka"
    )
    audit.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    audit.add_argument("--groups", metavar="REGEX", help="audit only groups matching (full match)")
    audit.add_argument("--conf", action="append", metavar="KEY=VALUE", help="a Spark setting")
    audit.set_defaults(func=cmd_audit, audit_command=None)
    actions = audit.add_subparsers(dest="audit_command", metavar="[dump]")
    dump = actions.add_parser("dump", help="dump __consumer_offsets and log-end offsets to DIR")
    _connection_options(dump)
    dump.add_argument("--out", type=Path, metavar="DIR", required=True)
    dump.add_argument("--format", choices=["parquet", "jsonl"], default="parquet")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zk-bridge",
        description="Keep Kafka's legacy ZooKeeper layout true beside a KRaft cluster.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("--log-format", choices=["text", "json"], default="text")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_run(sub)
    _add_devstack(sub)
    cfg = sub.add_parser("config", help="configuration tools")
    cfg_sub = cfg.add_subparsers(dest="config_command", required=True, metavar="ACTION")
    check = cfg_sub.add_parser("check", help="validate a config file and exit")
    check.add_argument("file", type=Path)
    check.add_argument("-v", "--verbose", action="store_true", help="print the result")
    check.set_defaults(func=cmd_config_check)
    add_audit_commands(sub)
    register_offsets(sub, _connection_options)
    register_groups(sub, _connection_options)
    register_migrate(sub, _connection_options)
    return parser


def _add_run(sub: Any) -> None:
    run = sub.add_parser("run", help="run the bridge (mirror Kafka into ZooKeeper)")
    _connection_options(run)
    run.add_argument(
        "--metrics-address",
        metavar="HOST:PORT",
        help="where /metrics, /healthz and /readyz listen (default 127.0.0.1:9308; "
        "port 0 picks a free one)",
    )
    run.add_argument(
        "--gateway-listen",
        metavar="HOST:PORT",
        help="turn the legacy gateway on, listening here (as [gateway] enabled = true and "
        "listen; see docs/gateway.md); with [registry] advertise = 'gateway', /brokers/ids "
        "sends old clients to it",
    )
    run.set_defaults(func=cmd_run)


def _add_devstack(sub: Any) -> None:
    dev = sub.add_parser("devstack", help="a local ZooKeeper + 3-node KRaft Kafka, no Docker")
    dev.add_argument("action", choices=["up", "down", "status"])
    dev.add_argument(
        "--dir",
        default=".devstack",
        type=Path,
        help="where the stack keeps config, data and logs (default .devstack)",
    )
    dev.add_argument(
        "--kafka-version",
        metavar="3.9|4.x",
        help="the Kafka line of a new stack: 3.9 (default; the last with the old request "
        "versions) or 4.x (the newest 4 release); an existing stack keeps its own",
    )
    dev.add_argument(
        "--output",
        choices=["table", "json", "env"],
        default="table",
        help="env prints shell assignments ZOOKEEPER=... BOOTSTRAP_SERVERS=..., the exports "
        "ZK_BRIDGE_ZOOKEEPER/ZK_BRIDGE_BOOTSTRAP_SERVERS every subcommand reads, and "
        "SASL_BOOTSTRAP_SERVERS/SASL_MECHANISM/SASL_USERNAME/SASL_PASSWORD (a local dev "
        "credential) for the SASL_PLAINTEXT listener",
    )
    dev.set_defaults(func=cmd_devstack)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logs.setup(args.log_level, args.log_format)
    if args.command != "run" and args.log_level.upper() != "DEBUG":
        # a command's own line says what failed; the client libraries' connection retries
        # would only bury it (the bridge service keeps them: there they show a streak)
        for library in ("kafka", "kazoo"):
            logging.getLogger(library).setLevel(logging.CRITICAL)
    from kazoo.exceptions import NoAuthError

    try:
        return args.func(args)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except Unreachable as exc:  # a server down or misnamed: one line, no traceback
        print(f"zk-bridge {args.command}: {exc}", file=sys.stderr)
        return 3
    except NoAuthError:
        print(
            "ZooKeeper refused a change: this identity is not allowed by the node's ACL. Nodes "
            "a bridge with credentials created are writable only by that identity: use the "
            "same zookeeper.auth_scheme, username and password (see docs/security.md)",
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":
    sys.exit(main())
