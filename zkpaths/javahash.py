"""Java's ``String.hashCode`` and ``String.compareTo``, and what Kafka computes from them.

Both work on UTF-16 code units, not code points: a character outside the BMP counts as two
surrogates. Getting this exactly right is what makes the bridge pick the same coordinator
partition, and sort thread ids in the same order, as the JVM code it stands beside.
"""

from __future__ import annotations

#: ``offsets.topic.num.partitions`` default
DEFAULT_OFFSETS_TOPIC_PARTITIONS = 50

_INT32_MIN = -(2**31)


def _utf16_units(s: str) -> bytes:
    # surrogatepass: a lone surrogate is one code unit to Java as well
    return s.encode("utf-16-be", "surrogatepass")


def java_string_hashcode(s: str) -> int:
    """``s.hashCode()`` in Java: ``sum(c[i] * 31**(n-1-i))`` over UTF-16 units, int32 wrap."""
    units = _utf16_units(s)
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def java_sort_key(s: str) -> bytes:
    """A key under which Python sorts strings as Java's ``String.compareTo`` does.

    Comparing big-endian UTF-16 bytes compares code units in order, shorter prefix first;
    Python's own ``str`` order (by code point) differs once surrogates are involved.
    """
    return _utf16_units(s)


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``Math.abs``, except ``Integer.MIN_VALUE`` maps to 0, not itself."""
    return 0 if n == _INT32_MIN else abs(n)


def coordinator_partition(
    group: str, num_partitions: int = DEFAULT_OFFSETS_TOPIC_PARTITIONS
) -> int:
    """The ``__consumer_offsets`` partition whose leader coordinates ``group``."""
    if isinstance(num_partitions, bool) or not isinstance(num_partitions, int):
        raise TypeError("num_partitions must be an int")
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return kafka_abs(java_string_hashcode(group)) % num_partitions
