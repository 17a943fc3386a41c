"""Produce v0-v2: message sets up-converted to v2 batches, sent to each partition's leader.

Upstream is Produce v7 (valid on 3.9 and 4.x). acks=1 and acks=-1 are passed on; acks=0
is sent upstream as acks=1 and the client gets no response, as from an old broker (it
waited for nothing); the gateway still learns the outcome to log it, and the client's next
request is read only after the leader answered, which keeps its messages in order. The
offsets returned are the leader's real base offsets. A partition whose connection broke
mid-request is not resent (it may have been appended): the client gets REQUEST_TIMED_OUT
and retries as it would with an old broker.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafka.protocol.producer import ProduceRequest, ProduceResponse

from bridge.gateway import errors
from bridge.gateway.cluster import Failed, scatter
from bridge.gateway.convert import ConversionError, up_convert
from zkpaths import TopicPartition

if TYPE_CHECKING:
    from bridge.gateway.server import Core

log = logging.getLogger(__name__)

PRODUCE, PRODUCE_VERSION = 0, 7


def _up_convert(
    request, magic: int
) -> tuple[dict[TopicPartition, bytes], dict[TopicPartition, int]]:
    """Each partition's v2 batch, or the error code its message set earns."""
    batches, refused = {}, {}
    for topic in request.topic_data:
        for part in topic.partition_data:
            tp = TopicPartition(topic.name, part.index)
            try:
                converted = up_convert(part.records or b"", magic=magic)
            except ConversionError as exc:
                log.info("gateway: produce to %s-%d refused: %s", *tp, exc)
                refused[tp] = errors.CORRUPT_MESSAGE
                continue
            if converted.count:
                batches[tp] = converted.records
            else:
                refused[tp] = errors.NONE  # nothing to append
    return batches, refused


async def produce(core: Core, request, version: int):
    """Produce v0-v2 through the leaders; None (no response) for acks=0."""
    batches, refused = _up_convert(request, magic=0 if version < 2 else 1)
    acks = 1 if request.acks == 0 else request.acks
    timeout = core.tunables.upstream_timeout_s + max(request.timeout_ms, 0) / 1000

    async def to_leader(leader: int, tps: list[TopicPartition]):
        by_topic: dict[str, list] = {}
        for topic, partition in tps:
            by_topic.setdefault(topic, []).append(
                ProduceRequest.TopicProduceData.PartitionProduceData(
                    index=partition, records=batches[(topic, partition)]
                )
            )
        upstream = ProduceRequest[PRODUCE_VERSION](
            transactional_id=None,
            acks=acks,
            timeout_ms=request.timeout_ms,
            topic_data=[
                ProduceRequest.TopicProduceData(name=t, partition_data=ps)
                for t, ps in by_topic.items()
            ],
        )
        response = await core.cluster.send_to(leader, upstream, timeout)
        return {(t.name, p.index): p for t in response.responses for p in t.partition_responses}

    answers = await scatter(core.cluster, batches, to_leader, resend_after_disconnect=False)
    answers.update({tp: Failed(code) for tp, code in refused.items()})
    failed = {tp: a.error_code for tp, a in answers.items() if a.error_code}
    if failed and request.acks == 0:
        log.info("gateway: acks=0 produce from a client failed for %s", failed)
    if request.acks == 0:
        return None
    cls = ProduceResponse[version]
    topics: dict[str, list] = {}
    for topic in request.topic_data:
        for part in topic.partition_data:
            answer = answers.get((topic.name, part.index), Failed(errors.UNKNOWN))
            topics.setdefault(topic.name, []).append(
                cls.TopicProduceResponse.PartitionProduceResponse(
                    index=part.index,
                    error_code=errors.for_client(answer.error_code, PRODUCE, version),
                    base_offset=getattr(answer, "base_offset", -1),
                    log_append_time_ms=getattr(answer, "log_append_time_ms", -1),
                )
            )
    return cls(
        responses=[
            cls.TopicProduceResponse(name=t, partition_responses=ps) for t, ps in topics.items()
        ],
        throttle_time_ms=0,
    )
