"""Flows F2/F3: Kafka consumer groups and their offsets → ``/consumers/<g>`` in ZooKeeper.

Each tick: list and describe the groups (one batched OffsetFetch per coordinator), read
which consumer ids are registered under each group's ``/ids``, let ``decide_group`` say what
the tree should be, and write only the difference as fenced batches.

With a follower of ``__consumer_offsets`` (``bridge.kafka.offsets_log``) the group APIs are
asked only about the groups whose records say they changed (and in full at each resync, the
safety net); docs/concepts.md says why nothing is missed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from kafka import KafkaAdminClient
from kafka.errors import KafkaError
from kazoo.client import KazooClient

import zkpaths
from bridge.config import StormSpout
from bridge.decide.dialects import pykafka_members, pykafka_refusal, stand_aside
from bridge.decide.groups import (
    SCOPE,
    OnGroupDeleted,
    decide_deleted_group,
    decide_group,
    frozen,
    group_paths,
    legacy_members,
    next_gen_refusal,
)
from bridge.decide.known import KnownNodes
from bridge.decide.migration import GroupRecord, StorageMode
from bridge.flows.coexist import Coexistence
from bridge.flows.coexist_reads import GroupReads
from bridge.flows.decided import Decided, ZkPicture
from bridge.flows.group_modes import GroupStorageModes
from bridge.flows.group_scope import GroupScope
from bridge.flows.kafka_groups import KafkaGroupsReader, KafkaPicture
from bridge.flows.log_ahead import LATE_RETRY_S
from bridge.flows.paging import pages
from bridge.flows.phases import TickPhases
from bridge.flows.settled import SettledGroups
from bridge.flows.storm import StormSpouts
from bridge.flows.to_kafka import CopiesToKafka
from bridge.flows.zk_groups import ZkGroups
from bridge.kafka.commit import OffsetCommitter
from bridge.kafka.groups import GroupFilter
from bridge.kafka.offsets_log import OffsetsLogFollower
from bridge.kafka.proxy import PROXY_CLIENT_ID
from bridge.kafka.views import GroupView
from bridge.metrics import METRICS
from bridge.zookeeper import sync
from bridge.zookeeper.fence import ShareFence
from bridge.zookeeper.owned import OwnedTree
from bridge.zookeeper.reader import ConsumerTreeReader, NodeProblem
from bridge.zookeeper.records import WatchedRecords
from bridge.zookeeper.watched import WatchedChildren, WatchedData
from bridge.zookeeper.writer import FencedWriter
from zkpaths import TopicPartition

log = logging.getLogger(__name__)

#: how often a resync also forgets every answer the watched caches hold (read again, a
#: batch a tick): the net for a watch lost any other way (a lost connection drops them at
#: once). At every resync (60 s) that was 30,000 reads a minute at 10,000 groups, a third
#: of the main thread, and each tick of the batches 200-300 ms longer
FORGET_EVERY_S = 600.0
#: between ticks, the follower is polled this long at a time, so a wake (a watch, a stop)
#: set meanwhile is seen within it (a watch wakes a tick: an old consumer joined or committed)
RECORDS_SLICE_S = 0.005


class GroupMirrorFlow(GroupStorageModes, GroupScope):
    name = "groups"

    def __init__(
        self,
        zk: KazooClient,
        admin: KafkaAdminClient,
        writer: FencedWriter,
        group_filter: GroupFilter,
        on_deleted: OnGroupDeleted = OnGroupDeleted.KEEP_OFFSETS,
        coexistence: Coexistence | None = None,
        full_interval_s: float = 1.0,
        committer: OffsetCommitter | None = None,
        root: str = "/kafka-zk-bridge",
        storm_spouts: Sequence[StormSpout] = (),
        follower: OffsetsLogFollower | None = None,
        shares: ShareFence | None = None,
    ) -> None:
        self.zk = zk
        self.admin = admin
        self.writer = writer
        # a storm spout's group is reconciled by bridge.flows.storm, never mirrored here
        spout_groups = {s.group for s in storm_spouts}
        self.filter = lambda g: (
            g not in spout_groups and group_filter(g) and (shares is None or shares.holds_group(g))
        )
        self.shares = shares
        self._shares_seen = -1  # the shares' generation this flow last reconciled
        self.on_deleted = on_deleted
        self.coexist = coexistence
        if coexistence is not None:
            coexistence.report = self._report_once
        self.tree = OwnedTree(zk, writer, SCOPE, self._report_once)
        self.full_interval_s = full_interval_s
        self.committer = committer
        self.root = root
        self.records: dict[str, tuple[GroupRecord, int]] = {}
        #: per group, (zookeeper, kafka) offsets per partition as the last tick left them
        self._after: dict[str, dict[TopicPartition, tuple[int, int]]] = {}
        self._reported: set[str] = set()
        #: the last decision per group, for the CLI and tests: reason or None
        self.skipped: dict[str, str] = {}
        #: groups whose ZooKeeper consumers' dialects cannot share them (decide.dialects)
        self.refused: dict[str, str] = {}
        #: called when a watch says someone else changed the tree: the service runs the
        #: tick at once instead of at the next poll (an old consumer's commit, a join)
        self.wake: Callable[[], None] | None = None
        #: set by the service: a tick's writes land while the next tick reads (``_write``)
        self.overlap_writes = False
        self.follower = follower
        self._wire_readers(storm_spouts)
        #: groups naming a topic not (yet) in the picture's topics: decided every tick
        self._topic_unknown: set[str] = set()
        self._quiet: set[str] = set()  # mixed groups left alone this tick (GroupScope)
        self.kafka = KafkaGroupsReader(admin, self.filter, follower, coexistence, full_interval_s)
        self.kafka.offsets_only = self._offsets_only
        #: groups whose decision cannot change until their view, nodes or topics do
        self.settled = SettledGroups()
        self.zk_groups = ZkGroups(self.reader, self.watched, self.filter)
        self._modes_of: object = None  # the records _not_kafka_mode last derived from
        self._modes_n = 0
        self._others: set[str] = set()

    def _wire_readers(self, storm_spouts: Sequence[StormSpout]) -> None:
        """The flow's ZooKeeper readers, all behind the same watches, and the helpers that
        share them: mixed groups, storm spouts, the copies into Kafka."""
        #: every list and node the flow reads, read again only when its watch fired: a
        #: tick reads the offset nodes committed since the last one, not every node
        self.watched = WatchedChildren(self.zk, on_change=self._changed)
        self.watched_data = WatchedData(self.zk, on_change=self._changed)
        # a node someone else changed is read again at once (an old consumer's commit)
        self.watched_data.refresh = lambda path: path not in self.writer.ledger.owned
        self._forgot_at = float("-inf")  # when the resync last forgot their answers
        self.reader = ConsumerTreeReader(
            self.zk, report=self._bad_node, watched=self.watched, watched_data=self.watched_data
        )
        self.tree.read_fresh = self.watched_data.nodes
        self.watched_records = WatchedRecords(self.root, self.watched, self.watched_data)
        if self.coexist is not None:
            self.coexist.reader = self.reader  # mixed groups read through the same watches
            self.coexist.reads = GroupReads(self.watched, self.watched_data)
        self.storm = StormSpouts(
            storm_spouts,
            self.reader,
            self.admin,
            self.writer,
            self.committer,
            self.root,
            self._report_once,
            interval_s=self.full_interval_s,
        )
        self.copies = (
            CopiesToKafka(self.admin, self.committer, self._report_once)
            if self.committer is not None
            else None
        )
        if self.copies is not None and self.shares is not None:
            self.copies.holds = self.shares.holds_group
        if self.copies is not None and self.follower is not None:
            self.follower.own = self.copies.own  # the copies' records are echoes
        if self.copies is not None and self.coexist is not None:
            self.copies.proxy_for = self.coexist.committing_proxy
            self.copies.proxy_dealt = self.coexist.dealt_to_proxies
        if self.coexist is not None and self.shares is not None:
            shares, coexist = self.shares, self.coexist
            shares.on_release.append(lambda _: coexist.forget(shares.holds_group))

    def owned(self) -> set[str]:
        return self.tree.owned(self.shares.holds_group if self.shares is not None else None)

    def _offsets_only(self, group: str) -> bool:
        """Whether a commit alone may be read with OffsetFetch and the group's last
        description: a kafka-mode group no old consumer shares, whose nodes are the
        mirror of its offsets and assignment (a state or member change comes with its
        own record, and the group is then described again)."""
        shared = self.coexist is not None and group in self.coexist.groups()
        return self._mode_of(group) is StorageMode.KAFKA and not shared

    def _holds(self, group: str) -> bool:
        """Whether this bridge mirrors ``group`` now: every group, or its share's."""
        return self.shares is None or self.shares.holds_group(group)

    @property
    def known(self) -> KnownNodes:
        """Each owned (or decided) node as last read: what plans are made against."""
        return self.tree.known

    def resync(self) -> None:
        """The safety net: Kafka's side in full (with a follower), ZooKeeper's owned tree
        in full once per term and then verified a page per tick (:class:`OwnedTree`), and
        every ``FORGET_EVERY_S`` the watched caches read again."""
        if time.monotonic() - self._forgot_at >= FORGET_EVERY_S:
            self._forgot_at = time.monotonic()
            self.watched.expire()  # the safety net for a watch lost any other way
            self.watched_data.expire()
        self.settled.mixed.clear()  # every mixed group decided again once
        if self.follower is not None and not self.kafka.resync():
            log.info("resync deferred: the reconcile under way is not finished")
        held = self.shares.holds_group if self.shares is not None else None
        if not self.tree.resync(pages, held):
            log.info("verification deferred: the one under way is not finished")

    def tick(self) -> int:
        """Mirror once; returns the number of znode writes made. Read Kafka's groups and
        ZooKeeper's consumer tree, decide each group (pure), plan the difference and hand
        it to the fenced writer, then the commits Kafka needs, storm's spouts and the
        answers to sync requests."""
        # sync requests are answered at the end of the tick that began after them, so a
        # report always reflects a state read after it was asked for
        phases = TickPhases(self.name)
        requests = sync.pending_requests(self.zk, self.root, (self.watched, self.watched_data))
        if self.shares is not None:
            requests = self._follow_shares(requests)
            if not self.shares.held():
                return 0  # no share dealt to this bridge (yet): nothing of its to mirror
        self.watched.expire_some()  # the resync's net, paced
        self.watched_data.expire_some()
        phases.mark("requests")
        if not self.kafka.first_pass():
            # a cold start's pages read and write their groups themselves; verifying others
            # too (10,000 groups) took 70 % of the main thread, the reconcile sixfold slower
            self.tree.verify_page()
        self.settled.drifted(self.tree.take_drifted())
        phases.mark("verify")
        if self.follower is not None:
            self.kafka.dirty |= set(requests)  # the groups asked about are read again for it
            self.kafka.reshaped |= set(requests)
        pic = self.kafka.read()
        phases.mark("kafka")
        self.settled.topics(pic.partitions)
        tree = self._zk_picture(pic, requests)
        phases.mark("zookeeper")
        self.settled.deciding(tree.wanted if tree.scope is None else tree.scope)
        decided = self._decide(pic, tree)
        self._keep_outcomes(decided, tree.scope)
        wanted = [g for g in tree.wanted if g not in decided.aside]
        stopped = self._stopped_views(decided.stopped, tree.owned)
        phases.mark("decide")
        to_kafka = self._offsets_by_mode(decided, pic, wanted, tree.owned, stopped, set(requests))
        phases.mark("modes")
        written = self._write(decided, tree, bool(requests))
        phases.mark("write")
        self.settled.written(self._settled_now(decided))
        self.settled.mixed_written(self._quiet_now(decided, pic, to_kafka))
        self.settled.drifted(self.tree.take_drifted())  # a write refused: due again
        METRICS.writes.labels(flow=self.name).inc(written)
        if self.copies is not None:
            self.copies.submit(to_kafka)  # committed off this thread (flows.to_kafka)
            if requests:  # a forced sync's answer says what Kafka has: the copies first
                self.copies.wait_idle(self.copies.committer.visible_within_s * 2)
        for g, after in self.storm.tick(self.records, set(requests)).items():
            if after is None:
                self._after.pop(g, None)  # not answered from this tick
            else:
                self._after[g] = after
        self._answer_sync_requests(requests)
        phases.mark("answer")
        return written

    def await_records(self, timeout_s: float, woken: threading.Event) -> bool:
        """The service's wait between ticks: up to ``timeout_s``, until ``woken`` (a watch,
        a stop) or records of ``__consumer_offsets`` naming a group arrive, which the next
        tick then reads (or takes: ``flows.read_marks``). True when records arrived: the
        tick runs now, not at its poll (a commit waited up to ``poll_interval_s`` for the
        next tick to see it). The follower is polled on this thread, as in a tick; with
        shares it is the service's plain wait (a poll there may join the bridges' group,
        which takes seconds). A group read
        behind its own records (``flows.log_ahead``) makes the tick run within
        ``LATE_RETRY_S``."""
        follower = self.follower
        late = self.kafka.ahead.waiting()  # a group read behind its records: again soon
        if follower is None or self.shares is not None or not follower.assigned:
            woken.wait(min(timeout_s, LATE_RETRY_S) if late else timeout_s)
            return late
        deadline = time.monotonic() + (min(timeout_s, LATE_RETRY_S) if late else timeout_s)
        while not woken.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return late
            try:
                changed = follower.changed_groups(int(min(left, RECORDS_SLICE_S) * 1000) or 1)
            except KafkaError:  # the tick's own poll meets it too, and reports it there
                woken.wait(left)
                return False
            if changed or follower.direct_groups():  # or commits taken as they are
                self.kafka.dirty |= changed
                return True
        return False

    def _zk_picture(self, pic: KafkaPicture, requests: dict[str, tuple[str, int]]) -> ZkPicture:
        """ZooKeeper's side of this tick: the groups under ``/consumers``, the ones the
        bridge has nodes of, who is registered, cut to the tick's scope (``_scope``); what
        is derived from every group is derived again only when it changed (``ZkGroups``)."""
        ledger = self.writer.ledger.owned  # every owned path, indexed by group
        groups = ledger.groups()
        mirrored = set(groups) if self.shares is None else {g for g in groups if self._holds(g)}
        zk_groups, zk_set = self.zk_groups.listed(cold=self.kafka.first_pass())
        if requests or self.zk_groups.derives():
            self.tree.land()  # who is an old consumer is derived from every write landed
            mirrored |= {g for g in ledger.groups() if self._holds(g)}
        scope = self._scope(pic, zk_set, mirrored, ledger, requests)
        self.tree.ensure(set(self.tree.pending) if scope is None else scope)
        # a group being deleted still answers for a moment, as Dead and without offsets
        dead = set(pic.dead)
        if scope is None:
            wanted = [g for g in pic.wanted if g not in dead]
            owned = self.owned()
        else:  # with a follower: groups that may have changed, and a page
            dead &= scope
            wanted = sorted((scope & pic.wanted_set) - dead)
            zk_groups = sorted(scope & zk_set)
            mirrored &= scope
            owned = self.tree.of_groups(g for g in scope if self._holds(g))
        # only groups under /consumers can have an /ids (a Kafka group not mirrored yet has
        # none: asking would be a NoNode read, never cached, per group and tick)
        registered = self.reader.consumer_ids(sorted(mirrored | set(zk_groups)))
        return ZkPicture(wanted, dead, zk_groups, mirrored, registered, owned, scope)

    def _decide(self, pic: KafkaPicture, tree: ZkPicture) -> Decided:
        """Every group's decision: what its nodes should be, the offsets it asks for."""
        decided = Decided()
        now = int(time.time() * 1000)
        for g in sorted(set(tree.wanted) | set(tree.zk_groups)):
            self._decide_group(g, pic, tree, decided, now)
        if self.coexist is not None:
            # a mixed group left alone this tick (quiet: flows.settled) keeps its proxies
            for g in self.coexist.groups() - decided.mixed - pic.unread - self._quiet:
                self.coexist.ensure_proxies(g, {})  # old consumers gone: proxies leave
            if self.coexist.reads is not None:
                self.coexist.reads.retain(decided.mixed | self._quiet)
        for g in tree.mirrored - set(tree.wanted) - decided.mixed - set(decided.aside):
            # the group's own owned nodes, from the ledger's index: a scan of the tick's
            # owned set per deleted group was 4 % of the main thread at 10,000 groups
            mine = self.tree.of_groups([g])
            decided.desired.update(decide_deleted_group(g, self.known, mine, self.on_deleted))
        return decided

    def _decide_group(
        self, g: str, pic: KafkaPicture, tree: ZkPicture, decided: Decided, now: int
    ) -> None:
        """One group: refused (dialects), shared with old consumers (coexistence), stopped
        (only in ZooKeeper), or a Kafka group mirrored (decide_group)."""
        view = pic.views.get(g)
        legacy = legacy_members(g, tree.registered.get(g, []), tree.owned)
        legacy, refusal = self._dialects(g, legacy, view)
        # without proxies old consumers cannot share a next-generation group
        refusal = refusal or (next_gen_refusal(view, legacy) if self.coexist is None else None)
        if refusal:
            decided.aside[g] = refusal
            decided.desired.update(stand_aside(g, self.known, self.tree.of_groups([g])))
        elif legacy and self.coexist is not None and g not in tree.dead:
            self._decide_mixed(self.coexist, g, legacy, pic, tree.owned, decided, now)
        elif g not in pic.kinds and g in tree.zk_groups and not legacy:
            decided.stopped.add(g)  # its offsets still migrate: see _stopped_views
        elif g not in pic.kinds or g in tree.dead:
            return
        elif view is None:
            decided.skipped[g] = f"protocol type {pic.kinds[g]!r} is not 'consumer'"
        else:
            decision = decide_group(view, self.known, tree.owned, legacy, pic.partitions, now)
            decided.desired.update(decision.desired)
            decided.suggested[g] = decision.offsets
            if decision.skipped:
                decided.skipped[g] = decision.skipped
            for problem in decision.problems:
                self._report_once(g, problem, "partial")

    def _decide_mixed(
        self,
        coexist: Coexistence,
        g: str,
        legacy: list[str],
        pic: KafkaPicture,
        owned: set[str],
        decided: Decided,
        now: int,
    ) -> None:
        """A group with old consumers registered: the coexistence decides it (proxies,
        hand-over), or its nodes stay as they are."""
        decided.mixed.add(g)
        view = pic.views.get(g)
        state, threads = coexist.read_state(g, legacy, owned, pic.partitions)
        coexist.ensure_proxies(g, threads, state)
        refused = coexist.refusal(g, view)
        if refused:
            self._report_once(g, refused, "refused")
        decision = coexist.decide(g, view, state, pic.partitions, self.known, now)
        mine = self.tree.of_groups([g])
        desired = (decision.desired if decision else {}) or frozen(g, self.known, mine)
        decided.suggested[g] = decision.offsets if decision else {}
        decided.desired.update(desired)
        decided.refresh.update(desired)  # old consumers change these nodes all the time

    def _keep_outcomes(self, decided: Decided, scope: set[str] | None) -> None:
        """Report and keep the groups not mirrored and the ones refused (for the CLI); a
        group outside this tick's scope keeps what its last decision said."""
        for g, reason in decided.skipped.items():
            if self.skipped.get(g) != reason:
                self._report_once(g, f"not mirrored: {reason}", "skipped")
        for g, reason in decided.aside.items():
            self._report_once(g, reason, "dialect")
        skipped, aside = decided.skipped, decided.aside
        if scope is not None:
            skipped = {g: r for g, r in self.skipped.items() if g not in scope} | skipped
            aside = {g: r for g, r in self.refused.items() if g not in scope} | aside
        self.skipped = skipped
        self.refused = aside

    def _write(self, decided: Decided, tree: ZkPicture, asked: bool = False) -> int:
        """The difference between the desired and the current nodes, applied fenced; a
        cold start's page lands while the next one is decided (``OwnedTree.land``), and
        with ``overlap_writes`` any tick's writes land while the next tick reads Kafka
        (the write phase was 22.7 s of 60 s of commits at 10,000 groups, most of it the
        wait for ZooKeeper's answers); but
        not when a forced sync is answered this tick (``asked``: its answer says what
        this tick's writes reached)."""
        first = self.kafka.first_pass()
        defer = tree.scope is not None and (first or self.overlap_writes) and not asked
        if defer and first:  # the next page's groups asked first, answered before these
            roots = map(zkpaths.consumer_group_path, self.kafka.next_page())
            self.watched_data.watch_ahead([r for r in roots if r not in self.known])
        return self.tree.write(decided.desired, decided.refresh, tree.owned, tree.scope, defer)

    def _dialects(
        self, group: str, legacy: list[str], view: GroupView | None
    ) -> tuple[list[str], str | None]:
        """The old consumers to proxy (not pykafka's: they balance on their own and commit
        to Kafka), and why the group is refused (decide.dialects)."""
        members = self.reader.members(group, legacy) if legacy else {}
        if not (pyk := pykafka_members(members)):
            return legacy, None
        ms = view.members if view is not None and not view.error else ()
        clients = {m.member_id: m.client_id for m in ms if m.client_id != PROXY_CLIENT_ID}
        return [c for c in legacy if c not in pyk], pykafka_refusal(group, members, clients)

    def _answer_sync_requests(self, requests: dict[str, tuple[str, int]]) -> None:
        """``zk-bridge migrate`` asks for a forced sync: answer with both stores' offsets as
        this tick left them, so its gate judges a state the bridge actually reached."""
        for g, request in requests.items():
            if (after := self._after.pop(g, None)) is not None:  # from this tick only
                sync.answer(self.writer, self.root, g, request, after)

    def close(self) -> None:
        """The term ended: no copy into Kafka is sent after this, no page read started."""
        self.kafka.close()
        self.tree.close()
        if self.copies is not None:
            self.copies.close()

    def _changed(self, path: str) -> None:
        """A watch fired: wake the tick unless the node is the bridge's own (its own write;
        "" is a lost connection, after which everything is read again)."""
        if self.wake is not None and path not in self.writer.ledger.owned:
            self.wake()

    def _bad_node(self, problem: NodeProblem) -> None:
        self._report_once(problem.path, f"bad node left alone: {problem.reason}", "bad_node")

    def _report_once(self, subject: str, message: str, kind: str) -> None:
        key = f"{subject}:{message}"
        if key in self._reported:
            return
        self._reported.add(key)
        METRICS.node_problems.labels(flow=self.name, kind=kind).inc()
        log.warning("%s", message, extra={"group" if "/" not in subject else "node": subject})


__all__ = ["GroupMirrorFlow", "group_paths"]
