"""kafka-node's ``HighLevelConsumer`` dialect of ``/consumers/<g>`` (kafka-node 3.0.1, the last
release with the ZooKeeper ``Client``; 4.0.0 removed both).

Read from kafka-node's own source at tag v3.0.1 (``lib/highLevelConsumer.js``,
``lib/zookeeper.js``):

- consumer id ``<group>_<uuid v4>`` (``options.id`` replaces it when set); one consumer is
  one "thread": it never runs several streams;
- registration ``/consumers/<g>/ids/<id>`` (ephemeral), JSON built as text:
  ``{"version":1,"subscription":{"<t>": 1, "<t2>": 1},"pattern":"white_list",
  "timestamp":"<ms>"}``; the pattern is always ``white_list`` but the keys are plain topic
  names (not regexes) and every count is ``1``; note the space after each colon;
- owner ``/consumers/<g>/owners/<t>/<p>`` (ephemeral) holds the **consumer id**, without the
  ``-<n>`` thread suffix of the Scala consumer;
- no offset nodes of its own: it commits with OffsetCommit **v0** and reads with OffsetFetch
  v0, sent to the partition's leader; brokers up to 2.x kept v0 offsets in
  ``/consumers/<g>/offsets/<t>/<p>``, a KRaft broker refuses them (UNSUPPORTED_VERSION,
  which kafka-node ignores on commit and reads as "no offset" on fetch);
- balancing: every consumer of a topic sorts the ids subscribed to it (JavaScript's default
  sort: UTF-16 code units, as Java's ``compareTo``) and takes the range
  ``n*i + min(i, extra)`` of the partitions sorted as numbers: the old consumer's range over
  consumer ids instead of thread ids.

Pure: names and data in, values or :class:`~zkpaths.ZkLayoutError` out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from zkpaths._decode import MAX_NODE_BYTES, Decoder
from zkpaths.codecs.consumer import WHITE_LIST, ConsumerRegistration
from zkpaths.errors import CodecError
from zkpaths.names import topic_problem

DIALECT = "kafka-node"

_UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
#: kafka-node's own spelling of a subscription entry: ``"<topic>": 1`` (a space, count 1)
_ENTRY = re.compile(rb'"[^"]*": 1[,}]')


def is_generated_id(consumer_id: str) -> bool:
    """``<group>_<uuid v4>``: the id a HighLevelConsumer gives itself."""
    _, sep, tail = consumer_id.rpartition("_")
    return bool(sep) and _UUID4.fullmatch(tail) is not None


def is_registration(consumer_id: str, data: bytes, reg: ConsumerRegistration) -> bool:
    """Whether a decoded JSON registration is a HighLevelConsumer's: pattern ``white_list``,
    every count 1, and kafka-node's own text spelling of an entry (``"t": 1``, with a space,
    which it builds by hand). A Scala consumer writes ``"t":1`` with ``JSONEscapeString``,
    whatever its id; the id alone cannot tell (``options.id`` sets any id)."""
    if reg.pattern != WHITE_LIST or not reg.subscription:
        return False
    if any(n != 1 for n in reg.subscription.values()):
        return False
    return _ENTRY.search(data) is not None


def registration_problem(reg: ConsumerRegistration) -> str | None:
    """What makes a kafka-node registration unusable, if anything: its keys must be topic
    names (kafka-node fetches them literally, never as regexes)."""
    for key in reg.subscription:
        problem = topic_problem(key)
        if problem:
            return f"kafka-node subscribes to topics by name, and {key[:40]!r} is none: {problem}"
    return None


def threads(consumer_id: str, reg: ConsumerRegistration) -> dict[str, tuple[str, ...]]:
    """Topic -> the ids its owner nodes hold: the consumer id itself, for every topic."""
    return {t: (consumer_id,) for t in sorted(reg.subscription)}


def encode_registration(topics: Sequence[str], timestamp_ms: int) -> bytes:
    """A registration exactly as ``Zookeeper.registerConsumer`` builds it (tests, fixtures)."""
    for t in topics:
        problem = topic_problem(t)
        if problem:
            raise ValueError(problem)
    entries = ", ".join(f'"{t}": 1' for t in topics)
    text = f'{{"version":1,"subscription":{{{entries}}}'
    return (text + f',"pattern":"white_list","timestamp":"{timestamp_ms}"}}').encode()


def owner_problem(group: str, data: bytes, known: Mapping[str, object]) -> str | None:
    """Why an owner node of a group with kafka-node consumers holds no known id, or None.

    ``known``: every id an owner may hold in the group (registered kafka-node ids, Scala
    thread ids, the bridge's mirrored ids). Data not even of the form ``<group>_...`` is
    always wrong; so is one of that form that no consumer registered, except a generated
    kafka-node id (``<group>_<uuid v4>``): a HighLevelConsumer that is leaving releases its
    partitions and unregisters in parallel, so for a moment its owner nodes outlive its id."""
    d = Decoder("partition owner", data, None, MAX_NODE_BYTES)
    try:
        text = d.text()
    except CodecError as exc:
        return f"bad {exc.what}: {exc.reason}"
    if not text.startswith(f"{group}_"):
        return f"owner {text[:60]!r} is not a consumer id of group {group!r}"
    if text in known or is_generated_id(text):
        return None  # a HighLevelConsumer that just left: its owner nodes go next
    return f"owner {text[:60]!r} is not a registered consumer of group {group!r}"


def range_partitions(
    consumer_id: str, subscribed: Sequence[str], partitions: Sequence[int]
) -> list[int]:
    """The partitions ``consumer_id`` claims among ``subscribed`` (every id registered for
    the topic) as ``HighLevelConsumer.rebalanceAttempt`` computes them."""
    order = sorted(subscribed, key=_utf16)
    parts = sorted(partitions)
    i = order.index(consumer_id)
    per, extra = divmod(len(parts), len(order))
    start = per * i + min(i, extra)
    return parts[start : start + per + (1 if i < extra else 0)]


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


__all__ = [
    "DIALECT",
    "encode_registration",
    "is_generated_id",
    "is_registration",
    "owner_problem",
    "range_partitions",
    "registration_problem",
    "threads",
]
