"""The old consumers' nodes: ``/consumers/<g>/ids/<id>``, ``owners/<t>/<p>``, ``offsets/<t>/<p>``.

A registration is ``{"version":1,"subscription":{"<topic>":<streams>},"pattern":"static",
"timestamp":"<ms>"}``. With ``pattern`` ``white_list``/``black_list`` the subscription key is
the topic regex. Writers differ in spacing and key order (0.8.0 wrote
``{ "pattern":"static", "subscription":{ "t": 1 }, ... }``; kafka-node writes ``white_list``
with plain topic names and several keys), so the decoder parses JSON and never
pattern-matches text. The encoder writes the compact form of the 0.10 consumer
(``ZookeeperConsumerConnector.registerConsumerInZK``): keys ``version``, ``subscription``,
``pattern``, ``timestamp`` in that order, the subscription key escaped with
``JSONEscapeString``.

An owner node holds the owning thread id as UTF-8 text; an offset node the next offset to
consume as decimal text (``-1``, the old consumer's "no offset", is valid: it commits that
for a partition it owns but has not fetched yet).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from zkpaths._decode import INT64_MAX, MAX_NODE_BYTES, Decoder
from zkpaths.codecs._json import legacy_escape
from zkpaths.names import topic_problem

STATIC = "static"
WHITE_LIST = "white_list"
BLACK_LIST = "black_list"
PATTERNS = (STATIC, WHITE_LIST, BLACK_LIST)
CONSUMER_REGISTRATION_VERSIONS = (1,)

#: streams per subscription entry accepted when decoding; the old consumer has no limit, but
#: a foreign node claiming millions of threads must not make the bridge enumerate them
MAX_STREAMS = 10_000

_OFFSET = re.compile(r"-1|[0-9]{1,19}")


@dataclass(frozen=True)
class ConsumerRegistration:
    """One old consumer's subscription: topic (or regex) -> number of streams (threads)."""

    subscription: dict[str, int] = field(hash=False)
    pattern: str = STATIC
    timestamp_ms: int | None = None
    version: int = 1

    def __post_init__(self) -> None:
        subscription: Mapping[str, int] = self.subscription
        object.__setattr__(self, "subscription", dict(subscription))

    @property
    def is_wildcard(self) -> bool:
        return self.pattern in (WHITE_LIST, BLACK_LIST)


# -- registration ------------------------------------------------------------------------------


def encode_consumer_registration(reg: ConsumerRegistration) -> bytes:
    """The registration as the 0.10 consumer writes it; :class:`ValueError` names a bad field."""
    if reg.version not in CONSUMER_REGISTRATION_VERSIONS:
        raise ValueError(f"consumer registrations are written as v1, not v{reg.version}")
    if reg.pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {PATTERNS}, not {reg.pattern!r}")
    entries: list[str] = []
    for key, streams in reg.subscription.items():
        problem = _subscription_problem(reg.pattern, key, streams)
        if problem:
            raise ValueError(problem)
        entries.append(f'"{legacy_escape(key)}":{streams}')
    text = f'{{"version":{reg.version},"subscription":{{{",".join(entries)}}}'
    text += f',"pattern":"{reg.pattern}"'
    if reg.timestamp_ms is not None:
        if isinstance(reg.timestamp_ms, bool) or not isinstance(reg.timestamp_ms, int):
            raise ValueError(f"timestamp_ms must be an int, got {reg.timestamp_ms!r}")
        if not 0 <= reg.timestamp_ms <= INT64_MAX:
            raise ValueError(f"timestamp_ms {reg.timestamp_ms} is out of range")
        text += f',"timestamp":"{reg.timestamp_ms}"'
    return (text + "}").encode("utf-8")


def _subscription_problem(pattern: str, key: object, streams: object) -> str | None:
    if not isinstance(key, str):
        return f"subscription key {key!r} is not a string"
    if pattern == STATIC:
        problem = topic_problem(key)
        if problem:
            return f"static subscription: {problem}"
    elif not key:
        return "wildcard subscription has an empty regex"
    if isinstance(streams, bool) or not isinstance(streams, int):
        return f"stream count for {key!r} must be an int, got {type(streams).__name__}"
    if not 1 <= streams <= MAX_STREAMS:
        return f"stream count {streams} for {key!r} is outside 1..{MAX_STREAMS}"
    return None


def decode_consumer_registration(
    data: bytes, *, path: str | None = None, limit: int = MAX_NODE_BYTES
) -> ConsumerRegistration:
    """A consumer's registration from its node data; only raises CodecError."""
    d = Decoder("consumer registration", data, path, limit)
    obj = d.json_object()
    version = d.require(obj, "version")
    if version == "1":  # tolerated: the number as a string
        version = 1
    if type(version) is not int or version not in CONSUMER_REGISTRATION_VERSIONS:
        d.unknown_version(version, CONSUMER_REGISTRATION_VERSIONS)
    pattern = d.string(d.require(obj, "pattern"), "pattern")
    if pattern not in PATTERNS:
        d.fail(f"unknown pattern {pattern[:40]!r} (known: {', '.join(PATTERNS)})")
    subscription = d.obj(d.require(obj, "subscription"), "subscription")
    for key, streams in subscription.items():
        if isinstance(streams, int) and not isinstance(streams, bool):
            problem = _subscription_problem(pattern, key, streams)
        else:
            problem = f"stream count for {key[:40]!r} must be an integer"
        if problem:
            d.fail(problem)
    timestamp = obj.get("timestamp")
    timestamp_ms = None if timestamp is None else d.timestamp(timestamp)
    return ConsumerRegistration(subscription, pattern, timestamp_ms, version)


# -- owners ------------------------------------------------------------------------------------


def encode_owner(thread_id: str) -> bytes:
    """An owner node's data: the owning thread id."""
    if not isinstance(thread_id, str) or not thread_id:
        raise ValueError(f"owner thread id must be a non-empty string, got {thread_id!r}")
    return thread_id.encode("utf-8")


def decode_owner(data: bytes, *, path: str | None = None, limit: int = MAX_NODE_BYTES) -> str:
    """The thread id (or, for kafka-node, consumer id) owning a partition."""
    return Decoder("partition owner", data, path, limit).text()


# -- offsets -----------------------------------------------------------------------------------


def encode_offset(offset: int) -> bytes:
    """An offset node's data: the next offset to consume, or ``-1`` for none."""
    if isinstance(offset, bool) or not isinstance(offset, int) or not -1 <= offset <= INT64_MAX:
        raise ValueError(f"offset must be an int in -1..{INT64_MAX}, got {offset!r}")
    return str(offset).encode("ascii")


def decode_offset(data: bytes, *, path: str | None = None, limit: int = MAX_NODE_BYTES) -> int:
    """The committed offset; only raises CodecError (for text, negatives below -1, overflow)."""
    if 0 < len(data) <= min(limit, 18) and data.isdigit():  # plain digits: every commit's
        return int(data)
    d = Decoder("committed offset", data, path, min(limit, 64))
    text = d.text()
    if not _OFFSET.fullmatch(text) or int(text) > INT64_MAX:
        d.fail(f"not an offset: expected -1 or a decimal number in 0..{INT64_MAX}")
    return int(text)
