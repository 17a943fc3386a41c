"""The bridge against a SASL_PLAINTEXT (SASL/PLAIN) listener of the real stack.

Every broker of the stack listens twice: PLAINTEXT (what old consumers use) and
SASL_PLAINTEXT with one user whose password the stack generated. The bridge connects over
SASL; the registry still hands old consumers the PLAINTEXT endpoints, read through
``registry.legacy_bootstrap_servers``; the password never shows in what the bridge prints.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import KafkaError
from kazoo.exceptions import NoNodeError

from bridge.kafka.sasl import sasl_refusal
from tests.conftest import ROOT, wait_for
from tests.integration.test_group_mirror import PolledConsumer, converged

pytestmark = pytest.mark.integration


def sasl_client(stack, password: str | None = None) -> dict:
    """kafka-python options for the stack's SASL_PLAINTEXT listener."""
    return {
        "bootstrap_servers": stack.sasl_bootstrap_servers.split(","),
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": stack.sasl_username,
        "sasl_plain_password": stack.sasl_password if password is None else password,
    }


def bridge_env(stack, password: str | None = None, legacy: bool = True) -> dict:
    """The SASL settings as an operator passes them: environment variables."""
    env = {
        "ZK_BRIDGE__KAFKA__SECURITY_PROTOCOL": "SASL_PLAINTEXT",
        "ZK_BRIDGE__KAFKA__SASL_MECHANISM": "PLAIN",
        "ZK_BRIDGE__KAFKA__SASL_USERNAME": stack.sasl_username,
        "ZK_BRIDGE__KAFKA__SASL_PASSWORD": stack.sasl_password if password is None else password,
    }
    if legacy:
        env["ZK_BRIDGE__REGISTRY__LEGACY_BOOTSTRAP_SERVERS"] = stack.bootstrap_servers
    return env


def registrations(zk) -> dict[int, dict]:
    try:
        return {
            int(b): json.loads(zk.get(f"/brokers/ids/{b}")[0])
            for b in zk.get_children("/brokers/ids")
        }
    except NoNodeError:
        return {}


