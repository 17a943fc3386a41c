"""Fetch and cache with Maven the Java classpaths of the stack, legacy clients and audit.

The poms live next to this module; nothing is built, Maven only copies the artifacts and
their dependencies into a cache directory keyed by the pom's content, so a second run (or
CI on the same machine) reuses the jars without touching the network.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

POM_DIR = Path(__file__).with_name("poms")

#: classpaths the stack knows about: "kafka" (Kafka 3.9 + ZooKeeper server), "kafka4" (the
#: newest Kafka 4.x + ZooKeeper server), "legacy"
#: (the 0.10.2.2 Scala high-level consumer and Java producer used by end-to-end tests),
#: "legacy082" (the 0.8.2.2 Scala consumer, the oldest client they run), "spark" (Spark's
#: Kafka source for the audit pipeline), "storm" (storm-kafka 1.2.4's KafkaSpout).
CLASSPATHS = (
    "kafka",
    "kafka4",
    "legacy",
    "legacy082",
    "legacy0900",
    "legacy0901",
    "legacy0113",
    "spark",
    "storm",
)

# Two SLF4J bindings on one classpath make every JVM print warnings; the stack logs
# through reload4j, so logback (pulled in by ZooKeeper 3.8) is left out.
_EXCLUDED = "logback-classic,logback-core"


class MavenError(RuntimeError):
    """Maven could not produce a classpath; the message names the pom and the log."""


def cache_root() -> Path:
    """Where jars are cached between runs (``$KAFKA_ZK_BRIDGE_CACHE`` overrides)."""
    env = os.environ.get("KAFKA_ZK_BRIDGE_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "kafka-zk-bridge"


def _pom(name: str) -> Path:
    if name not in CLASSPATHS:
        raise ValueError(f"unknown classpath {name!r}; known: {', '.join(CLASSPATHS)}")
    return POM_DIR / name / "pom.xml"


def jar_dir(name: str) -> Path:
    """Cache directory for one classpath; its name carries a hash of the pom."""
    digest = hashlib.sha256(_pom(name).read_bytes()).hexdigest()[:12]
    return cache_root() / f"{name}-{digest}"


def ensure_classpath(name: str, *, quiet: bool = True) -> str:
    """Return a ``java -cp`` string for ``name``, downloading jars on first use."""
    target = jar_dir(name)
    done = target / ".complete"
    if not done.exists():
        if shutil.which("mvn") is None:
            raise MavenError("Maven ('mvn') is not installed; it is needed to fetch the jars")
        tmp = target.with_name(target.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        log = tmp / "mvn.log"
        cmd = [
            "mvn",
            "-B",
            *(["-q"] if quiet else []),
            "-f",
            str(_pom(name)),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={tmp}",
            "-DincludeScope=runtime",
            f"-DexcludeArtifactIds={_EXCLUDED}",
        ]
        with log.open("w") as out:
            rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT)
        if rc != 0:
            tail = log.read_text(errors="replace")[-2000:]
            raise MavenError(f"mvn failed for {_pom(name)} (exit {rc}); see {log}:\n{tail}")
        shutil.rmtree(target, ignore_errors=True)
        tmp.rename(target)
        (target / ".complete").touch()
    return str(target / "*")
