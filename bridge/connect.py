"""Opening the two worlds, with bounded retries and messages an operator can act on."""

from __future__ import annotations

import logging

from kafka import KafkaAdminClient
from kafka.errors import KafkaError
from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry
from tenacity import (
    RetryCallState,
    retry,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from bridge.config import KafkaSettings, ZooKeeperSettings
from bridge.kafka.sasl import sasl_refusal
from bridge.zookeeper.acl import AclClient, policy_for
from bridge.zookeeper.handler import PollHandler, buffered

log = logging.getLogger(__name__)


class Unreachable(RuntimeError):
    """A server could not be reached after the configured retries."""


class LoginRefused(Unreachable):
    """Kafka answered, and refused the bridge's SASL login (retrying cannot help)."""


def _log_retry(what: str, address: str):
    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.warning(
            "%s at %s not reachable (attempt %d: %s); retrying in %.1fs",
            what,
            address,
            state.attempt_number,
            type(exc).__name__ if exc else "?",
            state.next_action.sleep if state.next_action else 0,
        )

    return before_sleep


#: most seconds between two attempts to reach ZooKeeper again once the connection is lost.
#: kazoo's default doubles the wait up to an hour: after a 9 s outage two standbys came
#: back 24 s later, and the takeover of an active bridge paused meanwhile waited for them
#: (tests/e2e/test_chaos.py, a SIGSTOP right after a ZooKeeper outage)
RECONNECT_MAX_S = 1.0


def zk_client(settings: ZooKeeperSettings, root: str = "/kafka-zk-bridge") -> KazooClient:
    """A kazoo client with credentials applied (not yet started); every node it creates gets
    the ACL the settings' policy gives its path (``decide.acl``; ``root`` is the bridge's)."""
    auth = []
    if settings.auth_scheme == "digest" and settings.username:
        auth.append(("digest", f"{settings.username}:{settings.secret() or ''}"))
    kwargs = {}
    if settings.auth_scheme == "sasl":
        kwargs["sasl_options"] = {
            "mechanism": "DIGEST-MD5",
            "username": settings.username,
            "password": settings.secret() or "",
        }
    handler = PollHandler()
    reconnect = KazooRetry(
        max_tries=-1, delay=0.1, backoff=2, max_delay=RECONNECT_MAX_S, sleep_func=handler.sleep_func
    )
    client = AclClient(
        hosts=settings.connect,
        timeout=settings.session_timeout_s,
        auth_data=auth or None,
        acl_policy=policy_for(settings, root),
        handler=handler,
        connection_retry=reconnect,
        **kwargs,
    )
    return buffered(client)


def connect_zookeeper(
    settings: ZooKeeperSettings, attempts: int = 5, root: str = "/kafka-zk-bridge"
) -> KazooClient:
    """Start a ZooKeeper session, retrying with exponential backoff."""

    @retry(
        stop=stop_after_attempt(attempts),
        wait=wait_exponential(multiplier=0.5, max=8),
        retry=retry_if_exception_type(KazooTimeoutError),
        before_sleep=_log_retry("ZooKeeper", settings.connect),
        reraise=True,
    )
    def _start() -> KazooClient:
        client = zk_client(settings, root)
        try:
            client.start(timeout=settings.connection_timeout_s)
        except KazooTimeoutError:
            client.close()
            raise
        return client

    try:
        return _start()
    except KazooTimeoutError:
        raise Unreachable(
            f"ZooKeeper at {settings.connect} did not answer after {attempts} attempts"
        ) from None


def connect_kafka(
    settings: KafkaSettings, attempts: int = 5, what: str = "Kafka"
) -> KafkaAdminClient:
    """An admin client bootstrapped against the cluster, retrying with backoff.

    A failed SASL connect is probed once (``bridge.kafka.sasl``): a refused login stops the
    retries with the broker's reason and the server's address, never the password."""

    @retry(
        stop=stop_after_attempt(attempts),
        wait=wait_exponential(multiplier=0.5, max=8),
        retry=retry_if_exception_type(KafkaError),
        before_sleep=_log_retry(what, settings.bootstrap_servers),
        reraise=True,
    )
    def _start() -> KafkaAdminClient:
        options = settings.client_options()
        try:
            return KafkaAdminClient(bootstrap_timeout_ms=settings.request_timeout_ms, **options)
        except KafkaError:
            refusal = sasl_refusal(options, timeout_s=settings.request_timeout_ms / 1000)
            if refusal:
                raise LoginRefused(refusal) from None
            raise

    try:
        return _start()
    except KafkaError as exc:
        raise Unreachable(
            f"{what} at {settings.bootstrap_servers} did not answer after {attempts} attempts "
            f"({type(exc).__name__})"
        ) from None


#: an operator command waits this long for a server before it gives up with one line
COMMAND_WAIT_S = 5.0

_HOW = {
    "ZooKeeper": "--zookeeper HOST:PORT[/chroot], ZK_BRIDGE_ZOOKEEPER or [zookeeper] connect",
    "Kafka": "--bootstrap-server HOST:PORT[,...], ZK_BRIDGE_BOOTSTRAP_SERVERS or "
    "[kafka] bootstrap_servers",
}


def command_zookeeper(settings: ZooKeeperSettings, root: str = "/kafka-zk-bridge") -> KazooClient:
    """ZooKeeper for an operator command: one try of at most ``COMMAND_WAIT_S``, then an
    ``Unreachable`` that says how to point the command elsewhere."""
    quick = settings.model_copy(
        update={"connection_timeout_s": min(settings.connection_timeout_s, COMMAND_WAIT_S)}
    )
    try:
        return connect_zookeeper(quick, attempts=1, root=root)
    except Unreachable:
        raise Unreachable(
            f"ZooKeeper at {settings.connect} did not answer within "
            f"{quick.connection_timeout_s:g}s; point at it with {_HOW['ZooKeeper']}"
        ) from None


def command_kafka(settings: KafkaSettings, what: str = "Kafka") -> KafkaAdminClient:
    """Kafka for an operator command, as ``command_zookeeper``; a refused login is said as
    the broker said it."""
    wait_ms = min(settings.request_timeout_ms, int(COMMAND_WAIT_S * 1000))
    try:
        return connect_kafka(
            settings.model_copy(update={"request_timeout_ms": wait_ms}), attempts=1, what=what
        )
    except LoginRefused:
        raise
    except Unreachable:
        raise Unreachable(
            f"{what} at {settings.bootstrap_servers} did not answer within {wait_ms / 1000:g}s; "
            f"point at it with {_HOW['Kafka']}"
        ) from None
