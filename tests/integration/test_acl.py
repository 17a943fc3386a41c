"""ACLs on the real ZooKeeper: a bridge with digest credentials protects what it creates.

The bridge runs with its credentials from the environment; a legacy reader (plain kazoo,
no auth) can read the whole mirror, cannot change the registry, the mirrored members or the
bridge's own state, and can still do what an old consumer does under ``/consumers/<g>``.
A client authenticated with the wrong password is no better off than an anonymous one.
"""

from __future__ import annotations

import uuid

import pytest
from kafka import KafkaProducer
from kafka.admin import NewTopic
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.security import ACL, OPEN_ACL_UNSAFE, Permissions

from bridge.decide.acl import WORLD, AclPolicy, identity, same_acl
from tests.conftest import wait_for
from tests.integration.test_group_mirror import PolledConsumer

USER = "kzb-acl-test"
PASSWORD = f"pw-{uuid.uuid4().hex}"  # unique, so finding it in a log means it leaked
ROOT = "/kafka-zk-bridge"
POLICY = AclPolicy(identity("digest", USER, PASSWORD), ROOT)
HASH = POLICY.owner.id.split(":", 1)[1]

pytestmark = [pytest.mark.integration, pytest.mark.zk_auth("digest", f"{USER}:{PASSWORD}")]

ENV = {
    "ZK_BRIDGE__ZOOKEEPER__AUTH_SCHEME": "digest",
    "ZK_BRIDGE__ZOOKEEPER__USERNAME": USER,
    "ZK_BRIDGE__ZOOKEEPER__PASSWORD": PASSWORD,
    "ZK_BRIDGE__BRIDGE__RESYNC_INTERVAL_S": "2",
}


def _client(stack, chroot, auth: tuple[str, str] | None = None) -> KazooClient:
    c = KazooClient(stack.zk_connect + chroot, auth_data=[auth] if auth else None)
    c.start()
    return c


def _children(zk: KazooClient, path: str) -> list[str]:
    try:
        return zk.get_children(path)
    except NoNodeError:
        return []


def _bridge_nodes(zk: KazooClient) -> list[str]:
    """Every node under the bridge root, and every legacy node its ledger says it created."""
    out, frontier = [], [ROOT]
    while frontier:
        p = frontier.pop()
        out.append(p)
        frontier.extend(f"{p}/{c}" for c in _children(zk, p))
    ledger = f"{ROOT}/owned"
    legacy = [
        m[len(ledger) :] for m in out if m.startswith(ledger + "/") and zk.get(m)[0] == b"owned"
    ]
    return out + legacy


def _refused(action, *args, **kw) -> None:
    with pytest.raises(NoAuthError):
        action(*args, **kw)


