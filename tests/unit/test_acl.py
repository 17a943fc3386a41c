"""The ACL decision (``bridge.decide.acl``): which ACL each path the bridge creates gets, and
how the settings choose the policy. Pure; the real server is in tests/integration/test_acl.py.
"""

from __future__ import annotations

import pytest
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.security import ACL, Id, Permissions, make_digest_acl

from bridge.config import ConfigError, ZooKeeperSettings, load
from bridge.decide.acl import (
    WORLD,
    AclPolicy,
    NodeKind,
    identity,
    node_kind,
    same_acl,
)
from bridge.zookeeper.acl import AclClient, policy_for

R, W, C, D, A = (
    Permissions.READ,
    Permissions.WRITE,
    Permissions.CREATE,
    Permissions.DELETE,
    Permissions.ADMIN,
)
ROOT = "/kafka-zk-bridge"
OWNER = identity("digest", "bridge", "s3cret")
POLICY = AclPolicy(OWNER, ROOT)


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        (ROOT, NodeKind.BRIDGE_STATE),
        (f"{ROOT}/epoch", NodeKind.BRIDGE_STATE),
        (f"{ROOT}/leader/_c_abc-lock-0000000001", NodeKind.BRIDGE_STATE),
        (f"{ROOT}/owned/consumers/g/offsets/t/0", NodeKind.BRIDGE_STATE),
        (f"{ROOT}/groups/g", NodeKind.BRIDGE_STATE),
        ("/kafka-zk-bridge-other", NodeKind.REGISTRY),  # a prefix is not the root
        ("/brokers", NodeKind.REGISTRY),
        ("/brokers/ids", NodeKind.REGISTRY),
        ("/brokers/ids/1", NodeKind.REGISTRY),
        ("/brokers/topics/t", NodeKind.REGISTRY),
        ("/brokers/topics/t/partitions/0/state", NodeKind.REGISTRY),
        ("/controller", NodeKind.REGISTRY),
        ("/controller_epoch", NodeKind.REGISTRY),
        ("/cluster/id", NodeKind.REGISTRY),
        ("/consumers", NodeKind.CONSUMER_DIRECTORY),
        ("/consumers/g", NodeKind.CONSUMER_DIRECTORY),
        ("/consumers/g/ids", NodeKind.CONSUMER_DIRECTORY),
        ("/consumers/g/owners", NodeKind.CONSUMER_DIRECTORY),
        ("/consumers/g/owners/t", NodeKind.CONSUMER_DIRECTORY),
        ("/consumers/g/offsets", NodeKind.CONSUMER_DIRECTORY),
        ("/consumers/g/offsets/t", NodeKind.CONSUMER_DIRECTORY),
        ("/consumers/g/ids/g_~~0000-abc", NodeKind.CONSUMER_MEMBER),
        ("/consumers/g/ids/g_static-i1", NodeKind.CONSUMER_MEMBER),
        ("/consumers/g/owners/t/0", NodeKind.CONSUMER_MEMBER),
        ("/consumers/g/offsets/t/0", NodeKind.CONSUMER_OFFSET),
        # not part of the layout: read-only for the world
        ("/consumers/g/other", NodeKind.CONSUMER_MEMBER),
        ("/consumers/g/ids/x/y", NodeKind.CONSUMER_MEMBER),
        ("/consumers/g/offsets/t/0/x", NodeKind.CONSUMER_MEMBER),
        # a group named like a directory is still a group
        ("/consumers/ids", NodeKind.CONSUMER_DIRECTORY),
        ("/consumers/offsets/offsets/offsets/1", NodeKind.CONSUMER_OFFSET),
    ],
)
def test_node_kind(path, kind):
    assert node_kind(path, ROOT) == kind


def test_root_inside_consumers_is_still_the_bridges():
    assert node_kind("/consumers/bridge/epoch", "/consumers/bridge") == NodeKind.BRIDGE_STATE
    assert node_kind("/consumers/g/ids", "/consumers/bridge") == NodeKind.CONSUMER_DIRECTORY


def _world(acl: list[ACL]) -> int:
    return sum(a.perms for a in acl if a.id == WORLD)


