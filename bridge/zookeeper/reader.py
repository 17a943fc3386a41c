"""The one reader of the old consumers' tree, ``/consumers/<g>/{ids,owners,offsets}``.

Flows, operator commands and the migration gates all read a group through here, so they
see the same thing: nodes decoded with :mod:`zkpaths`' codecs, reads pipelined (one round
trip per tree level, however many groups), and one policy for bad input (I5): a node whose
name or data is not what the legacy layout says yields one :class:`NodeProblem` naming its
path, handed to ``report`` once per read and left out of the result; every other node and
group goes on. The default ``report`` logs the problem and counts it
(``zkbridge_node_problems{kind="bad_node"}``); a flow passes its own (deduplicated across
ticks), a command prints it on stderr.

Nothing here writes: writes go through :mod:`bridge.zookeeper.writer`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

import zkpaths
from bridge.zookeeper.answers import ABSENT, answer
from bridge.zookeeper.watched import WatchedChildren, WatchedData
from zkpaths import ConsumerRegistration, GroupPartition, TopicPartition
from zkpaths.dialects import Member, decode_member, pykafka, storm
from zkpaths.dialects.kafka_node import owner_problem
from zkpaths.names import parse_id, topic_problem

log = logging.getLogger(__name__)

#: requests in flight at once: enough to hide round trips, few enough for the client's queue
WINDOW = 512


@dataclass(frozen=True)
class NodeProblem:
    """A node someone else wrote that cannot be used: left alone, reported once."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass(frozen=True)
class OffsetNode:
    """An offset node as read: the offset (-1 is the old consumer's "none yet") and the
    znode version, which a write conditional on what was read checks. ``problem`` is set
    (and ``offset`` is -1) only by :meth:`ConsumerTreeReader.offsets_at`, for a bad node a
    write is about to replace."""

    offset: int
    version: int
    problem: str | None = None


@dataclass(frozen=True)
class SpoutNode:
    """A storm spout's partition node as read, with the znode version a write checks;
    ``data`` is None (and ``problem`` says why) for a node that was reported and must be
    left alone."""

    data: storm.SpoutOffset | None
    version: int
    path: str
    problem: str | None = None


@dataclass(frozen=True)
class PykafkaOwnerNode:
    """A partition claimed by a pykafka consumer: its id, and the leader it named the node by."""

    consumer_id: str
    leader: int
    path: str


Report = Callable[[NodeProblem], None]
#: (data, version) of a node (group, path) the caller knows already, or None: read it
Known = Callable[[str, str], "tuple[bytes, int] | None"]


@dataclass(frozen=True)
class _Version:
    """The one field of a ZnodeStat a known node supplies."""

    version: int


def log_problem(problem: NodeProblem, flow: str = "zookeeper") -> None:
    """The default report: one warning naming the node, and the bad-node counter."""
    from bridge.metrics import METRICS

    METRICS.node_problems.labels(flow=flow, kind="bad_node").inc()
    log.warning("bad node left alone: %s", problem.reason, extra={"node": problem.path})


def _problem(path: str, exc: zkpaths.ZkLayoutError) -> NodeProblem:
    """The reason of a codec or path error, without repeating the path."""
    if isinstance(exc, zkpaths.CodecError):
        quoted = f"; data: {exc.excerpt}" if exc.excerpt is not None else ""
        return NodeProblem(path, f"bad {exc.what}: {exc.reason}{quoted}")
    if isinstance(exc, zkpaths.ZkPathError):
        return NodeProblem(path, exc.reason)
    return NodeProblem(path, str(exc))


