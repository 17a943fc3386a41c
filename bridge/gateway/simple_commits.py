"""Old consumers' generation -1 commits into a group where this bridge's proxies are members.

Kafka refuses an OffsetCommit at generation -1 without a member id once the group has a
member (the coordinator's ``validateOffsetCommit``: UNKNOWN_MEMBER_ID), and coexistence
joins a proxy per old thread; an old Scala consumer with ``offsets.storage=kafka`` (and
``dual.commit.enabled``, whose ZooKeeper write follows a Kafka success only) would then
commit nothing anywhere. So the gateway commits each partition as the proxy of the old
thread that owns it in ZooKeeper (``decide.simple_commits``), with that proxy's member id,
instance id and generation. A partition it cannot commit so is answered
REBALANCE_IN_PROGRESS (UNKNOWN for 0.8.2's v1): every old client counts that as "not
committed, try again" (Scala 0.8.2-0.11 ``commitOffsets`` writes ZooKeeper only for the
partitions that succeeded and retries the rest at the next commit; pykafka logs and
continues), and nothing is stored in Kafka that its committer does not own. A partition of
an old thread whose proxy is between generations is kept in ZooKeeper instead (see
``decide.simple_commits``), as the gateway keeps v0 commits: written on the client's
behalf, as its broker did, not by the bridge's fenced writer.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from kafka.protocol.consumer import OffsetCommitRequest, OffsetFetchRequest

import zkpaths
from bridge.decide.simple_commits import (
    ProxyIdentity,
    ahead,
    behind,
    is_simple_commit,
    plan_simple_commit,
)
from bridge.gateway import errors
from bridge.metrics import METRICS
from bridge.zookeeper.reader import ConsumerTreeReader, NodeProblem, log_problem
from zkpaths import GroupPartition, TopicPartition

if TYPE_CHECKING:
    from bridge.gateway.server import Core

log = logging.getLogger(__name__)

#: OffsetCommit v7 carries the static member's instance id (3.9 and 4.x take it)
COMMIT_AS_PROXY_VERSION = 7
ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS = 22, 25, 27
FENCED_INSTANCE_ID = 82
#: the coordinator's answers to a commit whose member or generation just changed
MOVED_ON = frozenset(
    {ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID}
)
#: how long a proxy mid-rebalance gets to finish its JoinGroup before the one retry
RETRY_AFTER_S = 0.5

Offsets = dict[TopicPartition, tuple[int, str]]
Codes = dict[tuple[str, int], int]

#: (group, partition) -> the reason last logged, so a refusal is logged once, not per commit
_logged: dict[tuple[str, TopicPartition], str] = {}


async def commit_as_proxies(core: Core, request) -> Codes | None:
    """The per-partition codes of ``request`` committed as the owners' proxies, or None when
    it is not a simple commit into a group with this bridge's proxies (pass it through)."""
    group = request.group_id
    if core.proxies is None or core.zookeeper is None:
        return None
    if not is_simple_commit(request.generation_id_or_member_epoch, request.member_id or ""):
        return None
    proxies = core.proxies(group)
    if not proxies:
        return None  # no proxy here, or this bridge does not lead: redirect_from_standby
    offsets: Offsets = {
        TopicPartition(t.name, p.partition_index): (p.committed_offset, p.committed_metadata or "")
        for t in request.topics
        for p in t.partitions
    }
    owners, in_zookeeper = await _owners(core, group, offsets)
    in_kafka = await _in_kafka(core, group, offsets)
    plain = {tp: o for tp, (o, _) in offsets.items()}
    plan = plan_simple_commit(offsets, owners, proxies, behind(plain, in_zookeeper, in_kafka))
    log.debug(
        "gateway: simple commit of %r %s; owners %s, in ZooKeeper %s, in Kafka %s: %s",
        group,
        plain,
        owners,
        in_zookeeper,
        in_kafka,
        plan,
    )
    codes: Codes = {}
    for tp, why in plan.refused.items():
        _log_refusal(group, tp, why)
        codes[(tp.topic, tp.partition)] = REBALANCE_IN_PROGRESS
    batches = [
        _commit_as(core, group, thread, proxies[thread], {tp: offsets[tp] for tp in tps})
        for thread, tps in plan.as_proxy.items()
    ]
    between = set(plan.between)
    for result in await asyncio.gather(*batches):
        codes.update(result)
        between |= {TopicPartition(*k) for k, c in result.items() if c == REBALANCE_IN_PROGRESS}
    if between:
        await _keep_in_zookeeper(core, group, {tp: offsets[tp][0] for tp in between})
    committed = sum(1 for c in codes.values() if c == errors.NONE)
    METRICS.simple_commits.labels(outcome="committed").inc(committed)
    METRICS.simple_commits.labels(outcome="kept").inc(len(between))
    METRICS.simple_commits.labels(outcome="refused").inc(len(codes) - committed - len(between))
    return codes


