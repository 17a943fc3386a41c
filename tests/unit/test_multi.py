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


def _with_kazoo(client: KazooClient, ops) -> list:
    """The reference: kazoo's own ``TransactionRequest``, argument by argument."""
    txn = client.transaction()
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


def _with_multi(client: KazooClient, ops) -> list:
    txn = Multi(client)
    for kind, path, data, version in ops:
        if kind.startswith("create"):
            txn.create(path, data, kind == "create-ephemeral")
        elif kind == "set_data":
            txn.set_data(path, data, version)
        elif kind == "delete":
            txn.delete(path, version)
        else:
            txn.check(path, version)
    return txn.operations


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
        assert bytes(_Transaction(requests).serialize()) == bytes(
            Transaction(requests).serialize()
        )
