"""``bridge/decide`` and ``zkpaths`` are pure (the design's "no I/O" layout): importing every
one of their modules, in an interpreter of its own, loads no Kafka or ZooKeeper client and
no module that opens sockets or processes.

Only what a module *imports* is checked here (calls are the unit tests' business); a stray
``from bridge.kafka.groups import ...`` in a decision, as there was, fails it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: kazoo's ACL types (namedtuples and the digest hash, ``decide.acl`` builds ACLs from
#: them) import nothing but base64/hashlib/struct; the rest of kazoo is the client
PURE_KAZOO = {"kazoo", "kazoo.security", "kazoo.version"}
IO_MODULES = {
    "socket",
    "ssl",
    "select",
    "selectors",
    "asyncio",
    "subprocess",
    "http.client",
    "urllib.request",
}

PROBE = """
import importlib, json, pkgutil, sys
names = []
for top in ("bridge.decide", "zkpaths"):
    package = importlib.import_module(top)
    names.append(top)
    names += [m.name for m in pkgutil.walk_packages(package.__path__, top + ".")]
for name in names:
    importlib.import_module(name)
print(json.dumps({"checked": names, "loaded": sorted(sys.modules)}))
"""


def io_modules(loaded: list[str]) -> list[str]:
    """The modules in ``loaded`` that talk to a network or a process, or are a client."""
    return [
        m
        for m in loaded
        if m in IO_MODULES
        or m == "kafka"
        or m.startswith("kafka.")
        or (m.startswith("kazoo") and m not in PURE_KAZOO)
        or (
            m.startswith(("bridge.kafka.", "bridge.zookeeper", "bridge.flows", "bridge.commands"))
            and m != "bridge.kafka.views"
        )
    ]


def test_decisions_and_the_layout_library_import_no_io():
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True
    )
    result = json.loads(out.stdout)
    assert "bridge.decide.groups" in result["checked"] and "zkpaths.codecs" in result["checked"]
    assert io_modules(result["loaded"]) == []


def test_the_check_sees_a_client_import():
    """The same probe with one edge module imported too: the check must name it."""
    out = subprocess.run(
        [sys.executable, "-c", "import bridge.kafka.groups\n" + PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    found = io_modules(json.loads(out.stdout)["loaded"])
    assert "kafka.admin" in found and "socket" in found and "bridge.kafka.groups" in found
