"""kazoo's threading handler, waiting on its sockets with ``poll(2)`` instead of a new
epoll instance per wait; and its connection, reading the socket in large chunks
(:class:`BufferedConnection`).

kazoo's connection thread waits for its socket (or a request to send) before every single
request and answer. Its default handler builds an ``epoll`` selector for each of those
waits (create, two registrations, wait, close: five system calls); 22 % of that thread
when a cold start wrote 1,000,000 offset nodes. A ``poll`` selector is one system call per
wait, with no file-descriptor limit either (kazoo left ``select`` for that limit), and
reports readiness the same way.
"""

from __future__ import annotations

import selectors
import struct
from types import SimpleNamespace

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionDropped
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.handlers.utils import selector_select
from kazoo.protocol.connection import ConnectionHandler

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


class BufferedConnection(ConnectionHandler):
    """kazoo's connection, reading its socket in large chunks and sending without a wait.

    kazoo reads every answer and watch event as a wait and a ``recv`` for its length, then
    a wait and a ``recv`` for its body, and waits for the socket to be writable before each
    request it sends: each system call lets the GIL go, and on a busy bridge getting it
    back takes up to the interpreter's switch interval. With old consumers committing 1,000
    offsets/s (a watch event, a read and its answer per offset) kazoo's connection thread
    was the bridge's busiest, and every tick waited on it (``bench.fleet``, py-spy). Here
    one ``recv`` takes whatever the socket holds, the messages in it are handled without
    a wait each (:class:`_InboxFirst`), and a request is sent at once, waiting only when
    the socket's buffer is full. TLS sockets keep kazoo's own reads and writes (their
    framing is the ssl module's)."""

    #: bytes asked of the socket per ``recv``
    CHUNK = 65536

    def __init__(self, client, retry_sleeper, logger=None, sasl_options=None):
        super().__init__(client, retry_sleeper, logger=logger, sasl_options=sasl_options)
        self._inbox = bytearray()
        self._at = 0  # where the next message starts in the inbox
        self.handler = _InboxFirst(client.handler, self)

    def _connect(self, host, hostip, port):
        self._inbox, self._at = bytearray(), 0  # a new socket: nothing carried over
        return super()._connect(host, hostip, port)

    def _plain(self) -> bool:
        return not hasattr(self._socket, "pending")  # an SSLSocket has pending()

    def _read(self, length, timeout):
        if not self._plain():
            return super()._read(length, timeout)
        while len(self._inbox) - self._at < length:
            with self._socket_error_handling():
                try:
                    chunk = self._socket.recv(self.CHUNK)
                except BlockingIOError:  # nothing yet: wait for it, as kazoo does
                    chunk = None
                if chunk is None:
                    if not self.client.handler.select([self._socket], [], [], timeout)[0]:
                        raise self.handler.timeout_exception("socket time-out during read")
                    continue
            if not chunk:
                raise ConnectionDropped("socket connection broken")
            del self._inbox[: self._at]  # what is left is less than one message
            self._at = 0
            self._inbox += chunk
        start = self._at
        self._at += length
        return bytes(self._inbox[start : self._at])

    def _whole_message(self) -> bool:
        held = len(self._inbox) - self._at
        if held < 4:
            return False
        (length,) = struct.unpack_from(">i", self._inbox, self._at)
        return held >= 4 + length

    def _write(self, msg, timeout):
        if not self._plain():
            return super()._write(msg, timeout)
        with self._socket_error_handling():
            try:
                sent = self._socket.send(msg)
            except BlockingIOError:
                sent = 0
        if sent < len(msg):  # the socket's buffer is full: kazoo's waits for the rest
            super()._write(msg[sent:], timeout)
        return None


class _InboxFirst:
    """A connection's handler whose wait on its socket returns at once while whole
    messages wait in its inbox: brought by an earlier ``recv``, ``poll(2)`` would not
    report them (the connection thread would sleep on them until the next ping).

    It reports a queued request beside them, as ``poll`` would: kazoo's loop then reads
    one answer and sends one request per turn. Reporting the socket alone held every
    request back until the inbox was empty, one request per chunk read, and a cold start's
    512 writes in flight shrank to a handful. A request is
    queued before its wake-up byte is written (``KazooClient._call``), so reading that
    byte after seeing the queue waits at most for the caller to write it."""

    def __init__(self, handler: SequentialThreadingHandler, connection: BufferedConnection):
        self._handler = handler
        self._connection = connection

    def __getattr__(self, name: str):
        return getattr(self._handler, name)

    def select(self, rlist, wlist, xlist, timeout=None):
        c = self._connection
        if c._socket is not None and c._socket in rlist and c._plain() and c._whole_message():
            queued = c._read_sock in rlist and bool(c.client._queue)
            return ([c._socket, c._read_sock] if queued else [c._socket]), [], []
        return self._handler.select(rlist, wlist, xlist, timeout)


def buffered(client: KazooClient) -> KazooClient:
    """``client`` with its connection a :class:`BufferedConnection` (before it starts)."""
    old = client._connection
    client._connection = BufferedConnection(
        client, old.retry_sleeper, logger=old.logger, sasl_options=old.sasl_options
    )
    return client
