"""Each mixed group's ZooKeeper side as last read, read again only when it changed.

A group with old consumers registered is decided every tick (its consumers write its nodes
at any moment), and each decision read its registrations, owners and offsets through the
watched caches: cached, but parsed and decoded again every tick. With twenty groups of old
consumers x 100 partitions committing 1,000 offsets/s, those reads were 38 % of the main
thread and each tick's decisions took 90-280 ms (``bench.fleet``), which every old
consumer's commit waited for.

Here a group's read is kept until a watch on a path below ``/consumers/<g>`` fires (the
same watches that keep the caches true: ``FireCounter``), its registered ids change, or
the topics' partition counts change; an offset node's data watch (an old consumer's
commit, the change most frequent there) reads that node alone into the kept read. A read
is not kept at all while a list it came from has no watch (a topic's owners or offsets
directory not created yet is watched by an ``exists`` watch, see
``bridge.zookeeper.watched``; one that could not be is not). A group's offset nodes of
every topic, as the storage modes read them, are kept the same way
(:meth:`GroupReads.cached_offsets`). A group is tracked before it is read, so a watch
firing during the read drops it at the next tick: a read is never kept past a change it
did not see. Nothing about the bridge's own ledger is kept
(which owner nodes are the bridge's fences is looked up every time).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

import zkpaths
from bridge.zookeeper.reader import ConsumerTreeReader
from bridge.zookeeper.verification import group_of
from bridge.zookeeper.watched import FireCounter, WatchedChildren, WatchedData
from zkpaths import TopicPartition
from zkpaths.dialects import Member, member_threads
from zkpaths.names import parse_id

CONSUMERS_PREFIX = "/consumers/"


@dataclass(frozen=True)
class GroupRead:
    """What ZooKeeper said of a mixed group: its old consumers, threads, claims, offsets."""

    ids: tuple[str, ...]  # the registered consumer ids it was read for
    partitions: Mapping[str, int]  # the partition counts it was read with
    members: dict[str, Member]
    threads: dict[str, frozenset[str]]  # thread id -> topics
    claims: dict[TopicPartition, tuple[str, str]]  # partition -> (thread id, owner path)
    offsets: dict[TopicPartition, int]


@dataclass(frozen=True)
class OffsetsRead:
    """Every offset node of a mixed group (all its topics, not only the subscribed ones:
    the storage modes weigh them all), with its path: which ones are the bridge's is
    looked up in its ledger each time."""

    paths: dict[TopicPartition, str]
    offsets: dict[TopicPartition, int]


class GroupReads:
    """The reads of mixed groups, dropped as the watches below each group fire."""

    def __init__(self, children: WatchedChildren, data: WatchedData) -> None:
        """The caches the reads go through (lists and nodes)."""
        self._reads: dict[str, GroupRead] = {}
        self._offsets: dict[str, OffsetsRead] = {}
        self._tracked: set[str] = set()
        #: per group, its offset nodes whose data watch fired since its reads were kept
        self._committed: dict[str, set[str]] = {}
        self._lists = children
        self._data = data
        self._fired: list[FireCounter] = [w.counter(self._below_tracked) for w in (children, data)]
        #: groups whose kept reads changed (read, patched, forgotten) since ``unchanged``
        self._changed: set[str] = set()
        self.hits = 0  # reads served from here (tests, and a figure to look at)

    def _below_tracked(self, path: str) -> bool:
        return path.startswith(CONSUMERS_PREFIX) and group_of(path) in self._tracked

    def cached(
        self, group: str, ids: tuple[str, ...], partitions: Mapping[str, int]
    ) -> GroupRead | None:
        """The group's last read if nothing below it changed since; else None, and the
        group is tracked from now on (read it, then :meth:`keep` it)."""
        self._tracked.add(group)
        self._drop_fired()
        self._patch(group)
        read = self._reads.get(group)
        if read is None or read.ids != ids:
            return None
        if read.partitions is not partitions:  # read again every groups.full_interval_s
            if read.partitions != partitions:
                return None
            read = self._reads[group] = replace(read, partitions=partitions)
        self.hits += 1
        return read

    def keep(self, group: str, read: GroupRead) -> bool:
        """Keep ``read`` unless a list it came from has no watch set (a directory absent
        when read: an old consumer creating it, and a claim below, would fire nothing
        here). Returns whether it was kept."""
        if self._lists.held(lists_of(group, read)) != lists_of(group, read):
            self._reads.pop(group, None)
            self._changed.add(group)
            return False
        if self._reads.get(group) is not read:
            self._changed.add(group)
        self._reads[group] = read
        return True

    def cached_offsets(self, group: str) -> OffsetsRead | None:
        """The group's offset nodes as last read if none changed since; else None, and
        the group is tracked from now on (read them, then :meth:`keep_offsets`)."""
        self._tracked.add(group)
        self._drop_fired()
        self._patch(group)
        read = self._offsets.get(group)
        if read is not None:
            self.hits += 1
        return read

    def keep_offsets(self, group: str, read: OffsetsRead) -> bool:
        """Keep ``read`` unless a list it came from has no watch set (the group's offsets
        directory absent when read: an old consumer's first commit would fire nothing
        here). Returns whether it was kept."""
        base = f"{zkpaths.consumer_group_path(group)}/offsets"
        lists = {base} | {path.rsplit("/", 1)[0] for path in read.paths.values()}
        if self._lists.held(lists) != lists:
            self._offsets.pop(group, None)
            self._changed.add(group)
            return False
        if self._offsets.get(group) is not read:
            self._changed.add(group)
        self._offsets[group] = read
        return True

    def unchanged(self, groups: Iterable[str]) -> set[str]:
        """Of ``groups``, the ones whose kept reads (registrations, claims, every offset
        node) have stood unchanged since the last call, with no watch below them fired
        since: ZooKeeper's side of such a group is as its last decision read it (the flow
        leaves a mixed group alone then: ``flows.settled``). A group read, patched or
        forgotten since the last call is not: the decision that read it is checked once
        more, as written, by the next tick."""
        self._drop_fired()
        changed, self._changed = self._changed, set()
        return {
            g
            for g in groups
            if g in self._reads
            and g in self._offsets
            and g not in self._committed
            and g not in changed
        }

    def retain(self, groups: Iterable[str]) -> None:
        """Forget the groups not mixed any more."""
        keep = set(groups)
        for kept in (self._reads, self._offsets, self._committed):
            for g in [g for g in kept if g not in keep]:
                del kept[g]
        self._tracked &= keep | set(self._reads) | set(self._offsets)

    def _drop_fired(self) -> None:
        for counter in self._fired:
            paths = counter.take()
            if paths is None:  # every cached answer was forgotten at once
                self._changed |= self._reads.keys() | self._offsets.keys()
                self._reads.clear()
                self._offsets.clear()
                self._committed.clear()
                continue
            for p in paths:
                g = group_of(p)
                if offset_node(p) is not None and (g in self._reads or g in self._offsets):
                    self._committed.setdefault(g, set()).add(p)
                else:
                    self._forget(g)

    def _forget(self, group: str) -> None:
        self._changed.add(group)
        self._reads.pop(group, None)
        self._offsets.pop(group, None)
        self._committed.pop(group, None)

    def _patch(self, group: str) -> None:
        """Bring the group's kept reads up to date with the offset nodes committed since:
        only those are read (the watched cache has most already, read again as their watch
        fired); an old consumer's commit is what changes below a mixed group most often,
        and reading the whole group again for it was a third of the old consumers' ticks.
        Anything else (a node gone, one not in a kept read, one that does not decode: the
        full read reports it) forgets the group's reads, to be read whole."""
        paths = self._committed.pop(group, None)
        if not paths:
            return
        got = self._data.get(sorted(paths))
        committed: dict[TopicPartition, tuple[str, int]] = {}
        for path in paths:
            tp = offset_node(path)
            try:
                committed[tp] = (path, zkpaths.decode_offset(got[path][0], path=path))
            except (KeyError, zkpaths.ZkLayoutError):
                self._forget(group)
                return
        read, whole = self._reads.get(group), self._offsets.get(group)
        if read is not None:
            read = _patched_read(read, committed)
        if whole is not None and all(whole.paths.get(tp) == p for tp, (p, _) in committed.items()):
            offsets = {**whole.offsets, **{tp: o for tp, (_, o) in committed.items()}}
            whole = OffsetsRead(whole.paths, offsets)
        else:
            whole = None
        self._changed.add(group)
        for kept, new in ((self._reads, read), (self._offsets, whole)):
            if new is None:
                kept.pop(group, None)
            else:
                kept[group] = new