def test_bridge_owned_nodes_are_read_only_for_everyone_else(
    stack, chroot, zk, admin, topic_name, start_bridge
):
    topic, group = topic_name("t"), topic_name("g")
    admin.create_topics([NewTopic(topic, 2, 1)])
    producer = KafkaProducer(bootstrap_servers=stack.bootstrap_servers.split(","))
    for i in range(10):
        producer.send(topic, f"m{i}".encode(), partition=i % 2)
    producer.flush()
    producer.close()

    bridge = start_bridge(env=ENV)
    members = PolledConsumer(stack.bootstrap_servers, group, [topic], "acl-member")
    try:
        base = f"/consumers/{group}"
        wait_for(lambda: zk.exists(f"/brokers/topics/{topic}/partitions/1/state"), 60, 0.1)
        wait_for(lambda: _children(zk, f"{base}/ids"), 120, 0.1, "the group mirrored")
        wait_for(lambda: len(_children(zk, f"{base}/owners/{topic}")) == 2, 60, 0.1, "owners")
        wait_for(lambda: len(_children(zk, f"{base}/offsets/{topic}")) == 2, 60, 0.1, "offsets")
        (mirrored,) = zk.get_children(f"{base}/ids")
        assert mirrored.startswith(f"{group}_~~")

        # every node the bridge created carries exactly the ACL the policy gives its path
        # (read as the bridge: ZooKeeper shows digest hashes only to who may administer)
        owner = _client(stack, chroot, ("digest", f"{USER}:{PASSWORD}"))
        try:
            nodes = _bridge_nodes(owner)
            assert f"/brokers/topics/{topic}" in nodes and f"{base}/ids/{mirrored}" in nodes
            for path in nodes:
                try:
                    acl, _ = owner.get_acls(path)
                except NoNodeError:
                    continue  # an election node that came and went
                assert same_acl(acl, POLICY.acl(path)), (path, acl)
        finally:
            owner.stop()
            owner.close()
        assert zk.get_acls(f"{ROOT}/epoch")[0][1].id.id == f"{USER}:x"  # redacted for others

        # a legacy reader reads everything
        for path in (
            "/brokers/ids",
            f"/brokers/topics/{topic}",
            f"/brokers/topics/{topic}/partitions/0/state",
            f"{base}/ids/{mirrored}",
            f"{base}/owners/{topic}/0",
            f"{base}/offsets/{topic}/1",
            f"{ROOT}/epoch",
        ):
            zk.get(path)
        assert zk.get_children("/brokers/ids")

        record = f"{ROOT}/groups/{group}"
        wait_for(lambda: zk.exists(record), 30, 0.1, "the storage-mode record")
        wrong = _client(stack, chroot, ("digest", f"{USER}:not-the-password"))
        try:
            for c in (zk, wrong):
                # the registry
                _refused(c.set, f"/brokers/topics/{topic}", b"{}")
                _refused(c.delete, f"/brokers/topics/{topic}/partitions/0/state")
                _refused(c.create, f"/brokers/topics/{topic}-evil", b"{}")
                _refused(c.create, "/brokers/ids/999", b"{}", ephemeral=True)
                _refused(c.set_acls, f"/brokers/topics/{topic}", OPEN_ACL_UNSAFE)
                # mirrored members and owners
                _refused(c.set, f"{base}/ids/{mirrored}", b"{}")
                _refused(c.set_acls, f"{base}/ids/{mirrored}", OPEN_ACL_UNSAFE)
                _refused(c.set, f"{base}/owners/{topic}/0", b"someone-else-0")
                # the bridge's own state: election, epoch, ledger, storage modes
                _refused(c.set, f"{ROOT}/epoch", b'{"epoch": 99}')
                _refused(c.delete, f"{ROOT}/epoch")
                _refused(c.create, f"{ROOT}/leader/_c_evil-lock-", b"", ephemeral=True)
                _refused(c.delete, f"{ROOT}/owned/brokers/topics/{topic}/partitions/0/state")
                _refused(c.set, record, b'{"mode": "zookeeper"}')
                _refused(c.create, f"{ROOT}/sync-requests", b"")
        finally:
            wrong.stop()
            wrong.close()

        # what the ACL model cannot stop: DELETE is checked on the parent, which old consumers
        # need, so a mirrored id can be deleted by anyone; the bridge puts it back
        zk.delete(f"{base}/ids/{mirrored}")
        wait_for(lambda: zk.exists(f"{base}/ids/{mirrored}"), 30, 0.1, "the mirrored id back")
        acl, _ = zk.get_acls(f"{base}/ids/{mirrored}")
        assert [a.perms for a in acl if a.id == WORLD] == [Permissions.READ]

        # and an anonymous client still does what an old consumer does: register and leave,
        # claim and release a partition, commit an offset
        old_id = f"{group}_oldhost-1700000000000-abcdef01"
        zk.create(f"{base}/ids/{old_id}", b'{"version":1}', ephemeral=True)
        zk.delete(f"{base}/ids/{old_id}")
        zk.create(f"{base}/owners/{topic}-other/0", b"x", ephemeral=True, makepath=True)
        zk.delete(f"{base}/owners/{topic}-other/0")
        zk.delete(f"{base}/owners/{topic}-other")
        data, stat = zk.get(f"{base}/offsets/{topic}/0")
        zk.set(f"{base}/offsets/{topic}/0", data, version=stat.version)  # WRITE is granted
        zk.create(f"/consumers/{group}-old/ids/{old_id}", b"{}", ephemeral=True, makepath=True)
        assert zk.get_acls(f"/consumers/{group}-old")[0] == OPEN_ACL_UNSAFE  # theirs, not ours
        zk.delete(f"/consumers/{group}-old", recursive=True)
    finally:
        members.close()
        bridge.stop()

    log = bridge.text()
    assert f"ZooKeeper ACLs: bridge-writable as digest:{USER}" in log
    assert "ZooKeeper ACLs are open" not in log
    assert PASSWORD not in log and HASH not in log


