"""One event per line, as text or JSON; context (group, topic, node) travels in ``extra``."""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable

#: client libraries whose errors are shown as their last line: a connection reset while a
#: broker restarts is news to an operator, kafka-python's stack for it is not
LIBRARIES = ("kafka", "kazoo")

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
#: what varies in a message a library formatted itself (kafka-python's "Task <... at
#: 0x7f..> ran for 0.253s" on a busy machine): numbers and addresses are not a new kind
_VARYING = re.compile(r"0x[0-9a-fA-F]+|\d+(?:\.\d+)?")


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


class RepeatFilter(logging.Filter):
    """One line per kind of client-library complaint per window, with a count of the rest.

    While a broker or ZooKeeper is down, kafka-python and kazoo log every failed reconnect,
    several lines a second per server; an operator needs the first one and how often it
    went on, not thousands of lines that bury the bridge's own. A kind is the logger, the
    level and the message template (what varies, like a socket's port, is not a new kind).
    The first line of a kind in each window passes; the first after it carries
    ``repeated=N``, the number of lines held back since. The bridge's own lines always pass.
    """

    def __init__(
        self,
        window_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        libraries: tuple[str, ...] = LIBRARIES,
    ) -> None:
        super().__init__()
        self.window_s, self._clock, self._libraries = window_s, clock, libraries
        self._kinds: dict[tuple[str, int, str], list] = {}  # kind -> [window start, held back]
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.split(".", 1)[0] not in self._libraries:
            return True
        kind = (record.name, record.levelno, _VARYING.sub("#", str(record.msg)))
        now = self._clock()
        with self._lock:
            seen = self._kinds.get(kind)
            if seen is not None and now - seen[0] < self.window_s:
                seen[1] += 1
                return False
            held_back = seen[1] if seen is not None else 0
            self._kinds[kind] = [now, 0]
        if held_back:
            record.repeated = held_back
        return True


#: the name of the handler ``setup`` installs (tests that run the CLI in-process remove it)
HANDLER_NAME = "zk-bridge"


def setup(level: str = "INFO", fmt: str = "text") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name(HANDLER_NAME)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(RepeatFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # library warnings (e.g. kazoo's "no chroot path") as log events, not stray stderr lines
    logging.captureWarnings(True)
    # kafka-python and kazoo are chatty at INFO about every connection
    for noisy in ("kafka", "kazoo"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))


class FailureStreak:
    """What to log about one flow's failing ticks: the first failure, the first of each other
    kind, a reminder once per ``every_s`` while it goes on, and the recovery - not every tick.

    A flow retries each poll interval, so with Kafka down for a minute it would otherwise
    log hundreds of identical warnings. Pure (the caller passes the time), so the policy is
    tested without a clock.
    """

    def __init__(self, every_s: float = 30.0) -> None:
        self.every_s = every_s
        self.since: float | None = None  # when the streak began
        self.failed = 0  # ticks failed in the streak
        self._kinds: set[str] = set()  # kinds of failure already logged in the streak
        self._reported_at = 0.0
        self._held_back = 0

    def failure(self, kind: str, now: float) -> str | None:
        """The warning to log for this failed tick, or None to stay quiet."""
        self.failed += 1
        new_kind = kind not in self._kinds
        if self.since is None or new_kind or now - self._reported_at >= self.every_s:
            first = self.since is None
            if first:
                self.since = now
            note = (
                ""
                if first
                else (
                    f" (failing for {now - self.since:.0f}s, {self.failed} ticks"
                    + (f", {self._held_back} not logged" if self._held_back else "")
                    + ")"
                )
            )
            self._kinds.add(kind)
            self._reported_at, self._held_back = now, 0
            return note
        self._held_back += 1
        return None

    def success(self, now: float) -> str | None:
        """The recovery line after a streak, or None when there was none."""
        if self.since is None:
            return None
        line = f"recovered after {now - self.since:.1f}s and {self.failed} failed ticks"
        self.since, self.failed, self._held_back = None, 0, 0
        self._kinds.clear()
        return line