def redirect_from_standby(core: Core, request, codes: dict) -> None:
    """A simple commit passed through by a standby bridge's gateway and refused because the
    group has members (the active bridge's proxies, most likely) is answered NOT_COORDINATOR
    instead of UNKNOWN_MEMBER_ID: old consumers then drop their offsets connection and look
    the coordinator up again through ``/brokers/ids``, which publishes the active bridge's
    gateway, where the commit is made as the proxies. A consumer that kept its connection to
    this gateway across a bridge failover would otherwise commit nothing until it reconnects.
    """
    if core.proxies is None or not is_simple_commit(
        request.generation_id_or_member_epoch, request.member_id or ""
    ):
        return
    refused = [k for k, c in codes.items() if c == UNKNOWN_MEMBER_ID]
    if refused and core.proxies(request.group_id) is None:
        for k in refused:
            codes[k] = errors.NOT_COORDINATOR
        log.info(
            "gateway: old consumer's commit of %r refused (the group has members) on a standby "
            "bridge; answered NOT_COORDINATOR so it finds the active bridge's gateway",
            request.group_id,
        )


async def _owners(
    core: Core, group: str, offsets: Offsets
) -> tuple[dict[TopicPartition, str], dict[TopicPartition, int]]:
    """The thread id in each owner node of the commit's topics, and the offset nodes of its
    partitions (bad nodes reported once and left out)."""
    zk = core.zookeeper
    topics = sorted({tp.topic for tp in offsets})

    def read() -> tuple[dict[TopicPartition, str], dict[TopicPartition, int]]:
        reader = ConsumerTreeReader(zk, report=_report)
        owners = reader.owners({group: topics})[group]
        nodes = reader.offsets_at(GroupPartition(group, tp.topic, tp.partition) for tp in offsets)
        stored = {TopicPartition(k.topic, k.partition): n.offset for k, n in nodes.items()}
        return owners, stored

    return await asyncio.get_running_loop().run_in_executor(None, read)


async def _in_kafka(core: Core, group: str, offsets: Offsets) -> dict[TopicPartition, int]:
    """The group's committed offsets of the commit's partitions (none if unreadable now: the
    commit is then judged on ZooKeeper's alone)."""
    topics: dict[str, list[int]] = {}
    for tp in sorted(offsets):
        topics.setdefault(tp.topic, []).append(tp.partition)
    Topic = OffsetFetchRequest.OffsetFetchRequestTopic

    def build():
        return OffsetFetchRequest[1](
            group_id=group,
            topics=[Topic(name=t, partition_indexes=ps) for t, ps in topics.items()],
        )

    from bridge.gateway.groups import to_group_coordinator  # groups imports this module

    _, response = await to_group_coordinator(core, group, build)
    if response is None:
        return {}
    return {
        TopicPartition(t.name, p.partition_index): p.committed_offset
        for t in response.topics
        for p in t.partitions
        if p.error_code == errors.NONE
    }


#: bad owner or offset nodes already reported (each is read again at every commit)
_reported: set[NodeProblem] = set()


def _report(problem: NodeProblem) -> None:
    """A bad node the commits read, reported once (I5), not at every auto-commit."""
    if problem in _reported:
        return
    if len(_reported) > 100_000:
        _reported.clear()
    _reported.add(problem)
    log_problem(problem, "gateway")


