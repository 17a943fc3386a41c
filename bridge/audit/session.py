"""The audit's Spark session: pyspark version check, Kafka source jars, code for executors.

Apart from the job because every entry point (the CLI, the tests, ``bench.audit``) starts a
session the same way before it runs any stage, and because the classpath (Maven-fetched
``spark-sql-kafka`` jars matching ``spark.version`` in ``bridge/jars/spark/pom.xml``) is a
concern of its own: a mismatch is found here, before a job fails half-way.
"""

from __future__ import annotations

import atexit
import glob
import os
import re
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from bridge.audit.errors import AuditError
from bridge.jars import POM_DIR

if TYPE_CHECKING:  # pyspark is an optional dependency (the audit extra)
    from pyspark.sql import SparkSession

SPARK_POM = POM_DIR / "spark" / "pom.xml"
DEFAULT_MASTER = "local[2]"


def pom_spark_version() -> str:
    """The Spark version the Kafka source jars are fetched for (``spark.version`` in the pom)."""
    m = re.search(r"<spark\.version>([^<]+)</spark\.version>", SPARK_POM.read_text())
    if not m:
        raise AuditError(f"{SPARK_POM} names no spark.version")
    return m.group(1)


def kafka_source_jars() -> list[str]:
    """Local paths of the spark-sql-kafka jars, fetched by Maven once and cached."""
    from bridge.jars import MavenError, ensure_classpath

    try:
        pattern = ensure_classpath("spark")
    except MavenError as exc:
        raise AuditError(f"cannot fetch Spark's Kafka source jars: {exc}") from None
    return sorted(glob.glob(pattern[:-1] + "*.jar"))


def _code_zip() -> str:
    """``bridge`` and ``zkpaths`` zipped, for executors of a real cluster to import."""
    root = Path(__file__).resolve().parents[2]
    tmp = tempfile.mkdtemp(prefix="kzb-audit-")
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    path = Path(tmp) / "kafka_zk_bridge.zip"
    with zipfile.ZipFile(path, "w") as z:
        for pkg in ("bridge", "zkpaths"):
            for f in (root / pkg).rglob("*.py"):
                z.write(f, f.relative_to(root))
    return str(path)


def active_session() -> SparkSession | None:
    """The Spark session already running in this process, if any (pyspark may be absent)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    return SparkSession.getActiveSession()


def spark_session(
    master: str = DEFAULT_MASTER,
    *,
    app_name: str = "kafka-zk-bridge audit",
    conf: dict[str, str] | None = None,
) -> SparkSession:
    """A Spark session with the Kafka source on its classpath, quiet and tuned for the job.

    Local mode uses this Python for workers and binds to loopback. Any other master gets the
    project's code shipped with ``addPyFile``; its executors need pyarrow and pandas.
    """
    try:
        import pyspark
        from pyspark.sql import SparkSession
    except ImportError:
        raise AuditError(
            "pyspark is not installed: pip install 'kafka-zk-bridge[audit]'", 2
        ) from None
    expected = pom_spark_version()
    if pyspark.__version__ != expected:
        raise AuditError(
            f"pyspark {pyspark.__version__} is installed but the Kafka source jars are for "
            f"Spark {expected} ({SPARK_POM}); install pyspark=={expected}"
        )
    # local-cluster[...] runs executors in processes of their own: treated like a cluster
    local = master == "local" or master.startswith("local[")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # local mode runs its tasks in the driver: 1g (Spark's default) is tight for joins
        conf = {"spark.driver.memory": "2g", **(conf or {})}
    cores = os.cpu_count() or 2
    settings = {
        "spark.jars": ",".join(kafka_source_jars()),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(max(2, 2 * cores) if local else 64),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # Spark's admin-based offset reader drops internal topics (it filters on
        # TopicDescription.isInternal), which would make __consumer_offsets look empty; the
        # consumer-based reader does not
        "spark.sql.streaming.kafka.useDeprecatedOffsetFetching": "true",
        "spark.kafka.consumer.cache.capacity": "256",
        "spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile="
        + str(Path(__file__).with_name("log4j2.properties")),
        **(conf or {}),
    }
    builder = SparkSession.builder.master(master).appName(app_name)
    for k, v in settings.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if not local:
        spark.sparkContext.addPyFile(_code_zip())
    return spark
