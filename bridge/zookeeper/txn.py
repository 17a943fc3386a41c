"""One ZooKeeper multi-op, its requests built straight into kazoo's request tuples.

kazoo's ``TransactionRequest.create`` checks each argument's type, normalises the path
(split, filter, join) and, through ``AclClient``, computes the ACL afresh per call: at a
cold start of 1,000,000 offset nodes (each created with its ledger marker, two creates) that
was 20 % of the bridge's main thread (py-spy, 2,000 x 100). The bridge's paths are built by
``zkpaths`` (checked there, absolute and normalised) and an ACL depends only on a node's
kind, so here a request is one tuple: the path with the chroot in front, the ACL of its
kind. ZooKeeper still checks every path it is sent: a malformed one fails the multi-op,
which the writers report as a refused batch.

The multi-op is serialised the same way (``_Transaction``): kazoo's encoder makes a
header object and several byte strings per request, on its connection thread, which
holds the interpreter's lock while the main thread builds the next batch (20 % of that
thread at the same cold start); here each request is one ``struct`` pack and its ACL's
bytes are made once. kazoo reads the answers as for its own transactions.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import lru_cache

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS
from kazoo.interfaces import IAsyncResult
from kazoo.protocol.serialization import CheckVersion, Create, Delete, SetData, Transaction
from kazoo.protocol.states import ZnodeStat
from kazoo.security import ACL, OPEN_ACL_UNSAFE


class Multi:
    """The requests of one multi-op, committed with kazoo's own transaction."""

    __slots__ = ("_client", "_chroot", "_acl", "operations")

    def __init__(self, client: KazooClient) -> None:
        self._client = client
        self._chroot: str = client.chroot or ""
        policy = getattr(client, "acl_policy", None)
        default = list(client.default_acl or OPEN_ACL_UNSAFE)
        self._acl: Callable[[str], list[ACL]] = (
            policy.acl if policy is not None else (lambda _path: default)
        )
        self.operations: list = []

    def _full(self, path: str) -> str:
        if not path.startswith("/") or "//" in path or path.endswith("/") and path != "/":
            raise ValueError(f"not an absolute, normalised ZooKeeper path: {path!r}")
        if not self._chroot:
            return path
        return self._chroot if path == "/" else self._chroot + path

    def create(self, path: str, value: bytes = b"", ephemeral: bool = False) -> None:
        flags = 1 if ephemeral else 0
        self.operations.append(Create(self._full(path), value, self._acl(path), flags))

    def set_data(self, path: str, value: bytes, version: int = -1) -> None:
        self.operations.append(SetData(self._full(path), value, version))

    def delete(self, path: str, version: int = -1) -> None:
        self.operations.append(Delete(self._full(path), version))

    def check(self, path: str, version: int) -> None:
        self.operations.append(CheckVersion(self._full(path), version))

    def commit_async(self) -> IAsyncResult:
        """Sent as kazoo's ``TransactionRequest.commit_async`` sends its transactions
        (kazoo's ``_call``: the same queue, answers unchrooted by kazoo), only serialised
        and read by ``_Transaction``. ``_call`` is kazoo's own, not its public API: the
        fenced writes of every integration test go through it."""
        result = self._client.handler.async_result()
        self._client._call(_Transaction(self.operations), result)
        return result

    def commit(self) -> list:
        return self.commit_async().get()


_INT = struct.Struct("!i")
_HEADER = struct.Struct("!iBi")  # a multi-op's header before each request: type, done, err
_STAT = struct.Struct("!qqqqiiiqiiq")
_END = _HEADER.pack(-1, True, -1)


def _string(value: str) -> bytes:
    """Jute's string: its UTF-8 length, then the bytes (-1 for empty, as kazoo writes it)."""
    if not value:
        return _INT.pack(-1)
    raw = value.encode()
    return _INT.pack(len(raw)) + raw


@lru_cache(maxsize=64)
def _acl_bytes(acl: tuple[ACL, ...]) -> bytes:
    """An ACL list as jute writes it, made once per distinct list (a node kind's)."""
    out = [_INT.pack(len(acl))]
    for entry in acl:
        out += (_INT.pack(entry.perms), _string(entry.id.scheme), _string(entry.id.id))
    return b"".join(out)


def _buffer(data: bytes | None) -> bytes:
    """Jute's buffer: its length, then the bytes (-1 for None)."""
    return _INT.pack(-1) if data is None else _INT.pack(len(data)) + data


def _request(op) -> bytes:
    """One request of a multi-op, with its header."""
    kind = type(op)
    head = _HEADER.pack(kind.type, False, -1)
    if kind is Create:
        acl = _acl_bytes(tuple(op.acl))
        return b"".join((head, _string(op.path), _buffer(op.data), acl, _INT.pack(op.flags)))
    if kind is SetData:
        return b"".join((head, _string(op.path), _buffer(op.data), _INT.pack(op.version)))
    if kind is Delete or kind is CheckVersion:
        return b"".join((head, _string(op.path), _INT.pack(op.version)))
    return head + op.serialize()  # a request kind the bridge does not send itself


class _Transaction(Transaction):
    """kazoo's multi-op request, serialised (and its answer read) without an object per
    request header."""

    __slots__ = ()

    def serialize(self) -> bytes:
        return b"".join([*map(_request, self.operations), _END])

    @classmethod
    def deserialize(cls, data: bytes, offset: int) -> list:
        """The answer as kazoo reads it: per request, the created path, ``True`` for a
        delete or check, the new ``ZnodeStat`` of a set, or the error's exception."""
        results = _read_answer(data, offset)
        return Transaction.deserialize(data, offset) if results is None else results


def _read_answer(data: bytes, offset: int) -> list | None:
    """A multi-op's answers, or None when one is of a kind the bridge never asks for (or a
    create without a path, which ZooKeeper never sends): kazoo reads those, quirks and all."""
    results: list = []
    kind, done, _ = _HEADER.unpack_from(data, offset)
    offset += _HEADER.size
    while done != 1:
        if kind == Create.type:
            (n,) = _INT.unpack_from(data, offset)
            offset += _INT.size
            if n <= 0:
                return None
            results.append(data[offset : offset + n].decode())
            offset += n
        elif kind == SetData.type:
            results.append(ZnodeStat._make(_STAT.unpack_from(data, offset)))
            offset += _STAT.size
        elif kind == -1:
            (err,) = _INT.unpack_from(data, offset)
            offset += _INT.size
            results.append(EXCEPTIONS[err]())
        elif kind in (Delete.type, CheckVersion.type):
            results.append(True)
        else:
            return None
        kind, done, _ = _HEADER.unpack_from(data, offset)
        offset += _HEADER.size
    return results
