"""Every Kafka call the bridge makes has a bound, and one retry policy.

kafka-python 3 runs an admin call as a coroutine on its IO thread and blocks the caller on
an event *without a deadline*. Its own timeouts are per request (``request_timeout_ms``)
and per connection setup (10 s, doubled after each failure up to 30 s), and one call can
chain several of them: a broker that accepts connections but does not answer (the last
KRaft broker shutting down without a quorum, a frozen JVM) held one DescribeQuorum for
30 s, and with it the bridge's loop, so neither flow saw the outage as failures and
``/readyz`` went stale (issue 12). ``bounded`` waits at most the call's bound and raises
``KafkaCallTimeout`` after it; the call itself goes on on kafka-python's side until its own
timeouts end it, in a daemon worker that holds nothing of the bridge.

``retrying`` is the one retry policy (tenacity) for every Kafka call of the bridge and its
commands: retriable answers a few times within a bound, a moved coordinator forgotten first
(``coordinators``).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

from kafka import KafkaAdminClient
from kafka.errors import KafkaError, KafkaTimeoutError, UnknownBrokerIdError
from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential,
)

from bridge.kafka import coordinators

T = TypeVar("T")

#: abandoned calls (past their bound, still running in kafka-python) allowed at once; past
#: this a new call fails at once instead of adding a thread per tick while Kafka hangs
MAX_ABANDONED = 8


class KafkaCallTimeout(KafkaTimeoutError):
    """A Kafka call did not return within its bound; ``pending`` is the call, still running
    (None when it was not sent)."""

    def __init__(self, message: str, pending: Future | None = None) -> None:
        super().__init__(message)
        self.pending = pending


class _Workers:
    """Long-lived daemon threads that run the calls. A thread per call would be created and
    destroyed several times a second while Kafka is down, and a thread dying while
    ``faulthandler`` dumps every thread (the bridge's SIGUSR1) can crash the interpreter:
    seen once here, a segfault in such a dump during an outage."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.threads = 0
        self.idle = 0
        #: calls past their bound that kafka-python has not finished yet
        self.abandoned = 0

    def submit(self, job: Callable[[], None]) -> None:
        with self.lock:
            if self.idle == 0:
                self.threads += 1
                self.idle += 1
                threading.Thread(
                    target=self._work, name=f"kafka-call-{self.threads}", daemon=True
                ).start()
            self.idle -= 1  # reserved for this job
        self.jobs.put(job)

    def _work(self) -> None:
        while True:
            job = self.jobs.get()
            job()
            with self.lock:
                self.idle += 1


_WORKERS = _Workers()


def bound_s(admin: KafkaAdminClient) -> float:
    """The bound of one call through ``admin``: its ``kafka.request_timeout_ms``."""
    return admin.config["request_timeout_ms"] / 1000


def bounded(what: str, call: Callable[..., T], *args: object, timeout_s: float) -> T:
    """``call(*args)``, or ``KafkaCallTimeout`` once ``timeout_s`` passed without an answer."""
    if _WORKERS.abandoned >= MAX_ABANDONED:
        raise KafkaCallTimeout(
            f"{what} not sent: {_WORKERS.abandoned} earlier Kafka calls have not returned yet"
        )
    result: Future[T] = Future()
    abandoned = threading.Event()

    def run() -> None:
        try:
            result.set_result(call(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
            result.set_exception(exc)
        with _WORKERS.lock:
            if abandoned.is_set():
                _WORKERS.abandoned -= 1

    _WORKERS.submit(run)
    try:
        return result.result(timeout=timeout_s)
    except FutureTimeout:
        with _WORKERS.lock:
            if not result.done():
                abandoned.set()
                _WORKERS.abandoned += 1
        if result.done():  # answered in the moment between the timeout and the lock
            return result.result()
        raise KafkaCallTimeout(
            f"{what}: no answer from Kafka within {timeout_s:g}s", result
        ) from None


def _default_bound(admin: KafkaAdminClient | None) -> float:
    return 10.0 if admin is None else bound_s(admin)


def admin_call(admin: KafkaAdminClient, what: str, call: Callable[..., T], *args: object) -> T:
    """One admin call bounded by the admin client's request timeout."""
    return bounded(what, call, *args, timeout_s=bound_s(admin))


def retrying(
    admin: KafkaAdminClient | None,
    groups: Iterable[str] = (),
    attempts: int = 3,
    within_s: float | None = None,
) -> Retrying:
    """The one retry policy of a Kafka call: retry what Kafka calls retriable (a coordinator
    that moved or is loading, a leader or broker the metadata does not name yet, a lost
    connection) and a broker id the client has not heard of yet (a young cluster), at most
    ``attempts`` times and within ``within_s`` (the admin's request timeout by default), with
    a short exponential backoff. When the error says a group's coordinator moved, the cached
    coordinator of ``groups`` is dropped first, so the next attempt looks it up. A call that
    outlived its bound is not retried: Kafka did not answer, and the tick must go on.
    ``admin`` None: no client whose cache to clear."""
    names = list(groups)

    def worth_retrying(exc: BaseException) -> bool:
        if isinstance(exc, KafkaCallTimeout) or not isinstance(exc, KafkaError):
            return False
        if admin is not None and names and coordinators.moved(exc):
            coordinators.forget(admin, names)
        return bool(exc.retriable) or isinstance(exc, UnknownBrokerIdError)

    return Retrying(
        retry=retry_if_exception(worth_retrying),
        stop=stop_after_attempt(attempts) | stop_after_delay(within_s or _default_bound(admin)),
        wait=wait_exponential(multiplier=0.05, max=1),
        reraise=True,
    )
