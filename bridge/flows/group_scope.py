"""Which groups a tick of the groups flow reconciles, with a follower of
``__consumer_offsets``: the ones that may have changed, not every group.

The groups the group APIs were just asked about (records named them, a forced sync, the
page of a pass under way) but those found as they were last written (``settled``), and
the groups whose nodes someone else writes every moment (old consumers registered, a
storage mode other than kafka, groups only in ZooKeeper, proxies) or that are being
deleted. At 10,000 groups every set here is derived again only when its inputs changed
(``flows.zk_groups``, ``flows.settled``). With shares, the groups of the shares held, and
the ones taken over read again. A mixin of ``GroupMirrorFlow``, whose state it
reads.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

from bridge.decide.migration import GroupRecord, StorageMode
from bridge.decide.shares import share_of_group
from bridge.flows.coexist import Coexistence
from bridge.flows.kafka_groups import KafkaGroupsReader, KafkaPicture
from bridge.flows.settled import SettledGroups
from bridge.flows.zk_groups import ZkGroups
from bridge.kafka.offsets_log import OffsetsLogFollower
from bridge.zookeeper.fence import ShareFence
from bridge.zookeeper.owned import OwnedTree

if TYPE_CHECKING:
    from bridge.flows.decided import Decided


class GroupScope:
    """The scope half of ``GroupMirrorFlow`` (which sets these attributes)."""

    follower: OffsetsLogFollower | None
    kafka: KafkaGroupsReader
    coexist: Coexistence | None
    settled: SettledGroups
    zk_groups: ZkGroups
    records: dict[str, tuple[GroupRecord, int]]
    #: groups naming a topic not (yet) in the picture's topics: decided every tick
    _topic_unknown: set[str]
    #: mixed groups left alone in this tick (``_quiet_mixed``)
    _quiet: set[str]
    _modes_of: object
    _modes_n: int
    _others: set[str]
    _mode_of: Callable[[str], StorageMode | None]  # GroupStorageModes'
    shares: ShareFence | None
    _shares_seen: int  # the shares' generation this flow last reconciled
    tree: OwnedTree
    resync: Callable[[], None]  # the flow's

    def _scope(
        self,
        pic: KafkaPicture,
        zk_groups: AbstractSet[str],
        mirrored: set[str],
        owned: AbstractSet[str],
        requests: dict[str, tuple[str, int]],
    ) -> set[str] | None:
        """The groups this tick reconciles; None (every group) without a follower.

        With one: the groups the group APIs were just asked about, those whose nodes
        someone else writes every moment (old consumers registered, a storage mode other
        than kafka, groups only in ZooKeeper, proxies; but the mixed groups found quiet:
        ``_quiet_mixed``), deleted groups, groups a forced sync asks about; and the page
        of the pass under way (read this tick, with the others in ``reread_now``)."""
        self._quiet = set()
        if self.follower is None or not self.follower.assigned:
            return None
        mixed = self.zk_groups.with_old_consumers(owned, fresh=bool(requests))
        if self.coexist is not None:
            mixed = mixed | self.coexist.groups()
        # read again and found as they were, and decided and written so since: skipped
        same = self.settled.unchanged(self.kafka.same_view) | self._quiet_mixed(mixed, pic)
        active = (self.kafka.reread_now | set(self.kafka.page_now)) - same
        active |= set(requests) | self.settled.take_due()
        active |= (mirrored - pic.wanted_set) | (mirrored & pic.dead)  # being deleted
        active |= zk_groups - pic.kinds.keys()
        active |= (mixed | self._not_kafka_mode()) - self._quiet
        # a group listed but not read yet (a cold start's pass) is read in the next tick,
        # and decided then: undescribed, a group read as one with no members (its proxies
        # would leave)
        if unread := active & pic.unread:
            self.kafka.dirty |= unread
            self.kafka.reshaped |= unread
            active -= unread
        # a topic created a moment ago may not be in the topics read yet: such a group is
        # decided again each tick until it is (topics are read every full_interval_s), and
        # once more in the tick its topics became known (else it waited for the next event
        # or reconcile, seen under load as an offset never mirrored)
        before = self._topic_unknown
        self._topic_unknown = {g for g in before | active if pic.unknown_topics(pic.views.get(g))}
        scope = active | before | self._topic_unknown
        self._quiet -= scope  # a forced sync, a due group: decided all the same
        return scope

    def _quiet_mixed(self, mixed: set[str], pic: KafkaPicture) -> set[str]:
        """The mixed groups left alone this tick (``flows.settled``), kept in ``_quiet``:
        their ZooKeeper side unchanged (``GroupReads.unchanged``, asked every tick so
        that a change is never carried over a tick), at rest, and written in full on the
        view and record they have now. A forced sync or a due group is decided anyway."""
        reads = self.coexist.reads if self.coexist is not None else None
        if reads is None:
            return set()
        assert self.coexist is not None
        unchanged = reads.unchanged(mixed)
        candidates = self.coexist.at_rest(unchanged & self.settled.mixed.keys())
        self._quiet = self.settled.quiet_mixed(candidates, pic.views, self.records)
        return self._quiet

    def _quiet_now(
        self, decided: Decided, pic: KafkaPicture, to_kafka: Collection[str]
    ) -> dict[str, tuple[object, object]]:
        """The mixed groups this tick decided that may be left alone while what their
        decision read stands: described without error, mirrored on known topics, at rest,
        and with nothing to copy into Kafka (a copy may fail: it is decided again until
        Kafka shows it)."""
        if self.coexist is None or self.coexist.reads is None:
            return {}
        done = {
            g
            for g in decided.mixed
            if g not in to_kafka
            and g not in decided.skipped
            and g not in decided.aside
            and g not in self._topic_unknown
            and (view := pic.views.get(g)) is not None
            and not view.error
        }
        return {g: (pic.views[g], self.records.get(g)) for g in self.coexist.at_rest(done)}

    def _not_kafka_mode(self) -> set[str]:
        """The groups recorded in a storage mode other than kafka (derived again when the
        records were read again: every tick at 10,000 groups was 1 % of the main thread)."""
        # the records inferred in a tick are added to the same dict: its size says so
        if self.records is not self._modes_of or len(self.records) != self._modes_n:
            self._modes_of, self._modes_n = self.records, len(self.records)
            self._others = {
                g for g, (r, _) in self.records.items() if r.mode is not StorageMode.KAFKA
            }
        return self._others

    def _recorded(self, made: Mapping[str, GroupRecord]) -> None:
        """Records just made for new groups join ``records``; the set of groups not in
        kafka mode is kept in step (derived again from 10,000 records each tick of a
        cold start, which records groups in every tick, it was 4 % of the main thread)."""
        in_step = self.records is self._modes_of and len(self.records) == self._modes_n
        fresh = made.keys() - self.records.keys()
        self.records.update({g: (record, 0) for g, record in made.items()})
        if in_step and len(fresh) == len(made):
            self._others |= {g for g, r in made.items() if r.mode is not StorageMode.KAFKA}
            self._modes_n = len(self.records)
        else:  # a record replaced in place: derived again at the next ask
            self._modes_of = None

    def _settled_now(self, decided: Decided) -> set[str]:
        """The kafka-mode groups decided and written in full by this tick (mirrored, on
        topics known): their decision changes only with their view, nodes or topics."""
        return {
            g
            for g in decided.suggested
            if g not in decided.mixed
            and g not in decided.skipped
            and g not in self._topic_unknown
            and self._mode_of(g) is StorageMode.KAFKA
        }

    def _follow_shares(self, requests: dict[str, tuple[str, int]]) -> dict[str, tuple[str, int]]:
        """Poll the follower (it settles a rebalance); when the shares held changed,
        reconcile in full (others wrote the new shares' nodes). The requests held."""
        assert self.shares is not None and self.follower is not None
        self.kafka.dirty |= self.follower.changed_groups()
        if self._shares_seen != self.shares.generation:
            self._shares_seen = self.shares.generation
            self.settled.forget()
            self.kafka.refilter()
            self.zk_groups.refilter()
            self._take_over(self.shares.take_over())
            self.resync()
        return {g: r for g, r in requests.items() if self.shares.holds_group(g)}

    def _take_over(self, shares: set[int]) -> None:
        """The groups of ``shares`` (another bridge held them since this one did): their
        nodes and ledger read again before their next decision (the others wrote them; the
        shares kept through a rebalance were written by this bridge alone, and stay as
        known), and their Kafka side read this tick even while a reconcile is under way
        (the resync's full read waits for it)."""
        assert self.shares is not None
        if not shares:
            return
        count = self.shares.shares

        def taken(group: str) -> bool:
            return share_of_group(group, count) in shares

        if self.tree.loaded:
            self.tree.take_over(self.tree.groups_where(taken))
        if self.kafka.picture is not None:
            fresh = {g for g in self.kafka.picture.kinds if taken(g)}
            self.kafka.dirty |= fresh
            self.kafka.reshaped |= fresh
