"""One ZooKeeper multi-op, its requests built straight into kazoo's request tuples.

kazoo's ``TransactionRequest.create`` checks each argument's type, normalises the path
(split, filter, join) and, through ``AclClient``, computes the ACL afresh per call: at a
cold start of 1,000,000 offset nodes (each created with its ledger marker, two creates) that
was 20 % of the bridge's main thread (py-spy, 2,000 x 100). The bridge's paths are built by
``zkpaths`` (checked there, absolute and normalised) and an ACL depends only on a node's
kind, so here a request is one tuple: the path with the chroot in front, the ACL of its
kind. ZooKeeper still checks every path it is sent: a malformed one fails the multi-op,
which the writers report as a refused batch.
"""

from __future__ import annotations

from collections.abc import Callable

from kazoo.client import KazooClient
from kazoo.interfaces import IAsyncResult
from kazoo.protocol.serialization import CheckVersion, Create, Delete, SetData
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
        """Sent as kazoo's transaction (its results unchrooted and decoded by kazoo)."""
        txn = self._client.transaction()
        txn.operations = self.operations
        return txn.commit_async()

    def commit(self) -> list:
        return self.commit_async().get()
