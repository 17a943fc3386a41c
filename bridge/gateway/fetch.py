"""Fetch v0-v3, answered from the partitions' leaders.

Fetch goes upstream as v11 (valid on 3.9 and 4.x) with ``read_committed``: the leader then
sends the aborted transactions with the batches and stops at the last stable offset, and
``down_convert`` drops aborted records and control batches, which old clients cannot tell
apart from data. ``max_wait``/``min_bytes`` are passed on; a fetch over several leaders
first asks them all without waiting, so data on one leader is not held back by the
others' ``max_wait``.

Size limits are the old ones: each partition at most its ``partition_max_bytes`` of
converted messages (v0-v2: a message that does not fit is cut, as old brokers cut it, and
the client reports it too large); v3 adds the response's ``max_bytes``, filled in request
order, where the first message is always returned whole (KIP-74).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
)

from bridge.gateway import errors
from bridge.gateway.cluster import Failed, scatter
from bridge.gateway.convert import ConversionError, UnsupportedCompression, down_convert
from zkpaths import TopicPartition

if TYPE_CHECKING:
    from bridge.gateway.server import Core

log = logging.getLogger(__name__)

FETCH, FETCH_VERSION = 1, 11
READ_COMMITTED = 1
#: what a v0-v2 fetch may ask of one leader at most (the brokers' fetch.max.bytes caps it too)
MAX_UPSTREAM_BYTES = 64 << 20


def _asked(request) -> dict[TopicPartition, tuple[int, int]]:
    return {
        TopicPartition(t.topic, p.partition): (p.fetch_offset, p.partition_max_bytes)
        for t in request.topics
        for p in t.partitions
    }


async def fetch(core: Core, request, version: int):
    """Fetch v0-v3: v2 batches from each leader, down-converted to magic 0 (v0-v1) or 1.

    With several leaders, they are asked first without waiting: a leader parks a fetch
    until *its* partitions have ``min_bytes``, so data on one leader would otherwise wait
    for ``max_wait`` on the others. Only if none has anything are they asked again with
    the client's ``max_wait``."""
    asked = _asked(request)
    leaders = {await core.cluster.leader(tp) for tp in asked}
    answers = None
    if len(leaders) > 1 and request.max_wait_ms > 0:
        answers = await _round(core, request, version, asked, max_wait_ms=0)
        if not any(getattr(a, "records", None) or a.error_code for a in answers.values()):
            answers = None
    if answers is None:
        answers = await _round(core, request, version, asked, request.max_wait_ms)
    return _merge(request, version, asked, answers)


async def _round(core: Core, request, version: int, asked, max_wait_ms: int):
    """Each asked partition's answer from its leader, fetched with ``max_wait_ms``."""
    max_bytes = request.max_bytes if version >= 3 else MAX_UPSTREAM_BYTES
    timeout = core.tunables.upstream_timeout_s + max(max_wait_ms, 0) / 1000

    async def from_leader(leader: int, tps: list[TopicPartition]):
        by_topic: dict[str, list] = {}
        for topic, partition in tps:
            offset, limit = asked[(topic, partition)]
            by_topic.setdefault(topic, []).append(
                FetchRequest.FetchTopic.FetchPartition(
                    partition=partition,
                    current_leader_epoch=-1,
                    fetch_offset=offset,
                    log_start_offset=-1,
                    partition_max_bytes=limit,
                )
            )
        upstream = FetchRequest[FETCH_VERSION](
            replica_id=-1,
            max_wait_ms=max_wait_ms,
            min_bytes=request.min_bytes,
            max_bytes=min(max_bytes, MAX_UPSTREAM_BYTES),
            isolation_level=READ_COMMITTED,
            session_id=0,
            session_epoch=-1,
            rack_id="",
            forgotten_topics_data=[],
            topics=[FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
        )
        response = await core.cluster.send_to(leader, upstream, timeout)
        if response.error_code:
            return {tp: Failed(response.error_code) for tp in tps}
        return {(t.topic, p.partition_index): p for t in response.responses for p in t.partitions}

    return await scatter(core.cluster, asked, from_leader)


def _merge(request, version: int, asked, answers):
    """The client's response, partitions in its order, converted within its limits."""
    magic = 0 if version <= 1 else 1
    budget = request.max_bytes if version >= 3 else None
    cls = FetchResponse[version]
    topics: dict[str, list] = {}
    for (topic, partition), (offset, limit) in asked.items():
        answer = answers.get((topic, partition), Failed(errors.UNKNOWN))
        code, hw, records = answer.error_code, getattr(answer, "high_watermark", -1), b""
        if code == errors.NONE and answer.records:
            room = limit if budget is None else min(limit, budget)
            first = budget is not None and budget == request.max_bytes
            try:
                records = (
                    down_convert(
                        answer.records,
                        magic=magic,
                        fetch_offset=offset,
                        max_bytes=max(room, 0),
                        aborted=[
                            (a.producer_id, a.first_offset)
                            for a in answer.aborted_transactions or ()
                        ],
                        min_one_message=first,
                    )
                    if room > 0 or first
                    else b""
                )
            except UnsupportedCompression as exc:  # zstd: magic 0/1 cannot carry it
                log.info("gateway: %s-%d at %d: %s", topic, partition, offset, exc)
                code = errors.UNSUPPORTED_COMPRESSION_TYPE
            except ConversionError as exc:  # not record batches: a broker's bug
                log.warning(
                    "gateway: %s-%d at %d not convertible: %s", topic, partition, offset, exc
                )
                code = errors.UNKNOWN
            if budget is not None:
                budget -= len(records)
        topics.setdefault(topic, []).append(
            cls.FetchableTopicResponse.PartitionData(
                partition_index=partition,
                error_code=errors.for_client(code, FETCH, version),
                high_watermark=hw,
                records=records,
            )
        )
    return cls(
        throttle_time_ms=0,
        responses=[cls.FetchableTopicResponse(topic=t, partitions=ps) for t, ps in topics.items()],
    )
