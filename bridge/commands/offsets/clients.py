"""What every ``zk-bridge offsets`` action shares: its failure, its clients, its runner.

Connections open only when an action needs them, and every expected failure ends as one
line on stderr with an exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from kazoo.exceptions import KazooException

from bridge.commands import settings_from_args
from bridge.config import Settings
from zkpaths import GroupPartition

if TYPE_CHECKING:  # kafka-python takes ~0.1 s to import: not for every ``zk-bridge --help``
    from kafka import KafkaAdminClient
    from kazoo.client import KazooClient

    from bridge.zookeeper.writer import OperatorWriter

Key = GroupPartition
STORES = ("zookeeper", "kafka")
#: one ZooKeeper request must fit in jute.maxbuffer (1 MiB by default); keep a margin
ZK_TXN_LIMIT = 900_000


class Failure(Exception):
    """Stops a command with a one-line message and an exit code (1 refused, 3 unreachable)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def err(action: str, message: str) -> None:
    print(f"offsets {action}: {message}", file=sys.stderr)


def chosen_stores(choice: str) -> list[str]:
    return list(STORES) if choice == "both" else [choice]


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


def run(action: str, args: argparse.Namespace, body: Callable[[Clients], int]) -> int:
    """Run ``body`` with clients; every failure becomes one line on stderr and an exit code."""
    from kafka.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError
    from kazoo.exceptions import ConnectionLoss, SessionExpiredError
    from kazoo.handlers.threading import KazooTimeoutError

    clients = Clients(settings_from_args(args))
    try:
        return body(clients)
    except Failure as exc:
        err(action, str(exc))
        return exc.code
    except (
        KafkaConnectionError,
        KafkaTimeoutError,
        ConnectionLoss,
        SessionExpiredError,
        KazooTimeoutError,
    ) as exc:
        err(
            action,
            f"lost the connection ({type(exc).__name__}: {exc}); if that was during a "
            "write, check what the stores hold with 'zk-bridge offsets export'",
        )
        return 3
    except (KafkaError, KazooException) as exc:
        err(action, f"{type(exc).__name__}: {exc}")
        return 1
    finally:
        clients.close()
