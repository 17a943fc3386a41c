"""The gateway's connections to the cluster's brokers (asyncio streams, today's versions).

A broker answers the requests of one connection strictly one at a time: its socket server
mutes a connection from the moment a request is read until the response is sent. A single
connection per broker shared by every old client would therefore queue each client's
Produce behind another's Fetch parked in purgatory for ``max_wait``. So each broker gets a
small *pool*: a request leases an idle connection (or opens one, up to ``max_connections``)
and gives it back when the answer arrived; idle connections are reused by every client
connection, and a connection that failed is dropped, so the next request reconnects.

Only non-flexible request versions are sent (response header = correlation id only).
Upstream security: PLAINTEXT only for now; SSL and SASL are refused when the gateway starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import struct

from kafka.protocol.api_message import ApiMessage

log = logging.getLogger(__name__)

#: an upstream answer larger than this is a broken stream, not a response
MAX_RESPONSE_BYTES = 1 << 30


class UpstreamError(Exception):
    """A broker could not be reached, or the connection broke before its answer came."""


class BrokerConnection:
    """One TCP connection to one broker, carrying one request at a time."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str
    ) -> None:
        self._reader, self._writer, self._client_id = reader, writer, client_id
        self._ids = itertools.count(1)
        self.broken = False

    @classmethod
    async def open(cls, host: str, port: int, client_id: str, timeout: float):
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, limit=1 << 16), timeout
            )
        except (TimeoutError, OSError) as exc:
            raise UpstreamError(f"cannot connect to {host}:{port}: {exc!r}") from exc
        return cls(reader, writer, client_id)

    async def send(self, request: ApiMessage, timeout: float) -> ApiMessage:
        """Send ``request`` and return the broker's decoded answer."""
        correlation = next(self._ids)
        request.with_header(correlation_id=correlation, client_id=self._client_id)
        response_class = request.header.get_response_class()
        try:
            self._writer.write(request.encode(header=True, framed=True))
            await asyncio.wait_for(self._writer.drain(), timeout)
            size = struct.unpack(
                ">i", await asyncio.wait_for(self._reader.readexactly(4), timeout)
            )[0]
            if not 4 <= size <= MAX_RESPONSE_BYTES:
                raise UpstreamError(f"answer of absurd size {size}")
            body = await asyncio.wait_for(self._reader.readexactly(size), timeout)
        except (TimeoutError, OSError, asyncio.IncompleteReadError) as exc:
            self.broken = True
            raise UpstreamError(f"{request.name} v{request.API_VERSION} failed: {exc!r}") from exc
        except BaseException:
            self.broken = True
            raise
        got = struct.unpack_from(">i", body)[0]
        if got != correlation:
            self.broken = True
            raise UpstreamError(f"answer for correlation id {got}, expected {correlation}")
        return response_class.decode(memoryview(body)[4:])

    def close(self) -> None:
        self.broken = True
        with contextlib.suppress(Exception):
            self._writer.close()


class BrokerPool:
    """Connections to one broker, leased per request and reused across client connections."""

    def __init__(
        self, host: str, port: int, client_id: str, *, max_connections: int, timeout: float
    ) -> None:
        self.host, self.port = host, port
        self._client_id, self._timeout = client_id, timeout
        self._idle: list[BrokerConnection] = []
        self._slots = asyncio.Semaphore(max_connections)
        self._closed = False

    async def send(self, request: ApiMessage, timeout: float | None = None) -> ApiMessage:
        """``request`` on an idle (or new) connection; ``UpstreamError`` if it broke."""
        async with self._slots:
            conn = self._idle.pop() if self._idle else None
            if conn is None:
                conn = await BrokerConnection.open(
                    self.host, self.port, self._client_id, self._timeout
                )
            try:
                return await conn.send(request, timeout or self._timeout)
            finally:
                if conn.broken or self._closed:
                    conn.close()
                else:
                    self._idle.append(conn)

    def close(self) -> None:
        self._closed = True
        for conn in self._idle:
            conn.close()
        self._idle.clear()
