"""The groups flow's reader of Kafka: every group, its members and offsets, and the topics.

Without a follower of ``__consumer_offsets`` (``bridge.kafka.offsets_log``), a
``KafkaPicture`` is read in full every ``full_interval_s`` and, in between, the committed
offsets (one batched OffsetFetch per coordinator). With one, the groups whose records say
they changed are asked again, and at start and each resync every group is listed and then
read a page per tick (``bridge.flows.paging``; docs/concepts.md says why nothing is missed).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from typing import Protocol

from kafka import KafkaAdminClient

from bridge.flows.log_ahead import LogAhead
from bridge.flows.paging import PagePrefetch, ReconcilePass
from bridge.flows.read_marks import ReadMarks
from bridge.kafka.cluster import partition_counts
from bridge.kafka.groups import list_groups, read_groups, read_offsets
from bridge.kafka.offsets_log import OFFSETS_TOPIC, OffsetsLogFollower
from bridge.kafka.views import COMPLETING_REBALANCE, CONSUMER, GroupView
from zkpaths import TopicPartition

#: the groups flow's logger: its reads are the flow's lines
log = logging.getLogger("bridge.flows.groups")


@dataclass(frozen=True)
class KafkaPicture:
    kinds: dict[str, str]  # group -> protocol type
    wanted: list[str]  # groups passing the filter
    views: dict[str, GroupView]
    partitions: dict[str, int]  # topic -> partition count
    read_at: float
    #: listed consumer groups not read yet (a cold start's pass reads them page by page):
    #: no decision is made of a group before it was read
    unread: frozenset[str] = field(default_factory=frozenset)
    #: groups whose view says Dead (being deleted: they still answer for a moment)
    dead: frozenset[str] = field(default_factory=frozenset)

    @cached_property
    def wanted_set(self) -> frozenset[str]:
        return frozenset(self.wanted)

    def unknown_topics(self, view: GroupView | None) -> bool:
        """Whether ``view`` names a topic (offsets, assignment) the picture has no count for."""
        if view is None or view.error:
            return False
        topics = {tp[0] for tp in view.offsets}
        for m in view.members:
            topics.update(m.assignment or {})
        return any(t not in self.partitions for t in topics)


class HandOvers(Protocol):
    """What the reader needs of the coexistence: the groups with a hand-over pending (read
    in full every tick while there is one)."""

    pending: object


class KafkaGroupsReader:
    """Reads the ``KafkaPicture`` of each tick; ``dirty`` and ``reread_now`` are the groups
    to ask again and the ones just asked (with a follower)."""

    def __init__(
        self,
        admin: KafkaAdminClient,
        wanted: Callable[[str], bool],
        follower: OffsetsLogFollower | None,
        coexist: HandOvers | None,
        full_interval_s: float,
    ) -> None:
        self.admin = admin
        self.filter = wanted
        self.follower = follower
        self.coexist = coexist
        self.full_interval_s = full_interval_s
        self.picture: KafkaPicture | None = None
        #: groups whose records arrived since the group APIs were last asked about them
        self.dirty: set[str] = set()
        #: groups the group APIs were asked about in this tick (with a follower)
        self.reread_now: set[str] = set()
        #: of those, the ones whose read showed exactly the view the picture had
        self.same_view: set[str] = set()
        #: of ``dirty``, the groups to describe again: records other than offset commits
        #: named them (or a listing, a forced sync); the others changed only offsets
        self.reshaped: set[str] = set()
        #: whether a group whose records were only offset commits may be read with
        #: OffsetFetch alone, keeping its last description (the flow says: kafka storage
        #: mode, no old consumers, where no decision reads the group's state but the mirror)
        self.offsets_only: Callable[[str], bool] = lambda group: False
        #: with a follower: the pass reading every group a page per tick, and this tick's
        #: page; ``_relist``: a resync asked for the next pass
        self._pass: ReconcilePass | None = None
        self.page_now: list[str] = []
        #: the pass's next page, read from Kafka off this thread
        self._prefetch = PagePrefetch()
        #: the periodic ListGroups between passes, off this thread (``_relisted``)
        self._lister = ThreadPoolExecutor(1, thread_name_prefix="group-list")
        self._listing: Future | None = None
        self._listing_at = time.monotonic()
        self._relist = False
        #: each group's type as last listed (classic, consumer), for describing it again
        self._types: dict[str, str] = {}
        #: what each group's records said that its reads have not shown yet
        self.ahead = LogAhead()
        #: the filter's answers changed (the shares held): the wanted groups listed again
        self._refilter = False
        #: per group, how far its last read saw in the follower's log (``read_marks``)
        self.marks = ReadMarks.of_topic(admin, follower.topic if follower else OFFSETS_TOPIC)
        if follower is not None:
            follower.direct = self._takes_commits

    def _takes_commits(self, group: str, at: int) -> bool:
        """Whether ``group``'s commit records from ``at`` on are taken as its offsets
        (``bridge.flows.read_marks``): a group with a view read before them, whose view
        only its offsets move, with nothing else to read it for."""
        view = self.picture.views.get(group) if self.picture is not None else None
        return (
            view is not None
            and not view.error
            and view.state != "Dead"
            and group not in self.dirty
            and not self._prefetch.reading(group)
            and self.marks.past(group, at)
            and self.filter(group)
            and self.offsets_only(group)
        )

    def read(self) -> KafkaPicture:
        """Groups, members and topics: read in full every ``full_interval_s``; in between
        only the committed offsets change (the fast path that keeps offset lag low)."""
        if self.follower is not None and self._follows():
            return self._followed_picture(self.follower)
        pic = self.picture
        if (
            pic is None
            or time.monotonic() - pic.read_at >= self.full_interval_s
            or (self.coexist is not None and self.coexist.pending)
        ):
            pic = self._full_picture()
        else:
            fresh = read_offsets(self.admin, [g for g, v in pic.views.items() if not v.error])
            vanished = any(
                not isinstance(fresh.get(g), dict) or set(v.offsets) - set(fresh[g])
                for g, v in pic.views.items()
                if not v.error
            )
            if vanished:  # deleted group or offsets: only a full read can tell which
                self.picture = None
                return self.read()
            views = {g: replace(v, offsets=fresh[g]) for g, v in pic.views.items() if not v.error}
            pic = replace(pic, views={**pic.views, **views})
        self.picture = pic
        return pic

    def _follows(self) -> bool:
        """Whether the follower follows; it starts once the topic exists (once a group asked
        for its coordinator), and the full read is made after it started, so what was
        committed before its start is read too."""
        assert self.follower is not None
        if self.follower.assigned:
            return True
        if self.picture is not None:
            count = self.picture.partitions.get(OFFSETS_TOPIC)
        else:  # at start: asked now, so that the very first full read is paged already
            count = partition_counts(self.admin, [OFFSETS_TOPIC]).get(OFFSETS_TOPIC)
        if not count:
            return False
        self.follower.assign(count)  # from the log's end, fixed before the full read below
        self.picture = None
        return True

    def _followed_picture(self, follower: OffsetsLogFollower) -> KafkaPicture:
        """The picture with a follower: the last one with the groups named by new records
        asked again, and a page of the pass under way (at start and each resync every
        group is listed, then read a page at a time on a thread of its own, each page
        decided in the tick after its read). Groups are taken off ``dirty`` only once
        read: a failed read leaves them for the next tick."""
        self.dirty |= follower.changed_groups()
        self.reshaped |= follower.take_reshaped()
        self.ahead.add(follower.take_said())
        pic = self._with_echoes(self.picture, follower.take_echoes())
        self.reread_now, self.same_view = set(), set()
        pic = self._with_commits(pic, follower.take_direct())
        if self._pass is not None and not self.reconciling():  # its last page was written
            self._close_pass()
        if pic is None or self._relist:
            first = pic is None  # a cold start: nothing mirrored yet, full pages
            pic = self._listed(pic)
            make = ReconcilePass if first else ReconcilePass.background
            self._pass, self._relist = make(pic.wanted), False
            self._prefetch.drop()
            self._listing = None  # a listing under way is older than this pass's
        elif self._pass is None:
            # ListGroups answers per coordinator: a group the listing missed, or one gone,
            # is read again (not during a pass: it just listed; at 10,000 groups a listing
            # a second was 6 % of a cold start's main thread)
            self._relisted(pic)
        # a hand-over in progress: its groups described every tick (their rebalance
        # states are in no record). Every group was, once: at 10,000 groups that was a
        # full read per tick while any hand-over waited.
        self._ask(set(list(self.coexist.pending)) if self.coexist is not None else set())
        self.page_now, prefetched = self._prefetched()
        self._prefetch.touched(self.dirty)  # read by this tick: newer than the page's read
        pic = self._reread(pic, sorted(g for g in self.dirty if self.filter(g)), prefetched)
        if self._pass is not None:
            self._pass.read(self.page_now, pic.views)
            if not self._prefetch.pending and not self._pass.finished and self._pass.due():
                page = self._pass.take(pic.views)
                # groups of other protocols (Connect) are only listed
                ask = [g for g in page if self._describes(pic, g)]
                self._prefetch.start(page, ask, partial(self._read_page, before=pic.views))
        self.picture = pic
        return pic

    def _relisted(self, pic: KafkaPicture) -> None:
        """ListGroups every ``full_interval_s``, made on a thread of its own: at 10,000
        groups it held the tick 90-130 ms every second, and the old consumers' commits
        waiting for that tick with it. The tick after it ended asks the groups listed but
        not known, and those known but not listed (one created or deleted meanwhile is
        asked once more: harmless, and the next listing settles it)."""
        if self._listing is None:
            if time.monotonic() - self._listing_at >= self.full_interval_s:
                self._listing_at = time.monotonic()
                self._listing = self._lister.submit(list_groups, self.admin)
            return
        if not self._listing.done():
            return
        done, self._listing = self._listing, None
        try:
            listed = done.result()
        except Exception as exc:  # noqa: BLE001 - Kafka away: the tick's reads say so
            log.debug("the periodic ListGroups failed: %s: %s", type(exc).__name__, exc)
            return
        self._types.update({g: x.group_type for g, x in listed.items()})
        self._ask(set(listed) ^ set(pic.kinds))

    def _describes(self, pic: KafkaPicture, group: str) -> bool:
        return pic.kinds.get(group) in ("consumer", "")

    def _prefetched(self) -> tuple[list[str], dict[str, GroupView]]:
        """The page whose read ended (``PagePrefetch``), decided in this tick, and its views
        still usable; the page's groups touched since are read by this tick."""
        if not self._prefetch.ready():
            return [], {}
        page, views, left, marks = self._prefetch.take()
        failed = {g for g, v in views.items() if v.error}  # type: ignore[attr-defined]
        self._ask(left | failed)  # read by this tick (and stay dirty if that fails too)
        usable = {g: v for g, v in views.items() if g not in failed}
        self.marks.mark(usable, marks)
        return page, usable  # type: ignore[return-value]

    def _ask(self, groups: set[str]) -> None:
        """Describe and fetch ``groups`` in this tick's read."""
        self.dirty |= groups
        self.reshaped |= groups

    def _listed(self, before: KafkaPicture | None) -> KafkaPicture:
        """A pass's start: every group listed, and the topics. Groups still listed keep
        their last views until their page reads them again; those never read are
        ``unread`` (a cold start's), and at a resync the ones new since are read now."""
        listed = list_groups(self.admin)
        self._types = {g: x.group_type for g, x in listed.items()}
        kinds = {g: x.protocol_type for g, x in listed.items()}
        wanted = sorted(g for g in kinds if self.filter(g))
        views = {g: v for g, v in (before.views if before else {}).items() if g in kinds}
        # protocol type "" is a group that only commits offsets (assign() + commit)
        unread = {g for g in wanted if kinds[g] in ("consumer", "") and g not in views}
        if before is not None:
            self._ask(unread - set(before.kinds))
        dead = frozenset(g for g, v in views.items() if v.state == "Dead")
        partitions = partition_counts(self.admin)
        return KafkaPicture(
            kinds, wanted, views, partitions, time.monotonic(), frozenset(unread), dead
        )

    def _with_echoes(
        self, pic: KafkaPicture | None, echoes: Mapping[str, Mapping[TopicPartition, int]]
    ) -> KafkaPicture | None:
        """``pic`` with the offsets whose records were only the bridge's own commits
        (``bridge.kafka.own_commits``): those groups are not read again for them. A group
        read again anyway (dirty) takes what the group APIs say instead."""
        if pic is None or not echoes:
            return pic
        views = dict(pic.views)
        for g, offsets in echoes.items():
            view = views.get(g)
            if view is not None and not view.error and g not in self.dirty:
                views[g] = replace(view, offsets={**view.offsets, **offsets})
        return replace(pic, views=views)

    def _with_commits(
        self, pic: KafkaPicture | None, taken: Mapping[str, Mapping[TopicPartition, int]]
    ) -> KafkaPicture | None:
        """``pic`` with the offsets of the commit records taken (``read_marks``): those
        groups count as read this tick. One named otherwise since is read instead."""
        if pic is None or not taken:
            return pic
        views = dict(pic.views)
        for g, offsets in taken.items():
            view = views.get(g)
            if view is None or view.error or g in self.dirty:
                continue
            fresh = replace(view, offsets={**view.offsets, **offsets})
            if fresh == view:
                self.same_view.add(g)
            views[g] = fresh
            self.reread_now.add(g)
        return replace(pic, views=views)

    def _full_picture(self) -> KafkaPicture:
        """Every group listed and described (each with the API of its type), with its
        offsets, and the topics."""
        listed = list_groups(self.admin)
        self._types = {g: x.group_type for g, x in listed.items()}
        kinds = {g: x.protocol_type for g, x in listed.items()}
        wanted = sorted(g for g in kinds if self.filter(g))
        # protocol type "" is a group that only commits offsets (assign() + commit)
        consumer_groups = [g for g in wanted if kinds[g] in ("consumer", "")]
        views = read_groups(
            self.admin, consumer_groups, {g: listed[g].group_type for g in consumer_groups}
        )
        dead = frozenset(g for g, v in views.items() if v.state == "Dead")
        return KafkaPicture(
            kinds, wanted, views, partition_counts(self.admin), time.monotonic(), dead=dead
        )

    def _reread(
        self, pic: KafkaPicture, groups: list[str], prefetched: Mapping[str, GroupView]
    ) -> KafkaPicture:
        """``pic`` with ``groups`` described again (topics too, every ``full_interval_s``:
        a topic's records are not in ``__consumer_offsets``). A group Kafka no longer has
        leaves the picture; one that could not be read stays dirty and as it was."""
        self.dirty -= set(self.dirty) - set(groups)  # filtered out: never mirrored
        self.reshaped &= self.dirty
        kinds, views, unread = dict(pic.kinds), dict(pic.views), set(pic.unread)
        dead = set(pic.dead)
        read = {g: v for g, v in prefetched.items() if self.filter(g)}
        if groups:
            asked = self._read_changed(groups, pic.views)
            done = [g for g, v in asked.items() if not v.error]
            self.marks.mark(done, self.marks.ask(g for g in done if self._marked(g, pic)))
            read.update(asked)
        for g, view in read.items():
            if view.error:
                continue
            unread.discard(g)
            gone = view.state == "Dead" and not view.offsets
            completing = self._completing(view)
            if self.ahead.behind(g, view.offsets, gone, completing):
                self.dirty.add(g)  # read again: the coordinator lagged its log
            else:
                self.dirty.discard(g)
            if completing:  # described again: an OffsetFetch shows no state
                self.reshaped.add(g)
            else:
                self.reshaped.discard(g)
            self.reread_now.add(g)
            if pic.views.get(g) == view:
                self.same_view.add(g)
            dead.discard(g)
            if gone:
                self.marks.forget([g])
                kinds.pop(g, None)
                views.pop(g, None)
                continue
            kinds[g] = view.protocol_type
            if view.protocol_type in ("consumer", ""):
                views[g] = view
                if view.state == "Dead":
                    dead.add(g)
            else:
                views.pop(g, None)
        self.ahead.keep_only(self.dirty)
        partitions, read_at = pic.partitions, pic.read_at
        if time.monotonic() - read_at >= self.full_interval_s:
            partitions, read_at = partition_counts(self.admin), time.monotonic()
        # the same groups (every tick but when one comes or goes): the same listing
        same = not self._refilter and kinds.keys() == pic.kinds.keys()
        wanted = pic.wanted if same else sorted(g for g in kinds if self.filter(g))
        self._refilter = False
        return KafkaPicture(
            kinds, wanted, views, partitions, read_at, frozenset(unread), frozenset(dead)
        )

    def _marked(self, group: str, pic: KafkaPicture) -> bool:
        """Whether ``group``'s read is marked: one whose records may be taken, and one read
        for the first time (new since the pass: its storage mode is only decided after this
        read, and unmarked its next record would have it read once more)."""
        return group not in pic.views or self.offsets_only(group)

    def _completing(self, view: GroupView) -> bool:
        """A classic group waiting for its generation to be stored (``flows.log_ahead``),
        but one whose leader is this bridge's own proxy holding its SyncGroup: that one is
        described every tick while held, and its record comes when it syncs."""
        held = self.coexist is not None and view.group_id in self.coexist.pending
        return view.state == COMPLETING_REBALANCE and view.group_type != CONSUMER and not held

    def _read_changed(self, groups: list[str], before: dict[str, GroupView]) -> dict:
        """The groups read again: described and fetched (``_read_settled``), but those
        whose records were only offset commits, where ``offsets_only`` allows, with one
        OffsetFetch and their last description (at thousands of commits a second this
        halves the round trips of a tick). A group whose fetch failed, or lost an offset
        (a deletion, only a description tells), is described after all."""
        quick = [
            g
            for g in groups
            if g not in self.reshaped
            and g in before
            and not before[g].error
            and self.offsets_only(g)
        ]
        fetched = read_offsets(self.admin, quick) if quick else {}
        views: dict[str, GroupView] = {}
        for g in quick:
            fresh = fetched.get(g)
            if isinstance(fresh, dict) and not set(before[g].offsets) - set(fresh):
                views[g] = replace(before[g], offsets=fresh)
        rest = [g for g in groups if g not in views]
        return {**views, **self._read_settled(rest, before)} if rest else views

    def _read_page(
        self, groups: list[str], before: dict[str, GroupView]
    ) -> tuple[dict, dict[str, int]]:
        """A page's read (on its own thread), and its groups' marks asked after it."""
        views = self._read_settled(groups, before)
        return views, self.marks.ask(g for g, v in views.items() if not v.error)

    def _read_settled(self, groups: list[str], before: dict[str, GroupView]) -> dict:
        """``read_groups``, once more for a live group whose offsets vanished: described
        just before a deletion and fetched just after, it would look alive without offsets
        (and lose its ``owners/<t>``); read again, it is Dead (Kafka marks a group Dead
        before removing its offsets), or it really lost those offsets."""
        types = {g: self._types[g] for g in groups if g in self._types}
        views = read_groups(self.admin, groups, types)
        again = [
            g
            for g, v in views.items()
            if not v.error
            and v.state != "Dead"
            and g in before
            and set(before[g].offsets) - set(v.offsets)
        ]
        return {**views, **read_groups(self.admin, again, types)} if again else views

    def refilter(self) -> None:
        """The filter answers otherwise now (shares moved): apply it again next read."""
        self._refilter = True

    def counts_inferred(self) -> bool:
        """Whether a pass is open (its last page may be in this tick), whose lines tell
        the storage modes inferred (``inferred``)."""
        return self._pass is not None

    def inferred(self, modes: Iterable[str]) -> None:
        """Storage modes inferred during the pass: told in its progress lines."""
        if self._pass is not None:
            self._pass.inferred.update(modes)

    def reconciling(self) -> bool:
        """A pass is under way (groups listed, pages left to read and decide)."""
        return self._pass is not None and (not self._pass.finished or self._prefetch.pending)

    def next_page(self) -> list[str]:
        """The groups of the pass's page being read now (decided by a later tick)."""
        return list(self._prefetch.page)

    def first_pass(self) -> bool:
        """The pass under way is the term's first (full pages, back to back)."""
        return self.reconciling() and self._pass is not None and not self._pass.every_s

    def close(self) -> None:
        """The page read (or listing) under way ends on its own; no other is started."""
        self._prefetch.close()
        self._lister.shutdown(wait=False, cancel_futures=True)

    def resync(self) -> bool:
        """Ask for the next pass (every group listed, then read and decided a page per
        tick), unless one is under way: at fleet size a pass can outlast
        ``bridge.resync_interval_s``, and starting over each time never reached the
        groups of its last pages. Returns whether it was asked for."""
        if self.reconciling():
            return False
        self._close_pass()
        self._relist = True
        return True

    def _close_pass(self) -> None:
        """The pass whose last page was decided and written: its last line."""
        if self._pass is not None:
            self._pass.finish()
            self._pass = None
