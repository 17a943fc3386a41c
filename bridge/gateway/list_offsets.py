"""ListOffsets v0-v1, answered by each partition's leader with ListOffsets v1 (4.x removed v0)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka.protocol.consumer import ListOffsetsRequest, ListOffsetsResponse

from bridge.gateway import errors
from bridge.gateway.cluster import Failed, scatter
from zkpaths import TopicPartition

if TYPE_CHECKING:
    from bridge.gateway.server import Core

LIST_OFFSETS, LIST_OFFSETS_VERSION = 2, 1


async def list_offsets(core: Core, request, version: int):
    """ListOffsets v0: latest (-1) = [high watermark], earliest (-2) = [log start offset],
    a time = [first offset at or after it, else the high watermark]; ``max_num_offsets`` 0
    gives [] (old brokers also listed segment bases past the first, which Kafka no longer
    exposes; old clients ask for one)."""
    asked = {
        TopicPartition(t.name, p.partition_index): (p.timestamp, p.max_num_offsets)
        for t in request.topics
        for p in t.partitions
    }
    answers = await _offsets(core, {tp: ts for tp, (ts, _) in asked.items()})
    if version == 1:  # the same question upstream: the answer as it came, in the client's order
        return _v1(request, answers)
    late = {
        tp: -1 for tp, a in answers.items() if getattr(a, "offset", 0) < 0 and asked[tp][0] >= 0
    }
    if late:
        answers.update(await _offsets(core, late))
    cls = ListOffsetsResponse[0]
    topics: dict[str, list] = {}
    for (topic, partition), (_, count) in asked.items():
        answer = answers.get((topic, partition), Failed(errors.UNKNOWN))
        code = answer.error_code
        offsets = [answer.offset] if code == errors.NONE and count > 0 else []
        topics.setdefault(topic, []).append(
            cls.ListOffsetsTopicResponse.ListOffsetsPartitionResponse(
                partition_index=partition,
                error_code=errors.for_client(code, LIST_OFFSETS, 0),
                old_style_offsets=offsets,
            )
        )
    return cls(
        topics=[cls.ListOffsetsTopicResponse(name=t, partitions=ps) for t, ps in topics.items()]
    )


def _v1(request, answers):
    cls = ListOffsetsResponse[1]
    part = cls.ListOffsetsTopicResponse.ListOffsetsPartitionResponse
    return cls(
        topics=[
            cls.ListOffsetsTopicResponse(
                name=t.name,
                partitions=[
                    part(
                        partition_index=p.partition_index,
                        error_code=errors.for_client(a.error_code, LIST_OFFSETS, 1),
                        timestamp=getattr(a, "timestamp", -1),
                        offset=getattr(a, "offset", -1),
                    )
                    for p in t.partitions
                    for a in [answers.get((t.name, p.partition_index), Failed(errors.UNKNOWN))]
                ],
            )
            for t in request.topics
        ]
    )


async def _offsets(core: Core, timestamps: dict[TopicPartition, int]):
    async def from_leader(leader: int, tps: list[TopicPartition]):
        by_topic: dict[str, list] = {}
        for topic, partition in tps:
            by_topic.setdefault(topic, []).append(
                ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                    partition_index=partition, timestamp=timestamps[(topic, partition)]
                )
            )
        upstream = ListOffsetsRequest[LIST_OFFSETS_VERSION](
            replica_id=-1,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=ps)
                for t, ps in by_topic.items()
            ],
        )
        response = await core.cluster.send_to(leader, upstream)
        return {(t.name, p.partition_index): p for t in response.topics for p in t.partitions}

    return await scatter(core.cluster, timestamps, from_leader)
