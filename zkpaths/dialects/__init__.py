"""Which ZooKeeper consumer wrote a registration under ``/consumers/<g>/ids``: the dialects.

Every ZooKeeper-balanced client registers under ``ids``, but not all alike. The Scala
consumer writes the JSON registration of :mod:`zkpaths.codecs.consumer` and owns partitions
per *thread* (``<consumer id>-<n>``); kafka-node's HighLevelConsumer writes the same JSON
with its own shape and owns per *consumer* (:mod:`.kafka_node`); pykafka's BalancedConsumer
writes a bare topic name and owns ``<leader>-<partition>`` nodes (:mod:`.pykafka`). A
group's members are decoded here once, tagged with their dialect, so the reader, the flows
and the commands agree on who is who and on the ids its owner nodes hold. A dialect module
adds its detection to :func:`decode_member` and its threads to :func:`member_threads`.
storm-kafka's KafkaSpout registers nothing there: its offsets live in a tree of its own
(:mod:`.storm`).

Pure: data in, :class:`Member` or :class:`~zkpaths.ZkLayoutError` out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from zkpaths.codecs.consumer import ConsumerRegistration, decode_consumer_registration
from zkpaths.dialects import kafka_node, pykafka
from zkpaths.errors import CodecError
from zkpaths.ids import registration_thread_ids

#: the JSON registration of the Scala high-level consumer (0.8-0.11)
SCALA = "scala"
KAFKA_NODE = kafka_node.DIALECT
PYKAFKA = pykafka.DIALECT
DIALECTS = (SCALA, KAFKA_NODE, PYKAFKA)


@dataclass(frozen=True)
class Member:
    """One registered ZooKeeper consumer: its dialect, topics and (JSON dialects) registration."""

    consumer_id: str
    dialect: str
    #: static topics, or the regexes of a wildcard registration
    topics: tuple[str, ...]
    #: the JSON registration; None for dialects that write none (pykafka)
    registration: ConsumerRegistration | None = None


def decode_member(consumer_id: str, data: bytes, *, path: str | None = None) -> Member:
    """The member a registration node describes; only raises ZkLayoutError (CodecError)."""
    if pykafka.is_registration(consumer_id, data):
        return Member(consumer_id, PYKAFKA, (pykafka.decode_registration(data, path=path),))
    reg = decode_consumer_registration(data, path=path)
    topics = tuple(sorted(reg.subscription))
    if kafka_node.is_registration(consumer_id, data, reg):
        problem = kafka_node.registration_problem(reg)
        if problem:
            raise CodecError("kafka-node registration", problem, path=path, data=data)
        return Member(consumer_id, KAFKA_NODE, topics, reg)
    return Member(consumer_id, SCALA, topics, reg)


def member_threads(member: Member, all_topics: Iterable[str] = ()) -> dict[str, tuple[str, ...]]:
    """Topic -> the ids this member's owner nodes hold (the "threads" legacy range sorts):
    Scala ``<id>-<n>`` per stream, wildcards resolved against ``all_topics``; kafka-node
    the consumer id itself; none for pykafka, which balances on its own (no proxy threads).
    Raises ZkLayoutError for a registration no thread can come of."""
    if member.registration is None:
        return {}
    if member.dialect == KAFKA_NODE:
        return kafka_node.threads(member.consumer_id, member.registration)
    return registration_thread_ids(member.consumer_id, member.registration, all_topics)


__all__ = [
    "DIALECTS",
    "KAFKA_NODE",
    "PYKAFKA",
    "SCALA",
    "Member",
    "decode_member",
    "kafka_node",
    "member_threads",
    "pykafka",
]
