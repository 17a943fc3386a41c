"""Identifiers of the old consumer: consumer ids and thread ids.

A consumer id is ``<group>_<hostname>-<epoch ms>-<uuid8>`` (``ZookeeperConsumerConnector``),
or ``<group>_<consumer.id>`` when ``consumer.id`` is configured. Each of its streams is a
thread ``<consumer id>-<n>``; thread ids are what range/roundrobin sort and what owner nodes
hold. ``<uuid8>`` is ``Long.toHexString(uuid.getMostSignificantBits()).substring(0, 8)``:
Java drops leading zeros, so it is the first 8 digits of the msb *without* its leading
zeros, not always the first 8 hex digits of the uuid.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from uuid import UUID

from zkpaths.codecs.consumer import ConsumerRegistration
from zkpaths.errors import LegacyFormatError
from zkpaths.topicfilter import INTERNAL_TOPICS_0_10, registration_filter

_GENERATED = re.compile(r"(?P<host>.*)-(?P<ms>[0-9]+)-(?P<uuid>[0-9a-f]{8})", re.DOTALL)
_THREAD_NUMBER = re.compile(r"0|[1-9][0-9]*")


def uuid_prefix(uuid: UUID) -> str:
    """The uuid part of a generated consumer id (see the module docstring)."""
    digits = format(uuid.int >> 64, "x")
    if len(digits) < 8:  # Java would throw StringIndexOutOfBoundsException here
        raise ValueError(f"uuid {uuid} has too few significant hex digits for a consumer id")
    return digits[:8]


def make_consumer_id(group: str, hostname: str, timestamp_ms: int, uuid: UUID) -> str:
    """A consumer id as the old consumer generates it without ``consumer.id``."""
    return f"{group}_{hostname}-{timestamp_ms}-{uuid_prefix(uuid)}"


def make_configured_consumer_id(group: str, consumer_id: str) -> str:
    """A consumer id when ``consumer.id`` is configured: the value replaces host-ms-uuid."""
    return f"{group}_{consumer_id}"


@dataclass(frozen=True)
class ConsumerIdParts:
    """A consumer id taken apart; host/ms/uuid are ``None`` when it was not generated."""

    group: str
    suffix: str
    hostname: str | None = None
    timestamp_ms: int | None = None
    uuid8: str | None = None

    @property
    def generated(self) -> bool:
        return self.hostname is not None


def parse_consumer_id(group: str, consumer_id: str) -> ConsumerIdParts:
    """Take a consumer id of ``group`` apart; :class:`LegacyFormatError` if not ``<group>_...``.

    A configured ``consumer.id`` that happens to look generated parses as generated: the
    two forms cannot be told apart from the id alone.
    """
    prefix = f"{group}_"
    if not consumer_id.startswith(prefix) or len(consumer_id) == len(prefix):
        raise LegacyFormatError("consumer id", consumer_id, f"does not start with {prefix!r}")
    suffix = consumer_id[len(prefix) :]
    match = _GENERATED.fullmatch(suffix)
    if match is None:
        return ConsumerIdParts(group, suffix)
    return ConsumerIdParts(
        group, suffix, match.group("host"), int(match.group("ms")), match.group("uuid")
    )


@dataclass(frozen=True)
class ThreadId:
    """``ConsumerThreadId``: one stream of one consumer. ``str()`` gives the id itself."""

    consumer_id: str
    thread: int

    def __str__(self) -> str:
        return f"{self.consumer_id}-{self.thread}"


def thread_id(consumer_id: str, thread: int) -> str:
    """``<consumer id>-<n>``."""
    if isinstance(thread, bool) or not isinstance(thread, int) or thread < 0:
        raise ValueError(f"thread number must be a non-negative int, got {thread!r}")
    return f"{consumer_id}-{thread}"


def parse_thread_id(text: str) -> ThreadId:
    """Split a thread id at its last '-'; :class:`LegacyFormatError` if that is no thread id."""
    consumer_id, sep, number = text.rpartition("-")
    if not sep or not consumer_id or not _THREAD_NUMBER.fullmatch(number):
        raise LegacyFormatError("thread id", text, "does not end in -<thread number>")
    return ThreadId(consumer_id, int(number))


def thread_ids_per_topic(
    consumer_id: str, topic_counts: Mapping[str, int]
) -> dict[str, tuple[str, ...]]:
    """``TopicCount.makeConsumerThreadIdsPerTopic``: ``n`` streams of a topic are threads
    ``<consumer id>-0`` .. ``-<n-1>``, so one thread id can serve several topics."""
    result: dict[str, tuple[str, ...]] = {}
    for topic, count in topic_counts.items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"stream count for topic {topic!r} must be >= 1, got {count!r}")
        result[topic] = tuple(thread_id(consumer_id, n) for n in range(count))
    return result


def registration_thread_ids(
    consumer_id: str,
    registration: ConsumerRegistration,
    all_topics: Iterable[str] = (),
    *,
    exclude_internal_topics: bool = True,
    internal_topics: frozenset[str] = INTERNAL_TOPICS_0_10,
) -> dict[str, tuple[str, ...]]:
    """The threads a registered consumer runs per topic, as every old consumer computes it.

    A static registration names its topics. A wildcard one applies its filter to
    ``all_topics`` (the children of ``/brokers/topics``) with the same stream count each.
    """
    topic_filter = registration_filter(registration)
    if topic_filter is None:
        return thread_ids_per_topic(consumer_id, registration.subscription)
    streams = next(iter(registration.subscription.values()))
    topics = topic_filter.select(all_topics, exclude_internal_topics, internal_topics)
    return thread_ids_per_topic(consumer_id, dict.fromkeys(topics, streams))
