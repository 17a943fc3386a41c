"""ApiVersions, Metadata v0-v3 and GroupCoordinator (FindCoordinator v0) for old clients.

Every broker keeps its id but is advertised at the gateway's endpoint, so an old client's
"the leader of p is broker N" is always answered by the gateway, which then routes to the
real leader of the moment. Leaders, replicas and ISR are the cluster's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka.protocol.metadata import (
    ApiVersionsResponse,
    FindCoordinatorResponse,
    MetadataResponse,
)

from bridge.gateway import errors

if TYPE_CHECKING:
    from bridge.gateway.server import Core

METADATA = 3


async def api_versions(core: Core, request, version: int):
    """The versions the gateway serves (not the cluster's: those old versions are ours)."""
    keys = [
        ApiVersionsResponse.ApiVersion(api_key=key, min_version=lo, max_version=hi)
        for key, (lo, hi) in sorted(core.served().items())
    ]
    return ApiVersionsResponse[version](error_code=errors.NONE, api_keys=keys, throttle_time_ms=0)


def unsupported_api_versions(core: Core):
    """KIP-511: a newer ApiVersions is answered in v0 with UNSUPPORTED_VERSION and the list."""
    keys = [
        ApiVersionsResponse.ApiVersion(api_key=key, min_version=lo, max_version=hi)
        for key, (lo, hi) in sorted(core.served().items())
    ]
    return ApiVersionsResponse[0](error_code=errors.UNSUPPORTED_VERSION, api_keys=keys)


async def metadata(core: Core, request, version: int):
    """The cluster's metadata for the asked topics with every broker at the gateway."""
    names = [t.name for t in request.topics] if request.topics is not None else None
    if version == 0 and not names:
        names = None  # v0: an empty list means every topic
    upstream = await core.cluster.metadata(names, auto_create=True)
    cls = MetadataResponse[version]
    brokers = [
        cls.MetadataResponseBroker(node_id=b.node_id, host=h, port=p, rack=b.rack)
        for b in upstream.brokers
        for h, p in [core.endpoint_for(b.node_id)]
    ]
    topics = [
        cls.MetadataResponseTopic(
            error_code=errors.for_client(t.error_code, METADATA, version),
            name=t.name,
            is_internal=t.is_internal,
            partitions=[
                cls.MetadataResponseTopic.MetadataResponsePartition(
                    error_code=errors.for_client(p.error_code, METADATA, version),
                    partition_index=p.partition_index,
                    leader_id=p.leader_id,
                    replica_nodes=p.replica_nodes,
                    isr_nodes=p.isr_nodes,
                )
                for p in sorted(t.partitions, key=lambda p: p.partition_index)
            ],
        )
        for t in upstream.topics
    ]
    return cls(
        throttle_time_ms=0,
        brokers=brokers,
        cluster_id=upstream.cluster_id,
        controller_id=upstream.controller_id,
        topics=topics,
    )


async def find_coordinator(core: Core, request, version: int):
    """GroupCoordinator v0: the group's coordinator id, at the gateway's endpoint."""
    error, node = await core.cluster.coordinator(request.key, fresh=True)
    if error != errors.NONE:
        return FindCoordinatorResponse[0](
            error_code=errors.for_client(error, 10, 0), node_id=-1, host="", port=-1
        )
    host, port = core.endpoint_for(node)
    return FindCoordinatorResponse[0](error_code=errors.NONE, node_id=node, host=host, port=port)
