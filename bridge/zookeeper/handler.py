"""kazoo's threading handler, waiting on its sockets with ``poll(2)`` instead of a new
epoll instance per wait.

kazoo's connection thread waits for its socket (or a request to send) before every single
request and answer. Its default handler builds an ``epoll`` selector for each of those
waits (create, two registrations, wait, close: five system calls); 22 % of that thread
when a cold start wrote 1,000,000 offset nodes. A ``poll`` selector is one system call per
wait, with no file-descriptor limit either (kazoo left ``select`` for that limit), and
reports readiness the same way.
"""

from __future__ import annotations

import selectors
from types import SimpleNamespace

from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.handlers.utils import selector_select

#: what ``selector_select`` takes as its selectors module, with ``poll`` as the default
_POLL = SimpleNamespace(
    EVENT_READ=selectors.EVENT_READ,
    EVENT_WRITE=selectors.EVENT_WRITE,
    DefaultSelector=getattr(selectors, "PollSelector", selectors.DefaultSelector),
)


class PollHandler(SequentialThreadingHandler):
    """``SequentialThreadingHandler`` whose waits use ``poll`` (see the module)."""

    def select(self, *args, **kwargs):
        kwargs.setdefault("selectors_module", _POLL)
        return selector_select(*args, **kwargs)
