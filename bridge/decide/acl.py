"""Which ZooKeeper ACL each node the bridge creates gets (docs/security.md).

Pure: a path in, an ACL list out. Two policies:

- ``open``: every node is ``world:anyone`` ALL, as ZooKeeper clients create them by default
  (what the bridge does when it has no credentials);
- ``bridge-writable``: the bridge's own identity (``digest:<user>:<hash>`` or
  ``sasl:<user>``) gets ALL on every node it creates, and ``world:anyone`` only what the
  legacy clients, which never authenticate, need there:

- the bridge root and below (election, epoch, ledger, storage modes): READ; only bridges
  write there;
- ``/brokers/...``, ``/controller``, ``/cluster/id``, anything else outside ``/consumers``:
  READ; the registry is Kafka's truth;
- the directories ``/consumers``, ``/consumers/<g>``, ``.../ids``, ``.../owners``,
  ``.../owners/<t>``, ``.../offsets``, ``.../offsets/<t>``: READ, CREATE, DELETE; old
  consumers create and delete their own ids, claims and offsets below them, and ZooKeeper
  checks CREATE and DELETE on the parent;
- ``/consumers/<g>/ids/<id>`` and ``/consumers/<g>/owners/<t>/<p>``: READ; mirrored members
  and the bridge's claims (fences);
- ``/consumers/<g>/offsets/<t>/<p>``: READ, WRITE; old consumers commit into it in
  ``zookeeper`` and ``dual`` mode, and must be able to again the moment a group is rolled
  back from ``kafka`` mode, so this does not depend on the mode.

What ZooKeeper's ACL model cannot give, by construction: a child can be deleted by whoever
may DELETE on its parent, so the nodes under the directories old consumers write (mirrored
ids, fences, offsets) can be deleted by any client, and offsets can be set by any client.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import cache

from kazoo.security import ACL, Id, Permissions, make_digest_acl_credential

OPEN = "open"
BRIDGE_WRITABLE = "bridge-writable"

WORLD = Id("world", "anyone")


class NodeKind(StrEnum):
    """What a path is, as far as its ACL is concerned."""

    BRIDGE_STATE = "bridge-state"
    REGISTRY = "registry"
    CONSUMER_DIRECTORY = "consumer-directory"
    CONSUMER_MEMBER = "consumer-member"
    CONSUMER_OFFSET = "consumer-offset"


#: what ``world:anyone`` may do on each kind of node under ``bridge-writable``
WORLD_PERMS: dict[NodeKind, int] = {
    NodeKind.BRIDGE_STATE: Permissions.READ,
    NodeKind.REGISTRY: Permissions.READ,
    NodeKind.CONSUMER_DIRECTORY: Permissions.READ | Permissions.CREATE | Permissions.DELETE,
    NodeKind.CONSUMER_MEMBER: Permissions.READ,
    NodeKind.CONSUMER_OFFSET: Permissions.READ | Permissions.WRITE,
}


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def node_kind(path: str, root: str) -> NodeKind:
    """The kind of ``path`` (relative to the chroot), given the bridge's ``root``."""
    if _under(path, root):
        return NodeKind.BRIDGE_STATE
    parts = path.strip("/").split("/")
    if parts[0] != "consumers":
        return NodeKind.REGISTRY
    # /consumers, /consumers/<g>, /consumers/<g>/<dir>
    if len(parts) <= 2 or (len(parts) == 3 and parts[2] in ("ids", "owners", "offsets")):
        return NodeKind.CONSUMER_DIRECTORY
    if len(parts) == 4 and parts[2] in ("owners", "offsets"):  # .../owners/<t>, .../offsets/<t>
        return NodeKind.CONSUMER_DIRECTORY
    if len(parts) == 5 and parts[2] == "offsets":
        return NodeKind.CONSUMER_OFFSET
    return NodeKind.CONSUMER_MEMBER  # ids/<id>, owners/<t>/<p>, and anything unknown: read-only


def identity(scheme: str, username: str, password: str) -> Id:
    """The ACL id of a client that authenticates with these credentials."""
    if scheme == "digest":
        return Id("digest", make_digest_acl_credential(username, password))
    if scheme == "sasl":
        return Id("sasl", username)
    raise ValueError(f"no ACL identity for auth scheme {scheme!r}")


@dataclass(frozen=True)
class AclPolicy:
    """The ACL of every node the bridge creates. ``owner`` is None for the open policy."""

    owner: Id | None
    root: str = "/kafka-zk-bridge"

    @property
    def name(self) -> str:
        return OPEN if self.owner is None else BRIDGE_WRITABLE

    def acl(self, path: str) -> list[ACL]:
        if self.owner is None:
            return list(_OPEN_ACL)
        return list(_acl_of(self.owner, node_kind(path, self.root)))

    def describe(self) -> str:
        """For a log line: the policy and who owns the nodes, never a credential or hash."""
        if self.owner is None:
            return OPEN
        return f"{BRIDGE_WRITABLE} as {self.owner.scheme}:{self.owner.id.split(':', 1)[0]}"

    def fingerprint(self) -> str:
        """Changes whenever the ACLs this policy gives change (another user or password)."""
        import hashlib

        who = "" if self.owner is None else f"{self.owner.scheme}:{self.owner.id}"
        return f"{self.name} {hashlib.sha256(who.encode()).hexdigest()[:16]}"


_OPEN_ACL = (ACL(Permissions.ALL, WORLD),)


@cache
def _acl_of(owner: Id, kind: NodeKind) -> tuple[ACL, ...]:
    """The ACL of a kind of node (made once: the fenced writer asks per node it creates)."""
    return (ACL(WORLD_PERMS[kind], WORLD), ACL(Permissions.ALL, owner))


def same_acl(a: list[ACL], b: list[ACL]) -> bool:
    """ACL lists are sets: order does not matter."""
    return {(x.perms, x.id.scheme, x.id.id) for x in a} == {
        (x.perms, x.id.scheme, x.id.id) for x in b
    }
