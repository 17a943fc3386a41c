"""Old consumers' "simple" offset commits in a group where the bridge's proxies are members.

Pure. Old Scala consumers with ``offsets.storage=kafka`` (0.8.2-0.11) and pykafka commit
with OffsetCommit v1/v2 at generation -1 without a member id. Kafka's coordinator stores
such a commit only while the group has no member (``validateOffsetCommit``); coexistence
joins a proxy per old thread, so every such commit would be refused (UNKNOWN_MEMBER_ID) and
with ``dual.commit.enabled`` the consumer then writes ZooKeeper neither. The legacy gateway
instead commits each partition *as the proxy of the old thread that owns it* in ZooKeeper
(``/consumers/<g>/owners/<t>/<p>``): that is the member Kafka gave the partition to on the
thread's behalf, so the commit is the one the thread would make if it spoke the group
protocol itself. A partition no old thread with a proxy owns (a new member's mirrored id,
a bridge fence, no owner node) is not committed: its committer does not own it.

While the owner's proxy is between generations (not joined yet, or the coordinator answers
REBALANCE_IN_PROGRESS while the leader proxy holds SyncGroup), Kafka takes no commit from
it; that is exactly when an old consumer makes its final commit before releasing a
partition. Such a commit is kept in ZooKeeper (``/consumers/<g>/offsets``), where the
hand-over gate reads the old owner's final offset and carries it into Kafka before the new
owner is given the partition: nothing is re-processed across the hand-over.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from zkpaths import TopicPartition

#: the generation and member id of a commit made outside any group generation
SIMPLE_GENERATION = -1


@dataclass(frozen=True)
class ProxyIdentity:
    """What the coordinator checks an offset commit against: the proxy's member id, its
    static instance id (the old thread id) and the generation of its last JoinGroup; and
    ``assigned``, the partitions Kafka gave the proxy in that generation (empty until its
    SyncGroup answers). Kafka checks the generation but not the partition: a commit of a
    partition the proxy does not hold in its generation could land over the commits of the
    member that does (the new owner after a hand-over), so only ``assigned`` is committed."""

    member_id: str
    group_instance_id: str
    generation_id: int
    assigned: frozenset[TopicPartition] = frozenset()

    @property
    def joined(self) -> bool:
        return bool(self.member_id) and self.generation_id >= 0


@dataclass(frozen=True)
class CommitPlan:
    """Which partitions commit as which proxy (thread id -> partitions), which are refused
    (partition -> why, for the one log line); ``between``: refused partitions of old threads
    whose proxy has not joined or does not hold them in its generation (kept in ZooKeeper,
    where ahead, for the hand-over gate)."""

    as_proxy: dict[str, tuple[TopicPartition, ...]] = field(default_factory=dict)
    refused: dict[TopicPartition, str] = field(default_factory=dict)
    between: frozenset[TopicPartition] = frozenset()


def is_simple_commit(generation_id: int, member_id: str) -> bool:
    """A commit outside any generation: what old consumers and pykafka send."""
    return generation_id < 0 and not member_id


def plan_simple_commit(
    partitions: Iterable[TopicPartition],
    owners: Mapping[TopicPartition, str],
    proxies: Mapping[str, ProxyIdentity],
    behind_stored: Mapping[TopicPartition, int] | None = None,
) -> CommitPlan:
    """Each of ``partitions`` committed as the proxy of its ZooKeeper owner (``owners``:
    partition -> thread id in its owner node), or refused with the reason. ``behind_stored``
    (see :func:`behind`): partitions whose commit is older than what a store holds."""
    as_proxy: dict[str, list[TopicPartition]] = {}
    refused: dict[TopicPartition, str] = {}
    between: set[TopicPartition] = set()
    behind_stored = behind_stored or {}
    for tp in sorted(set(partitions)):
        thread = owners.get(tp)
        if tp in behind_stored:
            refused[tp] = "behind the offset already stored: a retry of an older commit"
        elif thread is None:
            refused[tp] = "no old thread owns it in ZooKeeper"
        elif thread not in proxies:
            refused[tp] = f"its owner {thread!r} is not an old thread with a proxy"
        elif not proxies[thread].joined:
            refused[tp] = f"the proxy of its owner {thread!r} has not joined the group yet"
            between.add(tp)
        elif tp not in proxies[thread].assigned:
            refused[tp] = (
                f"generation {proxies[thread].generation_id} has not given it to the proxy "
                f"of its owner {thread!r} (moving)"
            )
            between.add(tp)
        else:
            as_proxy.setdefault(thread, []).append(tp)
    return CommitPlan({t: tuple(tps) for t, tps in as_proxy.items()}, refused, frozenset(between))


def behind(offsets: Mapping[TopicPartition, int], *stores: Mapping[TopicPartition, int]) -> dict:
    """The commits older than what Kafka or ZooKeeper already hold (partition -> the stored
    offset). The Scala consumers' auto-commit retries a failed commit up to
    ``offsets.commit.max.retries`` times, one ``offsets.channel.backoff.ms`` apart, with the
    offsets it took at the first attempt; by then the thread has consumed on, and storing
    such a retry (as the proxy, then in ZooKeeper by its dual commit) would move the group
    back and have it re-read. The thread itself never commits below what it resumed from
    (the larger of both stores), so an older commit is always such a retry."""
    out = {}
    for tp, offset in offsets.items():
        stored = max((s.get(tp, -1) for s in stores), default=-1)
        if offset < stored:
            out[tp] = stored
    return out


def ahead(offsets: Mapping[TopicPartition, int], stored: Mapping[TopicPartition, int]) -> dict:
    """The offsets to keep in ZooKeeper: those ahead of the node's (absent: -1). An old
    consumer never moves backwards on its own, so an older commit arriving late is dropped."""
    return {tp: o for tp, o in offsets.items() if o > stored.get(tp, -1)}
