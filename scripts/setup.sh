#!/usr/bin/env bash
# Installs what the bridge, its local stack and its tests need, idempotently:
# a JDK, Maven and Chromium (Debian packages, when missing), the project in .venv with its
# test and audit (PySpark) extras, and the Kafka/ZooKeeper/Spark-Kafka jars (Maven Central,
# cached in ~/.cache/kafka-zk-bridge).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v java >/dev/null 2>&1 || need_apt+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need_apt+=(maven)
# chromium renders the audit report in its test; KZB_WITH_CHROMIUM=0 skips installing it
if [ "${KZB_WITH_CHROMIUM:-1}" = 1 ] && ! command -v chromium >/dev/null 2>&1; then
  need_apt+=(chromium)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]} with apt-get" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[test,audit]'
# Kafka 3.9 and 4.x + ZooKeeper server, the 0.8.2.2, 0.9.0.0, 0.9.0.1, 0.10.2.2 and 0.11.0.3
# Scala consumers (and the 0.10.2.2 producer) for end-to-end
# tests, Spark's Kafka source for the audit pipeline, storm-kafka 1.2.4's KafkaSpout
.venv/bin/python -c "
from bridge.jars import ensure_classpath
for name in ('kafka', 'kafka4', 'legacy', 'legacy082', 'legacy0900', 'legacy0901', 'legacy0113', 'spark', 'storm'):
    ensure_classpath(name)
"
# kafka-node 3.0.1 (HighLevelConsumer, the ZooKeeper Client) for its end-to-end tests: npm ci
# from bridge/devstack/node's lock into the same cache, once per lock
if command -v npm >/dev/null 2>&1; then
  .venv/bin/python -c "from bridge.devstack.kafka_node import node_modules; node_modules()"
else
  echo "setup: npm not found; the kafka-node tests will fail (install node 18+)" >&2
fi
# pykafka 2.8.0 (the pykafka dialect's end-to-end test) in a virtualenv of its own: it pins
# kazoo 2.5.0, older than the bridge's
.venv/bin/python -c "from bridge.devstack.pykafka_client import ensure_pykafka; ensure_pykafka()"
