"""Benchmarks: printed figures against the issues' targets (docs/benchmarks.md)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import UnknownBrokerIdError
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

if TYPE_CHECKING:
    from bridge.devstack.stack import Devstack


def bridge_command(zookeeper: str, bootstrap: str, *extra: str) -> list[str]:
    """The bridge as every bench runs it: this interpreter, metrics on a free port, ended
    with the bench however the bench ends (``bench.child``)."""
    return [
        sys.executable,
        "-m",
        "bench.child",
        sys.executable,
        "-m",
        "bridge.cli",
        "run",
        "--metrics-address",
        "127.0.0.1:0",
        "--zookeeper",
        zookeeper,
        "--bootstrap-server",
        bootstrap,
        *extra,
    ]


def stack_unless_given(args: argparse.Namespace) -> Devstack | None:
    """A private local stack when ``--zookeeper`` was not given (its servers then fill
    ``args.zookeeper`` and ``args.bootstrap_server``); the caller takes it down."""
    if args.zookeeper:
        return None
    from bridge.devstack.stack import private_stack

    print("starting a local stack ...", flush=True)
    stack = private_stack("kzb-bench-")
    args.zookeeper, args.bootstrap_server = stack.zk_connect, stack.bootstrap_servers
    return stack


def create_topic(admin: KafkaAdminClient, name: str, partitions: int) -> None:
    """Right after a stack starts, kafka-python's admin client may not yet know the broker it
    names as controller (UnknownBrokerIdError): retried for a while."""
    for attempt in Retrying(
        retry=retry_if_exception_type(UnknownBrokerIdError),
        stop=stop_after_delay(30),
        wait=wait_fixed(0.5),
        reraise=True,
    ):
        with attempt:
            admin.create_topics([NewTopic(name, partitions, 1)])
