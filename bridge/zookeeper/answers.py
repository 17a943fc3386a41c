"""ZooKeeper's answers to pipelined reads, taken without raising the expected failures.

``result.get()`` raises a failed read's exception. Raised, it takes a traceback that holds
the reading frame, while the async result (a local of that frame) holds the exception: a
reference cycle that only the cyclic collector frees, and with it everything the frame
held (a tick's reads, the dict being built). A cold start at 10,000 groups read absent
nodes by the thousand, so every full collection found thousands of such objects, and one
alive at a freeze (``bridge.heap``) stayed until the hourly refresh. Here the expected
failure (an absent node) is looked at, not raised.
"""

from __future__ import annotations

from typing import Any

from kazoo.exceptions import NoNodeError
from kazoo.interfaces import IAsyncResult


class _Absent:
    """The answer's marker for a node that is not there."""

    def __repr__(self) -> str:
        return "ABSENT"


#: what :func:`answer` gives for a node that is not there
ABSENT: Any = _Absent()


def answer(result: IAsyncResult, absent: tuple[type[Exception], ...] = (NoNodeError,)) -> Any:
    """``result``'s value once it came, ``ABSENT`` when it failed with one of ``absent``;
    any other failure is raised (then the cycle above is the price of a rare error)."""
    result.wait()
    failed = result.exception
    if failed is None:
        return result.value
    if isinstance(failed, absent):
        return ABSENT
    raise failed
