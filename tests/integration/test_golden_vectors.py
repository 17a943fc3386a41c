"""The committed golden vectors are what the Kafka jars produce today.

Re-runs ``scripts/golden_vectors.py`` (Kafka's own classes in JVMs, on the devstack's
"kafka" classpath and, for the old consumer's assignors, the "legacy" one) and compares its
output with ``tests/golden/*.json``, so the vectors the unit tests read can be regenerated
and cannot drift from Kafka unnoticed. Needs the jars and javac (``scripts/setup.sh``), not
the servers.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.integration


def test_committed_golden_vectors_are_what_kafka_produces() -> None:
    res = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "golden_vectors.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout + res.stderr
