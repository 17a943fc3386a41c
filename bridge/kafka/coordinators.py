"""Group coordinators, found again when they move.

kafka-python's admin client caches the coordinator of every group it has asked about and
never forgets one: after a broker restart moves a group's coordinator, every DescribeGroups
and OffsetFetch still goes to the old broker and is answered NOT_COORDINATOR for as long
as the process lives. The bridge drops a group's cached coordinator whenever an answer says
it moved, so the next call looks it up afresh (what Java clients do on that error).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from kafka import KafkaAdminClient
from kafka.protocol.metadata import CoordinatorType

log = logging.getLogger(__name__)

#: error names (as kafka-python prints them) meaning "ask who the coordinator is again"
MOVED = (
    "NotCoordinator",
    "CoordinatorNotAvailable",
    "CoordinatorLoadInProgress",
    "NodeNotReady",
    "KafkaConnectionError",
    "RequestTimedOut",
)


def moved(error: object) -> bool:
    """True when ``error`` (an exception or kafka-python's error string) says so."""
    text = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else str(error)
    return any(name in text for name in MOVED)


def forget(admin: KafkaAdminClient, groups: Iterable[str]) -> None:
    """Drop the cached coordinator of each group."""
    cache = getattr(
        getattr(getattr(admin, "_manager", None), "cluster", None), "_coordinators", None
    )
    if not isinstance(cache, dict):  # a kafka-python without the cache: nothing to forget
        return
    for group in groups:
        if cache.pop((CoordinatorType.GROUP, group), None) is not None:
            log.debug("coordinator of %s forgotten; it is looked up again", group)
