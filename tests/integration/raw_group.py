"""A group member of another protocol type (e.g. Kafka Connect's ``connect``), for tests.

Built on kafka-python's ``BaseCoordinator``: a real JoinGroup/SyncGroup/Heartbeat member.
"""

from __future__ import annotations

from collections.abc import Callable

from kafka.coordinator.base import BaseCoordinator
from kafka.net.compat import KafkaNetClient


class _Member(BaseCoordinator):
    def __init__(self, client, protocol_type: str, **configs) -> None:
        super().__init__(client, **configs)
        self._protocol_type = protocol_type

    def protocol_type(self):
        return self._protocol_type

    def group_protocols(self):
        return [("default", b"\x00\x01opaque")]

    def _perform_assignment(self, leader_id, protocol, members):
        return {m.member_id: b"" for m in members}


def join_raw_group(bootstrap: str, group: str, protocol_type: str) -> Callable[[], None]:
    """Join ``group`` as a member of ``protocol_type``; returns a function that leaves it."""
    client = KafkaNetClient(bootstrap_servers=bootstrap.split(","), client_id=f"{group}-raw")
    client._manager._net.start()
    client._manager.bootstrap(10000)
    member = _Member(
        client,
        protocol_type,
        group_id=group,
        api_version=client._manager.broker_version,
        session_timeout_ms=10000,
        heartbeat_interval_ms=1000,
    )
    if not member.ensure_active_group(timeout_ms=30000):
        raise RuntimeError(f"could not join {group} as a {protocol_type} member")

    def leave() -> None:
        member.close(timeout_ms=5000)
        client.close()

    return leave
