"""The follower of ``__consumer_offsets`` as a member of the bridges' own consumer group
(``[scale] mode = "shares"``): Kafka's group coordinator deals the topic's partitions, the
shares, to the bridges, and moves them when a bridge joins, leaves or dies.

On revocation (``on_partitions_revoked``, which runs in this bridge's ``poll`` before it
rejoins, so before the rebalance can complete and another bridge be given the share) the
share's epoch is dropped at once: from then on every write for it is refused. A share
assigned is claimed (its epoch bumped) right after the ``poll`` that brought it, before any
write for it, and read from the log's end: the flow reconciles the new shares' groups in
full after that position was fixed, so a record is either before the position (and its
effect in what the reconcile reads) or after it (and followed). Positions are never
committed: compaction cannot take a record this bridge still needed (docs/concepts.md).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from kafka import ConsumerRebalanceListener, KafkaConsumer
from kafka import TopicPartition as KafkaTP
from kafka.errors import KafkaError

from bridge.kafka.offsets_log import OFFSETS_TOPIC, Event, OffsetsLogFollower, _log_report
from bridge.zookeeper.fence import ShareFence

log = logging.getLogger(__name__)

#: how long each poll waits while this bridge rejoins or holds no share: a join is several
#: round trips, and the client must be inside a poll when its answer comes (kafka-python
#: 3.0 drops a join that completed between two polls and sends a new JoinGroup: with short
#: polls a tick apart, the group rebalanced again and again, a share moving every second)
JOIN_POLL_MS = 200


def resume_unfinished_join(coordinator: Any) -> bool:
    """Ask ``coordinator`` (kafka-python's) to rejoin when it is stuck half-way through a
    join; True when it was.

    kafka-python 3.0.12 finishes a join (heartbeats back on, the assignment taken) only in a
    poll that still finds ``need_rejoin()``. A leader whose first assignment was made before
    it had the topic's metadata (it dealt nothing) rejoins because its metadata snapshot
    changed, and its own new assignment, made inside that join, makes the snapshots equal
    again: when the poll that started the join returned before it completed, no later poll
    takes it up. The member then stays "rebalancing" with heartbeats off, its session
    expires, and it never joins again (a bridge held no share for minutes while another held
    them all; 6 of 95 starts of two bridges at once, under load). Asking for a rejoin
    makes the next poll finish the join in flight, or make a new one."""
    if coordinator.rejoining and not coordinator.need_rejoin():
        log.info("the Kafka client left a join of the bridges' group unfinished: joining again")
        coordinator.request_rejoin()
        return True
    return False


class _Listener(ConsumerRebalanceListener):
    def __init__(self, follower: SharedFollower) -> None:
        self.follower = follower

    def on_partitions_revoked(self, revoked) -> None:
        self.follower.revoked({tp.partition for tp in revoked})

    def on_partitions_assigned(self, assigned) -> None:
        self.follower.assigned_now |= {tp.partition for tp in assigned}


class SharedFollower(OffsetsLogFollower):
    """An :class:`OffsetsLogFollower` whose partitions Kafka assigns (one bridge per share)."""

    def __init__(
        self,
        bootstrap_servers: str | list[str],
        group_id: str,
        fence: ShareFence,
        *,
        partitions: Callable[[], int | None],
        session_timeout_ms: int = 10000,
        client_options: Mapping[str, Any] | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        servers = bootstrap_servers
        self.topic = OFFSETS_TOPIC
        self.report = _log_report
        self.timeout_s = timeout_s
        self._new_state()
        self._start = "end"
        self.fence = fence
        #: the partition count of the topic (the number of shares), by a bounded call
        self.partitions = partitions
        #: shares assigned by the last poll, claimed and positioned after it returns
        self.assigned_now: set[int] = set()
        self.consumer = KafkaConsumer(
            bootstrap_servers=servers.split(",") if isinstance(servers, str) else servers,
            group_id=group_id,
            enable_auto_commit=False,
            isolation_level="read_committed",
            exclude_internal_topics=False,
            auto_offset_reset="latest",
            session_timeout_ms=session_timeout_ms,
            heartbeat_interval_ms=max(300, session_timeout_ms // 10),
            **dict(client_options or {}),
        )
        self.consumer.subscribe(topics=[OFFSETS_TOPIC], listener=_Listener(self))
        self.assigned = True  # follows from the first poll on, whatever it is dealt

    def assign(self, partitions: int) -> None:
        """Nothing to do: the group coordinator assigns."""

    def revoked(self, shares: set[int]) -> None:
        """Stop every write for ``shares`` before the rebalance completes."""
        self.fence.release(shares)
        self.assigned_now -= shares  # dealt but not claimed yet (the count was unknown)
        for share in shares:
            self._positions.pop(share, None)
            self._ends.pop(share, None)

    def poll(self, timeout_ms: int = 0, max_records: int = 100_000) -> list[Event]:
        """The events of the shares held, after settling a rebalance the poll ran."""
        if not self.consumer.assignment():
            timeout_ms = max(timeout_ms, JOIN_POLL_MS)
        events = super().poll(timeout_ms, max_records)
        deadline = time.monotonic() + self.timeout_s
        while self._rejoining() and time.monotonic() < deadline:  # polled until joined
            events += super().poll(JOIN_POLL_MS, max_records)
        if self.assigned_now:
            self._settle()
        return [e for e in events if self.fence.holds_group(e.group)]

    def _rejoining(self) -> bool:
        """Whether the client is in the middle of (re)joining the bridges' group; a join
        it left unfinished is taken up again (:func:`resume_unfinished_join`)."""
        coordinator = getattr(self.consumer, "_coordinator", None)
        try:
            resume_unfinished_join(coordinator)
            return bool(coordinator.need_rejoin())  # type: ignore[union-attr]
        except AttributeError:  # another client version: each poll carries the join on
            return False

    def _settle(self) -> None:
        """Claim the shares just assigned and fix their positions at the log's end (the
        flow then reconciles their groups in full)."""
        if not self.fence.shares:
            # not the consumer's partitions_for_topic: without the topic in its metadata
            # (a leader that joined before it had it says "No partition metadata") that
            # fetches metadata with no time limit (kafka-python 3.0), on the flows' thread.
            # A CI bridge that logged that warning then went silent for a minute before its
            # first claim and was dropped from the group (the likely place; not proven)
            try:
                self.fence.shares = self.partitions() or 0
            except KafkaError as exc:
                log.warning("partitions of %s unknown: %s", self.topic, exc)
            if not self.fence.shares:
                return  # the next poll tries again; nothing is claimed or written meanwhile
        shares, self.assigned_now = self.assigned_now, set()
        tps = [KafkaTP(self.topic, s) for s in sorted(shares)]
        ends = self.consumer.end_offsets(tps, timeout_ms=int(self.timeout_s * 1000))
        for tp, end in ends.items():
            self.consumer.seek(tp, end)
            self._positions[tp.partition] = self._ends[tp.partition] = end
        self.fence.claim(shares)

    def caught_up(self) -> bool:
        return True  # positions start at the end: nothing behind to catch up with

    def close(self) -> None:
        """Leave the group (its shares move at once) after dropping every epoch."""
        self.fence.release(self.fence.held())
        started = time.monotonic()
        self.consumer.close(autocommit=False)
        log.debug("left the bridges' group in %.1f s", time.monotonic() - started)
