"""A classic group member driven one request at a time (JoinGroup, then SyncGroup when the
test says), to hold a real group in CompletingRebalance as long as a test needs."""

from __future__ import annotations

from kafka import KafkaAdminClient
from kafka.errors import for_code
from kafka.protocol.consumer import JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)


class RawMember:
    """One static member (``instance``) of ``group`` subscribed to ``topic``."""

    def __init__(self, admin: KafkaAdminClient, group: str, topic: str, instance: str) -> None:
        self.admin, self.group, self.topic, self.instance = admin, group, topic, instance
        self.member_id = ""
        self.generation = -1
        self.node: int | None = None

    def _send(self, request):
        async def send():
            if self.node is None:
                self.node = await self.admin._find_coordinator_id(self.group)
            return await self.admin._manager.send(request, node_id=self.node)

        response = self.admin._manager.run(send)
        if response.error_code:
            raise for_code(response.error_code)(f"{type(request).__name__} of {self.group}")
        return response

    def join(self) -> None:
        """JoinGroup as the only member: the group is CompletingRebalance once it answers,
        until ``sync``."""
        subscription = ConsumerProtocolSubscription(
            version=0, topics=[self.topic], user_data=b"", owned_partitions=[]
        )
        response = self._send(
            JoinGroupRequest(
                group_id=self.group,
                session_timeout_ms=30000,
                rebalance_timeout_ms=30000,
                member_id="",
                group_instance_id=self.instance,
                protocol_type="consumer",
                protocols=[("range", subscription)],
                max_version=7,
            )
        )
        self.member_id, self.generation = response.member_id, response.generation_id

    def sync(self, partitions: list[int]) -> None:
        """The leader's SyncGroup, giving itself ``partitions``: the group turns Stable."""
        assignment = ConsumerProtocolAssignment(0, [(self.topic, partitions)], b"").encode()
        self._send(
            SyncGroupRequest(
                group_id=self.group,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=self.instance,
                protocol_type="consumer",
                protocol_name="range",
                assignments=[(self.member_id, assignment)],
                max_version=5,
            )
        )

    def leave(self) -> None:
        self._send(
            LeaveGroupRequest(
                group_id=self.group,
                members=[
                    LeaveGroupRequest.MemberIdentity(
                        member_id=self.member_id, group_instance_id=self.instance
                    )
                ],
                min_version=3,
            )
        )