def _patched_read(
    read: GroupRead, committed: Mapping[TopicPartition, tuple[str, int]]
) -> GroupRead | None:
    """``read`` with the committed offsets of its topics (others it never held); None if
    one of its topics has a node it did not hold (read it whole)."""
    topics = {t for ts in read.threads.values() for t in ts}
    offsets = dict(read.offsets)
    for tp, (_, offset) in committed.items():
        if tp.topic not in topics:
            continue
        if tp not in offsets:
            return None
        offsets[tp] = offset
    return replace(read, offsets=offsets)


def offset_node(path: str) -> TopicPartition | None:
    """The partition of a ``/consumers/<g>/offsets/<topic>/<partition>`` path, else None."""
    parts = path.split("/")
    if len(parts) != 6 or parts[1] != "consumers" or parts[3] != "offsets":
        return None
    partition = parse_id(parts[5])
    return None if partition is None else TopicPartition(parts[4], partition)


def lists_of(group: str, read: GroupRead) -> set[str]:
    """The lists a read of ``group`` came from: for each topic its old threads subscribe
    to, its owners' and offsets' directories (its ids are the read's key)."""
    topics = {t for ts in read.threads.values() for t in ts}
    base = zkpaths.consumer_group_path(group)
    return {f"{base}/{kind}/{t}" for t in topics for kind in ("owners", "offsets")}


def read_group(
    reader: ConsumerTreeReader,
    group: str,
    ids: tuple[str, ...],
    partitions: Mapping[str, int],
    report: Callable[[str, str, str], None],
) -> GroupRead:
    """The group's registrations, owner claims and offsets as ZooKeeper has them now."""
    threads: dict[str, set[str]] = {}
    members = reader.members(group, ids)
    for cid, member in members.items():
        try:
            per_topic = member_threads(member, sorted(partitions))
        except zkpaths.ZkLayoutError as exc:
            path = zkpaths.consumer_id_path(group, cid)
            report(path, f"old consumer registration unusable: {exc}", "bad_node")
            continue
        for topic, thread_ids in per_topic.items():
            for t in thread_ids:
                threads.setdefault(t, set()).add(topic)
    subscribed = {group: sorted({t for ts in threads.values() for t in ts})}
    claims = reader.owners(subscribed, partitions)[group]
    offsets = reader.offsets(subscribed, partitions)[group]
    return GroupRead(
        ids,
        partitions,
        members,
        {t: frozenset(ts) for t, ts in threads.items()},
        {tp: (t, zkpaths.owner_path(group, tp.topic, tp.partition)) for tp, t in claims.items()},
        {tp: n.offset for tp, n in offsets.items()},
    )