def test_nodes_created_before_credentials_are_brought_to_the_policy(
    stack, chroot, zk, admin, topic_name, start_bridge
):
    topic = topic_name("t")
    admin.create_topics([NewTopic(topic, 1, 1)])
    first = start_bridge()  # no credentials: open, and says so
    wait_for(lambda: zk.exists(f"/brokers/topics/{topic}/partitions/0/state"), 60, 0.1)
    first.stop()
    assert first.text().count("ZooKeeper ACLs are open") == 1
    assert zk.get_acls(f"/brokers/topics/{topic}")[0] == OPEN_ACL_UNSAFE
    zk.set(f"{ROOT}/epoch", zk.get(f"{ROOT}/epoch")[0])  # anyone could, until now

    second = start_bridge(env=ENV)
    owner = _client(stack, chroot, ("digest", f"{USER}:{PASSWORD}"))
    try:
        wait_for(lambda: "ACLs brought to the bridge-writable policy" in second.text(), 60, 0.1)
        for path in (f"/brokers/topics/{topic}", f"{ROOT}/epoch", ROOT, f"{ROOT}/owned"):
            acl, _ = owner.get_acls(path)
            assert same_acl(acl, POLICY.acl(path)), (path, acl)
            assert [a.perms for a in acl if a.id == WORLD] == [Permissions.READ]
        _refused(zk.set, f"/brokers/topics/{topic}", b"{}")
        _refused(zk.set, f"{ROOT}/epoch", b"{}")
        recorded = zk.get(f"{ROOT}/acl")[0].decode()
        assert recorded == POLICY.fingerprint()
    finally:
        owner.stop()
        owner.close()
        second.stop()

    third = start_bridge(env=ENV)  # the same policy again: nothing to repair
    try:
        wait_for(lambda: "claimed bridge epoch" in third.text(), 60, 0.1)
        wait_for(lambda: zk.exists(f"/brokers/topics/{topic}"), 30, 0.1)
    finally:
        third.stop()
    assert "ACLs brought to" not in third.text()
    assert PASSWORD not in second.text() + third.text()

    # a node this identity may no longer administer: reported, and the policy not recorded,
    # so the next election tries again
    foreign = identity("digest", "someone-else", "x")
    owner = _client(stack, chroot, ("digest", f"{USER}:{PASSWORD}"))
    try:
        owner.set_acls(
            f"/brokers/topics/{topic}",
            [ACL(Permissions.ALL & ~Permissions.ADMIN, WORLD), ACL(Permissions.ALL, foreign)],
        )
        owner.delete(f"{ROOT}/acl")
    finally:
        owner.stop()
        owner.close()
    fourth = start_bridge(env=ENV)
    try:
        wait_for(lambda: "may not change" in fourth.text(), 60, 0.1, "the repair's warning")
    finally:
        fourth.stop()
    assert f"1 node(s) keep an ACL this bridge may not change (first: /brokers/topics/{topic})" in (
        fourth.text()
    )
    assert zk.exists(f"{ROOT}/acl") is None

    intruder = start_bridge()  # no credentials: may not even queue for the election
    wait_for(lambda: intruder.proc.poll() is not None, 60, 0.1, "the intruder to give up")
    assert intruder.proc.returncode == 2
    assert "this identity is not allowed by the node's ACL" in intruder.text()
    assert "Traceback" not in intruder.text()
