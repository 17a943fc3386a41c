"""One event per line, as text or JSON; context (group, topic, node) travels in ``extra``."""

from __future__ import annotations

import json
import logging
import sys
import traceback

#: client libraries whose errors are shown as their last line: a connection reset while a
#: broker restarts is news to an operator, kafka-python's stack for it is not
LIBRARIES = ("kafka", "kazoo")

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


def _context(record: logging.LogRecord) -> dict:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD}


def _one_line(text: str) -> str:
    """Newlines escaped, so one event stays one line for grep and log shippers."""
    return text.rstrip("\r\n").replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\r")


def _error(formatter: logging.Formatter, record: logging.LogRecord) -> str:
    """The bridge's own exceptions with their traceback; a client library's in one line."""
    if record.name.split(".", 1)[0] in LIBRARIES:
        kind, value = record.exc_info[0], record.exc_info[1]
        return "".join(traceback.format_exception_only(kind, value)).strip()
    return formatter.formatException(record.exc_info)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ctx = " ".join(f"{k}={v}" for k, v in _context(record).items())
        line = (
            f"{self.formatTime(record)} {record.levelname:<7} {record.name}: {record.getMessage()}"
        )
        if ctx:
            line += f" [{ctx}]"
        if record.exc_info and record.levelno >= logging.ERROR:
            line += " error=" + _error(self, record)
        return _one_line(line)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        event = {
            "ts": self.formatTime(record),
            "level": record.levelname,
            "logger": record.name,
            "event": record.getMessage(),
            **{
                k: v if isinstance(v, (int, float, bool, str, type(None))) else str(v)
                for k, v in _context(record).items()
            },
        }
        if record.exc_info:
            event["error"] = _error(self, record)
        return json.dumps(event)


def setup(level: str = "INFO", fmt: str = "text") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # library warnings (e.g. kazoo's "no chroot path") as log events, not stray stderr lines
    logging.captureWarnings(True)
    # kafka-python and kazoo are chatty at INFO about every connection
    for noisy in ("kafka", "kazoo"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
