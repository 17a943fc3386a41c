"""``Multi`` builds the same requests as kazoo's own transaction, only without its checks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kazoo.client import KazooClient

from bridge.decide.acl import AclPolicy, identity
from bridge.zookeeper.acl import AclClient
from bridge.zookeeper.txn import Multi

ROOT = "/kafka-zk-bridge"
POLICY = AclPolicy(identity("digest", "bridge", "s3cret"), ROOT)

_name = st.text(
    alphabet=st.characters(min_codepoint=33, max_codepoint=0x2FF, blacklist_characters="/"),
    min_size=1,
    max_size=12,
).filter(lambda s: s not in (".", ".."))
_path = st.lists(_name, min_size=1, max_size=6).map(lambda parts: "/" + "/".join(parts))
_paths = st.one_of(
    _path,
    _path.map(lambda p: ROOT + "/owned" + p),
    st.sampled_from(["/consumers", "/consumers/g/offsets/t/0", ROOT, "/"]),
)
_op = st.tuples(
    st.sampled_from(["create", "create-ephemeral", "set_data", "delete", "check"]),
    _paths,
    st.binary(max_size=8),
    st.integers(min_value=-1, max_value=2**31 - 1),
)


def _clients(hosts: str) -> list[KazooClient]:
    return [AclClient(hosts=hosts, acl_policy=POLICY), KazooClient(hosts=hosts)]


def _build(txn, ops) -> list:
    """The same calls into kazoo's ``TransactionRequest`` (the reference) or a ``Multi``."""
    for kind, path, data, version in ops:
        if kind.startswith("create"):
            txn.create(path, data, ephemeral=kind == "create-ephemeral")
        elif kind == "set_data":
            txn.set_data(path, data, version)
        elif kind == "delete":
            txn.delete(path, version)
        else:
            txn.check(path, version)
    return txn.operations


def _with_kazoo(client: KazooClient, ops) -> list:
    return _build(client.transaction(), ops)


def _with_multi(client: KazooClient, ops) -> list:
    return _build(Multi(client), ops)


@given(ops=st.lists(_op, max_size=20), chroot=st.sampled_from(["", "/kafka", "/a/b"]))
def test_the_requests_are_kazoos_own(ops, chroot):
    for client in _clients("127.0.0.1:2181" + chroot):
        assert _with_multi(client, ops) == _with_kazoo(client, ops)


@pytest.mark.parametrize("bad", ["consumers/g", "/consumers//g", "/consumers/g/", ""])
def test_a_path_that_is_not_absolute_and_normalised_is_refused(bad):
    with pytest.raises(ValueError, match="not an absolute, normalised ZooKeeper path"):
        Multi(KazooClient(hosts="127.0.0.1:2181")).create(bad, b"")


@given(ops=st.lists(_op, max_size=20), chroot=st.sampled_from(["", "/kafka"]))
def test_the_bytes_sent_are_kazoos_own(ops, chroot):
    """The multi-op as ZooKeeper receives it: kazoo's encoder of the same requests is the
    reference, byte for byte (ACLs of every kind, empty data, versions, flags)."""
    from kazoo.protocol.serialization import Transaction

    from bridge.zookeeper.txn import _Transaction

    for client in _clients("127.0.0.1:2181" + chroot):
        requests = _with_multi(client, ops)
        assert bytes(_Transaction(requests).serialize()) == bytes(Transaction(requests).serialize())


_stat = st.tuples(
    *[st.integers(0, 2**62)] * 4,
    *[st.integers(0, 2**30)] * 3,
    st.integers(0, 2**62),
    *[st.integers(0, 2**30)] * 2,
    st.integers(0, 2**62),
)
_answer = st.one_of(
    st.tuples(st.just(1), _path),  # a create: the path made
    st.tuples(st.just(2), st.none()),  # a delete
    st.tuples(st.just(5), _stat),  # a set: the new stat
    st.tuples(st.just(13), st.none()),  # a check
    st.tuples(st.just(-1), st.sampled_from([0, -101, -103, -110, -2, -999])),  # an error
)


def _answer_bytes(answers) -> bytes:
    """A multi-op's answer as ZooKeeper writes it (jute: header, then the result)."""
    import struct

    out = b""
    for kind, value in answers:
        out += struct.pack("!iBi", kind, 0, -1 if kind != -1 else value)
        if kind == 1:
            raw = value.encode()
            out += struct.pack("!i", len(raw)) + raw
        elif kind == 5:
            out += struct.pack("!qqqqiiiqiiq", *value)
        elif kind == -1:
            out += struct.pack("!i", value)
    return out + struct.pack("!iBi", -1, 1, -1)


def _comparable(results):
    return [(type(r), r.args) if isinstance(r, Exception) else r for r in results]


@given(answers=st.lists(_answer, max_size=20), pad=st.binary(max_size=4))
def test_the_answers_read_are_kazoos_own(answers, pad):
    """kazoo's reader of the same bytes is the reference (errors by type)."""
    from kazoo.protocol.serialization import Transaction

    from bridge.zookeeper.txn import _read_answer, _Transaction

    data = pad + _answer_bytes(answers)
    ours, theirs = (_read(reader, data, len(pad)) for reader in (_Transaction, Transaction))
    assert ours == theirs
    if ours[:1] != ["raised"]:  # read without kazoo's reader (not handed to it)
        assert _comparable(_read_answer(data, len(pad))) == ours
    if -999 not in [value for kind, value in answers if kind == -1]:
        assert len(ours) == len(answers)
    else:  # an error code kazoo does not know: both raise
        assert ours[0] == "raised"


def _read(reader, data: bytes, offset: int):
    try:
        return _comparable(reader.deserialize(data, offset))
    except RuntimeError as exc:
        return ["raised", str(exc)]