def test_bridge_over_sasl_mirrors_registry_with_plaintext_endpoints_and_groups(
    stack, zk, admin, start_bridge, topic_name
):
    topic = topic_name("s")
    group = f"{topic}-g"
    admin.create_topics([NewTopic(topic, 3, 2)])
    producer = KafkaProducer(**sasl_client(stack))
    for i in range(30):
        producer.send(topic, f"v{i}".encode(), partition=i % 3)
    producer.flush()
    producer.close()

    bridge = start_bridge(bootstrap=stack.sasl_bootstrap_servers, env=bridge_env(stack))
    consumer = PolledConsumer(
        stack.bootstrap_servers, group, [topic], "sasl-member", **sasl_client(stack)
    )
    try:
        # the registry: every broker, with its PLAINTEXT endpoint only
        def plaintext_registry():
            regs = registrations(zk)
            return regs if set(regs) == {1, 2, 3} else None

        regs = wait_for(plaintext_registry, 60, 0.2, "three broker registrations")
        for bid, reg in regs.items():
            port = stack.broker_port(bid)
            assert reg["endpoints"] == [f"PLAINTEXT://127.0.0.1:{port}"], reg
            assert (reg["host"], reg["port"]) == ("127.0.0.1", port)
            assert reg["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
        wait_for(lambda: zk.exists(f"/brokers/topics/{topic}/partitions/2/state"), 30, 0.1)

        # what an old consumer does with it: talk PLAINTEXT to a registered endpoint
        reg = regs[1]
        plain = KafkaAdminClient(bootstrap_servers=[f"{reg['host']}:{reg['port']}"])
        try:
            assert {b["broker_id"] for b in plain.describe_cluster()["brokers"]} == {1, 2, 3}
        finally:
            plain.close()

        # the group, consumed over SASL, is mirrored: member, owners, committed offsets
        k = converged(
            zk,
            admin,
            group,
            lambda k: len(k["members"]) == 1 and sum(k["offsets"].values()) == 30,
        )
        assert len(k["owners"]) == 3
    finally:
        consumer.close()
    assert bridge.proc.poll() is None, bridge.text()
    out = bridge.text()
    assert "bridge started" in out and "security_protocol=SASL_PLAINTEXT" in out
    assert f"legacy_bootstrap_servers={stack.bootstrap_servers}" in out
    assert "old ZooKeeper consumers cannot use" not in out
    assert stack.sasl_password not in out


def test_without_a_legacy_listener_the_bridge_warns_and_publishes_sasl_endpoints(
    stack, zk, start_bridge
):
    bridge = start_bridge(
        bootstrap=stack.sasl_bootstrap_servers, env=bridge_env(stack, legacy=False)
    )
    regs = wait_for(
        lambda: (r := registrations(zk)) and set(r) == {1, 2, 3} and r, 60, 0.2, "registrations"
    )
    for bid, reg in regs.items():
        assert reg["endpoints"] == [f"SASL_PLAINTEXT://127.0.0.1:{stack.sasl_port(bid)}"]
        assert (reg["host"], reg["port"]) == (None, -1)  # nothing an old consumer can use
    out = bridge.text()
    assert "old ZooKeeper consumers cannot use" in out
    assert "registry.legacy_bootstrap_servers" in out
    assert stack.sasl_password not in out


def test_wrong_password_is_a_clear_error_naming_the_server_not_the_password(
    stack, zk, start_bridge
):
    wrong = "not-" + stack.sasl_password
    bridge = start_bridge(
        bootstrap=stack.sasl_bootstrap_servers,
        env={**bridge_env(stack, password=wrong), "ZK_BRIDGE__KAFKA__REQUEST_TIMEOUT_MS": "3000"},
    )
    try:
        code = bridge.proc.wait(90)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"bridge still running:\n{bridge.text()}") from None
    out = bridge.text()
    assert code == 3, out
    servers = stack.sasl_bootstrap_servers.split(",")
    assert any(
        f"Kafka at {s} rejected the SASL PLAIN login of user 'bridge': "
        "Authentication failed: Invalid username or password" in out
        for s in servers
    ), out
    assert "did not answer after" not in out, "an authentication failure is not retried"
    assert wrong not in out and stack.sasl_password not in out
    assert not zk.exists("/brokers/ids")


def test_the_listener_enforces_sasl(stack):
    # the right credentials: the listener answers with its own (SASL) endpoints
    good = KafkaAdminClient(**sasl_client(stack))
    try:
        ports = {b["port"] for b in good.describe_cluster()["brokers"]}
    finally:
        good.close()
    assert ports == set(stack.state.ports.sasl_brokers)

    # a wrong password, and no SASL at all, are refused
    with pytest.raises(KafkaError):
        KafkaAdminClient(bootstrap_timeout_ms=3000, **sasl_client(stack, password="wrong"))
    with pytest.raises(KafkaError):
        KafkaAdminClient(
            bootstrap_servers=stack.sasl_bootstrap_servers.split(","), bootstrap_timeout_ms=3000
        )
    # ... and the broker says why, which is what the bridge reports
    refusal = sasl_refusal(sasl_client(stack, password="wrong"))
    assert refusal and "Invalid username or password" in refusal and "wrong" not in refusal
    assert sasl_refusal(sasl_client(stack)) is None


def test_devstack_status_prints_the_sasl_listener(stack):
    def status(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "bridge.cli", "devstack", "status", "--dir", str(stack.dir)]
            + list(args),
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
        )

    env = status("--output", "env")
    assert env.returncode == 0, env.stderr
    assert f"SASL_BOOTSTRAP_SERVERS={stack.sasl_bootstrap_servers}\n" in env.stdout
    assert f"SASL_USERNAME=bridge\nSASL_PASSWORD={stack.sasl_password}\n" in env.stdout
    table = status()
    assert f"sasl bootstrap.servers={stack.sasl_bootstrap_servers}" in table.stdout
    assert f"port {stack.broker_port(1)}/{stack.sasl_port(1)}" in table.stdout
    procs = json.loads(status("--output", "json").stdout)["processes"]
    assert all(p["healthy"] for p in procs.values())
    assert procs["kafka-2"]["sasl_port"] == stack.sasl_port(2)
