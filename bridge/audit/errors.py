"""The audit's one error type, apart so that every stage module can raise it.

The CLI maps it to an exit code; the session, source and job modules all raise it, and none
of them should import another just for this class.
"""

from __future__ import annotations


class AuditError(RuntimeError):
    """The audit cannot run or its input is unusable; ``exit_code`` tells the CLI which."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code
