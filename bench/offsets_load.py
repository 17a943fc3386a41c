"""bench.offsets' load generator: OffsetCommits sent from worker threads, each group
pinned to one worker so its offsets only rise."""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass

from kafka import KafkaAdminClient, TopicPartition
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata

now = time.perf_counter


@dataclass
class Commit:
    """One OffsetCommit: group ``group`` sets all P partitions to ``offset``."""

    group: int
    offset: int
    due: float
    sent: float = 0.0
    acked: float = 0.0
    error: str | None = None


class Committer:
    """Worker threads sending OffsetCommits through one admin client.

    Group ``g`` always goes to worker ``g % workers``, so one group's commits never overtake
    each other and its offsets rise monotonically in Kafka.
    """

    def __init__(
        self, admin: KafkaAdminClient, topic: str, groups: list[str], partitions: int, workers: int
    ) -> None:
        self.admin = admin
        self.groups = groups
        self.tps = [TopicPartition(topic, p) for p in range(partitions)]
        self.done: list[Commit] = []
        self._lock = threading.Lock()
        self._outstanding = 0
        self._queues: list[queue.Queue[Commit | None]] = [queue.Queue() for _ in range(workers)]
        self._threads = [
            threading.Thread(target=self._work, args=(q,), daemon=True) for q in self._queues
        ]
        for t in self._threads:
            t.start()

    def commit(self, group: int, offset: int) -> list[type[KafkaError]]:
        offsets = {tp: OffsetAndMetadata(offset, "", -1) for tp in self.tps}
        result = self.admin.alter_group_offsets(self.groups[group], offsets)
        return [e for e in result.values() if getattr(e, "errno", 0) != 0]

    def submit(self, c: Commit) -> None:
        with self._lock:
            self._outstanding += 1
        self._queues[c.group % len(self._queues)].put(c)

    def wait_idle(self, timeout: float) -> None:
        """Until every submitted commit has its answer (or ``timeout``)."""
        deadline = now() + timeout
        while self._outstanding and now() < deadline:
            time.sleep(0.005)

    def backlog(self) -> int:
        return sum(q.qsize() for q in self._queues)

    def close(self, timeout: float) -> None:
        for q in self._queues:
            q.put(None)
        deadline = now() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - now()))

    def take(self) -> list[Commit]:
        with self._lock:
            out, self.done = self.done, []
        return out

    def _work(self, q: queue.Queue[Commit | None]) -> None:
        while (c := q.get()) is not None:
            c.sent = now()
            try:
                errors = self.commit(c.group, c.offset)
                if errors:
                    c.error = ", ".join(sorted({e.__name__ for e in errors}))
            except KafkaError as exc:
                c.error = f"{type(exc).__name__}: {exc}"
            c.acked = now()
            with self._lock:
                self.done.append(c)
                self._outstanding -= 1
