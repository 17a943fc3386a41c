"""The groups flow's copies of ZooKeeper offsets into Kafka, committed off the tick's thread.

A zookeeper-mode group's offsets (old consumers commit them into ZooKeeper) go into Kafka
with a TxnOffsetCommit. The transaction and the OffsetFetch rounds until Kafka shows it
took 0.3-1 s on the tick's thread (bench.fleet), and with them the next tick, so a commit
made meanwhile waited for both (docs/benchmarks.md). Here the tick hands its copies over
and goes on; one thread commits everything handed over since its last transaction, in
one transaction (a later copy of the same partition replaces an earlier one not sent yet),
falling back to one transaction per group when Kafka refuses the batch.

Nothing is lost: a copy that fails is reported and decided again by a later tick, which
reads both stores again (the copies are a function of what the tick read, not a queue of
events). A copy is decided from a picture a moment old and waits here for the transaction
before it: what Kafka has at or past it meanwhile (a member's own commit, the hand-over's
final offsets, a commit as a proxy, all newer) is dropped by the committer's fresh
OffsetFetch under its lock (``OffsetCommitter.commit_ahead``), never committed over (I2).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from kafka import KafkaAdminClient
from kafka.errors import KafkaError

from bridge.decide.migration import kafka_writers
from bridge.kafka.calls import KafkaCallTimeout
from bridge.kafka.commit import OffsetCommitter
from bridge.kafka.groups import describe_groups
from bridge.kafka.proxy import PROXY_CLIENT_ID
from bridge.kafka.views import GroupView
from zkpaths import TopicPartition

Copies = dict[str, dict[TopicPartition, int]]
Report = Callable[[str, str, str], None]


class CopiesToKafka:
    """Commits the copies handed over by :meth:`submit` on its own thread."""

    def __init__(
        self,
        admin: KafkaAdminClient,
        committer: OffsetCommitter,
        report: Report,
    ) -> None:
        self.admin = admin
        self.committer = committer
        self.report = report
        self._lock = threading.Condition()
        self._pending: Copies = {}
        self._busy = False
        self._closed = False
        self._thread: threading.Thread | None = None
        #: with shares: whether this bridge still holds a group's share; a copy of a group
        #: whose share moved since its tick is dropped (the new holder copies it)
        self.holds: Callable[[str], bool] = lambda group: True
        #: transactions sent, for tests and metrics
        self.transactions = 0

    def submit(self, copies: Mapping[str, Mapping[TopicPartition, int]]) -> None:
        """Hand ``copies`` over; returns at once."""
        if not copies:
            return
        with self._lock:
            if self._closed:
                return
            for group, offsets in copies.items():
                self._pending.setdefault(group, {}).update(offsets)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="copies-to-kafka", daemon=True
                )
                self._thread.start()
            self._lock.notify_all()

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until everything handed over was committed (or failed); False on timeout.
        A forced sync's answer is written only after this, so it says what Kafka has."""
        with self._lock:
            return self._lock.wait_for(
                lambda: self._closed or (not self._pending and not self._busy), timeout_s
            )

    def close(self, timeout_s: float = 10.0) -> None:
        """No copy is sent after this (a deposed leader's term ended); waits for the one
        in flight, which the producer's epoch fences anyway."""
        with self._lock:
            self._closed = True
            self._pending.clear()
            self._lock.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            with self._lock:
                self._lock.wait_for(lambda: self._closed or bool(self._pending))
                if self._closed:
                    return
                batch, self._pending, self._busy = self._pending, {}, True
            try:
                self._commit(batch)
            except Exception as exc:  # noqa: BLE001 - the thread must outlive one bad batch
                for group in batch:
                    self.report(group, f"offset commit into Kafka failed: {exc}", "kafka")
            finally:
                with self._lock:
                    self._busy = False
                    self._lock.notify_all()

    def _commit(self, copies: Copies) -> None:
        """One transaction for every group; one per group when Kafka refuses it."""
        copies = {g: o for g, o in copies.items() if self.holds(g)}
        if not copies:
            return
        try:
            self.transactions += 1
            self.committer.commit_ahead(copies, "by_mode", keep=self._unowned)
            return
        except KafkaError as exc:
            if isinstance(exc, KafkaCallTimeout) or len(copies) == 1:
                for group in copies:
                    self.report(group, f"offset commit into Kafka failed: {exc}", "kafka")
                return
        for group, offsets in copies.items():  # one group refused: the others go on alone
            try:
                self.transactions += 1
                self.committer.commit_ahead({group: offsets}, "by_mode", keep=self._unowned)
            except KafkaError as exc:
                self.report(group, f"offset commit into Kafka failed: {exc}", "kafka")

    def _unowned(self, copies: Mapping[str, Mapping[TopicPartition, int]]) -> Copies:
        """The copies no Kafka member commits itself now (``unowned``), read right before
        the transaction, under the committer's lock."""
        return unowned(copies, describe_groups(self.admin, sorted(copies)))


def unowned(
    copies: Mapping[str, Mapping[TopicPartition, int]], views: Mapping[str, GroupView]
) -> Copies:
    """Copies of a group only while it is settled, and never of a partition one of its
    Kafka members (not a proxy) holds now (``decide.migration.kafka_writers``, as the tick
    reads them). A copy was decided from a tick's picture and may wait for the transaction
    before it; meanwhile a rebalance (a new member leading: no gate) can give its partition
    to a member, which commits further; a copy appended after that commit would take Kafka
    back (Kafka keeps the later record). A group read with an error is left for later."""
    out: Copies = {}
    for group, offsets in copies.items():
        view = views.get(group)
        writers = None if view is None or view.error else kafka_writers(view, PROXY_CLIENT_ID)
        if writers is None:
            continue
        kept = {tp: o for tp, o in offsets.items() if tp not in writers}
        if kept:
            out[group] = kept
    return out