@pytest.mark.parametrize(
    ("path", "world"),
    [
        (f"{ROOT}/epoch", R),
        ("/brokers/topics/t", R),
        ("/brokers/ids/3", R),
        ("/consumers", R | C | D),
        ("/consumers/g/ids", R | C | D),
        ("/consumers/g/owners/t", R | C | D),
        ("/consumers/g/offsets/t", R | C | D),
        ("/consumers/g/ids/g_~~0000-abc", R),
        ("/consumers/g/owners/t/3", R),
        ("/consumers/g/offsets/t/3", R | W),
    ],
)
def test_bridge_writable_gives_the_world_only_what_legacy_clients_need(path, world):
    acl = POLICY.acl(path)
    assert _world(acl) == world
    assert not _world(acl) & A  # nobody but the bridge may change an ACL
    assert [a for a in acl if a.id != WORLD] == [ACL(Permissions.ALL, OWNER)]


def test_every_path_gives_the_bridge_all_and_the_world_read():
    for kind_path in ("/", "/x", "/consumers/g/ids/a/b/c", f"{ROOT}/a/b/c/d/e"):
        acl = POLICY.acl(kind_path)
        assert ACL(Permissions.ALL, OWNER) in acl
        assert _world(acl) & R


def test_open_policy_is_what_zookeeper_clients_do_by_default():
    open_policy = AclPolicy(None, ROOT)
    for path in ("/brokers/ids/1", "/consumers/g/ids/x", f"{ROOT}/epoch"):
        assert open_policy.acl(path) == [ACL(Permissions.ALL, WORLD)]
    assert open_policy.name == "open"
    assert POLICY.name == "bridge-writable"


def test_digest_identity_is_the_one_zookeeper_computes():
    # what `zkCli.sh addauth digest bridge:s3cret` authenticates as
    assert OWNER == make_digest_acl("bridge", "s3cret", all=True).id
    assert OWNER.scheme == "digest" and OWNER.id.startswith("bridge:")
    assert identity("sasl", "bridge", "ignored") == Id("sasl", "bridge")
    with pytest.raises(ValueError):
        identity("kerberos", "bridge", "x")


def test_describe_and_fingerprint_never_carry_the_secret():
    text = POLICY.describe() + POLICY.fingerprint()
    assert "s3cret" not in text and OWNER.id.split(":", 1)[1] not in text
    assert POLICY.describe() == "bridge-writable as digest:bridge"
    assert AclPolicy(None).describe() == "open"


def test_fingerprint_changes_with_the_password_and_the_policy():
    other = AclPolicy(identity("digest", "bridge", "other"), ROOT)
    assert POLICY.fingerprint() != other.fingerprint()
    assert POLICY.fingerprint() == AclPolicy(identity("digest", "bridge", "s3cret")).fingerprint()
    assert AclPolicy(None).fingerprint().startswith("open ")


def test_same_acl_ignores_order():
    a = POLICY.acl("/consumers/g/ids")
    assert same_acl(a, list(reversed(a)))
    assert not same_acl(a, POLICY.acl("/brokers"))


# ---- settings → policy ----------------------------------------------------------------------


def _zk(**kw) -> ZooKeeperSettings:
    return load(environ={f"ZK_BRIDGE__ZOOKEEPER__{k.upper()}": v for k, v in kw.items()}).zookeeper


def test_no_credentials_means_open():
    s = _zk()
    assert s.acl_mode() == "open"
    assert policy_for(s).owner is None


def test_credentials_mean_bridge_writable_by_default():
    s = _zk(auth_scheme="digest", username="bridge", password="s3cret")
    assert s.acl_mode() == "bridge-writable"
    assert policy_for(s, "/r").owner == OWNER
    assert policy_for(s, "/r").root == "/r"


def test_credentials_with_acl_open_stay_open():
    s = _zk(auth_scheme="digest", username="bridge", password="s3cret", acl="open")
    assert policy_for(s).owner is None


def test_password_file(tmp_path):
    f = tmp_path / "zk.pw"
    f.write_text("s3cret\n")
    s = _zk(auth_scheme="digest", username="bridge", password_file=str(f))
    assert s.secret() == "s3cret"
    assert policy_for(s).owner == OWNER
    assert "s3cret" not in repr(s) and "s3cret" not in s.model_dump_json()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"acl": "bridge-writable"},
            "zookeeper.acl: 'bridge-writable' needs credentials to write as",
        ),
        (
            {"auth_scheme": "digest", "username": "bridge"},
            "zookeeper: auth_scheme 'digest' needs zookeeper.username and a password",
        ),
        (
            {"auth_scheme": "digest", "password": "hunter2-secret"},
            "zookeeper: auth_scheme 'digest' needs zookeeper.username and a password",
        ),
        ({"acl": "closed"}, "zookeeper.acl: Input should be 'bridge-writable', 'open' or unset"),
    ],
)
def test_inconsistent_acl_settings_are_refused(env, expected):
    with pytest.raises(ConfigError) as err:
        _zk(**env)
    assert expected in str(err.value)
    assert "hunter2-secret" not in str(err.value)


