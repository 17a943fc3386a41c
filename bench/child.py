"""Run a command that ends when the bench that started it ends, however the bench ends.

    python -m bench.child PROGRAM [ARGS...]

A bench killed from outside (``pkill -f bench.fleet``, kill -9, a closed terminal) used to
leave its bridge running: it reconnected to the next stack on the same ports and took CPU
from every later run. Linux's parent-death signal is set here and then the command replaces
this process (same pid, so RSS and py-spy still find it); subprocess's ``preexec_fn`` is not
used because it is unsafe in a parent with threads.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit("usage: python -m bench.child PROGRAM [ARGS...]")
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the bench's own cleanup still ends it on a normal exit
    if os.getppid() != parent:  # the bench died before the signal was set
        raise SystemExit(0)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
