"""Groups of kafka-node HighLevelConsumers: carried alone, refused when mixed. Pure.

A group of HighLevelConsumers alone is carried like a group of Scala consumers: one proxy
per consumer (keyed by its consumer id, which is what its owner nodes hold, so Kafka's
``range`` over the proxies is the consumers' own range), offsets by storage mode.

Mixed with anything else it is refused, because a HighLevelConsumer (kafka-node 3.0.1) gives
the bridge no moment at which its partitions are safe to hand over:

- it releases its owner nodes while a fetch may still be in flight, and delivers that
  fetch's messages whatever the rebalance (``Client._createMessageHandler`` emits every
  message; ``rebalanceAttempt`` only stops *new* fetches), so "released in ZooKeeper", which
  the bridge's SyncGroup gate waits for, does not mean "stopped fetching";
- with Scala consumers: it counts one consumer where the Scala consumer counts each stream,
  and takes ``owners`` data without the ``-<n>`` thread suffix, so the two compute
  different ranges over the same ``/ids`` whatever the bridge does.

Refused means: the bridge mirrors nothing new into the group's ``/ids`` and ``owners`` (the
HighLevelConsumers keep balancing among themselves), its leader proxy assigns every
partition to the proxies (Kafka members get none, so nothing is fetched twice), and one
line says so. The line names the group, who is mixed, and why.
"""

from __future__ import annotations

from collections.abc import Mapping

from bridge.decide.dialects import refusal_reasons, some
from bridge.decide.handover import is_proxy, range_assignment
from bridge.kafka.views import KafkaMember
from zkpaths import TopicPartition
from zkpaths.dialects import KAFKA_NODE, Member


def kafka_node_members(members: Mapping[str, Member]) -> list[str]:
    """The consumer ids of ``members`` that are kafka-node HighLevelConsumers."""
    return sorted(c for c, m in members.items() if m.dialect == KAFKA_NODE)


def kafka_node_refusal(
    group: str, members: Mapping[str, Member], kafka_clients: Mapping[str, str]
) -> str | None:
    """Why ``group`` cannot be shared, or None (no HighLevelConsumer, or they are alone).

    ``members``: the group's ZooKeeper consumers (the bridge's mirrored ids left out);
    ``kafka_clients``: its Kafka members other than the bridge's proxies (member id ->
    client id)."""
    hlc, why = refusal_reasons(
        members,
        kafka_clients,
        KAFKA_NODE,
        lambda clients: (
            f"Kafka members {clients}: a HighLevelConsumer delivers the messages of a fetch "
            "still in flight after it released its partitions in ZooKeeper, so no hand-over "
            "to a Kafka member can keep a partition from being fetched twice; those members "
            "are assigned no partitions"
        ),
        lambda others: (
            f"{members[others[0]].dialect} consumers {some(others)}: kafka-node counts one "
            "consumer where they count each stream and owns partitions without the -<n> "
            "thread suffix, so the two compute different ranges over the same /ids"
        ),
    )
    if not why:
        return None
    return (
        f"group {group}: refusing to mix kafka-node HighLevelConsumers ({some(hlc)}) with "
        + "; and with ".join(why)
        + ". Nothing is mirrored into the group; run one kind of consumer per group "
        "(docs/coexistence.md#kafka-node)"
    )


def kafka_node_step_problem(members: Mapping[str, Member], target: str) -> str | None:
    """Why a storage-mode step to ``target`` does not fit a group with kafka-node
    HighLevelConsumers, or None. They commit with OffsetCommit v0 only, which the gateway
    keeps in ZooKeeper (and a KRaft broker refuses): in mode ``kafka`` Kafka would be the
    truth while every commit they make lands in ZooKeeper alone."""
    hlc = kafka_node_members(members)
    if not hlc or target != "kafka":
        return None
    return (
        f"kafka-node HighLevelConsumers ({some(hlc)}) commit with OffsetCommit v0, kept in "
        "ZooKeeper only: in mode kafka their commits would never reach the store the bridge "
        "treats as the truth; the group stays in mode zookeeper or dual until they are replaced"
    )


def proxies_only(
    members: tuple[KafkaMember, ...], old_threads: frozenset[str], partitions: Mapping[str, int]
) -> dict[TopicPartition, str]:
    """The assignment a refusing leader proxy sends: Kafka's range over the proxies alone,
    so every partition stays with the old consumers the proxies stand for."""
    return range_assignment(tuple(m for m in members if is_proxy(m, old_threads)), partitions)


__all__ = [
    "kafka_node_members",
    "kafka_node_refusal",
    "kafka_node_step_problem",
    "proxies_only",
]
