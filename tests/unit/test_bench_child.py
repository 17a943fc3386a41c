"""bench.child: a bench's bridge ends when the bench is killed, however it is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]

# A stand-in for a bench: starts its child, prints the child's pid, waits to be killed.
PARENT = """
import subprocess, sys, time
child = subprocess.Popen(sys.argv[1:])
print(child.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper counts as ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def _orphan_after_parent_killed(cmd: list[str]) -> int:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, *cmd], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    pid = int(parent.stdout.readline())
    deadline = time.monotonic() + 30
    while "python" not in Path(f"/proc/{pid}/cmdline").read_text() or "bench.child" in (
        Path(f"/proc/{pid}/cmdline").read_text()
    ):  # wait until bench.child has set the signal and exec'd the command
        assert time.monotonic() < deadline, "the child never started its command"
        time.sleep(0.05)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    return pid


def _wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux")
def test_the_child_ends_when_its_bench_is_killed():
    pid = _orphan_after_parent_killed([sys.executable, "-m", "bench.child", *SLEEPER])
    assert _wait_gone(pid, 10), "the bridge outlived the bench that started it"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux")
def test_negative_control_a_plain_child_outlives_its_bench():
    pid = _orphan_after_parent_killed(SLEEPER)
    try:
        assert not _wait_gone(pid, 2), "a plain child ended too: the check above proves nothing"
    finally:
        os.kill(pid, signal.SIGKILL)


def test_no_command_is_one_clear_line():
    run = subprocess.run(
        [sys.executable, "-m", "bench.child"], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode != 0
    assert run.stderr.strip() == "usage: python -m bench.child PROGRAM [ARGS...]"
