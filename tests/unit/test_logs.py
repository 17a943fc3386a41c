"""Logs: one event per line in both formats, with the context fields an operator greps for."""

from __future__ import annotations

import json
import logging
import sys

from bridge import logs
from bridge.logs import FailureStreak, JsonFormatter, RepeatFilter, TextFormatter


def _record(
    msg: str, *, exc: bool = False, logger: str = "bridge.test", **extra
) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise ValueError("first line\nsecond line")
        except ValueError:
            exc_info = sys.exc_info()
    return logging.getLogger(logger).makeRecord(
        logger, logging.ERROR, __file__, 1, msg, (), exc_info, extra=extra
    )


def test_text_is_one_line_with_context_and_traceback():
    line = TextFormatter().format(
        _record("batch failed:\nsee below", exc=True, node="/brokers/ids/1", group="g")
    )
    assert "\n" not in line
    assert "batch failed:\\nsee below" in line
    assert "[node=/brokers/ids/1 group=g]" in line
    assert "error=Traceback" in line and "ValueError: first line\\nsecond line" in line


def test_json_is_one_object_per_line_with_fields():
    line = JsonFormatter().format(_record("bad node left alone", exc=True, node="/x", epoch=3))
    assert "\n" not in line
    event = json.loads(line)
    assert event["event"] == "bad node left alone"
    assert event["node"] == "/x" and event["epoch"] == 3 and event["level"] == "ERROR"
    assert "ValueError" in event["error"]


def test_json_stringifies_what_json_cannot_hold():
    event = json.loads(JsonFormatter().format(_record("x", partitions={("t", 0)})))
    assert event["partitions"] == "{('t', 0)}"


def test_client_library_errors_are_one_line_without_their_stack():
    """kafka-python logs connection resets with exc_info while a broker restarts: the
    operator gets the error, not kafka-python's stack (the bridge's own keep theirs)."""
    for fmt in (TextFormatter(), JsonFormatter()):
        line = fmt.format(_record("Error sending request data", exc=True, logger="kafka.net"))
        assert "Traceback" not in line and "ValueError: first line" in line
        kazoo = fmt.format(_record("session lost", exc=True, logger="kazoo.client"))
        assert "Traceback" not in kazoo
        ours = fmt.format(_record("batch failed", exc=True, logger="bridge.flows.groups"))
        assert "Traceback" in ours


def test_client_library_repeats_are_held_back_and_counted():
    """Kafka down: kafka-python's reconnect errors come several a second; one line per kind
    per window passes, the next one says how many were held back; ours always pass."""
    now = [0.0]
    f = RepeatFilter(window_s=30, clock=lambda: now[0])

    def lib(port: int) -> logging.LogRecord:
        return logging.getLogger("kafka.net").makeRecord(
            "kafka.net",
            logging.ERROR,
            __file__,
            1,
            "%s: Connection lost: %s",
            (f"<conn 127.0.0.1:{port}>", "ECONNREFUSED"),
            None,
        )

    passed = []
    for i in range(100):  # 10 s of failures, 10 a second, each from another socket
        now[0] = i / 10
        r = lib(40000 + i)
        if f.filter(r):
            passed.append(r)
    assert len(passed) == 1 and not hasattr(passed[0], "repeated")
    ours = _record("registry flow tick failed", logger="bridge.service")
    assert all(f.filter(ours) for _ in range(5))  # the bridge's own: never held back
    other = logging.getLogger("kafka.cluster").makeRecord(
        "kafka.cluster", logging.ERROR, __file__, 1, "Metadata refresh: failed %s", ("x",), None
    )
    assert f.filter(other)  # another kind passes at once

    now[0] = 31.0
    r = lib(1)
    assert f.filter(r) and r.repeated == 99
    assert "[repeated=99]" in TextFormatter().format(r)
    assert json.loads(JsonFormatter().format(r))["repeated"] == 99
    now[0] = 32.0
    assert not f.filter(lib(2))


def test_a_failing_flow_logs_its_first_failure_reminders_and_recovery_not_every_tick():
    streak = FailureStreak(every_s=30)
    assert streak.success(0.0) is None  # healthy: nothing to say
    logged = {}
    for i in range(600):  # Kafka down for 60 s, a tick every 0.1 s
        note = streak.failure("NodeNotReadyError", i / 10)
        if note is not None:
            logged[i / 10] = note
    assert logged == {
        0.0: "",
        30.0: " (failing for 30s, 301 ticks, 299 not logged)",
    }
    # another kind of failure is news at once
    assert (
        streak.failure("KafkaConnectionError", 60.0)
        == " (failing for 60s, 601 ticks, 299 not logged)"
    )
    assert streak.failure("KafkaConnectionError", 60.1) is None
    # kinds that alternate (a refused connection, then a node not ready) are news once each
    assert streak.failure("NodeNotReadyError", 60.2) is None
    assert streak.success(61.5) == "recovered after 61.5s and 603 failed ticks"
    assert streak.success(62.0) is None
    assert streak.failure("NodeNotReadyError", 100.0) == ""  # a new streak starts afresh


def test_a_message_the_library_formatted_itself_is_one_kind():
    """kafka-python formats some warnings itself ("Task <Task at 0x7f..> ran for 0.253s"):
    on a busy machine every one differed, so none was held back (one every few seconds)."""
    now = [0.0]
    f = RepeatFilter(window_s=30, clock=lambda: now[0])

    def slow(address: int, seconds: float) -> logging.LogRecord:
        msg = f"Task <Task object at {address:#x}> ran for {seconds:.3f}s (>0.100s threshold)."
        return logging.getLogger("kafka.net.selector").makeRecord(
            "kafka.net.selector", logging.WARNING, __file__, 1, msg, (), None
        )

    passed = [r for i in range(20) if f.filter(r := slow(0x7F0000 + i, 0.1 + i / 100))]
    assert len(passed) == 1
    now[0] = 31.0
    r = slow(0x7F1234, 0.4)
    assert f.filter(r) and r.repeated == 19


def test_setup_names_the_handler_it_installs():
    """The CLI run in-process (an audit test) installs its handler on the ``sys.stderr``
    of that test; tests/conftest.py removes it by this name after the test."""
    logs.setup("INFO")
    named = [h for h in logging.getLogger().handlers if h.get_name() == logs.HANDLER_NAME]
    assert len(named) == 1


def test_the_handler_of_a_test_before_is_gone():
    """Runs right after the test above (file order): its handler is not on the root logger
    any more, so nothing logs into that test's closed capture."""
    assert not [h for h in logging.getLogger().handlers if h.get_name() == logs.HANDLER_NAME]
