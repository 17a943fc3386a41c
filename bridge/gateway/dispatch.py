"""What the gateway serves, and the decoding of one request frame (pure: fuzzed by bench.fuzz).

Request bodies are decoded by kafka-python's classes, generated from Kafka's JSON schemas,
which still describe the old versions. Anything the gateway will not serve or cannot decode
is a ``BadRequest``, whose message (bounded, never the request's bytes) is logged when the
connection is closed.
"""

from __future__ import annotations

import io

from kafka.protocol.api_header import RequestHeader
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer import (
    FetchRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListOffsetsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka.protocol.metadata import ApiVersionsRequest, FindCoordinatorRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest

from bridge.gateway import fetch, groups, list_offsets, meta, produce

#: api key -> (request class, min version, max version, handler)
HANDLERS = {
    0: (ProduceRequest, 0, 2, produce.produce),
    1: (FetchRequest, 0, 3, fetch.fetch),
    2: (ListOffsetsRequest, 0, 1, list_offsets.list_offsets),
    3: (MetadataRequest, 0, 3, meta.metadata),
    8: (OffsetCommitRequest, 0, 2, groups.offset_commit),
    9: (OffsetFetchRequest, 0, 2, groups.offset_fetch),
    10: (FindCoordinatorRequest, 0, 0, meta.find_coordinator),
    # the group membership of 0.9-0.10 Java consumers, passed through to the coordinator
    11: (JoinGroupRequest, 0, 1, groups.to_coordinator),
    12: (HeartbeatRequest, 0, 0, groups.to_coordinator),
    13: (LeaveGroupRequest, 0, 0, groups.to_coordinator),
    14: (SyncGroupRequest, 0, 0, groups.to_coordinator),
    18: (ApiVersionsRequest, 0, 2, meta.api_versions),
}
API_VERSIONS = 18
#: longest decoder message quoted in a log line
MAX_REASON = 200


class BadRequest(ValueError):
    """A request the gateway will not serve; ``client_id`` if the header was readable."""

    def __init__(self, reason: str, client_id: str | None = None) -> None:
        super().__init__(reason)
        self.client_id = client_id


def _why(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"  # str(), not repr(): no request bytes in logs
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."


def parse_request(body: bytes) -> tuple[RequestHeader, ApiMessage | None]:
    """The header and decoded request of one frame's body (after its size prefix).

    The request is None for an ApiVersions newer than served (answered with the list)."""
    buffer = io.BytesIO(body)
    try:
        header = RequestHeader.decode(buffer, flexible=False)
    except Exception as exc:  # noqa: BLE001 - any failure here is a malformed header
        raise BadRequest(f"malformed request header: {_why(exc)}") from None
    key, version, client = header.request_api_key, header.request_api_version, header.client_id
    api = HANDLERS.get(key)
    if api is None:
        raise BadRequest(f"api key {key} is not served by the gateway", client)
    request_class, lo, hi, _ = api
    if not lo <= version <= hi:
        if key == API_VERSIONS and version > hi:
            return header, None
        raise BadRequest(f"{request_class.name} v{version} is not served (v{lo}-v{hi} are)", client)
    try:
        return header, request_class.decode(memoryview(body)[buffer.tell() :], version=version)
    except Exception as exc:  # noqa: BLE001 - any decoding failure is malformed input
        raise BadRequest(
            f"malformed {request_class.name} v{version}: {_why(exc)}", client
        ) from None
