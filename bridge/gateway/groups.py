"""OffsetCommit v0-v2 and OffsetFetch v0-v2: v0 in ZooKeeper, v1 and later in Kafka.

On old brokers **v0 meant ZooKeeper**: the broker itself wrote the offset (a decimal
string) to ``/consumers/<group>/offsets/<topic>/<partition>`` and read it back from there
(``KafkaApis`` 0.8.2-0.10: "version 0 always store offsets to ZK"). The gateway keeps that
contract through its ZooKeeper client, in the same legacy tree the bridge mirrors, because
that is where the old group's other members, its tools (ExportZkOffsets, Burrow in ZK mode)
and the bridge's migration flow look for those offsets; storing them in Kafka instead would
split one group's offsets between two places. A gateway without ZooKeeper refuses v0 per
partition (UNKNOWN) and logs why. v1 is Kafka storage: sent to the group's coordinator as
OffsetCommit v5 / OffsetFetch v1 (valid on 3.9 and 4.x); generation -1 and member ''
(a simple commit) pass through as the client sent them, except into a group where this
bridge's proxies are members, which Kafka would refuse: those are committed as the proxies
of the partitions' ZooKeeper owners (``simple_commits``). v1's per-partition commit
timestamp has no successor upstream; the broker's retention applies. OffsetFetch v2 (what
0.10.2's Scala consumer sends with ``offsets.storage=kafka``) adds a top-level error code
and "every partition of the group" (no topics); it goes upstream as v2, which 4.x keeps.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from kafka.protocol.consumer import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from kazoo.exceptions import NoNodeError

from bridge.gateway import errors, simple_commits
from bridge.gateway.upstream import UpstreamError

if TYPE_CHECKING:
    from bridge.gateway.server import Core

log = logging.getLogger(__name__)

COMMIT_VERSION, FETCH_VERSION = 5, 1
#: OffsetFetch for every partition of a group (topics null) needs v2 upstream
FETCH_ALL_VERSION = 2


def _zk_path(group: str, topic: str, partition: int) -> str:
    return f"/consumers/{group}/offsets/{topic}/{partition}"


async def to_group_coordinator(core: Core, group: str, build):
    """``build()``'s request at ``group``'s coordinator, found again once if it moved."""
    for attempt in range(3):
        code, node = await core.cluster.coordinator(group, fresh=attempt > 0)
        if code != errors.NONE:
            await asyncio.sleep(0.1 * (attempt + 1))
            continue
        try:
            response = await core.cluster.send_to(node, build())
        except UpstreamError as exc:
            log.info("gateway: coordinator %d of %r: %s", node, group, exc)
            code = errors.COORDINATOR_NOT_AVAILABLE
            continue
        codes = {p.error_code for t in response.topics for p in t.partitions}
        codes.add(getattr(response, "error_code", errors.NONE))  # OffsetFetch v2+
        code = next((c for c in codes if c in errors.COORDINATOR), errors.NONE)
        if code == errors.NONE:
            return errors.NONE, response
        core.cluster.forget_coordinator(group)
        await asyncio.sleep(0.1 * (attempt + 1))
    return code, None


async def offset_commit(core: Core, request, version: int):
    cls = OffsetCommitResponse[version]
    if version == 0:
        codes = await _zk_commit(core, request)
    elif (rewritten := await simple_commits.commit_as_proxies(core, request)) is not None:
        codes = rewritten
    else:
        code, response = await to_group_coordinator(
            core, request.group_id, lambda: _commit_upstream(request)
        )
        codes = (
            {
                (t.name, p.partition_index): p.error_code
                for t in response.topics
                for p in t.partitions
            }
            if response is not None
            else {}
        )
        codes.setdefault(None, code)
        simple_commits.redirect_from_standby(core, request, codes)
    return cls(
        topics=[
            cls.OffsetCommitResponseTopic(
                name=t.name,
                partitions=[
                    cls.OffsetCommitResponseTopic.OffsetCommitResponsePartition(
                        partition_index=p.partition_index,
                        error_code=errors.for_client(
                            codes.get((t.name, p.partition_index), codes.get(None, errors.UNKNOWN)),
                            8,
                            version,
                        ),
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ]
    )


def _commit_upstream(request):
    return OffsetCommitRequest[COMMIT_VERSION](
        group_id=request.group_id,
        generation_id_or_member_epoch=request.generation_id_or_member_epoch,
        member_id=request.member_id,
        topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(
                name=t.name,
                partitions=[
                    OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                        partition_index=p.partition_index,
                        committed_offset=p.committed_offset,
                        committed_metadata=p.committed_metadata,
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )


async def _zk_commit(core: Core, request) -> dict:
    zk = core.zookeeper
    if zk is None:
        log.warning(
            "gateway: OffsetCommit v0 (ZooKeeper storage) for group %r refused: no ZooKeeper",
            request.group_id,
        )
        return {None: errors.UNKNOWN}

    def write() -> dict:
        codes = {}
        for t in request.topics:
            for p in t.partitions:
                path = _zk_path(request.group_id, t.name, p.partition_index)
                data = str(p.committed_offset).encode()
                try:
                    if zk.exists(path):
                        zk.set(path, data)
                    else:
                        zk.create(path, data, makepath=True)
                    codes[(t.name, p.partition_index)] = errors.NONE
                except Exception as exc:  # noqa: BLE001 - per partition, as old brokers did
                    log.warning("gateway: OffsetCommit v0 to %s failed: %r", path, exc)
                    codes[(t.name, p.partition_index)] = errors.UNKNOWN
        return codes

    return await asyncio.get_running_loop().run_in_executor(None, write)


async def offset_fetch(core: Core, request, version: int):
    if version == 0:
        found = await _zk_fetch(core, request)
        top = errors.NONE
    else:
        top, found = await _kafka_fetch(core, request)
    cls = OffsetFetchResponse[version]
    Topic = cls.OffsetFetchResponseTopic
    if request.topics is None:  # v2: every partition the group has an offset for
        wanted = sorted({tp for tp in found if tp is not None})
        asked = {t: [p for tt, p in wanted if tt == t] for t, _ in wanted}
    else:
        asked = {t.name: list(t.partition_indexes) for t in request.topics}
    response = cls(
        topics=[
            Topic(
                name=name,
                partitions=[
                    Topic.OffsetFetchResponsePartition(
                        partition_index=p,
                        committed_offset=offset,
                        metadata=metadata,
                        error_code=errors.for_client(code, 9, version),
                    )
                    for p in partitions
                    for offset, metadata, code in [
                        found.get((name, p), found.get(None, (-1, "", errors.UNKNOWN)))
                    ]
                ],
            )
            for name, partitions in asked.items()
        ]
    )
    if version >= 2:
        response.error_code = errors.for_client(top, 9, version)
    return response


async def _kafka_fetch(core: Core, request) -> tuple[int, dict]:
    """The group's committed offsets at its coordinator: (coordinator error, found)."""
    every = request.topics is None
    upstream = OffsetFetchRequest[FETCH_ALL_VERSION if every else FETCH_VERSION](
        group_id=request.group_id, topics=request.topics
    )
    code, response = await to_group_coordinator(core, request.group_id, lambda: upstream)
    found: dict = {None: (-1, "", code)}
    if response is not None:
        found.update(
            {
                (t.name, p.partition_index): (p.committed_offset, p.metadata, p.error_code)
                for t in response.topics
                for p in t.partitions
            }
        )
    return code, found


