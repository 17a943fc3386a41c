"""A kafka-python 3.0.x consumer that lost its own join, asked to join again.

kafka-python 3.0.12 runs JoinGroup/SyncGroup as a task that outlives a ``poll()`` whose
timeout ends first. When the rejoin was asked for by a metadata or subscription change
(not by the coordinator's ``rejoin_needed`` flag), the next ``poll()`` sees nothing left to
rejoin and never collects the finished round: the member stays REBALANCING with its
heartbeats off, the broker evicts it after ``session.timeout.ms``, and it never joins again
(its commits fail with "not part of an active group" for as long as it runs). Seen on a
loaded machine within seconds of a group's first rebalance over newly created topics.

The devstack's kafka-python consumers (the demo and test "new consumers") call
:func:`rejoin_if_join_lost` after every ``poll()``; it asks for the rejoin the client
forgot, so the next ``poll()`` joins afresh.
"""

from __future__ import annotations

import logging

from kafka import KafkaConsumer
from kafka.structs import MemberState

log = logging.getLogger(__name__)


def rejoin_if_join_lost(consumer: KafkaConsumer) -> bool:
    """Ask for a rejoin when a finished join round was dropped; True when it did."""
    coordinator = getattr(consumer, "_coordinator", None)
    task = getattr(coordinator, "_join_task", None)
    if coordinator is None or task is None or not getattr(task, "is_done", False):
        return False  # no join round in flight, or it is still running (poll awaits it)
    if coordinator.state is MemberState.STABLE or coordinator.need_rejoin():
        return False  # collected, or the next poll() collects it
    log.warning(
        "group %s: kafka-python dropped a finished join round; joining again",
        coordinator.group_id,
    )
    coordinator.request_rejoin()
    return True
