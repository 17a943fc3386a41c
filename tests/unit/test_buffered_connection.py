"""kazoo's connection reading its socket in large chunks (``BufferedConnection``): every
message comes out whole and in order however the bytes arrive, and a wait on the socket
returns at once while a whole message is already held (``poll`` would not report it).
The reference is the framed messages as written; a socket pair stands for ZooKeeper."""

from __future__ import annotations

import socket
import struct
import threading

from hypothesis import given, settings
from hypothesis import strategies as st
from kazoo.client import KazooClient

from bridge.zookeeper.handler import BufferedConnection, PollHandler, buffered


def _connection() -> tuple[BufferedConnection, socket.socket]:
    conn = buffered(KazooClient(hosts="127.0.0.1:1", handler=PollHandler()))._connection
    assert isinstance(conn, BufferedConnection)
    ours, server = socket.socketpair()
    ours.setblocking(False)
    conn._socket = ours
    conn.CHUNK = 97  # small: messages split across reads, and reads across messages
    return conn, server


@settings(max_examples=200, deadline=None)
@given(
    messages=st.lists(st.binary(max_size=300), min_size=1, max_size=20),
    cuts=st.lists(st.integers(min_value=1, max_value=400), max_size=30),
)
def test_every_message_comes_out_whole_and_in_order(messages, cuts):
    conn, server = _connection()
    try:
        stream = b"".join(struct.pack(">i", len(m)) + m for m in messages)
        for piece in _pieces(stream, cuts):  # as the server's segments arrive
            server.sendall(piece)
        got = []
        for _ in messages:
            (length,) = struct.unpack(">i", conn._read(4, 1.0))
            got.append(conn._read(length, 1.0))
            # a whole next message held: the connection thread's wait returns at once
            held = conn._whole_message()
            ready = conn.handler.select([conn._socket, server], [], [], 0.0)[0]
            assert (conn._socket in ready) if held else True
        assert got == messages
        assert not conn._whole_message()
    finally:
        conn._socket.close()
        server.close()


def test_a_wait_returns_at_once_for_a_message_the_kernel_no_longer_holds():
    """Two messages in one ``recv``: after the first, the second is held here only, and
    ``poll(2)`` (the plain handler, the control) would wait on it; the connection's own
    wait returns at once. Half a message held waits for the rest like poll does."""
    conn, server = _connection()
    conn.CHUNK = 65536
    try:
        assert conn.handler.select([conn._socket], [], [], 0.05)[0] == []
        server.sendall(struct.pack(">i", 3) + b"abc" + struct.pack(">i", 2) + b"de")
        assert conn.handler.select([conn._socket], [], [], 1.0)[0] == [conn._socket]
        assert conn._read(4, 1.0) == struct.pack(">i", 3) and conn._read(3, 1.0) == b"abc"
        assert conn.client.handler.select([conn._socket], [], [], 0.05)[0] == []  # control
        assert conn.handler.select([conn._socket], [], [], 0.05)[0] == [conn._socket]
        assert conn._read(4, 1.0) == struct.pack(">i", 2) and conn._read(2, 1.0) == b"de"
        server.sendall(struct.pack(">i", 2) + b"f")
        assert conn._read(4, 1.0) == struct.pack(">i", 2)
        assert not conn._whole_message()  # half a message held: wait for the rest
        assert conn.handler.select([conn._socket], [], [], 0.05)[0] == []
        server.sendall(b"g")
        assert conn.handler.select([conn._socket], [], [], 1.0)[0] == [conn._socket]
        assert conn._read(2, 1.0) == b"fg"
    finally:
        conn._socket.close()
        server.close()


def test_a_request_larger_than_the_sockets_buffer_is_sent_whole():
    conn, server = _connection()
    received = bytearray()
    big = bytes(range(256)) * 4096  # 1 MB

    def drain() -> None:
        while len(received) < len(big):
            received.extend(server.recv(65536))

    try:
        reader = threading.Thread(target=drain)
        reader.start()
        conn._write(big, 5.0)
        reader.join(10)
        assert bytes(received) == big
    finally:
        conn._socket.close()
        server.close()


def _pieces(stream: bytes, cuts: list[int]) -> list[bytes]:
    out, at = [], 0
    for cut in cuts:
        if at >= len(stream):
            break
        out.append(stream[at : at + cut])
        at += cut
    if at < len(stream):
        out.append(stream[at:])
    return out


def test_a_queued_request_is_reported_beside_held_messages():
    """kazoo's loop reads one answer and sends one request per turn; reporting the socket
    alone while answers are held would keep every queued request back until the inbox is
    empty (a cold start's pipeline shrank to a handful). The control is the same wait with
    nothing queued: the socket alone, and the wake-up byte left unread."""
    conn, server = _connection()
    conn.CHUNK = 65536
    conn._read_sock, conn._write_sock = socket.socketpair()
    try:
        server.sendall((struct.pack(">i", 1) + b"a") * 2)
        assert conn._read(4, 1.0) and conn._read(1, 1.0) == b"a"
        assert conn._whole_message()
        rlist = [conn._socket, conn._read_sock]
        assert conn.handler.select(rlist, [], [], 0.05)[0] == [conn._socket]  # control
        conn.client._queue.append(("request", None))
        conn._write_sock.send(b"\0")
        assert conn.handler.select(rlist, [], [], 0.05)[0] == [conn._socket, conn._read_sock]
        assert conn.handler.select([conn._socket], [], [], 0.05)[0] == [conn._socket]
    finally:
        for s in (conn._socket, server, conn._read_sock, conn._write_sock):
            s.close()
