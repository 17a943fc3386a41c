"""Reads Kafka's classic consumer groups into ``GroupView``s (the I/O edge of F2/F3).

Group APIs are the source of truth: ListGroups, DescribeGroups (members, their
subscriptions and assignments) and OffsetFetch, batched over many groups per coordinator
where the broker allows it (OffsetFetch v8+).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence

from kafka import KafkaAdminClient
from kafka.errors import KafkaError

from bridge.kafka import coordinators
from bridge.kafka.calls import KafkaCallTimeout, admin_call, retrying
from bridge.kafka.coordinators import moved
from bridge.kafka.views import GroupView, MemberView
from zkpaths import TopicPartition

log = logging.getLogger(__name__)


def _member(m: dict) -> MemberView:
    meta, assign = m.get("member_metadata"), m.get("member_assignment")
    topics = tuple(meta["topics"]) if isinstance(meta, dict) else None
    assignment = None
    if isinstance(assign, dict):
        assignment = {
            a["topic"]: tuple(sorted(a["partitions"])) for a in assign["assigned_partitions"]
        }
    elif not assign:
        assignment = {}  # joined but not yet synced: owns nothing
    return MemberView(
        member_id=m["member_id"],
        client_id=m.get("client_id") or "",
        client_host=m.get("client_host") or "",
        topics=topics,
        assignment=assignment,
        group_instance_id=m.get("group_instance_id") or None,
    )


class GroupFilter:
    """Include/exclude regexes (full match), as operators configure them."""

    def __init__(self, include: Sequence[str] = (".*",), exclude: Sequence[str] = ()) -> None:
        self.include = [re.compile(p) for p in include]
        self.exclude = [re.compile(p) for p in exclude]

    def __call__(self, group_id: str) -> bool:
        return any(p.fullmatch(group_id) for p in self.include) and not any(
            p.fullmatch(group_id) for p in self.exclude
        )


def list_group_ids(admin: KafkaAdminClient) -> dict[str, str]:
    """Every group the cluster knows, with its protocol type."""
    groups = admin_call(admin, "ListGroups", admin.list_groups)
    return {g["group_id"]: g.get("protocol_type") or "" for g in groups}


def read_offsets(admin: KafkaAdminClient, groups: list[str]) -> dict[str, dict | str]:
    """Committed offsets of many groups, partition -> offset, in one OffsetFetch
    per coordinator; a group whose fetch fails maps to the error text instead."""
    raw = _offsets(admin, groups)
    return {g: off if isinstance(off, str) else _committed(off) for g, off in raw.items()}


def _committed(fetched: dict) -> dict[TopicPartition, int]:
    """OffsetFetch's answer for one group without the partitions that have no commit."""
    return {
        TopicPartition(tp.topic, tp.partition): om.offset
        for tp, om in fetched.items()
        if om is not None and om.offset is not None and om.offset >= 0
    }


def fetch_offsets(admin: KafkaAdminClient, request: dict[str, list | None]) -> dict[str, dict]:
    """kafka-python's ``list_group_offsets(request)``, bounded, and retried (forgetting the
    cached coordinator) while the answer says a group's coordinator moved."""
    for attempt in retrying(admin, request):
        with attempt:
            return admin_call(admin, "OffsetFetch", admin.list_group_offsets, request)
    raise AssertionError("unreachable: tenacity reraises the last error")


def group_offsets(admin: KafkaAdminClient, group: str) -> dict[TopicPartition, int]:
    """One group's committed offsets in Kafka; partitions without a commit are left out."""
    return _committed(fetch_offsets(admin, {group: None}).get(group, {}))


def _offsets(admin: KafkaAdminClient, groups: list[str]) -> dict[str, dict | str]:
    """Committed offsets of many groups; a group whose fetch fails maps to the error.

    When the batched fetch fails, each group is asked on its own, so one bad group does not
    blind the others; not when Kafka did not answer at all (that would cost one bound per
    group in a tick)."""
    if not groups:
        return {}
    try:
        return fetch_offsets(admin, dict.fromkeys(groups))
    except KafkaCallTimeout:
        raise
    except KafkaError:
        pass
    out: dict[str, dict | str] = {}
    for g in groups:
        try:
            out[g] = fetch_offsets(admin, {g: None})[g]
        except KafkaCallTimeout:
            raise
        except KafkaError as exc:
            out[g] = f"{type(exc).__name__}: {exc}"
    return out


def describe_group(admin: KafkaAdminClient, group: str) -> dict:
    """DescribeGroups of one group as kafka-python answers it (``error`` set when the
    coordinator refused), bounded and retried while its coordinator moves."""
    for attempt in retrying(admin, [group]):
        with attempt:
            described = admin_call(admin, "DescribeGroups", admin.describe_groups, [group])
    return described.get(group) or {}


def _not_found(error: object) -> bool:
    """A describe error that says only that the group does not exist."""
    return error is not None and "GroupIdNotFound" in str(error)


def read_groups(admin: KafkaAdminClient, group_ids: Iterable[str]) -> dict[str, GroupView]:
    """Describe the given groups and fetch their offsets."""
    ids = sorted(group_ids)
    if not ids:
        return {}
    for attempt in retrying(admin, ids):
        with attempt:
            described = admin_call(admin, "DescribeGroups", admin.describe_groups, ids)
    coordinators.forget(
        admin, [g for g, d in described.items() if d.get("error") and moved(d["error"])]
    )
    offsets = _offsets(admin, ids)
    views: dict[str, GroupView] = {}
    for g in ids:
        d = described.get(g)
        if d is not None and _not_found(d.get("error")):
            # Kafka 4's coordinator answers GROUP_ID_NOT_FOUND where 3.x said Dead
            d = {**d, "error": None, "group_state": "Dead", "members": []}
        off = offsets.get(g, {})
        error = None
        if d is None or d.get("error"):
            error = f"describe failed: {d.get('error') if d else 'no answer'}"
        elif isinstance(off, str):
            error = f"offset fetch failed: {off}"
        if error:
            views[g] = GroupView(g, "Unknown", "", None, error=error)
            continue
        views[g] = GroupView(
            group_id=g,
            state=d.get("group_state") or "",
            protocol_type=d.get("protocol_type") or "",
            protocol=d.get("protocol_data") or None,
            members=tuple(_member(m) for m in d.get("members", [])),
            offsets=_committed(off),
        )
    return views
