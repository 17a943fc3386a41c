"""The groups flow's copies of ZooKeeper offsets into Kafka, committed off the tick's thread.

A zookeeper-mode group's offsets (old consumers commit them into ZooKeeper) go into Kafka
as one of its proxies (the Kafka member standing for an old consumer thread) when it has
one joined: a plain OffsetCommit at the generation the proxy had before the group was read,
so Kafka refuses it if the group rebalanced since, and the proxy's static instance id
fences a deposed bridge's proxy once a successor's took its place. Kafka shows such a
commit when it answers. A group without a joined proxy (coexistence off, or no old
consumer registered) goes in a TxnOffsetCommit, fenced by the producer epoch, shown once
its markers land: AddOffsetsToTxn per group, EndTxn and the wait for the markers made a
copy's cycle two to four times longer (docs/benchmarks.md).

The commits took 0.3-1 s on the tick's thread (bench.fleet), and with them the next tick,
so a commit made meanwhile waited for both. Here the tick hands its copies over and goes
on; one thread commits everything handed over since its last cycle (a later copy of the
same partition replaces an earlier one not sent yet): the proxies' groups first, then one
transaction for the rest and for any group a proxy could not commit, falling back to one
transaction per group when Kafka refuses the batch.

Nothing is lost: a copy that fails is reported and decided again by a later tick, which
reads both stores again (the copies are a function of what the tick read, not a queue of
events). A copy is decided from a picture a moment old and waits here for the transaction
before it: what Kafka has at or past it meanwhile (a member's own commit, the hand-over's
final offsets, a commit as a proxy, all newer) is dropped by the committer's fresh
OffsetFetch under its lock (``OffsetCommitter.commit_ahead``), never committed over (I2).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future

from kafka import KafkaAdminClient
from kafka.errors import KafkaError

from bridge.decide.migration import kafka_writers
from bridge.kafka.calls import KafkaCallTimeout, bounded
from bridge.kafka.commit import OffsetCommitter
from bridge.kafka.groups import describe_groups
from bridge.kafka.own_commits import OwnCommits
from bridge.kafka.proxy import PROXY_CLIENT_ID, ProxyCommit, ProxyMember, commit_each
from bridge.kafka.views import GroupView
from bridge.metrics import METRICS
from zkpaths import TopicPartition

log = logging.getLogger(__name__)

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
        #: with coexistence: a joined proxy of a group to commit its copies as, or None
        self.proxy_for: Callable[[str], ProxyMember | None] = lambda group: None
        #: with coexistence: the partitions a generation of a group gave its proxies
        self.proxy_dealt: Callable[[str, int], frozenset[TopicPartition]] = (
            lambda group, generation: frozenset()
        )
        #: sends the commits as proxies, all at once
        self.commit_as: Callable[[dict[str, ProxyCommit]], dict[str, str | None]] = commit_each
        #: transactions sent and groups committed as a proxy, for tests and metrics
        self.transactions = 0
        self.proxy_commits = 0
        #: a commit as a proxy that outlived its bound; no copy is sent until it ended
        self._unfinished: Future | None = None
        #: what was sent, so that its records in ``__consumer_offsets`` are known as echoes
        self.own = OwnCommits()

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
        """The proxies' groups as their proxies; one transaction for every other group (and
        any a proxy could not commit); one per group when Kafka refuses it."""
        if self._unfinished is not None and not self._unfinished.done():
            # it may still land: a newer copy committed first would be taken back by it
            raise KafkaCallTimeout("the previous commit as a proxy has not finished yet")
        self._unfinished = None
        copies = {g: o for g, o in copies.items() if self.holds(g)}
        proxies = {g: p for g in copies if (p := self.proxy_for(g)) is not None}
        if proxies:
            left = self._commit_as_proxies({g: copies[g] for g in proxies}, proxies)
            copies = {g: o for g, o in copies.items() if g not in proxies or g in left}
        if not copies:
            return
        for group, offsets in copies.items():
            self.own.expect(group, offsets)  # what Kafka has already leaves no record
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

    def _commit_as_proxies(self, copies: Copies, proxies: Mapping[str, ProxyMember]) -> set[str]:
        """Each group's copies as its proxy (``_as_proxies``), all sent at once, under the
        committer's lock as a transaction is. Returns the groups left to a transaction: a
        refused commit (the group moved on, the proxy was stopped) is tried there, under
        the same checks."""
        left: set[str] = set()
        with self.committer.lock:
            commits = self._as_proxies(copies, proxies)
            if not commits:
                return left
            self.proxy_commits += len(commits)
            for group, (_, offsets, _) in commits.items():
                self.own.expect(group, offsets)
            try:  # bounded: the lock is held, and the tick's hand-overs wait for it
                errors = bounded(
                    "OffsetCommit", self.commit_as, commits, timeout_s=self.committer.transaction_s
                )
            except KafkaCallTimeout as exc:
                self._unfinished = exc.pending
                raise
            for group, error in errors.items():
                if error is None:
                    METRICS.kafka_commits.labels(via="proxy").inc()
                    self.committer.committed(group, commits[group][1], "by_mode")
                else:
                    log.debug("copy into %s as its proxy refused (%s)", group, error)
                    left.add(group)
        return left

    def _as_proxies(
        self, copies: Copies, proxies: Mapping[str, ProxyMember]
    ) -> dict[str, ProxyCommit]:
        """The commits to make as proxies, at the generation each proxy had before its group
        was read. A partition that generation gave one of the group's proxies is held by no
        Kafka member while it lasts, and Kafka refuses a commit at it once the group moved
        on: its copy needs no DescribeGroups (``_unowned``), only Kafka's offset (``ahead``,
        which drops what Kafka has at or past). Hold the committer's lock."""
        at = {g: p.identity()[:2] for g, p in proxies.items()}
        wanted: Copies = {}
        rest: Copies = {}
        for group in proxies:
            dealt = self.proxy_dealt(group, at[group][1])
            for tp, offset in copies[group].items():
                (wanted if tp in dealt else rest).setdefault(group, {})[tp] = offset
        for group, offsets in self._unowned(rest).items():
            wanted[group] = {**wanted.get(group, {}), **offsets}
        return {
            g: (proxies[g], offsets, at[g]) for g, offsets in self.committer.ahead(wanted).items()
        }

    def _unowned(self, copies: Mapping[str, Mapping[TopicPartition, int]]) -> Copies:
        """The copies no Kafka member commits itself now (``unowned``), read right before
        the transaction, under the committer's lock."""
        if not copies:
            return {}
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
