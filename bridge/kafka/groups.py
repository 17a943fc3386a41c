"""Reads Kafka's consumer groups into ``GroupView``s (the I/O edge of F2/F3).

Group APIs are the source of truth: ListGroups (v5 says each group's type), DescribeGroups
for classic groups and ConsumerGroupDescribe for next-generation ones (KIP-848,
``consumer_groups.py``), and OffsetFetch, batched over many groups per coordinator where
the broker allows it (OffsetFetch v8+).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import replace
from functools import lru_cache

from kafka import KafkaAdminClient
from kafka.errors import KafkaError

from bridge.kafka import coordinators
from bridge.kafka.calls import KafkaCallTimeout, admin_call, retrying
from bridge.kafka.consumer_groups import (
    GROUP_ID_NOT_FOUND,
    describe_consumer_groups,
    describe_error,
    member_view,
)
from bridge.kafka.coordinators import moved
from bridge.kafka.views import CLASSIC, CONSUMER, GroupView, ListedGroup, MemberView
from zkpaths import TopicPartition

log = logging.getLogger(__name__)

#: groups per DescribeGroups and per OffsetFetch call of a full read: each call is bounded
#: (``kafka.request_timeout_ms``), and one OffsetFetch of 10,000 groups x 100 partitions
#: was not answered (and parsed) within it on a loaded 2-core machine, so every full read
#: failed and was tried again, tick after tick, for five minutes
CHUNK_GROUPS = 500

#: the thread that fetches a read's offsets while the caller describes its groups (each
#: call bounded on its own: ``bridge.kafka.calls``)
_FETCHER = ThreadPoolExecutor(1, thread_name_prefix="kafka-offsets")


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
        #: each group's answer: the flow asks about every group each tick (10,000 regex
        #: matches a tick, 3 % of a cold start's main thread at fleet size)
        self._seen: dict[str, bool] = {}

    def __call__(self, group_id: str) -> bool:
        seen = self._seen.get(group_id)
        if seen is None:
            if len(self._seen) >= 1_000_000:
                self._seen.clear()  # bounded: groups come and go over a long run
            seen = self._seen[group_id] = any(
                p.fullmatch(group_id) for p in self.include
            ) and not any(p.fullmatch(group_id) for p in self.exclude)
        return seen


def list_groups(
    admin: KafkaAdminClient, types: Sequence[str] | None = None
) -> dict[str, ListedGroup]:
    """Every group the cluster knows with its protocol type and group type (ListGroups v5;
    older brokers know classic groups only); ``types`` asks the brokers for those group
    types only (v5's TypesFilter)."""
    call = admin.list_groups
    groups = admin_call(admin, "ListGroups", call, None, None, list(types) if types else None)
    return {
        g["group_id"]: ListedGroup(
            protocol_type=g.get("protocol_type") or "",
            group_type=(g.get("group_type") or CLASSIC).lower(),
            state=g.get("group_state"),
        )
        for g in groups
    }


def list_group_ids(admin: KafkaAdminClient) -> dict[str, str]:
    """Every group the cluster knows, with its protocol type."""
    return {g: listed.protocol_type for g, listed in list_groups(admin).items()}


def read_offsets(admin: KafkaAdminClient, groups: list[str]) -> dict[str, dict | str]:
    """Committed offsets of many groups, partition -> offset, in one OffsetFetch
    per coordinator; a group whose fetch fails maps to the error text instead."""
    raw = _offsets(admin, groups)
    return {g: off if isinstance(off, str) else _committed(off) for g, off in raw.items()}


@lru_cache(maxsize=1 << 20)
def _partition(topic: str, partition: int) -> TopicPartition:
    """One key object per partition, shared by every group's offsets: at 10,000 groups
    committing to one topic of 100 partitions, 100 objects held instead of a million."""
    return TopicPartition(topic, partition)


def _committed(fetched: dict) -> dict[TopicPartition, int]:
    """OffsetFetch's answer for one group without the partitions that have no commit."""
    return {
        _partition(tp.topic, tp.partition): om.offset
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
    if len(groups) > CHUNK_GROUPS:
        out: dict[str, dict | str] = {}
        for i in range(0, len(groups), CHUNK_GROUPS):
            out.update(_offsets(admin, groups[i : i + CHUNK_GROUPS]))
        return out
    try:
        return fetch_offsets(admin, dict.fromkeys(groups))
    except KafkaCallTimeout:
        raise
    except KafkaError:
        pass
    out = {}
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


def _not_classic(error: object) -> bool:
    """DescribeGroups' answer for a group of another type (Kafka 4: GROUP_ID_NOT_FOUND)."""
    return _not_found(error) and "not a classic group" in str(error)


def read_groups(
    admin: KafkaAdminClient,
    group_ids: Iterable[str],
    types: Mapping[str, str] | None = None,
) -> dict[str, GroupView]:
    """Describe the given groups (``describe_groups``) and fetch their offsets."""
    ids = sorted(group_ids)
    if not ids:
        return {}
    # the offsets fetched while the groups are described: a page's two round trips per
    # coordinator, one after the other, were most of a cold start's wait for Kafka. Either
    # may come first; a group deleted or created between them is read again (its records)
    fetching = _FETCHER.submit(_offsets, admin, ids)
    described: dict[str, GroupView] = {}
    try:
        for i in range(0, len(ids), CHUNK_GROUPS):
            described.update(describe_groups(admin, ids[i : i + CHUNK_GROUPS], types))
    except BaseException:
        wait([fetching])  # bounded; no call of this read outlives it
        raise
    offsets = fetching.result()
    views: dict[str, GroupView] = {}
    for g, view in described.items():
        off = offsets.get(g, {})
        if view.error is None and isinstance(off, str):
            view = GroupView(g, "Unknown", "", None, error=f"offset fetch failed: {off}")
        elif view.error is None:
            view = replace(view, offsets=_committed(off))
        views[g] = view
    return views


def describe_groups(
    admin: KafkaAdminClient,
    group_ids: Iterable[str],
    types: Mapping[str, str] | None = None,
) -> dict[str, GroupView]:
    """Describe the given groups (no offsets), each with the API of its type (``types``:
    group -> ListGroups' group type, classic when absent). A group that changed type since
    it was listed (a consumer group that lost its last next-generation member, a classic
    one a next-generation member joined), or whose type was not given, is described again
    with the other API, so it does not read as Dead."""
    ids = sorted(group_ids)
    types = types or {}
    typed_consumer = {g for g in ids if types.get(g) == CONSUMER}
    consumer = describe_consumer_groups(admin, sorted(typed_consumer)) if typed_consumer else {}
    # listed as consumer groups, but the coordinator has no such consumer group (any more)
    classic = [g for g in ids if g not in consumer or consumer[g].error_code == GROUP_ID_NOT_FOUND]
    described = _describe_classic(admin, classic) if classic else {}
    not_classic = [g for g, d in described.items() if _not_classic(d.get("error"))]
    again = [g for g in not_classic if g not in typed_consumer]
    if again:
        consumer.update(describe_consumer_groups(admin, again))
    views = {}
    for g in ids:
        use_consumer = g in consumer and (g not in classic or g in not_classic)
        views[g] = _consumer_view(g, consumer[g]) if use_consumer else _classic_view(g, described)
    return views


def _describe_classic(admin: KafkaAdminClient, groups: list[str]) -> dict[str, dict]:
    """DescribeGroups, bounded and retried; coordinators that moved are forgotten."""
    described: dict[str, dict] = {}
    try:
        for attempt in retrying(admin, groups):
            with attempt:
                described = admin_call(admin, "DescribeGroups", admin.describe_groups, groups)
    except ValueError as exc:
        return _describe_apart(admin, groups, exc)
    coordinators.forget(
        admin, [g for g, d in described.items() if d.get("error") and moved(d["error"])]
    )
    return described


def _describe_apart(admin: KafkaAdminClient, groups: list[str], exc: ValueError) -> dict:
    """DescribeGroups whose answer kafka-python could not decode: it decodes every
    member's metadata as the consumer protocol's, and a Connect or Schema Registry group's
    is its own ("Buffer underrun decoding string"), failing the whole call. Groups whose
    protocol type ListGroups says is not the consumer protocol are answered from the
    listing (no members: they are never mirrored); the others are described one by one."""
    log.debug("DescribeGroups answer undecodable (%s): described apart", exc)
    listed = list_groups(admin)
    out: dict[str, dict] = {}
    for g in groups:
        kind = listed[g].protocol_type if g in listed else None
        if kind not in (None, "consumer", ""):
            out[g] = {"error": None, "group_state": listed[g].state or "", "members": []}
            out[g]["protocol_type"] = kind
            continue
        if len(groups) > 1:
            out.update(_describe_classic(admin, [g]))
        out.setdefault(g, {"error": f"answer not decodable: {exc}"})
    return out


def _classic_view(g: str, described: Mapping[str, dict]) -> GroupView:
    d = described.get(g)
    if d is not None and _not_found(d.get("error")):
        # Kafka 4's coordinator answers GROUP_ID_NOT_FOUND where 3.x said Dead
        d = {**d, "error": None, "group_state": "Dead", "members": []}
    if d is None or d.get("error"):
        return GroupView(
            g, "Unknown", "", None, error=f"describe failed: {d.get('error') if d else 'no answer'}"
        )
    return GroupView(
        group_id=g,
        state=d.get("group_state") or "",
        protocol_type=d.get("protocol_type") or "",
        protocol=d.get("protocol_data") or None,
        members=tuple(_member(m) for m in d.get("members", [])),
    )


def _consumer_view(g: str, d: object) -> GroupView:
    """A ConsumerGroupDescribe answer as a ``GroupView``; a group the coordinator does not
    have (gone, or classic again) is Dead for this read, as a classic one is."""
    error = describe_error(d)
    if error:
        return GroupView(
            g, "Unknown", "", None, error=f"describe failed: {error}", group_type=CONSUMER
        )
    if d.error_code:
        return GroupView(g, "Dead", "consumer", None, group_type=CONSUMER)
    return GroupView(
        group_id=g,
        state=d.group_state or "",
        protocol_type="consumer",
        protocol=d.assignor_name or None,
        members=tuple(member_view(m) for m in d.members),
        group_type=CONSUMER,
        group_epoch=d.group_epoch,
        assignment_epoch=d.assignment_epoch,
    )
