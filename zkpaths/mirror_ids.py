"""Legacy consumer ids for Kafka group members that sort the way Kafka sorts members.

Kafka's ``range`` assignor orders members by member id (Java ``String.compareTo``: UTF-16
code units); the old consumer orders thread ids ``<consumer_id>-<n>`` as strings. For a
legacy reader's range computation over ``/consumers/<g>/ids`` to give Kafka's assignment,
the mirrored thread ids must sort exactly as the member ids do. Using the member id itself
fails: ``-`` is the thread-id separator, and ``"a"`` < ``"a!"`` in Kafka while
``"a-0"`` > ``"a!-0"`` in ZooKeeper.

So each UTF-16 code unit is written as one of:

==================  ==============  ==========================================
code unit           written as      why it sorts right
==================  ==============  ==========================================
``0``–``}``         itself          all legal in znode names, order kept
``!``–``.``         ``.`` + itself  ``.`` sorts below every literal above
``/``               ``.0``          ``/`` is illegal in a znode name
NUL–space           ``. `` + 2 hex  below ``.!``; fixed width keeps hex order
``~`` and above     ``~`` + 4 hex   ``~`` sorts above every literal below it
==================  ==============  ==========================================

Every encoding starts with a character above ``-``, so when one member id is a prefix of
another the shorter one's ``-<n>`` suffix still sorts first, as in Kafka. Most member ids
(``consumer-g-1-2f0c…``) stay readable: ``consumer.-g.-1.-2f0c…``.

Kafka's ``range`` puts static members (those with a ``group.instance.id``) first, ordered by
instance id, then dynamic members by member id. The legacy consumer id keeps that split:

* static member: ``<group>_`` + escaped instance id;
* dynamic member: ``<group>_~~`` + escaped member id.

``~~`` sorts above every escaped id (whose first character is at most ``~`` and, when it is
``~``, is followed by a hex digit), so static members come first. Old consumers' own ids are
``<group>_<host>-<ms>-<uuid8>``, so every real old thread sorts before every mirrored dynamic
member: the bridge makes its proxies for old threads static members, keyed by thread id,
and Kafka's order becomes old threads first, then new members, just as in ZooKeeper.
"""

from __future__ import annotations

import re

from zkpaths.errors import ZkLayoutError

#: mirrored members are single-stream consumers: one thread each
MIRROR_THREAD = 0
#: after ``<group>``: dynamic members sort after static ones and after every old thread
DYNAMIC_PREFIX = "_~~"

# the fixed-width hex of an escaped code unit (ASCII hex digits only: no sign, no spaces)
_HEX2 = re.compile(r"[0-9a-fA-F]{2}")
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")


def java_units(text: str) -> list[int]:
    """UTF-16 code units, the alphabet Java's ``String.compareTo`` orders by."""
    raw = text.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(raw[i : i + 2], "big") for i in range(0, len(raw), 2)]


def _escape_unit(u: int) -> str:
    if 0x30 <= u <= 0x7D:
        return chr(u)
    if 0x21 <= u <= 0x2E:
        return "." + chr(u)
    if u == 0x2F:
        return ".0"
    if u <= 0x20:
        return f". {u:02x}"
    return f"~{u:04x}"


def escape_id(text: str) -> str:
    """Order-preserving, znode-safe spelling of ``text`` (see the table above)."""
    if not text:
        raise ZkLayoutError("an id to mirror cannot be empty")
    return "".join(_escape_unit(u) for u in java_units(text))


def mirrored_consumer_id(group: str, member_id: str, group_instance_id: str | None = None) -> str:
    """The legacy consumer id standing for a Kafka group member (order-preserving)."""
    if group_instance_id:
        return f"{group}_{escape_id(group_instance_id)}"
    return f"{group}{DYNAMIC_PREFIX}{escape_id(member_id)}"


def mirrored_thread_id(group: str, member_id: str, group_instance_id: str | None = None) -> str:
    """The single thread id of a mirrored member: ``<mirrored consumer id>-0``."""
    return f"{mirrored_consumer_id(group, member_id, group_instance_id)}-{MIRROR_THREAD}"


def parse_mirrored(group: str, consumer_id: str) -> tuple[str, str]:
    """``("member", member_id)`` or ``("instance", group_instance_id)`` of a mirrored id.

    Raises ``ZkLayoutError`` for anything the bridge would not have written.
    """
    prefix = f"{group}_"
    if not consumer_id.startswith(prefix):
        raise ZkLayoutError(f"{consumer_id!r} is not a mirrored id of group {group!r}")
    rest = consumer_id[len(prefix) :]
    if rest.startswith("~~"):
        return "member", unescape_id(rest[2:])
    return "instance", unescape_id(rest)


def unescape_id(consumer_id: str) -> str:
    """Invert ``escape_id``; raises ``ZkLayoutError`` on anything else."""
    if not consumer_id:
        raise ZkLayoutError("an empty string is not an escaped id")
    units: list[int] = []
    i = 0
    try:
        while i < len(consumer_id):
            c = consumer_id[i]
            if c == ".":
                nxt = consumer_id[i + 1]
                if nxt == "0":
                    units.append(0x2F)
                    i += 2
                elif nxt == " ":
                    hex2 = consumer_id[i + 2 : i + 4]
                    if not _HEX2.fullmatch(hex2):
                        raise ValueError(hex2)
                    units.append(int(hex2, 16))
                    i += 4
                elif 0x21 <= ord(nxt) <= 0x2E:
                    units.append(ord(nxt))
                    i += 2
                else:
                    raise ValueError(nxt)
            elif c == "~":
                hex4 = consumer_id[i + 1 : i + 5]
                if not _HEX4.fullmatch(hex4):  # int() alone takes "-7f", " 7f", "+7f"...
                    raise ValueError(hex4)
                units.append(int(hex4, 16))
                i += 5
            elif 0x30 <= ord(c) <= 0x7D:
                units.append(ord(c))
                i += 1
            else:
                raise ValueError(c)
    except (IndexError, ValueError):
        raise ZkLayoutError(f"{consumer_id!r} is not an escaped id") from None
    raw = b"".join(u.to_bytes(2, "big") for u in units)
    return raw.decode("utf-16-be", "surrogatepass")
