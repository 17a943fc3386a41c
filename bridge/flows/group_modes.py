"""The groups flow's storage modes: each group's offset nodes as its mode wants them.

Per tick, from the offsets the decisions ask for, Kafka's offsets and the nodes in
ZooKeeper (``bridge.decide.migration`` decides); the modes of new groups are inferred and
recorded, and the commits Kafka needs returned. A mixin of ``GroupMirrorFlow``, so the
records and the offsets a tick left (for sync answers) stay the flow's own state.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING

from kafka import KafkaAdminClient
from kazoo.client import KazooClient

import zkpaths
from bridge.decide.migration import (
    GroupRecord,
    StorageMode,
    infer_mode,
    kafka_writers,
    offset_nodes,
    offsets_after,
)
from bridge.decide.plan import Node
from bridge.flows.coexist import Coexistence
from bridge.flows.coexist_reads import OffsetsRead
from bridge.flows.kafka_groups import KafkaGroupsReader, KafkaPicture
from bridge.flows.zk_groups import COLD_LIST_EVERY_S
from bridge.kafka.groups import read_groups
from bridge.kafka.proxy import PROXY_CLIENT_ID
from bridge.kafka.views import GroupView
from bridge.metrics import METRICS
from bridge.zookeeper.fence import ShareFence
from bridge.zookeeper.owned import OwnedTree
from bridge.zookeeper.reader import ConsumerTreeReader
from bridge.zookeeper.records import WatchedRecords, create_records
from bridge.zookeeper.writer import FencedWriter
from zkpaths import TopicPartition
from zkpaths.names import parse_id

if TYPE_CHECKING:
    from bridge.flows.decided import Decided


#: seconds at least between two counts of ``zkbridge_groups`` (scraped every 15-60 s)
COUNT_EVERY_S = 1.0


class GroupStorageModes:
    """The storage-mode half of ``GroupMirrorFlow`` (which sets these attributes)."""

    zk: KazooClient
    admin: KafkaAdminClient
    writer: FencedWriter
    reader: ConsumerTreeReader
    root: str
    coexist: Coexistence | None
    kafka: KafkaGroupsReader
    records: dict[str, tuple[GroupRecord, int]]
    watched_records: WatchedRecords
    #: per group a forced sync asks about, (zookeeper, kafka) offsets as this tick left them
    _after: dict[str, dict[TopicPartition, tuple[int, int]]]
    known: Mapping[str, Node]  # each owned (or decided) node as last read
    tree: OwnedTree  # the bridge's nodes, and the watched reader of others (read_fresh)
    shares: ShareFence | None
    _recorded: Callable[[Mapping[str, GroupRecord]], None]  # GroupScope's
    #: what ``_count_modes`` last counted from: the records (the object) and shares held
    _counted: tuple[object, int, frozenset[int] | None] | None = None
    _counted_at = 0.0

    def _stopped_views(self, stopped: set[str], owned: set[str]) -> dict[str, GroupView]:
        """Groups that exist only in ZooKeeper, with offsets old consumers committed and no
        consumer running: the usual start of a migration (stop the old application, move
        its offsets, start the new one). Described in Kafka (Dead: no such group there), so
        the storage mode gets a record and the offsets a Kafka copy like any other group."""
        read = self._zk_offsets(sorted(stopped), owned)
        with_offsets = [g for g in sorted(stopped) if set(read[g][0]) - read[g][1]]
        return read_groups(self.admin, with_offsets) if with_offsets else {}

    def _offsets_by_mode(
        self,
        decided: Decided,
        pic: KafkaPicture,
        wanted: list[str],
        owned: set[str],
        stopped: dict[str, GroupView],
        asked: Collection[str] = (),
    ) -> dict[str, dict[TopicPartition, int]]:
        """Each group's offset nodes as its storage mode wants them (see decide.migration),
        given the offsets the decisions ask for, into ``decided``; returns the commits
        Kafka needs. Infers and records the mode of new groups (``asked``: groups a forced
        sync asks about; then every record is asked of the watches)."""
        # only the changed ones again; during a cold start, listed at most once a second
        every = COLD_LIST_EVERY_S if self.kafka.first_pass() else 0.0
        self.records = self.watched_records.read(bool(asked), every)
        to_kafka: dict[str, dict[TopicPartition, int]] = {}
        mixed = decided.mixed
        groups = sorted((set(wanted) & set(pic.views)) | mixed | set(stopped))
        # every group's nodes in one pipelined read, but the bridge's own offset nodes of
        # kafka-mode groups no one else shares: those are as it last wrote or read them
        mine = {g for g in groups if g not in mixed and self._mode_of(g) is StorageMode.KAFKA}
        topics = pic.partitions.keys()  # not a set copied per group: every topic, each tick
        in_kafka = {
            g: [tp for tp in pic.views[g].offsets if tp.topic in topics]
            for g in mine
            if g in pic.views
        }
        read = self._zk_offsets(groups, owned, mine, mixed, in_kafka)
        inferred: dict[str, StorageMode] = {}
        for g in groups:
            zk_offsets, owned_offsets = read[g]
            mode = self._mode(g, g in mixed, bool(set(zk_offsets) - owned_offsets), pic)
            if g not in self.records:
                inferred[g] = mode
            view = pic.views.get(g) or stopped.get(g)
            kafka, writers = self._kafka_side(g, view)
            plan = offset_nodes(
                g,
                mode,
                zk_offsets,
                owned_offsets,
                kafka,
                decided.suggested.get(g, {}),
                topics,
                writers,
            )
            decided.desired.update(plan.desired)
            if mode is not StorageMode.KAFKA or g in mixed:
                decided.refresh.update(plan.desired)  # consumers write these nodes too
            if plan.to_kafka:
                to_kafka[g] = plan.to_kafka
            if g in asked:  # kept for the answer only: every group's was 100 MB at 1M offsets
                self._after[g] = offsets_after(zk_offsets, kafka, plan)
        self._record_inferred(inferred)
        self._count_modes()
        return to_kafka

    def _count_modes(self) -> None:
        """``zkbridge_groups``: every group this bridge mirrors by its recorded storage
        mode (with shares, the groups of the shares it holds), counted again only when
        the records or the shares held changed, at most every ``COUNT_EVERY_S`` (a cold
        start records groups every tick). Counted from the tick's groups, a tick that
        decided three groups said three, of 10,000."""
        held = frozenset(self.shares.held()) if self.shares is not None else None
        key = (self.records, len(self.records), held)
        last = self._counted
        if last is not None and key[0] is last[0] and key[1:] == last[1:]:
            return
        now = time.monotonic()
        if now - self._counted_at < COUNT_EVERY_S and last is not None:
            return
        self._counted, self._counted_at = key, now
        holds = self.shares.holds_group if self.shares is not None else None
        counts = Counter(r.mode for g, (r, _) in self.records.items() if holds is None or holds(g))
        for mode in StorageMode:
            METRICS.groups_by_mode.labels(mode=mode.value).set(counts[mode])

    def _mode(
        self, g: str, mixed: bool, foreign_zk_offsets: bool, pic: KafkaPicture
    ) -> StorageMode:
        """The group's recorded storage mode, or the one inferred from where its offsets
        are (old consumers, offsets in ZooKeeper the bridge did not write, a Kafka group)."""
        return self._mode_of(g) or infer_mode(mixed, foreign_zk_offsets, g in pic.kinds)

    def _kafka_side(
        self, g: str, view: GroupView | None
    ) -> tuple[dict[TopicPartition, int] | None, set[TopicPartition] | None]:
        """Kafka's offsets of the group (None: unreadable) and the partitions its members
        commit themselves (None: unknown, mid-rebalance or a hand-over pending)."""
        if view is None or view.error:
            return None, None
        if self.coexist is not None and g in self.coexist.pending:
            return dict(view.offsets), None
        return dict(view.offsets), kafka_writers(view, PROXY_CLIENT_ID)

    def _record_inferred(self, inferred: dict[str, StorageMode]) -> None:
        """Record the modes inferred this tick, in batches (not a round trip per group)."""
        if not inferred:
            return
        at_ms = int(time.time() * 1000)
        paging = self.kafka.counts_inferred()  # counted in the pass's lines instead
        made = create_records(self.writer, self.root, inferred, "bridge (inferred)", at_ms, paging)
        if paging:
            self.kafka.inferred(m.mode.value for m in made.values())
        self._recorded(made)

    def _mode_of(self, g: str) -> StorageMode | None:
        entry = self.records.get(g)
        return entry[0].mode if entry is not None else None

    def _rooted(self, groups: list[str]) -> list[str]:
        """Of ``groups``, the ones whose ``/consumers/<g>`` exists (or is known to): a group
        without it has no offset node. A cold start's page is groups not in ZooKeeper yet:
        listing each one's offsets found it absent, then an ``exists`` watch was set on
        it: two more rounds of requests a tick (py-spy at 10,000 x 100: the tick's reads
        were a fifth of its main thread, waiting). The root's answer (absent, behind its
        own ``exists`` watch) is the one the tree's write asks for next anyway."""
        unsure = [zkpaths.consumer_group_path(g) for g in groups]
        unsure = [r for r in unsure if r not in self.known]
        present = self.tree.read_fresh(unsure) if unsure else {}
        absent = set(unsure) - set(present)
        return [g for g in groups if zkpaths.consumer_group_path(g) not in absent]

    def _zk_offsets(
        self,
        groups: list[str],
        owned: set[str],
        mine: set[str] = frozenset(),
        mixed: set[str] = frozenset(),
        in_kafka: Mapping[str, Collection[TopicPartition]] | None = None,
    ) -> dict[str, tuple[dict[TopicPartition, int], set[TopicPartition]]]:
        """Every offset node of each group now (all groups pipelined together, each node
        read again only when its watch fired), and which ones are the bridge's. The
        bridge's own nodes of the groups ``mine`` are taken from ``known`` (its writes
        are conditional on their versions: a node someone else changed fails the write
        and its group is read again; the reconcile's pages verify them all). A ``mixed``
        group's nodes are kept between ticks until a watch below it fires
        (``GroupReads.cached_offsets``): its old consumers commit all the time, but most
        ticks only some of them (decoded again every tick, twenty groups of old
        consumers x 100 partitions were 45 % of the main thread in ``bench.fleet``).
        Groups of ``mine`` with ``in_kafka`` (their partitions Kafka has offsets for) are
        not even listed when the bridge knows them (``_told``)."""

        def known(group: str, path: str) -> tuple[bytes, int] | None:
            node = self.known.get(path) if group in mine and path in owned else None
            return (node.data, node.version) if node is not None else None

        memo = self.coexist.reads if self.coexist is not None else None
        kept: dict[str, OffsetsRead] = {}
        if memo is not None:
            for g in groups:
                if g in mixed and (hit := memo.cached_offsets(g)) is not None:
                    kept[g] = hit
        kept.update(self._told([g for g in groups if g not in kept], owned, mine, in_kafka or {}))
        unread = self._rooted([g for g in groups if g not in kept])
        # listed with the group's offsets dir: the topics of the group's owned nodes
        likely = owned_topic_dirs(unread, self.writer.ledger.owned.of_groups(unread))
        read = self.reader.offsets(dict.fromkeys(unread), known=known, likely=likely)
        read.update({g: {} for g in groups if g not in kept and g not in read})
        for g, nodes in read.items():
            kept[g] = OffsetsRead(
                zkpaths.offset_paths(g, nodes), {tp: n.offset for tp, n in nodes.items()}
            )
            if memo is not None and g in mixed:
                memo.keep_offsets(g, kept[g])
        return {
            g: (r.offsets, {tp for tp, path in r.paths.items() if path in owned})
            for g, r in kept.items()
        }

    def _told(
        self,
        groups: list[str],
        owned: set[str],
        mine: set[str],
        in_kafka: Mapping[str, Collection[TopicPartition]],
    ) -> dict[str, OffsetsRead]:
        """The offset nodes of kafka-mode groups no one shares, without listing them: the
        bridge's own as it last wrote or read them (every one known), and those of the
        partitions Kafka has offsets for but the bridge holds no node of, read exactly
        (another's node there is weighed, as a listing would find it, I2). In kafka mode
        a node of a partition Kafka has no offset for is never written, so it need not be
        seen. A group's first commit after a cold start listed its nodes: at 10,000 groups
        31 % of the commits' tick waited for that (py-spy). A node someone else deleted
        or changed since fails the version-checked write and has its group read again;
        the reconcile's pages verify them all."""
        told = [g for g in groups if g in mine and g in in_kafka]
        ledger = self.writer.ledger.owned
        nodes: dict[str, dict[TopicPartition, str]] = {}
        for g in told:
            nodes[g] = owned_offset_paths(g, (p for p in ledger.of_groups([g]) if p in owned))
        if not any(nodes.values()):
            return {}
        extra = {
            zkpaths.offset_path(g, tp.topic, tp.partition): (g, tp)
            for g in told
            if nodes[g]
            for tp in in_kafka[g]
            if tp not in nodes[g]
        }
        found = self._read_others(sorted(extra)) if extra else {}
        for path in found:
            g, tp = extra[path]
            nodes[g][tp] = path
        out: dict[str, OffsetsRead] = {}
        for g in told:
            offsets = self._known_offsets(nodes[g], found) if nodes[g] else None
            if offsets is not None:
                out[g] = OffsetsRead(nodes[g], offsets)
        return out

    def _read_others(self, paths: list[str]) -> dict[str, Node]:
        """Nodes at paths the bridge holds none of, read now (watched: a change is seen)."""
        return self.tree.read_fresh(paths)

    def _known_offsets(
        self, paths: Mapping[TopicPartition, str], found: Mapping[str, Node]
    ) -> dict[TopicPartition, int] | None:
        """Each node's offset, from ``found`` or what the bridge knows; None when one is
        not known or does not parse (the group is then listed and read as before)."""
        out: dict[TopicPartition, int] = {}
        for tp, path in paths.items():
            node = found.get(path) or self.known.get(path)
            if node is None:
                return None
            try:
                out[tp] = zkpaths.decode_offset(node.data, path=path)
            except zkpaths.ZkLayoutError:
                return None
        return out


def owned_offset_paths(group: str, owned: Iterable[str]) -> dict[TopicPartition, str]:
    """The offset nodes among ``owned`` paths of ``group``, by partition."""
    out: dict[TopicPartition, str] = {}
    for path in owned:
        parts = path.split("/")
        if len(parts) == 6 and parts[3] == "offsets" and parts[2] == group:
            if (partition := parse_id(parts[5])) is not None:
                out[TopicPartition(parts[4], partition)] = path
    return out


def owned_topic_dirs(groups: Iterable[str], owned: Iterable[str]) -> dict[str, set[str]]:
    """Per group of ``groups``, the topics of its offset nodes in ``owned`` (the bridge's
    paths ``/consumers/<g>/offsets/<t>/<p>``)."""
    want = set(groups)
    out: dict[str, set[str]] = {}
    for path in owned:
        parts = path.split("/")
        if len(parts) == 6 and parts[3] == "offsets" and parts[2] in want:
            out.setdefault(parts[2], set()).add(parts[4])
    return out
