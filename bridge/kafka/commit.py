"""Committing offsets into a Kafka group from outside it.

A member's OffsetCommit needs the member id and generation, and is refused while the group
completes a rebalance; an admin commit needs an empty group. A transactional offset commit
(TxnOffsetCommit) has neither limit, and is fenced by the producer epoch of the
``transactional.id``: once a successor bridge initialised the same id, a deposed one can no
longer commit (I3 on the Kafka side). For the same reason a committer never initialises its
producer a second time: that would fence the successor back.

The flows and ``zk-bridge offsets import/reset`` commit through this one class. Every copy
of ZooKeeper offsets the bridge makes into a live group (the groups flow's copies, a
hand-over's final offsets, a commit as a proxy) reads Kafka again and commits under
:attr:`OffsetCommitter.lock` (:meth:`OffsetCommitter.commit_ahead`): Kafka keeps the last
commit, not the highest, so a copy decided from an older picture must never land after a
newer one, the bridge's own or a member's (I2).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future

from kafka import KafkaAdminClient, KafkaProducer
from kafka.structs import OffsetAndMetadata
from kafka.structs import TopicPartition as KafkaTP

from bridge.kafka.calls import KafkaCallTimeout, bound_s, bounded
from bridge.kafka.groups import fetch_offsets, read_offsets
from bridge.metrics import METRICS
from zkpaths import TopicPartition

log = logging.getLogger(__name__)

Offsets = Mapping[TopicPartition, int]

#: the producer's ``retry_backoff_ms``. kafka-python's sender, while a transactional request
#: is in flight, waits a whole ``retry_backoff_ms`` before it sends the next one (the
#: response does not cut the wait short): with its default, 100 ms, each group of a
#: transaction (AddOffsetsToTxn, then TxnOffsetCommit) cost ~110 ms, measured, 8 ms with
#: 10 ms; a transaction of 5 groups then took 137 ms against 84 ms with 2 ms (same run,
#: docs/benchmarks.md). It is also the pause before a retry (CONCURRENT_TRANSACTIONS while
#: the previous transaction's markers are written): a few requests more per transaction at
#: most, within the transaction's bound (``transaction_s``)
TXN_BACKOFF_MS = 2
#: how often a commit asks OffsetFetch whether Kafka shows it yet (the commit markers land
#: after EndTxn returns): the copier's next transaction waits for the answer
VISIBLE_POLL_S = 0.01


class OffsetCommitter:
    def __init__(
        self,
        admin: KafkaAdminClient,
        client_options: dict,
        transactional_id: str,
        visible_within_s: float = 10.0,
        transaction_s: float | None = None,
    ) -> None:
        """``visible_within_s``: how long a commit waits for OffsetFetch to show it;
        ``transaction_s``: the bound of one transaction (default: one admin call's)."""
        self.admin = admin
        self.transaction_s = transaction_s or bound_s(admin)
        self.client_options = client_options
        self.transactional_id = transactional_id
        self.visible_within_s = visible_within_s
        self._producer: KafkaProducer | None = None
        #: a transaction that outlived its bound; no other starts until it ended
        self._unfinished: Future | None = None
        #: one transaction at a time: the groups flow commits on its own thread, a
        #: hand-over on the tick's; held from the read of Kafka to the commit by
        #: :meth:`commit_ahead` and by commits as a proxy (re-entrant for them)
        self.lock = threading.RLock()

    def commit(self, group: str, offsets: Offsets, direction: str) -> None:
        """Commit ``offsets`` of one group and wait until Kafka shows them (at least them:
        the group's own members may commit further meanwhile)."""
        self.commit_groups({group: offsets}, direction)

    def commit_groups(
        self, per_group: Mapping[str, Offsets], direction: str, exact: bool = False
    ) -> list[str]:
        """Commit every group's offsets in one transaction, then wait until OffsetFetch
        shows them (the commit markers land after EndTxn returns); ``exact`` wants the very
        offsets (a reset may move them back), else at least them. Returns the groups that
        did not show their commit within ``visible_within_s``."""
        per_group = {g: dict(o) for g, o in per_group.items() if o}
        if not per_group:
            return []
        with self.lock:
            return self._commit_locked(per_group, direction, exact)

    def commit_ahead(
        self,
        per_group: Mapping[str, Offsets],
        direction: str,
        keep: Callable[[Mapping[str, Offsets]], Mapping[str, Offsets]] | None = None,
    ) -> list[str]:
        """Commit only what Kafka is still behind, read now and committed under
        :attr:`lock` (see the module docstring); ``keep`` filters the copies first, under
        the lock too. Returns the groups late to show it."""
        with self.lock:
            if keep is not None:
                per_group = keep(per_group)
            return self.commit_groups(self.ahead(per_group), direction)

    def ahead(self, per_group: Mapping[str, Offsets]) -> dict[str, dict[TopicPartition, int]]:
        """The offsets Kafka is behind now (one OffsetFetch per coordinator). A group not
        readable now is left out: its copies are decided again by a later pass. Hold
        :attr:`lock` until the commit, or another copy may land in between."""
        per_group = {g: o for g, o in per_group.items() if o}
        if not per_group:
            return {}
        fresh = read_offsets(self.admin, sorted(per_group))
        out: dict[str, dict[TopicPartition, int]] = {}
        for group, offsets in per_group.items():
            now = fresh.get(group)
            if isinstance(now, dict):
                ahead = {tp: o for tp, o in offsets.items() if now.get(tp, -1) < o}
                if ahead:
                    out[group] = ahead
        return out

    def _commit_locked(
        self, per_group: dict[str, dict[TopicPartition, int]], direction: str, exact: bool
    ) -> list[str]:
        if self._unfinished is not None and not self._unfinished.done():
            raise KafkaCallTimeout("the previous offset transaction has not finished yet")
        self._unfinished = None
        try:
            bounded("TxnOffsetCommit", self._transact, per_group, timeout_s=self.transaction_s)
            METRICS.kafka_commits.labels(via="transaction").inc()
        except KafkaCallTimeout as exc:
            self._unfinished = exc.pending
            raise
        late = self._await_visible(per_group, exact)
        for group, offsets in per_group.items():
            self.committed(group, offsets, direction)
        return late

    def committed(self, group: str, offsets: Offsets, direction: str) -> None:
        """Count and log a commit into Kafka (a transaction's, or one made as a proxy)."""
        METRICS.offsets_copied.labels(direction=direction).inc(len(offsets))
        log.info(
            "committed offsets into Kafka",
            extra={"group": group, "partitions": len(offsets), "direction": direction},
        )

    def _transact(self, per_group: Mapping[str, Offsets]) -> None:
        if self._producer is None:
            self._producer = KafkaProducer(
                transactional_id=self.transactional_id,
                max_block_ms=int(self.transaction_s * 1000),
                retry_backoff_ms=TXN_BACKOFF_MS,
                **self.client_options,
            )
            self._producer.init_transactions()
        self._producer.begin_transaction()
        for group, offsets in sorted(per_group.items()):
            self._producer.send_offsets_to_transaction(
                {
                    KafkaTP(tp.topic, tp.partition): OffsetAndMetadata(o, "", -1)
                    for tp, o in offsets.items()
                },
                group,
            )
        self._producer.commit_transaction()

    def _await_visible(self, per_group: Mapping[str, Offsets], exact: bool) -> list[str]:
        pending = {
            g: {KafkaTP(tp.topic, tp.partition): o for tp, o in offsets.items()}
            for g, offsets in per_group.items()
        }
        deadline = time.monotonic() + self.visible_within_s
        while pending and time.monotonic() < deadline:
            # every group in one OffsetFetch request per coordinator, not one per group
            seen = fetch_offsets(self.admin, {g: list(want) for g, want in pending.items()})
            for group, want in list(pending.items()):
                got = seen.get(group, {})
                if all(_shows(got.get(tp), o, exact) for tp, o in want.items()):
                    del pending[group]
            if pending:
                time.sleep(VISIBLE_POLL_S)
        return sorted(pending)

    def close(self) -> None:
        if self._producer is not None:
            self._producer.close(timeout=5)
            self._producer = None


def _shows(seen: OffsetAndMetadata | None, offset: int, exact: bool) -> bool:
    if seen is None or seen.offset is None:
        return False
    return seen.offset == offset if exact else seen.offset >= offset
