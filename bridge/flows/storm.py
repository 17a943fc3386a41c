"""storm-kafka spouts named in ``[storm]``: their offsets reconciled with their Kafka group.

Called by the groups flow each tick, so a spout's group has a storage-mode record, answers
``zk-bridge migrate``'s forced sync and moves between modes like any other group; only its
ZooKeeper store is the spout's own ``partition_<n>`` nodes (read through the one reader,
written fenced and conditional on the version read, never deleted: they are the spout's).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Sequence

from kafka import KafkaAdminClient
from kafka.errors import KafkaError

from bridge.config import StormSpout
from bridge.decide.migration import GroupRecord, infer_mode
from bridge.decide.plan import Create, SetData
from bridge.decide.storm import spout_plan
from bridge.kafka.cluster import partition_leaders
from bridge.kafka.commit import OffsetCommitter
from bridge.kafka.groups import read_groups
from bridge.kafka.views import GroupView
from bridge.zookeeper.reader import ConsumerTreeReader
from bridge.zookeeper.records import create_record
from bridge.zookeeper.writer import BatchRejected, FencedWriter, missing_parents
from zkpaths import TopicPartition

log = logging.getLogger(__name__)

After = dict[TopicPartition, tuple[int, int]]
Report = Callable[[str, str, str], None]


class StormSpouts:
    """The spouts of the config, one reconcile per tick."""

    def __init__(
        self,
        spouts: Sequence[StormSpout],
        reader: ConsumerTreeReader,
        admin: KafkaAdminClient,
        writer: FencedWriter,
        committer: OffsetCommitter | None,
        root: str,
        report: Report,
        interval_s: float = 1.0,
    ) -> None:
        """``interval_s``: how often each spout is reconciled (a spout commits every
        ``stateUpdateIntervalMs``, 2 s by default), sooner when a sync asks for its group."""
        self.spouts = list(spouts)
        self.reader, self.admin, self.writer = reader, admin, writer
        self.committer, self.root, self.report = committer, root, report
        self.interval_s = interval_s
        self._last: dict[str, float] = {}

    def tick(
        self, records: dict[str, tuple[GroupRecord, int]], asked: Collection[str] = ()
    ) -> dict[str, After | None]:
        """Reconcile the spouts that are due (or ``asked`` about by a forced sync); per
        group the offsets as this tick left them, None where this tick could not write (the
        spout committed meanwhile): no sync is answered from it."""
        now = time.monotonic()
        due = [
            s
            for s in self.spouts
            if s.group in asked or now - self._last.get(s.group, -1e9) >= self.interval_s
        ]
        if not due:
            return {}
        views = read_groups(self.admin, [s.group for s in due])
        out: dict[str, After | None] = {}
        for s in due:
            self._last[s.group] = now
            out[s.group] = self._one(s, views.get(s.group), records)
        return out

    def _one(
        self, spout: StormSpout, view: GroupView | None, records: dict[str, tuple[GroupRecord, int]]
    ) -> After | None:
        g = spout.group
        nodes = self.reader.spout_offsets(spout.zk_root, spout.spout_id, spout.topic)
        kafka: dict[TopicPartition, int] | None = None
        writers: set[TopicPartition] | None = None
        if view is not None and not view.error:
            kafka = {tp: o for tp, o in view.offsets.items() if tp.topic == spout.topic}
            if view.state in ("Stable", "Empty", "Dead"):
                writers = {
                    TopicPartition(t, p)
                    for m in view.members
                    for t, ps in (m.assignment or {}).items()
                    for p in ps
                }
        entry = records.get(g)
        if entry is None:
            if not nodes and not kafka:
                return {}  # nothing to reconcile yet: no record either
            mode = infer_mode(False, bool(nodes), bool(view and view.state != "Dead"))
            record = create_record(self.writer, self.root, g, mode, "bridge (storm spout)", _ms())
            records[g] = (record, 0)
        else:
            mode = entry[0].mode
        decoded = {tp: (n.data, n.version) for tp, n in nodes.items() if n.data is not None}
        bad = {tp for tp, n in nodes.items() if n.data is None}
        spout_at = (spout.zk_root, spout.spout_id)
        plan = spout_plan(mode, spout_at, decoded, kafka, writers, {}, bad)
        if plan.writes:
            try:
                leaders = partition_leaders(self.admin, [spout.topic])
            except KafkaError:
                leaders = {}
            plan = spout_plan(mode, spout_at, decoded, kafka, writers, leaders, bad)
            if not self._write(g, plan.writes):
                return None
        if plan.to_kafka and self.committer is not None:
            try:
                self.committer.commit_ahead({g: plan.to_kafka}, "by_mode")
            except KafkaError as exc:
                self.report(g, f"offset commit into Kafka failed: {exc}", "kafka")
        return plan.after

    def _write(self, group: str, writes) -> bool:
        """One fenced transaction: sets at the version read, creates of absent nodes."""
        created = [w.path for w in writes if w.version is None]
        ops: list = [*missing_parents(self.writer.client, created)] if created else []
        for w in writes:
            op = Create(w.path, w.data) if w.version is None else SetData(w.path, w.data, w.version)
            ops.append(op)
        try:
            self.writer.apply_own(ops)
        except BatchRejected as exc:
            log.info("storm spout offsets changed while writing (%s)", exc, extra={"group": group})
            return False
        return True


def _ms() -> int:
    return int(time.time() * 1000)