class ConsumerTreeReader:
    """Reads groups of ``/consumers``; bad nodes go to ``report`` and are skipped."""

    def __init__(
        self,
        zk: KazooClient,
        report: Report = log_problem,
        window: int = WINDOW,
        watched: WatchedChildren | None = None,
        watched_data: WatchedData | None = None,
    ) -> None:
        """``watched``: lists of ``/consumers`` and of each group's ``/ids`` kept by child
        watches (a long-lived flow's reader); without it every read lists them again.
        ``watched_data``: every node's data kept by data watches, and then every list too
        (the flow's reader: a tick reads only what changed since it last read it)."""
        self.zk = zk
        self.report = report
        self.window = window
        self.watched = watched
        self.watched_data = watched_data

    # -- pipelined primitives ---------------------------------------------------------------
    def pipelined(self, method: str, paths: Sequence[str]) -> dict[str, Any]:
        """``method`` (get, get_children, get_acls) of every path, ``window`` requests in
        flight; absent nodes are left out, nodes this identity may not read are reported."""
        verb = "list" if method == "get_children" else "read"
        if self.watched_data is not None and self.watched is not None and method != "get_acls":
            denied = self._denied(verb)
            if method == "get":
                return self.watched_data.get(paths, denied)
            return self.watched.children(paths, denied)
        call = getattr(self.zk, f"{method}_async")
        out: dict[str, Any] = {}
        for start in range(0, len(paths), self.window):
            chunk = paths[start : start + self.window]
            for path, result in [(p, call(p)) for p in chunk]:
                try:
                    got = answer(result)
                except NoAuthError:
                    self.report(
                        NodeProblem(path, f"this identity may not {verb} it (ZooKeeper ACL)")
                    )
                    continue
                if got is not ABSENT:  # else deleted while we read: as if never there
                    out[path] = got
        return out

    def children(self, paths: Sequence[str]) -> dict[str, list[str]]:
        """Sorted children of each path; an absent parent has none."""
        got = self.pipelined("get_children", list(paths))
        return {p: sorted(got.get(p, [])) for p in paths}

    # -- groups and consumers -----------------------------------------------------------------
    def groups(self) -> list[str]:
        """Every group with a node under ``/consumers``."""
        return self._membership([zkpaths.CONSUMERS])[zkpaths.CONSUMERS]

    def consumer_ids(self, groups: Iterable[str]) -> dict[str, list[str]]:
        """The consumer ids registered under each group's ``/ids``."""
        groups = list(groups)
        listed = self._membership([f"{zkpaths.CONSUMERS}/{g}/ids" for g in groups])
        return {g: listed[f"{zkpaths.CONSUMERS}/{g}/ids"] for g in groups}

    def _membership(self, paths: Sequence[str]) -> dict[str, list[str]]:
        """The lists that say who is there: through the watched cache when there is one."""
        if self.watched is None:
            return self.children(paths)
        return self.watched.children(paths, denied=self._denied("list"))

    def _denied(self, verb: str) -> Callable[[str], None]:
        def report(path: str) -> None:
            self.report(NodeProblem(path, f"this identity may not {verb} it (ZooKeeper ACL)"))

        return report

    def members(self, group: str, ids: Iterable[str]) -> dict[str, Member]:
        """Each of ``ids`` decoded in its dialect (consumer id -> member, see zkpaths.dialects)."""
        paths = {zkpaths.consumer_id_path(group, c): c for c in ids}
        out: dict[str, Member] = {}
        for path, (data, _stat) in self.pipelined("get", list(paths)).items():
            try:
                out[paths[path]] = decode_member(paths[path], data or b"", path=path)
            except zkpaths.ZkLayoutError as exc:
                self.report(_problem(path, exc))
        return out

    def registrations(self, group: str, ids: Iterable[str]) -> dict[str, ConsumerRegistration]:
        """The JSON registration of each of ``ids`` (consumer id -> registration); members of
        a dialect that writes none (pykafka) are left out, not reported."""
        return {
            cid: m.registration
            for cid, m in self.members(group, ids).items()
            if m.registration is not None
        }

    def pykafka_owners(
        self, group: str, partitions: Mapping[str, int] | None = None
    ) -> dict[TopicPartition, PykafkaOwnerNode]:
        """Partitions pykafka consumers own in ``group`` (``owners/<t>/<leader>-<p>``, the
        topic dir also spelled ``b'<t>'``). In a plain ``<t>`` dir other names are
        :meth:`owners`' (which reports unknown ones); in a ``b'<t>'`` dir, only pykafka's,
        so any other name is reported here as an unknown pykafka owner format."""
        base = zkpaths.owners_path(group)
        dirs = {
            f"{base}/{name}": topic
            for name in self.children([base])[base]
            if (topic := pykafka.topic_of_owners_dir(name)) is not None
        }
        leaves = self.children(sorted(dirs))
        wanted: dict[str, tuple[TopicPartition, int]] = {}
        for d, names in leaves.items():
            for name in names:
                path = f"{d}/{name}"
                if not pykafka.is_bytes_owners_dir(d.rsplit("/", 1)[1]) and not (
                    pykafka.looks_like_owner_name(name)
                ):
                    continue  # a Scala-style dir's other nodes: owners() reads (or reports) them
                try:
                    owner = pykafka.decode_owner_name(name, path=path)
                except zkpaths.ZkLayoutError as exc:
                    self.report(_problem(path, exc))
                    continue
                tp = TopicPartition(dirs[d], owner.partition)
                if partitions is not None and tp.partition >= partitions.get(tp.topic, 0):
                    self.report(NodeProblem(path, "a partition that does not exist"))
                    continue
                wanted[path] = (tp, owner.leader)
        out: dict[TopicPartition, PykafkaOwnerNode] = {}
        for path, (data, _stat) in self.pipelined("get", sorted(wanted)).items():
            tp, leader = wanted[path]
            try:
                out[tp] = PykafkaOwnerNode(pykafka.decode_owner(data, path=path), leader, path)
            except zkpaths.ZkLayoutError as exc:
                self.report(_problem(path, exc))
        return out

    # -- owners and offsets -------------------------------------------------------------------
    def owners(
        self,
        groups: Mapping[str, Iterable[str] | None],
        partitions: Mapping[str, int] | None = None,
    ) -> dict[str, dict[TopicPartition, str]]:
        """Owner (thread id) per partition of each group, for the topics given per group
        (None: every topic). With ``partitions`` (topic -> count), a node of a partition
        that does not exist is a bad node."""
        nodes = self._partition_nodes("owners", groups, partitions)
        out: dict[str, dict[TopicPartition, str]] = {g: {} for g in groups}
        for g, tp, path, data, _version in nodes:
            try:
                out[g][tp] = zkpaths.decode_owner(data, path=path)
            except zkpaths.ZkLayoutError as exc:
                self.report(_problem(path, exc))
        return out

    def known_owners(
        self,
        group: str,
        claims: Mapping[TopicPartition, str],
        known: Mapping[str, object],
        owned: AbstractSet[str] = frozenset(),
    ) -> dict[TopicPartition, str]:
        """``claims`` (from :meth:`owners`) without the owner nodes that hold no id of the
        group (``known``: its registered threads / kafka-node consumer ids); those are
        reported by path and left alone. For groups with kafka-node consumers, whose owner
        data is the consumer id. The bridge's own nodes (``owned``) are not checked."""
        out: dict[TopicPartition, str] = {}
        for tp, owner in claims.items():
            path = zkpaths.owner_path(group, tp.topic, tp.partition)
            problem = None if path in owned else owner_problem(group, owner.encode(), known)
            if problem:
                self.report(NodeProblem(path, problem))
            else:
                out[tp] = owner
        return out

    def offsets(
        self,
        groups: Mapping[str, Iterable[str] | None],
        partitions: Mapping[str, int] | None = None,
        known: Known | None = None,
        likely: Mapping[str, Iterable[str]] | None = None,
    ) -> dict[str, dict[TopicPartition, OffsetNode]]:
        """Committed offset per partition of each group, as :meth:`owners` reads owners.
        ``known``: (data, version) of nodes the caller knows already (the bridge's own, as
        it last wrote them): not read again, and used only if the listing still has them.
        ``likely``: per group listed, topic dirs likely there (see ``_partition_nodes``)."""
        nodes = self._partition_nodes("offsets", groups, partitions, known, likely)
        out: dict[str, dict[TopicPartition, OffsetNode]] = {g: {} for g in groups}
        for g, tp, path, data, version in nodes:
            try:
                out[g][tp] = OffsetNode(zkpaths.decode_offset(data, path=path), version)
            except zkpaths.ZkLayoutError as exc:
                self.report(_problem(path, exc))
        return out

    def offsets_at(self, wanted: Iterable[GroupPartition]) -> dict[GroupPartition, OffsetNode]:
        """The offset nodes of exactly these group partitions, read before writing them;
        absent ones are left out, bad ones are reported and kept with their ``problem``."""
        paths = {zkpaths.offset_path(*k): GroupPartition(*k) for k in set(wanted)}
        out: dict[GroupPartition, OffsetNode] = {}
        for path, (data, stat) in self.pipelined("get", sorted(paths)).items():
            try:
                out[paths[path]] = OffsetNode(zkpaths.decode_offset(data, path=path), stat.version)
            except zkpaths.ZkLayoutError as exc:
                problem = _problem(path, exc)
                self.report(problem)
                out[paths[path]] = OffsetNode(-1, stat.version, problem.reason)
        return out

    # -- other dialects -------------------------------------------------------------------------
    def spout_offsets(
        self, zk_root: str, spout_id: str, topic: str
    ) -> dict[TopicPartition, SpoutNode]:
        """A storm-kafka KafkaSpout's ``partition_<n>`` nodes of ``topic``; a node that is not
        one the spout would resume from (half-written, another topic or partition than its
        path) is reported and kept with its ``problem`` and no data, to be left alone."""
        base = storm.spout_path(zk_root, spout_id)
        names = self.children([base])[base]
        paths: dict[str, int] = {}
        for name in names:
            partition = storm.parse_partition_name(name)
            if partition is None:
                self.report(NodeProblem(f"{base}/{name}", "not a storm spout partition node"))
            else:
                paths[f"{base}/{name}"] = partition
        out: dict[TopicPartition, SpoutNode] = {}
        for path, (data, stat) in self.pipelined("get", sorted(paths)).items():
            tp = TopicPartition(topic, paths[path])
            try:
                node = storm.decode_spout_offset(data or b"", path=path)
            except zkpaths.ZkLayoutError as exc:
                problem = _problem(path, exc)
            else:
                if (node.topic, node.partition) == (topic, tp.partition):
                    out[tp] = SpoutNode(node, stat.version, path)
                    continue
                problem = NodeProblem(
                    path, f"holds {node.topic}-{node.partition}, expected {topic}-{tp.partition}"
                )
            self.report(problem)
            out[tp] = SpoutNode(None, stat.version, path, problem.reason)
        return out

    def _partition_nodes(
        self,
        kind: str,
        groups: Mapping[str, Iterable[str] | None],
        partitions: Mapping[str, int] | None,
        known: Known | None = None,
        likely: Mapping[str, Iterable[str]] | None = None,
    ) -> list[tuple[str, TopicPartition, str, bytes, int]]:
        """(group, partition, path, data, version) of every ``<kind>/<t>/<p>`` node.

        ``likely``: per group whose topics are listed, the topic dirs it likely has (the
        ones the bridge wrote): listed together with the group's dir, not after it. Two
        lists one after the other were a third of a commit's tick after a cold start
        (nothing listed yet: py-spy at 10,000 groups); a dir listed ahead that the group's
        list does not hold is not taken."""
        base = {g: f"{zkpaths.CONSUMERS}/{g}/{kind}" for g in groups}
        bases = [base[g] for g, ts in groups.items() if ts is None]
        ahead = sorted(
            {
                f"{base[g]}/{t}"
                for g, ts in groups.items()
                if ts is None
                for t in (likely or {}).get(g, ())
            }
        )
        listed = self.children(bases + ahead)
        topic_dirs: list[tuple[str, str]] = []
        for g, topics in groups.items():
            names = listed[base[g]] if topics is None else sorted(set(topics))
            for t in names:
                path = f"{base[g]}/{t}"
                if kind == "owners" and pykafka.is_bytes_owners_dir(t):
                    continue  # pykafka's b'<topic>' dir: pykafka_owners() reads it
                if topic_problem(t):
                    self.report(NodeProblem(path, str(topic_problem(t))))
                else:
                    topic_dirs.append((g, path))
        leaves = {d: listed[d] for _, d in topic_dirs if d in listed}
        leaves.update(self.children([d for _, d in topic_dirs if d not in leaves]))
        wanted: dict[str, tuple[str, TopicPartition]] = {}
        for g, d in topic_dirs:
            topic = _dir_topic(d)  # None: each leaf's path says what is wrong with it
            for name in leaves[d]:
                path = f"{d}/{name}"
                if kind == "owners" and pykafka.looks_like_owner_name(name):
                    continue  # pykafka's <leader>-<partition>: pykafka_owners() reads it
                if kind == "owners" and not name.isdigit():
                    self.report(
                        NodeProblem(
                            path,
                            f"unknown owner node name {name[:40]!r}: "
                            "neither <partition> nor pykafka's <leader broker id>-<partition>",
                        )
                    )
                    continue
                partition = parse_id(name) if topic is not None else None
                if topic is not None and partition is not None:
                    tp = TopicPartition(topic, partition)
                else:
                    try:
                        parsed = zkpaths.parse_path(path)
                    except zkpaths.ZkLayoutError as exc:
                        self.report(_problem(path, exc))
                        continue
                    tp = TopicPartition(parsed.topic, parsed.partition)
                if partitions is not None and tp.partition >= partitions.get(tp.topic, 0):
                    self.report(NodeProblem(path, "a partition that does not exist"))
                    continue
                wanted[path] = (g, tp)
        given = (
            {p: k for p, (g, _) in wanted.items() if (k := known(g, p)) is not None}
            if known is not None
            else {}
        )
        got = self.pipelined("get", [p for p in wanted if p not in given])
        got.update({p: (data, _Version(version)) for p, (data, version) in given.items()})
        return [
            (*wanted[path], path, data or b"", stat.version) for path, (data, stat) in got.items()
        ]


def _dir_topic(path: str) -> str | None:
    """The topic of a valid ``/consumers/<g>/<kind>/<t>`` path, None if it is not one:
    its leaves are then parsed each (a million offset nodes parsed whole each time their
    groups were read was a tenth of a commit's work)."""
    try:
        return getattr(zkpaths.parse_path(path), "topic", None)
    except zkpaths.ZkLayoutError:
        return None
