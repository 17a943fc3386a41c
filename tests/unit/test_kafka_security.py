"""Kafka security without servers: the SASL password file, the login probe against a fake
broker, and the dev stack's SASL listener settings."""

from __future__ import annotations

import json
import socket
import struct
import threading
from pathlib import Path

import pytest

from bridge.config import ConfigError, load
from bridge.kafka.sasl import sasl_refusal

SECRET = "pa55-w0rd-not-for-logs"


def _error(tmp_path: Path, toml: str) -> str:
    path = tmp_path / "bridge.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError) as err:
        load(path, environ={})
    return str(err.value)


# ---- kafka.sasl_password_file ------------------------------------------------------------


def test_password_file_is_read_with_its_trailing_newline_dropped(tmp_path):
    secret = tmp_path / "kafka-password"
    secret.write_text(SECRET + "\n")
    s = load(
        environ={
            "ZK_BRIDGE__KAFKA__SECURITY_PROTOCOL": "SASL_PLAINTEXT",
            "ZK_BRIDGE__KAFKA__SASL_MECHANISM": "PLAIN",
            "ZK_BRIDGE__KAFKA__SASL_USERNAME": "bridge",
            "ZK_BRIDGE__KAFKA__SASL_PASSWORD_FILE": str(secret),
        }
    )
    assert s.kafka.client_options()["sasl_plain_password"] == SECRET
    assert SECRET not in repr(s) and SECRET not in s.model_dump_json()


def test_missing_password_file_is_named(tmp_path):
    missing = tmp_path / "nope" / "kafka-password"
    msg = _error(tmp_path, f'[kafka]\nsasl_password_file = "{missing}"\n')
    assert "kafka.sasl_password_file" in msg
    assert f"SASL password file {missing} cannot be read: No such file or directory" in msg


def test_empty_password_file_and_both_sources_are_refused(tmp_path):
    empty = tmp_path / "empty"
    empty.write_text("\n")
    assert f"SASL password file {empty} is empty" in _error(
        tmp_path, f'[kafka]\nsasl_password_file = "{empty}"\n'
    )
    full = tmp_path / "full"
    full.write_text(SECRET)
    msg = _error(tmp_path, f'[kafka]\nsasl_password = "{SECRET}"\nsasl_password_file = "{full}"\n')
    assert "not both" in msg and SECRET not in msg


def test_a_password_file_gone_after_start_is_a_config_error_naming_it(tmp_path):
    secret = tmp_path / "kafka-password"
    secret.write_text(SECRET)
    s = load(
        environ={
            "ZK_BRIDGE__KAFKA__SASL_MECHANISM": "PLAIN",
            "ZK_BRIDGE__KAFKA__SASL_PASSWORD_FILE": str(secret),
        }
    )
    secret.unlink()
    with pytest.raises(ConfigError, match=f"SASL password file {secret} cannot be read"):
        s.kafka.client_options()


def test_legacy_bootstrap_servers_is_validated(tmp_path):
    msg = _error(tmp_path, '[registry]\nlegacy_bootstrap_servers = "k1:9092,k2"\n')
    assert "registry.legacy_bootstrap_servers" in msg and "'k2' is not HOST:PORT" in msg
    s = load(environ={"ZK_BRIDGE__REGISTRY__LEGACY_BOOTSTRAP_SERVERS": "k1:9092, k2:9092"})
    assert s.registry.legacy_bootstrap_servers == "k1:9092,k2:9092"


# ---- the login probe, against a fake broker ------------------------------------------------


def _fake_broker(handshake_error: int, auth_error: int, message: str) -> tuple[str, list]:
    """One connection: answers SaslHandshake v1, then SaslAuthenticate v0 once."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    seen: list[bytes] = []

    def frame(body: bytes) -> bytes:
        return struct.pack(">i", len(body) + 4) + struct.pack(">i", 0) + body

    def read(conn: socket.socket) -> bytes:
        (n,) = struct.unpack(">i", conn.recv(4, socket.MSG_WAITALL))
        return conn.recv(n, socket.MSG_WAITALL)

    def serve() -> None:
        conn, _ = srv.accept()
        with conn, srv:
            seen.append(read(conn))
            mech = b"PLAIN"
            conn.sendall(frame(struct.pack(">hih", handshake_error, 1, len(mech)) + mech))
            if handshake_error:
                return
            seen.append(read(conn))
            text = message.encode()
            conn.sendall(frame(struct.pack(">hh", auth_error, len(text)) + text + b"\0\0\0\0"))

    threading.Thread(target=serve, daemon=True).start()
    return f"127.0.0.1:{srv.getsockname()[1]}", seen


def _options(server: str) -> dict:
    return {
        "bootstrap_servers": [server],
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "bridge",
        "sasl_plain_password": SECRET,
    }


def test_probe_reports_the_refusal_naming_the_server_never_the_password():
    server, seen = _fake_broker(0, 58, f"Authentication failed: bad password {SECRET}")
    refusal = sasl_refusal(_options(server), timeout_s=5)
    assert refusal is not None
    assert f"Kafka at {server} rejected the SASL PLAIN login of user 'bridge'" in refusal
    assert "Authentication failed" in refusal and SECRET not in refusal
    assert seen[1].endswith(b"bridge\0bridge\0" + SECRET.encode())  # a real PLAIN token


def test_probe_names_a_listener_that_speaks_no_sasl():
    server, _ = _fake_broker(34, 0, "")
    refusal = sasl_refusal(_options(server), timeout_s=5)
    assert refusal and f"Kafka at {server} does not expect a SASL login" in refusal


def test_probe_accepting_server_or_no_answer_means_no_verdict():
    server, _ = _fake_broker(0, 0, "")
    assert sasl_refusal(_options(server), timeout_s=5) is None
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    assert sasl_refusal(_options(f"127.0.0.1:{port}"), timeout_s=1) is None
    assert sasl_refusal({**_options(server), "security_protocol": "PLAINTEXT"}) is None


# ---- the dev stack's SASL listener --------------------------------------------------------


def test_devstack_brokers_get_a_sasl_plain_listener_beside_plaintext(tmp_path):
    from bridge.devstack import Devstack, Ports

    stack = Devstack(tmp_path, Ports.free())
    (tmp_path / "kafka-2").mkdir()
    props = stack._kafka_config(2).read_text()
    p = stack.state.ports
    assert len(set(p.brokers + p.controllers + p.sasl_brokers + (p.zookeeper,))) == 10
    assert (
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{p.brokers[1]},"
        f"SASL_PLAINTEXT://127.0.0.1:{p.sasl_brokers[1]}\n"
    ) in props
    assert "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN\n" in props
    assert f'user_bridge="{stack.sasl_password}";' in props
    assert stack.sasl_bootstrap_servers.split(",")[1] == f"127.0.0.1:{p.sasl_brokers[1]}"
    assert len(stack.sasl_password) >= 20


def test_devstack_state_keeps_the_password_private_and_upgrades_old_state(tmp_path):
    from bridge.devstack import Devstack

    stack = Devstack(tmp_path)
    stack.state.save(stack.state_file)
    assert stack.state_file.stat().st_mode & 0o077 == 0
    assert Devstack(tmp_path).sasl_password == stack.sasl_password
    old = json.loads(stack.state_file.read_text())
    del old["sasl_password"], old["ports"]["sasl_brokers"]
    stack.state_file.write_text(json.dumps(old))
    upgraded = Devstack(tmp_path)
    assert upgraded.state.ports.sasl_brokers == (29292, 29293, 29294)
    assert upgraded.sasl_password and upgraded.sasl_password != stack.sasl_password
