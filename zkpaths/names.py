"""Which names may appear as one component of a legacy path.

Each check returns ``None`` when the name is fine and a reason otherwise, so that paths.py
can report the whole offending path, which is what an operator needs to find the node.
"""

from __future__ import annotations

import re

INT32_MAX = 2**31 - 1

#: Kafka's ``Topic.legalChars`` and maximum name length (0.8.1 and later)
TOPIC_MAX_LENGTH = 249
_TOPIC_CHARS = re.compile(r"[a-zA-Z0-9._-]+")

#: characters ZooKeeper's ``PathUtils.validatePath`` refuses in a node name. Java sees a
#: character outside the BMP as two surrogates, which fall in the refused range too.
_ZK_ILLEGAL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\uf8ff\ufff0-\uffff\U00010000-\U0010ffff]")

_CANONICAL_INT = re.compile(r"0|[1-9][0-9]{0,9}")


def topic_problem(topic: object) -> str | None:
    """Why ``topic`` is not a legal Kafka topic name, or ``None``."""
    if not isinstance(topic, str):
        return f"topic name must be a string, not {type(topic).__name__}"
    if not topic:
        return "topic name is empty"
    if topic in (".", ".."):
        return f"topic name {topic!r} is not allowed"
    if len(topic) > TOPIC_MAX_LENGTH:
        return f"topic name is {len(topic)} characters long (at most {TOPIC_MAX_LENGTH})"
    if not _TOPIC_CHARS.fullmatch(topic):
        return (
            f"topic name {topic!r} contains a character other than ASCII letters, "
            "digits, '.', '_' and '-'"
        )
    return None


def node_name_problem(name: object, kind: str) -> str | None:
    """Why ``name`` cannot be one ZooKeeper node name (a group or consumer id), or ``None``.

    Kafka itself allows nearly anything in a group id; only what ZooKeeper refuses, or what
    would change the shape of the path, is rejected here.
    """
    if not isinstance(name, str):
        return f"{kind} must be a string, not {type(name).__name__}"
    if not name:
        return f"{kind} is empty"
    if "/" in name:
        return f"{kind} {name!r} contains '/'"
    if name in (".", ".."):
        return f"{kind} {name!r} is a relative path component"
    bad = _ZK_ILLEGAL.search(name)
    if bad:
        return f"{kind} {name!r} contains {bad.group()!r}, which ZooKeeper refuses in a path"
    return None


def id_problem(value: object, kind: str) -> str | None:
    """Why ``value`` is not a non-negative int32 (a broker id or partition), or ``None``."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{kind} must be an int, not {type(value).__name__}"
    if not 0 <= value <= INT32_MAX:
        return f"{kind} {value} is outside 0..{INT32_MAX}"
    return None


def parse_id(text: str) -> int | None:
    """``text`` as a canonical non-negative int32 node name, or ``None``.

    Only the canonical spelling is accepted ("7", not "07" or "+7"), so that a parsed path
    builds back to the very same string.
    """
    if not _CANONICAL_INT.fullmatch(text):
        return None
    value = int(text)
    return value if value <= INT32_MAX else None
