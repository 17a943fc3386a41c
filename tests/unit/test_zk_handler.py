"""kazoo's handler waiting with poll (bridge.zookeeper.handler): the same answers as
kazoo's own handler (epoll), the reference, on real sockets."""

from __future__ import annotations

import socket

from hypothesis import given, settings
from hypothesis import strategies as st
from kazoo.handlers.threading import SequentialThreadingHandler

from bridge.config import ZooKeeperSettings
from bridge.connect import zk_client
from bridge.zookeeper.handler import PollHandler


@settings(max_examples=30, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=6), st.booleans())
def test_ready_sockets_are_the_ones_kazoo_s_own_handler_reports(written, ask_write):
    pairs = [socket.socketpair() for _ in written]
    try:
        for (_, peer), w in zip(pairs, written, strict=True):
            if w:
                peer.send(b"x")
        ours = [a for a, _ in pairs]
        wlist = ours[:1] if ask_write else []
        got = PollHandler().select(ours, wlist, [], 0)
        want = SequentialThreadingHandler().select(ours, wlist, [], 0)
        assert [set(x) for x in got] == [set(x) for x in want]
    finally:
        for a, b in pairs:
            a.close()
            b.close()


def test_the_bridge_s_client_waits_with_poll():
    client = zk_client(ZooKeeperSettings(connect="127.0.0.1:1"))
    assert isinstance(client.handler, PollHandler)