async def _keep_in_zookeeper(core: Core, group: str, offsets: dict[TopicPartition, int]) -> None:
    """A commit Kafka could not take mid-rebalance, into the offset nodes where it is ahead
    (compare-and-set on the node's version; a lost race is the consumer's next commit's)."""
    zk = core.zookeeper

    def write() -> None:
        wanted = [GroupPartition(group, tp.topic, tp.partition) for tp in offsets]
        nodes = ConsumerTreeReader(zk, report=_report).offsets_at(wanted)
        stored = {TopicPartition(k.topic, k.partition): n.offset for k, n in nodes.items()}
        for tp, offset in sorted(ahead(offsets, stored).items()):
            path = zkpaths.offset_path(group, tp.topic, tp.partition)
            node = nodes.get(GroupPartition(group, tp.topic, tp.partition))
            try:
                if node is None:
                    zk.create(path, str(offset).encode(), makepath=True)
                else:
                    zk.set(path, str(offset).encode(), version=node.version)
            except Exception as exc:  # noqa: BLE001 - per partition; the next commit retries
                log.warning("gateway: keeping %r's commit in %s failed: %r", group, path, exc)

    await asyncio.get_running_loop().run_in_executor(None, write)


async def _commit_as(
    core: Core, group: str, thread: str, proxy: ProxyIdentity, offsets: Offsets
) -> Codes:
    """``offsets`` committed as ``proxy``; once more with its fresh generation if the
    coordinator says it moved on (a rebalance), else REBALANCE_IN_PROGRESS (retriable).
    The retry takes only what the fresh generation gave the proxy: a partition the
    rebalance moved on belongs to its next owner, whose commits this one must not land on."""
    codes = await _send(core, group, proxy, offsets)
    moved = {k for k, c in codes.items() if c in MOVED_ON}
    if moved:
        await asyncio.sleep(RETRY_AFTER_S)
        fresh = (core.proxies(group) if core.proxies else {}).get(thread)
        retried: Codes = {}
        if fresh is not None and fresh.joined:
            again = {
                tp: o
                for tp, o in offsets.items()
                if (tp.topic, tp.partition) in moved and tp in fresh.assigned
            }
            retried = await _send(core, group, fresh, again) if again else {}
        for k in moved:
            code = retried.get(k, REBALANCE_IN_PROGRESS)
            codes[k] = REBALANCE_IN_PROGRESS if code in MOVED_ON else code
    for (topic, partition), code in codes.items():
        if code != errors.NONE:
            _log_refusal(
                group, TopicPartition(topic, partition), f"the proxy of {thread!r} got error {code}"
            )
        else:
            _logged.pop((group, TopicPartition(topic, partition)), None)
    return codes


async def _send(core: Core, group: str, proxy: ProxyIdentity, offsets: Offsets) -> Codes:
    from bridge.gateway.groups import to_group_coordinator  # groups imports this module

    topics: dict[str, list] = {}
    Topic = OffsetCommitRequest.OffsetCommitRequestTopic
    for tp, (offset, metadata) in sorted(offsets.items()):
        topics.setdefault(tp.topic, []).append(
            Topic.OffsetCommitRequestPartition(
                partition_index=tp.partition, committed_offset=offset, committed_metadata=metadata
            )
        )

    def build():
        return OffsetCommitRequest[COMMIT_AS_PROXY_VERSION](
            group_id=group,
            generation_id_or_member_epoch=proxy.generation_id,
            member_id=proxy.member_id,
            group_instance_id=proxy.group_instance_id,
            topics=[Topic(name=t, partitions=ps) for t, ps in topics.items()],
        )

    code, response = await to_group_coordinator(core, group, build)
    if response is None:
        return {(tp.topic, tp.partition): code for tp in offsets}
    return {
        (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
    }


def _log_refusal(group: str, tp: TopicPartition, why: str) -> None:
    """One line per group partition and reason (not one per auto-commit)."""
    if _logged.get((group, tp)) == why:
        return
    if len(_logged) > 100_000:  # bounded: a fleet's worth of refused partitions, then anew
        _logged.clear()
    _logged[(group, tp)] = why
    log.warning(
        "gateway: old consumer's commit of %r %s-%d not stored in Kafka: %s; answered "
        "REBALANCE_IN_PROGRESS, the consumer commits it again later",
        group,
        tp.topic,
        tp.partition,
        why,
    )
