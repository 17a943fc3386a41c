"""Reads next-generation consumer groups (KIP-848, group type ``consumer``) into
``GroupView``s, beside the classic groups ``groups.py`` reads.

DescribeGroups answers GROUP_ID_NOT_FOUND ("is not a classic group") for these groups;
their coordinator describes them with ConsumerGroupDescribe (API key 69, ``messages.py``):
each member's *current* assignment (what it owns now, including partitions it has still
to revoke: Kafka 4.4.0's ConsumerGroupMember.asConsumerGroupDescribeMember) and its
*target* assignment (what the broker wants it to own), member, group and assignment
epochs and the server-side assignor.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from kafka import KafkaAdminClient
from kafka.errors import for_code

from bridge.kafka import coordinators
from bridge.kafka.calls import admin_call, retrying
from bridge.kafka.messages import MEMBER_TYPES, ConsumerGroupDescribeRequest
from bridge.kafka.views import MemberView

#: ConsumerGroupDescribe's answer for a group the coordinator does not have (as a
#: ``consumer`` group: it may be classic, or gone)
GROUP_ID_NOT_FOUND = 69


def _partitions(assignment: object) -> dict[str, tuple[int, ...]]:
    """An ``Assignment`` struct as topic -> sorted partitions."""
    out: dict[str, list[int]] = {}
    for tp in getattr(assignment, "topic_partitions", None) or ():
        out.setdefault(tp.topic_name, []).extend(tp.partitions)
    return {t: tuple(sorted(ps)) for t, ps in out.items()}


def member_view(m: object) -> MemberView:
    """One ConsumerGroupDescribe member as the mirror reads members."""
    return MemberView(
        member_id=m.member_id,
        client_id=m.client_id or "",
        client_host=m.client_host or "",
        topics=tuple(m.subscribed_topic_names or ()),
        assignment=_partitions(m.assignment),
        group_instance_id=m.instance_id or None,
        target_assignment=_partitions(m.target_assignment),
        member_epoch=m.member_epoch,
        topic_regex=m.subscribed_topic_regex or None,
        member_type=MEMBER_TYPES.get(getattr(m, "member_type", -1), "unknown"),
    )


async def _describe(admin: KafkaAdminClient, group_ids: Sequence[str]) -> dict[str, object]:
    """One ConsumerGroupDescribe per coordinator; the raw ``DescribedGroup`` per group."""
    by_node: dict[int, list[str]] = defaultdict(list)
    for group, node in (await admin._find_coordinator_ids(list(group_ids))).items():
        by_node[node].append(group)
    described: dict[str, object] = {}
    for node, groups in by_node.items():
        request = ConsumerGroupDescribeRequest(
            group_ids=groups, include_authorized_operations=False
        )
        response = await admin._manager.send(request, node_id=node)
        described.update({g.group_id: g for g in response.groups})
    return described


def describe_consumer_groups(
    admin: KafkaAdminClient, group_ids: Sequence[str], attempts: int = 3
) -> dict[str, object]:
    """ConsumerGroupDescribe of ``group_ids``, bounded and retried (``calls.retrying``);
    groups answered NOT_COORDINATOR and the like have their cached coordinator forgotten
    and are asked again, up to ``attempts`` times, then keep their error."""
    pending = sorted(group_ids)
    described: dict[str, object] = {}
    for _ in range(attempts):
        if not pending:
            break
        for attempt in retrying(admin, pending):
            with attempt:
                answer = admin_call(
                    admin, "ConsumerGroupDescribe", admin._manager.run, _describe, admin, pending
                )
        described.update(answer)
        pending = [g for g, d in answer.items() if d.error_code and _moved(d.error_code)]
        coordinators.forget(admin, pending)
    return described


def _moved(code: int) -> bool:
    return coordinators.moved(for_code(code).__name__)


def describe_error(d: object) -> str | None:
    """The group's error as text, None when it was described (or simply does not exist)."""
    code = getattr(d, "error_code", 0)
    if not code or code == GROUP_ID_NOT_FOUND:
        return None
    return f"{for_code(code).__name__}: {getattr(d, 'error_message', None) or ''}".rstrip(": ")
