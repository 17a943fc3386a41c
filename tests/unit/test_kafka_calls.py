"""Bounded Kafka calls and the one retry policy (bridge.kafka.calls), on plain functions."""

from __future__ import annotations

import threading
import time

import pytest
from kafka.errors import (
    GroupAuthorizationFailedError,
    NotCoordinatorError,
    UnknownBrokerIdError,
    UnknownTopicOrPartitionError,
)

from bridge.kafka import calls
from bridge.kafka.calls import KafkaCallTimeout, bounded, retrying


@pytest.fixture(autouse=True)
def own_workers(monkeypatch):
    """Workers of this module's own: the count of abandoned calls is process-wide, and an
    earlier test's call still in kafka-python (an admin call past its bound against a
    stopped broker) counted here too (a clean-clone CI run: 2 where 1 was expected)."""
    monkeypatch.setattr(calls, "_WORKERS", calls._Workers())


def test_an_answer_within_the_bound_is_returned_and_an_error_raised():
    assert bounded("sum", sum, [1, 2, 3], timeout_s=5) == 6
    with pytest.raises(ZeroDivisionError):
        bounded("divide", lambda: 1 / 0, timeout_s=5)


def test_a_call_without_an_answer_ends_at_its_bound_and_is_counted_until_it_returns():
    release = threading.Event()
    t0 = time.monotonic()
    with pytest.raises(KafkaCallTimeout, match="hang: no answer from Kafka within 0.2s") as err:
        bounded("hang", release.wait, 30, timeout_s=0.2)
    assert 0.2 <= time.monotonic() - t0 < 2
    assert calls._WORKERS.abandoned == 1
    assert err.value.pending is not None and not err.value.pending.done()
    release.set()
    err.value.pending.result(timeout=5)
    deadline = time.monotonic() + 5
    while calls._WORKERS.abandoned and time.monotonic() < deadline:
        time.sleep(0.01)
    assert calls._WORKERS.abandoned == 0


def test_calls_reuse_their_worker_threads():
    """A thread per call would come and go several times a second while Kafka is down."""
    before = calls._WORKERS.threads
    for n in range(50):
        assert bounded("echo", str, n, timeout_s=5) == str(n)
    assert calls._WORKERS.threads - before <= 1


def test_past_the_abandoned_calls_allowed_a_call_is_not_even_started():
    release = threading.Event()
    started = []
    try:
        for _ in range(calls.MAX_ABANDONED):
            with pytest.raises(KafkaCallTimeout):
                bounded("hang", release.wait, 30, timeout_s=0.01)
        with pytest.raises(KafkaCallTimeout, match="not sent: 8 earlier Kafka calls"):
            bounded("more", started.append, 1, timeout_s=5)
        assert started == []
    finally:
        release.set()
    deadline = time.monotonic() + 5
    while calls._WORKERS.abandoned and time.monotonic() < deadline:
        time.sleep(0.01)
    assert bounded("again", started.append, 1, timeout_s=5) is None and started == [1]


def _failing(errors: list[Exception]):
    def call() -> str:
        if errors:
            raise errors.pop(0)
        return "answer"

    return call


def attempt(policy, call):
    for a in policy:
        with a:
            return call()
    raise AssertionError("unreachable")


def test_retriable_answers_and_a_broker_not_yet_known_are_retried():
    errors = [UnknownTopicOrPartitionError("t"), UnknownBrokerIdError(3)]
    assert attempt(retrying(None, within_s=5), _failing(errors)) == "answer"


def test_a_moved_coordinator_is_retried_a_few_times():
    errors = [NotCoordinatorError("g"), NotCoordinatorError("g")]
    assert attempt(retrying(None, ["g"], within_s=5), _failing(errors)) == "answer"
    errors = [NotCoordinatorError(str(n)) for n in range(3)]
    with pytest.raises(NotCoordinatorError, match="2"):
        attempt(retrying(None, ["g"], attempts=3, within_s=5), _failing(errors))


def test_other_errors_and_timeouts_are_not_retried():
    for error in (GroupAuthorizationFailedError("g"), KafkaCallTimeout("late")):
        errors = [error]
        with pytest.raises(type(error)):
            attempt(retrying(None, ["g"], within_s=5), _failing(errors))
