"""Committing offsets into a Kafka group from outside it.

A member's OffsetCommit needs the member id and generation, and is refused while the group
completes a rebalance; an admin commit needs an empty group. A transactional offset commit
(TxnOffsetCommit) has neither limit, and is fenced by the producer epoch of the
``transactional.id``: once a successor bridge initialised the same id, a deposed one can no
longer commit (I3 on the Kafka side).
"""

from __future__ import annotations

import logging
import time

from kafka import KafkaAdminClient, KafkaProducer
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata
from kafka.structs import TopicPartition as KafkaTP

from bridge.kafka import coordinators
from bridge.metrics import METRICS
from zkpaths import TopicPartition

log = logging.getLogger(__name__)


class OffsetCommitter:
    def __init__(self, admin: KafkaAdminClient, client_options: dict, transactional_id: str):
        self.admin = admin
        self.client_options = client_options
        self.transactional_id = transactional_id
        self._producer: KafkaProducer | None = None

    def commit(self, group: str, offsets: dict[TopicPartition, int], direction: str) -> None:
        """Commit ``offsets`` and wait until Kafka shows them (markers land after EndTxn)."""
        if not offsets:
            return
        if self._producer is None:
            self._producer = KafkaProducer(
                transactional_id=self.transactional_id, **self.client_options
            )
            self._producer.init_transactions()
        self._producer.begin_transaction()
        self._producer.send_offsets_to_transaction(
            {
                KafkaTP(tp.topic, tp.partition): OffsetAndMetadata(o, "", -1)
                for tp, o in offsets.items()
            },
            group,
        )
        self._producer.commit_transaction()
        want = {KafkaTP(tp.topic, tp.partition): o for tp, o in offsets.items()}
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                seen = self.admin.list_group_offsets({group: list(want)})[group]
            except KafkaError as exc:
                if not coordinators.moved(exc):
                    raise
                coordinators.forget(self.admin, [group])
                time.sleep(0.1)
                continue
            if all(seen.get(tp) and seen[tp].offset >= o for tp, o in want.items()):
                break
            time.sleep(0.05)
        METRICS.offsets_copied.labels(direction=direction).inc(len(offsets))
        log.info(
            "committed offsets into Kafka",
            extra={"group": group, "partitions": len(offsets), "direction": direction},
        )

    def close(self) -> None:
        if self._producer is not None:
            self._producer.close()
            self._producer = None
