"""The legacy gateway's ``broker_port_base``: a port per broker id besides the shared one.

kafka-node 3.x keys brokers by address, so it needs every broker id at an address of its own
(tests/e2e/test_kafka_node.py runs the real client). Here: each broker id gets its own port,
published by ``endpoint_for`` and in Metadata v0 answered on any of the ports; every port
serves every request. Negative control: without the setting all ids share one port."""

from __future__ import annotations

import pytest
from kafka.protocol.metadata import MetadataRequest

from bridge.config import KafkaSettings
from bridge.gateway.server import Gateway
from tests.conftest import wait_for
from tests.integration.old_client import OldClient

pytestmark = pytest.mark.integration


def _gateway(stack, zk, **kw) -> Gateway:
    gw = Gateway(
        "127.0.0.1:0", KafkaSettings(bootstrap_servers=stack.bootstrap_servers), zookeeper=zk, **kw
    )
    gw.start()
    return gw


def _endpoints(gw: Gateway, ids: list[int]) -> dict[int, tuple[str, int]] | None:
    try:
        return {b: gw.endpoint_for(b) for b in ids}
    except LookupError:
        return None


def _metadata_brokers(address: tuple[str, int]) -> dict[int, tuple[str, int]]:
    c = OldClient(address)
    try:
        answer = c.send(MetadataRequest[0](topics=[]))
    finally:
        c.close()
    return {b.node_id: (b.host, b.port) for b in answer.brokers}


def test_every_broker_id_gets_a_port_of_its_own(stack, zk, admin) -> None:
    ids = sorted(b["broker_id"] for b in admin.describe_cluster()["brokers"])
    gw = _gateway(stack, zk, broker_port_base=0)
    try:
        ends = wait_for(lambda: _endpoints(gw, ids), 30, 0.1, "a port per broker id")
        ports = {port for _, port in ends.values()}
        assert len(ports) == len(ids) and gw.address[1] not in ports
        for address in [gw.address, *ends.values()]:  # each port answers, alike
            assert _metadata_brokers(address) == ends
    finally:
        gw.stop()


def test_without_it_every_broker_id_shares_the_one_port(stack, zk, admin) -> None:
    ids = sorted(b["broker_id"] for b in admin.describe_cluster()["brokers"])
    gw = _gateway(stack, zk)
    try:
        assert {gw.endpoint_for(b) for b in ids} == {gw.address}
        assert set(_metadata_brokers(gw.address).values()) == {gw.address}
    finally:
        gw.stop()
