"""Logs: one event per line in both formats, with the context fields an operator greps for."""

from __future__ import annotations

import json
import logging
import sys

from bridge.logs import JsonFormatter, TextFormatter


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
