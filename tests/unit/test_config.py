"""Config validation: each kind of bad value yields one message naming the key, the bad value
and what is allowed (and where it came from when that is not the file)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.config import ConfigError, Settings, load, split_hostport

ROOT = Path(__file__).resolve().parents[2]


def _error(tmp_path: Path, toml: str | None = None, **kw) -> str:
    path = None
    if toml is not None:
        path = tmp_path / "bridge.toml"
        path.write_text(toml)
    kw.setdefault("environ", {})
    with pytest.raises(ConfigError) as err:
        load(path, **kw)
    return str(err.value)


def test_defaults_are_valid_and_loopback():
    s = load(environ={})
    assert s.metrics.enabled and s.metrics.address == "127.0.0.1:9308"
    assert s.zookeeper.connect == "127.0.0.1:2181"


def test_file_then_env_then_flags(tmp_path):
    path = tmp_path / "b.toml"
    path.write_text('[zookeeper]\nconnect = "zk1:2181/kafka"\n[kafka]\nclient_id = "from-file"\n')
    s = load(
        path,
        {"kafka": {"bootstrap_servers": "k1:9092"}},
        environ={
            "ZK_BRIDGE__KAFKA__CLIENT_ID": "from-env",
            "ZK_BRIDGE__KAFKA__BOOTSTRAP_SERVERS": "x:1",
        },
    )
    assert s.zookeeper.connect == "zk1:2181/kafka"
    assert s.kafka.client_id == "from-env"
    assert s.kafka.bootstrap_servers == "k1:9092"  # the flag wins over the environment


def test_unknown_key_names_it_suggests_and_lists_allowed(tmp_path):
    msg = _error(tmp_path, '[zookeeper]\nconect = "a:1"\n')
    assert "zookeeper.conect: unknown key (did you mean 'connect'?)" in msg
    assert "allowed: connect, session_timeout_s" in msg
    assert str(tmp_path / "bridge.toml") in msg


def test_unknown_section(tmp_path):
    msg = _error(tmp_path, "[zookeepr]\nconnect = 'a:1'\n")
    assert "zookeepr: unknown section (did you mean 'zookeeper'?)" in msg
    assert "allowed: zookeeper, kafka, bridge, registry, groups, coexistence, metrics" in msg


def test_wrong_type(tmp_path):
    msg = _error(tmp_path, '[zookeeper]\nsession_timeout_s = "ten"\n')
    assert "zookeeper.session_timeout_s: Input should be a valid number" in msg
    assert "(got 'ten')" in msg


def test_section_that_is_not_a_table(tmp_path):
    msg = _error(tmp_path, "kafka = 5\n")
    assert "kafka: Input should be a valid dictionary" in msg and "(got 5)" in msg


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ("[zookeeper]\nsession_timeout_s = 0.5\n", "1.0 <= session_timeout_s <= 600.0 (got 0.5)"),
        ("[kafka]\nrequest_timeout_ms = 999999\n", "1000 <= request_timeout_ms <= 300000"),
        ("[registry]\npoll_interval_s = 0\n", "0 < poll_interval_s <= 60 (got 0)"),
        ("[metrics]\nready_ticks = 0\n", "1 <= ready_ticks <= 10000 (got 0)"),
    ],
)
def test_out_of_range_number_states_the_range(tmp_path, toml, expected):
    msg = _error(tmp_path, toml)
    assert "out of range; allowed: " + expected in msg


@pytest.mark.parametrize(
    ("toml", "key", "expected"),
    [
        ('[zookeeper]\nconnect = "zk1"\n', "zookeeper.connect", "'zk1' is not HOST:PORT"),
        ('[kafka]\nbootstrap_servers = "k1:9092,k2"\n', "kafka.bootstrap_servers", "'k2'"),
        ('[kafka]\nbootstrap_servers = "k1:70000"\n', "kafka.bootstrap_servers", "1-65535"),
        ('[kafka]\nbootstrap_servers = ""\n', "kafka.bootstrap_servers", "'' is not HOST:PORT"),
        ('[metrics]\naddress = "localhost"\n', "metrics.address", "port 0 picks a free one"),
        ('[metrics]\naddress = "0.0.0.0:65536"\n', "metrics.address", "outside 0-65535"),
    ],
)
def test_bad_host_port(tmp_path, toml, key, expected):
    msg = _error(tmp_path, toml)
    assert f"{key}: expected" in msg and expected in msg and "(got " in msg


def test_host_port_forms():
    assert split_hostport("[::1]:9308", min_port=0) == ("::1", 9308)
    assert split_hostport("kafka-1.example.com:9092") == ("kafka-1.example.com", 9092)
    assert load(environ={}, overrides={"metrics": {"address": "[::1]:0"}}).metrics.address
    with pytest.raises(ValueError):
        split_hostport("host:0")  # a server port must be 1-65535


def test_bad_regex(tmp_path):
    msg = _error(tmp_path, '[groups]\ninclude = ["orders-.*", "(unclosed"]\n')
    assert "groups.include: '(unclosed' is not a valid regex" in msg
    assert "(got ['orders-.*', '(unclosed'])" in msg


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        (
            '[kafka]\nsecurity_protocol = "PLAIN"\n',
            "kafka.security_protocol: Input should be 'PLAINTEXT', 'SSL', 'SASL_PLAINTEXT' or "
            "'SASL_SSL' (got 'PLAIN')",
        ),
        (
            '[zookeeper]\nauth_scheme = "kerberos"\n',
            "zookeeper.auth_scheme: Input should be 'digest', 'sasl' or unset (got 'kerberos')",
        ),
        (
            '[groups]\non_group_deleted = "drop"\n',
            "groups.on_group_deleted: Input should be 'keep-offsets' or 'delete' (got 'drop')",
        ),
        ("[registry]\nenabled = 'maybe'\n", "registry.enabled: Input should be a valid boolean"),
        ('[bridge]\nroot = "kzb/"\n', "bridge.root: expected an absolute ZooKeeper path"),
    ],
)
def test_bad_enum_and_shapes(tmp_path, toml, expected):
    assert expected in _error(tmp_path, toml)


def test_invalid_toml_names_line(tmp_path):
    msg = _error(tmp_path, "[zookeeper]\nconnect = zk1:2181\n")
    assert "is not valid TOML" in msg and "line 2" in msg


def test_missing_and_unreadable_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load(tmp_path / "nope.toml", environ={})
    with pytest.raises(ConfigError, match="cannot be read"):
        load(tmp_path, environ={})  # a directory


def test_bad_env_var_name():
    with pytest.raises(ConfigError, match="ZK_BRIDGE__ZOOKEEPER: expected ZK_BRIDGE__SECTION__KEY"):
        load(environ={"ZK_BRIDGE__ZOOKEEPER": "a:1"})
    with pytest.raises(ConfigError, match="ZK_BRIDGE__A__B__C"):
        load(environ={"ZK_BRIDGE__A__B__C": "1"})


def test_env_errors_name_the_variable():
    with pytest.raises(ConfigError) as err:
        load(
            environ={
                "ZK_BRIDGE__ZOOKEEPER__CONECT": "a:1",
                "ZK_BRIDGE__KAFKA__REQUEST_TIMEOUT_MS": "5",
            }
        )
    msg = str(err.value)
    assert (
        "zookeeper.conect: unknown key (did you mean 'connect'?); from environment variable "
        "ZK_BRIDGE__ZOOKEEPER__CONECT" in msg
    )
    assert "kafka.request_timeout_ms: out of range" in msg
    assert "(got '5'; from environment variable ZK_BRIDGE__KAFKA__REQUEST_TIMEOUT_MS)" in msg


def test_env_list_is_json():
    s = load(environ={"ZK_BRIDGE__GROUPS__EXCLUDE": '["tmp-.*", "test"]'})
    assert s.groups.exclude == ["tmp-.*", "test"]
    with pytest.raises(ConfigError, match="groups.exclude is a list, expected JSON"):
        load(environ={"ZK_BRIDGE__GROUPS__EXCLUDE": "tmp-.*"})
    # a secret that happens to start with '[' is not parsed
    assert load(environ={"ZK_BRIDGE__KAFKA__SASL_PASSWORD": "[x"}).kafka.sasl_password


def test_flag_errors_name_the_command_line():
    with pytest.raises(ConfigError, match=r"\(got 'zk'; from the command line\)"):
        load(environ={}, overrides={"zookeeper": {"connect": "zk"}})


def test_every_error_is_listed_at_once(tmp_path):
    msg = _error(
        tmp_path, '[kafka]\nclient_idd = "x"\nsecurity_protocol = "TLS"\n[metrics]\nenabled = 3\n'
    )
    assert msg.count("\n  ") == 3


def test_secrets_never_printed(tmp_path):
    msg = _error(
        tmp_path,
        '[kafka]\nsasl_password = 12345\n[zookeeper]\npassword = ["hunter2-secret"]\n',
    )
    assert "kafka.sasl_password" in msg and "zookeeper.password" in msg
    assert "12345" not in msg and "hunter2-secret" not in msg
    s = load(environ={"ZK_BRIDGE__KAFKA__SASL_PASSWORD": "s3cr3t-value"})
    assert "s3cr3t-value" not in repr(s) and "s3cr3t-value" not in s.model_dump_json()


def _zk_bridge(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bridge.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )


def test_config_check_ok_and_verbose(tmp_path):
    path = tmp_path / "ok.toml"
    path.write_text('[kafka]\nsasl_password = "p4ss-word"\n[metrics]\naddress = "0.0.0.0:9400"\n')
    out = _zk_bridge("config", "check", str(path), "-v", env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert f"{path}: OK" in out.stdout
    assert '"address": "0.0.0.0:9400"' in out.stdout
    assert "p4ss-word" not in out.stdout


def test_config_check_bad_file_exits_2_with_message(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[kafka]\nsecurity_protocol = "PLAIN"\n[metrics]\naddress = "nowhere"\n')
    out = _zk_bridge("config", "check", str(path), env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 2
    assert f"invalid configuration ({path}):" in out.stderr
    assert "kafka.security_protocol" in out.stderr and "metrics.address" in out.stderr
    assert "Traceback" not in out.stderr
    missing = _zk_bridge("config", "check", str(tmp_path / "none.toml"), env={"PATH": "/usr/bin"})
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_model_has_every_section():
    assert set(Settings.model_fields) == {
        "zookeeper",
        "kafka",
        "bridge",
        "registry",
        "groups",
        "coexistence",
        "metrics",
        "gateway",
        "storm",
        "scale",
    }


def test_command_addresses_flag_then_short_env_then_config(tmp_path, monkeypatch):
    import argparse

    from bridge.commands import settings_from_args

    cfg = tmp_path / "bridge.toml"
    cfg.write_text('[zookeeper]\nconnect = "cfg:2181"\n[kafka]\nbootstrap_servers = "cfg:9092"\n')
    args = argparse.Namespace(config=cfg, zookeeper=None, bootstrap_server=None)
    monkeypatch.delenv("ZK_BRIDGE_ZOOKEEPER", raising=False)
    monkeypatch.delenv("ZK_BRIDGE_BOOTSTRAP_SERVERS", raising=False)
    assert settings_from_args(args).zookeeper.connect == "cfg:2181"
    monkeypatch.setenv("ZK_BRIDGE_ZOOKEEPER", "env:2181")
    monkeypatch.setenv("ZK_BRIDGE_BOOTSTRAP_SERVERS", "env:9092")
    s = settings_from_args(args)
    assert (s.zookeeper.connect, s.kafka.bootstrap_servers) == ("env:2181", "env:9092")
    args.zookeeper = "flag:2181"
    assert settings_from_args(args).zookeeper.connect == "flag:2181"


# ---- [gateway] and registry.advertise -------------------------------------------------------


def test_broker_json_version_is_4_unless_2_is_asked(tmp_path):
    assert Settings().registry.broker_json_version == 4
    msg = _error(tmp_path, "[registry]\nbroker_json_version = 3\n")
    assert "registry.broker_json_version" in msg and "expected 2" in msg


def test_gateway_is_off_and_the_registry_advertises_the_brokers_by_default():
    s = load(environ={})
    assert not s.gateway.enabled and s.gateway.listen is None
    assert s.registry.advertise == "brokers"


def test_advertise_gateway_without_the_gateway_is_one_line_naming_both_keys(tmp_path):
    msg = _error(tmp_path, '[registry]\nadvertise = "gateway"\n')
    lines = msg.splitlines()
    assert len(lines) == 2 and lines[0].startswith("invalid configuration (")
    assert "registry.advertise = 'gateway'" in lines[1] and "gateway.enabled" in lines[1]
    assert "--gateway-listen" in lines[1]


def test_enabled_gateway_needs_a_listen_address(tmp_path):
    msg = _error(tmp_path, "[gateway]\nenabled = true\n")
    assert "gateway.enabled = true needs gateway.listen" in msg


def test_advertise_gateway_with_a_legacy_listener_is_refused(tmp_path):
    toml = (
        '[registry]\nadvertise = "gateway"\nlegacy_bootstrap_servers = "k1:9092"\n'
        '[gateway]\nenabled = true\nlisten = "0.0.0.0:9092"\n'
    )
    msg = _error(tmp_path, toml)
    assert "registry.legacy_bootstrap_servers" in msg and "registry.advertise" in msg


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ('[gateway]\nlisten = "nowhere"\n', "gateway.listen: expected HOST:PORT"),
        ('[gateway]\nlisten = "h:70000"\n', "outside 0-65535"),
        ('[gateway]\nadvertised_host = "h:9092x"\n', "gateway.advertised_host: expected a host"),
        ("[gateway]\nmax_request_bytes = 10\n", "1024 <= max_request_bytes <= 2147483647"),
        ("[gateway]\nidle_timeout_s = 0\n", "0 < idle_timeout_s <= 86400"),
        ('[registry]\nadvertise = "proxy"\n', "Input should be 'brokers' or 'gateway'"),
    ],
)
def test_bad_gateway_values(tmp_path, toml, expected):
    assert expected in _error(tmp_path, toml)


def test_gateway_from_the_file_and_port_zero(tmp_path):
    path = tmp_path / "b.toml"
    path.write_text(
        '[registry]\nadvertise = "gateway"\n'
        '[gateway]\nenabled = true\nlisten = "[::1]:0"\nadvertised_host = "gw.example.com"\n'
    )
    s = load(path, environ={})
    assert (s.gateway.listen, s.gateway.advertised_host) == ("[::1]:0", "gw.example.com")
    assert split_hostport(s.gateway.listen, min_port=0) == ("::1", 0)


def test_gateway_listen_flag_turns_it_on(tmp_path, monkeypatch):
    import argparse

    from bridge.cli import build_parser
    from bridge.commands import settings_from_args

    monkeypatch.setenv("ZK_BRIDGE__REGISTRY__ADVERTISE", "gateway")
    args = build_parser().parse_args(["run", "--gateway-listen", "127.0.0.1:0"])
    s = settings_from_args(args)
    assert s.gateway.enabled and s.gateway.listen == "127.0.0.1:0"
    assert s.registry.advertise == "gateway"
    # without the flag the same environment is refused, naming both keys
    with pytest.raises(ConfigError, match="registry.advertise = 'gateway' needs the gateway"):
        settings_from_args(argparse.Namespace(config=None))


def test_config_check_reports_the_cross_key_rule(tmp_path):
    path = tmp_path / "gw.toml"
    path.write_text('[registry]\nadvertise = "gateway"\n')
    out = _zk_bridge("config", "check", str(path), env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "registry.advertise = 'gateway' needs the gateway on" in out.stderr
    path.write_text(
        '[registry]\nadvertise = "gateway"\n[gateway]\nenabled = true\nlisten = "0.0.0.0:9092"\n'
    )
    ok = _zk_bridge("config", "check", str(path), "-v", env={"PATH": "/usr/bin:/bin"})
    assert ok.returncode == 0, ok.stderr
    assert '"listen": "0.0.0.0:9092"' in ok.stdout


def test_storm_spouts_from_the_environment_and_their_errors():
    spout = {"zk_root": "/storm", "spout_id": "s1", "topic": "clicks", "group": "clicks-spout"}
    env = {"ZK_BRIDGE__STORM__SPOUTS": json.dumps([spout])}
    got = load(None, environ=env).storm.spouts
    assert [s.model_dump() for s in got] == [spout]
    for bad, named in (
        ({**spout, "zk_root": "storm"}, "zkRoot must be an absolute path"),
        ({**spout, "spout_id": "a/b"}, "one non-empty path element"),
        ({**spout, "topic": "a b"}, "topic 'a b'"),
    ):
        with pytest.raises(ConfigError, match=named):
            load(None, {"storm": {"spouts": [bad]}})
    with pytest.raises(ConfigError, match="used by two spouts: clicks-spout"):
        load(None, {"storm": {"spouts": [spout, {**spout, "spout_id": "s2"}]}})
    with pytest.raises(ConfigError, match="storm.spouts are reconciled by the groups flow"):
        load(None, {"storm": {"spouts": [spout]}, "groups": {"enabled": False}})


def test_shares_refuse_what_is_not_shared_yet(tmp_path):
    """scale.mode = shares runs mixed groups (their proxies move with the share) but not
    storm spouts, the refusal naming the keys to change; the default (single) needs
    nothing."""
    path = tmp_path / "b.toml"
    path.write_text('[scale]\nmode = "shares"\n')
    assert load(path, environ={}).coexistence.enabled
    spout = {"zk_root": "/storm", "spout_id": "s1", "topic": "clicks", "group": "g"}
    with pytest.raises(ConfigError, match="storm.spouts are not shared"):
        load(path, {"storm": {"spouts": [spout]}}, environ={})
    assert load(path, environ={}).scale.mode == "shares"
    assert load(None, environ={}).scale.mode == "single"
