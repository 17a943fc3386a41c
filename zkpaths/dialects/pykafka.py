"""pykafka's ``BalancedConsumer`` dialect of ``/consumers/<g>`` (pykafka 2.8.0, ZooKeeper-balanced).

Read from pykafka's own source (``pykafka/balancedconsumer.py`` at tag 2.8.0):

- registration ``/consumers/<g>/ids/<hostname>:<uuid4>`` (ephemeral; the id is always that,
  ``__init__``) holds the **raw topic name** (``_add_self``), not the JSON of the Scala
  consumer; one consumer, one topic;
- owners ``<owners dir>/<leader broker id>-<partition>`` (``_path_from_partition``), data
  the consumer id. The owners dir is ``'/consumers/{group}/owners/{topic}'.format(...)``
  with the topic name as *bytes*: under Python 3 that renders as ``owners/b'<topic>'``
  (under Python 2 as ``owners/<topic>``), and a real 2.8.0 consumer on Python 3 writes
  exactly that; both spellings are read;
- no offset nodes: offsets are committed to Kafka (OffsetCommit to the coordinator).

pykafka balances among the ids whose data equals its topic name, sorted as bytes, over
partitions sorted by the *string* ``"<topic>-<leader>-<partition>"`` (``membershipprotocol``),
so it neither sees JSON registrations nor owner nodes named ``<partition>``.

Pure: names and data in, values or :class:`~zkpaths.ZkLayoutError` out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from zkpaths._decode import INT32_MAX, MAX_NODE_BYTES, Decoder
from zkpaths.errors import ZkPathError
from zkpaths.names import topic_problem

DIALECT = "pykafka"

_OWNER_NAME = re.compile(r"(0|[1-9][0-9]{0,9})-(0|[1-9][0-9]{0,9})")
_BYTES_REPR = re.compile(r"b'(.*)'", re.DOTALL)
_CONSUMER_ID = re.compile(
    r".+:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", re.DOTALL
)


@dataclass(frozen=True)
class OwnerName:
    """What an owner node's name says: the partition, and its leader when pykafka claimed it."""

    leader: int
    partition: int


def encode_registration(topic: str) -> bytes:
    """A registration's data as pykafka writes it: the topic name."""
    problem = topic_problem(topic)
    if problem:
        raise ValueError(problem)
    return topic.encode("ascii")


def decode_registration(data: bytes, *, path: str | None = None) -> str:
    """The topic a pykafka consumer registered for; only raises CodecError."""
    d = Decoder("pykafka registration", data, path, min(MAX_NODE_BYTES, 1024))
    text = d.text()
    problem = topic_problem(text)
    if problem:
        d.fail(f"not a topic name: {problem}")
    return text


def is_registration(consumer_id: str, data: bytes | None) -> bool:
    """Whether a registration is pykafka's: its id is ``<hostname>:<uuid4>`` (pykafka 2.8.0
    sets no other) and its data is not JSON. Non-JSON data under any other id stays a bad
    JSON registration, so garbage is reported, not taken for a pykafka consumer."""
    if not data or data.lstrip().startswith(b"{"):
        return False
    return _CONSUMER_ID.fullmatch(consumer_id) is not None


def consumer_id(hostname: str, uuid4: str) -> str:
    """The consumer id pykafka gives itself: ``<hostname>:<uuid4>``."""
    return f"{hostname}:{uuid4}"


def owners_dir_name(topic: str, *, python3: bool = True) -> str:
    """The owners directory name pykafka 2.8.0 uses for ``topic``."""
    return f"b'{topic}'" if python3 else topic


def topic_of_owners_dir(name: str) -> str | None:
    """The topic of an owners directory, in either spelling; None if neither is a topic."""
    m = _BYTES_REPR.fullmatch(name)
    topic = m.group(1) if m else name
    return None if topic_problem(topic) else topic


def is_bytes_owners_dir(name: str) -> bool:
    """Whether ``name`` is the ``b'<topic>'`` owners dir of pykafka on Python 3."""
    m = _BYTES_REPR.fullmatch(name)
    return m is not None and topic_problem(m.group(1)) is None


def encode_owner_name(leader: int, partition: int) -> str:
    """``<leader broker id>-<partition>``, as ``_path_from_partition`` names it."""
    for what, value in (("leader", leader), ("partition", partition)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT32_MAX:
            raise ValueError(f"{what} must be an int in 0..{INT32_MAX}, got {value!r}")
    return f"{leader}-{partition}"


def looks_like_owner_name(name: str) -> bool:
    """Whether an owner node's name is pykafka's ``<leader>-<partition>`` form."""
    return _OWNER_NAME.fullmatch(name) is not None


def decode_owner_name(name: str, *, path: str | None = None) -> OwnerName:
    """The leader and partition of an owner node's name; only raises ZkPathError."""
    m = _OWNER_NAME.fullmatch(name) if isinstance(name, str) else None
    if m is None or max(int(m.group(1)), int(m.group(2))) > INT32_MAX:
        shown = name[:40] if isinstance(name, str) else repr(name)
        raise ZkPathError(
            path or str(shown),
            f"unknown pykafka owner node name {shown!r}: pykafka names owners "
            "<leader broker id>-<partition> (two decimal numbers)",
        )
    return OwnerName(int(m.group(1)), int(m.group(2)))


def decode_owner(data: bytes, *, path: str | None = None) -> str:
    """The consumer id owning a partition."""
    return Decoder("pykafka owner", data, path, 1024).text()
