"""pykafka, the real client, in an interpreter of its own, and its consumer as a process.

(Not named ``pykafka.py``: the harness script runs from this directory, where such a
module would shadow pykafka itself.)

pykafka 2.8.0 (the last release, PyPI) pins ``kazoo==2.5.0``; the bridge needs a newer
kazoo, so pykafka lives in its own virtualenv under the jar cache
(``<cache>/pykafka-2.8.0/venv``), made once and reused. Its optional librdkafka extension
fails to build where librdkafka's headers are missing; pykafka's ``setup.py`` then installs
the pure-Python client, which is the one used here (``use_rdkafka=False``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bridge.devstack.legacy import ConsumerProcess
from bridge.jars import cache_root

PYKAFKA_VERSION = "2.8.0"
HARNESS = Path(__file__).with_name("pykafka_consumer.py")


def ensure_pykafka() -> Path:
    """The python of pykafka's virtualenv, created and installed on first use."""
    venv = cache_root() / f"pykafka-{PYKAFKA_VERSION}" / "venv"
    python = venv / "bin" / "python"
    marker = venv / ".installed"
    if marker.exists():
        return python
    venv.parent.mkdir(parents=True, exist_ok=True)
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", f"pykafka=={PYKAFKA_VERSION}"], check=True
    )
    subprocess.run([str(python), "-c", "import pykafka.balancedconsumer"], check=True)
    marker.write_text(PYKAFKA_VERSION + "\n")
    return python


class PykafkaConsumerProcess(ConsumerProcess):
    """One pykafka ``BalancedConsumer`` of ``topic`` in ``group``, brokers found through
    ZooKeeper (``zookeeper`` may carry a chroot)."""

    def __init__(self, zookeeper: str, group: str, topic: str, *, log: Path | None = None) -> None:
        argv = [
            str(ensure_pykafka()),
            str(HARNESS),
            "--zookeeper",
            zookeeper,
            "--group",
            group,
            "--topic",
            topic,
        ]
        super().__init__(argv, log)