async def _zk_fetch(core: Core, request) -> dict:
    """v0 as 0.10's broker answered it: the ZooKeeper node's offset, else -1 with
    UNKNOWN_TOPIC_OR_PARTITION (also for a topic the cluster does not have)."""
    zk = core.zookeeper
    if zk is None:
        log.warning(
            "gateway: OffsetFetch v0 (ZooKeeper storage) for group %r refused: no ZooKeeper",
            request.group_id,
        )
        return {None: (-1, "", errors.UNKNOWN)}
    for t in request.topics or ():
        if t.name not in core.cluster.topics:
            await core.cluster.refresh()
            break

    def read() -> dict:
        found = {}
        for t in request.topics or ():
            for p in t.partition_indexes:
                found[(t.name, p)] = (-1, "", errors.UNKNOWN_TOPIC_OR_PARTITION)
                if t.name not in core.cluster.topics:
                    continue
                try:
                    data, _ = zk.get(_zk_path(request.group_id, t.name, p))
                    found[(t.name, p)] = (int(data), "", errors.NONE)
                except NoNodeError:
                    pass  # never committed
                except Exception as exc:  # noqa: BLE001 - per partition, as old brokers did
                    log.warning(
                        "gateway: OffsetFetch v0 of %r %s-%d failed: %r",
                        request.group_id,
                        t.name,
                        p,
                        exc,
                    )
                    found[(t.name, p)] = (-1, "", errors.UNKNOWN)
        return found

    return await asyncio.get_running_loop().run_in_executor(None, read)


async def to_coordinator(core: Core, request, version: int):
    """JoinGroup, SyncGroup, Heartbeat, LeaveGroup of 0.9-0.10 Java clients: passed through
    unchanged, at a version 4.x still accepts, to the group's coordinator; the answer comes
    back as the coordinator gave it (error codes translated). A coordinator that cannot be
    found closes the connection (the client reconnects and asks GroupCoordinator again)."""
    code, node = await core.cluster.coordinator(request.group_id)
    if code != errors.NONE:
        raise UpstreamError(f"no coordinator for group {request.group_id!r} (error {code})")
    waits = [
        getattr(request, "rebalance_timeout_ms", None),
        getattr(request, "session_timeout_ms", None),
    ]
    wait = max((w for w in waits if isinstance(w, int) and w > 0), default=0) / 1000
    response = await core.cluster.send_to(node, request, core.tunables.upstream_timeout_s + wait)
    if response.error_code in errors.COORDINATOR:
        core.cluster.forget_coordinator(request.group_id)
    response.error_code = errors.for_client(response.error_code, request.API_KEY, version)
    return response