def test_password_file_errors_name_the_file(tmp_path):
    missing = tmp_path / "nope.pw"
    with pytest.raises(ConfigError) as err:
        _zk(auth_scheme="digest", username="bridge", password_file=str(missing))
    assert f"ZooKeeper password file {missing} cannot be read" in str(err.value)
    empty = tmp_path / "empty.pw"
    empty.write_text("\n")
    with pytest.raises(ConfigError, match="is empty"):
        _zk(auth_scheme="digest", username="bridge", password_file=str(empty))
    full = tmp_path / "zk.pw"
    full.write_text("hunter2-secret")
    with pytest.raises(ConfigError) as err:
        _zk(auth_scheme="digest", username="u", password="x", password_file=str(full))
    assert "not both" in str(err.value) and "hunter2-secret" not in str(err.value)


def test_a_password_file_that_vanishes_later_is_a_config_error(tmp_path):
    f = tmp_path / "zk.pw"
    f.write_text("s3cret")
    s = _zk(auth_scheme="digest", username="bridge", password_file=str(f))
    f.unlink()
    with pytest.raises(ConfigError, match=str(f)):
        s.secret()


# ---- the kazoo edge: which ACL reaches the wire -----------------------------------------------


class _Recorder(AclClient):
    """A client on a tree in memory: records the ACL each create sends instead of sending it."""

    def __init__(self) -> None:
        super().__init__(hosts="127.0.0.1:1", acl_policy=POLICY)
        self.handler.start()  # completion callbacks run on the handler's threads
        self.sent: dict[str, list[ACL]] = {"/": []}

    def _create_async_inner(self, path, value, acl, flags, trailing=False, include_data=False):
        result = self.handler.async_result()
        if (path.rsplit("/", 1)[0] or "/") not in self.sent:
            result.set_exception(NoNodeError())
        elif path in self.sent:
            result.set_exception(NodeExistsError())
        else:
            self.sent[path] = list(acl)
            result.set(path)
        return result

    def exists_async(self, path, watch=None):
        result = self.handler.async_result()
        result.set(path in self.sent or None)
        return result


@pytest.fixture
def recorder():
    c = _Recorder()
    yield c
    c.handler.stop()


def test_creates_without_an_acl_get_the_policys_acl_for_their_path(recorder):
    c = recorder
    c.create("/brokers", b"")
    c.create("/brokers/ids", b"")
    c.create("/brokers/ids/1", b"", ephemeral=True)
    c.create("/brokers/ids/2", b"", acl=[ACL(R, WORLD)])  # an explicit ACL wins
    assert c.sent["/brokers/ids/1"] == POLICY.acl("/brokers/ids/1")
    assert c.sent["/brokers/ids/2"] == [ACL(R, WORLD)]


def test_makepath_and_ensure_path_give_each_level_its_own_acl(recorder):
    c = recorder
    c.create("/consumers/g/offsets/t/0", b"5", makepath=True)
    c.ensure_path(f"{ROOT}/leader")
    for path in (
        "/consumers",
        "/consumers/g",
        "/consumers/g/offsets",
        "/consumers/g/offsets/t",
        "/consumers/g/offsets/t/0",
        ROOT,
        f"{ROOT}/leader",
    ):
        assert c.sent[path] == POLICY.acl(path), path
    assert _world(c.sent["/consumers/g/offsets/t"]) == R | C | D
    assert _world(c.sent["/consumers/g/offsets/t/0"]) == R | W


def test_transaction_creates_get_the_policys_acl(recorder):
    txn = recorder.transaction()
    txn.create("/consumers/g/offsets/t/0", b"5")
    txn.create(f"{ROOT}/owned/consumers/g/offsets/t/0", b"owned")
    txn.create("/consumers/g/ids/x", b"", acl=[ACL(R, WORLD)])
    acls = {op.path: op.acl for op in txn.operations}
    assert acls["/consumers/g/offsets/t/0"] == POLICY.acl("/consumers/g/offsets/t/0")
    assert acls[f"{ROOT}/owned/consumers/g/offsets/t/0"] == POLICY.acl(f"{ROOT}/owned")
    assert acls["/consumers/g/ids/x"] == [ACL(R, WORLD)]
