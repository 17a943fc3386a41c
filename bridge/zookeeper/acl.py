"""Applying the ACL policy (``decide.acl``) to what the bridge creates in ZooKeeper.

``AclClient`` is a ``KazooClient`` whose creates without an explicit ACL get the ACL the
policy gives their path: plain creates, ``makepath``/``ensure_path`` parents (each its own
ACL), the creates of a transaction, and so the election lock, the epoch node, the fenced
batches and the ledger. ``repair_acls`` brings nodes created under an earlier policy (or
before the bridge had credentials) to the current one, once per policy change.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.protocol.states import ZnodeStat
from kazoo.security import ACL

from bridge.config import ZooKeeperSettings
from bridge.decide.acl import AclPolicy, identity, same_acl
from bridge.decide.plan import Create, SetData
from bridge.zookeeper.writer import OWNED, BatchRejected, FencedWriter

log = logging.getLogger(__name__)


def policy_for(settings: ZooKeeperSettings, root: str = "/kafka-zk-bridge") -> AclPolicy:
    """The policy the settings ask for (the secret is used only to compute a digest id)."""
    if settings.acl_mode() == "open" or not settings.auth_scheme or not settings.username:
        return AclPolicy(None, root)
    return AclPolicy(
        identity(settings.auth_scheme, settings.username, settings.secret() or ""), root
    )


class _PolicyAcl(list):
    """An ACL chosen by the policy for one path (kazoo hands it on to ``makepath`` parents,
    which must get their own)."""


class _PolicyTransaction(TransactionRequest):
    def create(self, path, value=b"", acl=None, ephemeral=False, sequence=False):
        if acl is None:
            acl = self.client.acl_policy.acl(path)
        return super().create(path, value, acl, ephemeral, sequence)


class AclClient(KazooClient):
    """A kazoo client that gives every node it creates the ACL of ``acl_policy``."""

    def __init__(self, *args, acl_policy: AclPolicy, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.acl_policy = acl_policy

    def create_async(self, path, value=b"", acl=None, *args, **kwargs):
        if acl is None and isinstance(path, str):
            acl = _PolicyAcl(self.acl_policy.acl(path))
        return super().create_async(path, value, acl, *args, **kwargs)

    def ensure_path_async(self, path, acl=None):
        if isinstance(acl, _PolicyAcl):
            acl = None  # each missing level gets its own ACL through create_async
        return super().ensure_path_async(path, acl)

    def transaction(self) -> TransactionRequest:
        return _PolicyTransaction(self)


def announce(policy: AclPolicy) -> None:
    """One line at start saying how the nodes the bridge creates are protected."""
    if policy.owner is None:
        log.warning(
            "ZooKeeper ACLs are open: any client can change or delete the nodes the bridge "
            "creates; set zookeeper.auth_scheme, username and password (docs/security.md)"
        )
    else:
        log.info("ZooKeeper ACLs: %s", policy.describe())


@dataclass
class RepairReport:
    checked: int = 0
    changed: list[str] = field(default_factory=list)
    denied: list[str] = field(default_factory=list)
    skipped: bool = False


def repair_acls(client: KazooClient, policy: AclPolicy, writer: FencedWriter) -> RepairReport:
    """Give the policy's ACL to every node under the root and every node the ledger says the
    bridge created, unless ``<root>/acl`` says that was already done for this policy.

    ZooKeeper's multi-op cannot carry a setACL, so the ACL changes are not fenced; they are
    idempotent for one policy. The record of the policy is written through the fenced
    writer (I3) and only when every node could be changed: a node the bridge may not
    administer (created by another identity) is reported, and the repair is tried again at
    the next election.
    """
    root = policy.root.rstrip("/") or "/"
    marker = f"{root}/acl"
    want = policy.fingerprint().encode()
    report = RepairReport()
    try:
        recorded, stat = client.get(marker)
    except NoNodeError:
        recorded, stat = None, None
    if recorded == want:
        report.skipped = True
        return report

    paths = _walk(client, root)
    ledger = f"{root}/owned"
    legacy = [
        p[len(ledger) :]
        for p, data in paths.items()
        if data == OWNED and p.startswith(ledger + "/")
    ]
    _apply_policy(client, policy, [*paths, *legacy], report)
    if report.changed:
        log.info("ACLs brought to the %s policy on %d node(s)", policy.name, len(report.changed))
    if report.denied:
        log.warning(
            "%d node(s) keep an ACL this bridge may not change (first: %s); set it as a "
            "ZooKeeper super user or the identity that created them (docs/security.md)",
            len(report.denied),
            ", ".join(report.denied[:3]),
        )
        return report
    _record_policy(writer, marker, want, stat)
    return report


def _apply_policy(
    client: KazooClient, policy: AclPolicy, targets: list[str], report: RepairReport
) -> None:
    """Read every target's ACL and set the policy's where it differs (pipelined); counted
    in ``report``, a node that went away meanwhile left out."""
    reads = [(p, client.get_acls_async(p)) for p in targets]
    writes = []
    for p, result in reads:
        try:
            acl, _ = result.get()
        except NoNodeError:
            continue
        report.checked += 1
        wanted: list[ACL] = policy.acl(p)
        if not same_acl(acl, wanted):
            writes.append((p, client.set_acls_async(p, wanted)))
    for p, result in writes:
        try:
            result.get()
            report.changed.append(p)
        except NoNodeError:
            continue
        except NoAuthError:
            report.denied.append(p)


def _record_policy(writer: FencedWriter, marker: str, want: bytes, stat: ZnodeStat | None) -> None:
    """Write the policy's record behind the epoch check (I3); ``Fenced`` when deposed."""
    op = Create(marker, want) if stat is None else SetData(marker, want, stat.version)
    try:
        writer.apply_own([op])
    except BatchRejected as exc:  # tried again at the next election
        log.warning("could not record the ACL policy at %s: %s", marker, type(exc.error).__name__)


def _walk(client: KazooClient, root: str) -> dict[str, bytes]:
    """Every node under ``root`` (included) with its data, read level by level."""
    out: dict[str, bytes] = {}
    frontier = [root]
    while frontier:
        reads = [(p, client.get_async(p), client.get_children_async(p)) for p in frontier]
        frontier = []
        for p, data_async, children_async in reads:
            try:
                data, _ = data_async.get()
                kids = children_async.get()
            except NoNodeError:
                continue
            out[p] = data or b""
            frontier.extend(f"{p.rstrip('/')}/{c}" for c in kids)
    return out
