"""kafka-node 3.0.1's HighLevelConsumer (the last release with it), driven by ``node/hlc.js``.

The npm packages come from ``node/package.json`` and its lock, installed with ``npm ci``
once per lock into the jar cache (``scripts/setup.sh`` does it ahead; a test does it on
first use). The harness prints the Java harness's protocol (``CONSUMER``, ``READY``,
``MSG <consumer id> <topic> <partition> <offset> <wall_ms> <value>``, ``EXIT``), so
:class:`~bridge.devstack.legacy.ConsumerProcess` reads it, and ``kill -9`` is real.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from bridge.devstack.legacy import ConsumerProcess
from bridge.devstack.stack import StackError
from bridge.jars import cache_root

NODE_DIR = Path(__file__).with_name("node")
HARNESS = NODE_DIR / "hlc.js"


def node_modules() -> Path:
    """``node_modules`` with the locked kafka-node, installed once per lock (idempotent)."""
    lock = (NODE_DIR / "package-lock.json").read_bytes()
    out = cache_root() / f"node-{hashlib.sha256(lock).hexdigest()[:12]}"
    modules = out / "node_modules"
    if (modules / "kafka-node" / "package.json").exists():
        return modules
    npm = shutil.which("npm")
    if npm is None:
        raise StackError("npm is not installed (node 18+ with npm is needed for kafka-node)")
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(NODE_DIR / name, tmp / name)
    # snappy (optional, native) is left out: the tests' topics are not snappy-compressed
    res = subprocess.run(
        [npm, "ci", "--omit=optional", "--ignore-scripts", "--no-audit", "--no-fund"],
        cwd=tmp,
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        raise StackError(f"npm ci for kafka-node failed:\n{res.stderr[-2000:]}")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return modules


class KafkaNodeConsumerProcess(ConsumerProcess):
    """One node process running one kafka-node HighLevelConsumer of ``group``."""

    def __init__(
        self,
        zookeeper: str,
        group: str,
        topics: list[str],
        *,
        session_timeout_ms: int = 6000,
        log: Path | None = None,
    ) -> None:
        node = shutil.which("node")
        if node is None:
            raise StackError("node is not installed (kafka-node needs node 18+)")
        argv = [node, str(HARNESS), "--zookeeper", zookeeper, "--group", group]
        argv += ["--modules", str(node_modules()), "--session-timeout-ms", str(session_timeout_ms)]
        for t in topics:
            argv += ["--topic", t]
        super().__init__(argv, log)

    @property
    def owned(self) -> list[str]:
        """The partitions (``topic:partition``) it owned after its last rebalance."""
        lines = [x for x in self.lines if x.startswith("REBALANCED")]
        return [p for p in lines[-1].split(" ", 1)[1].split(",") if p] if lines else []
