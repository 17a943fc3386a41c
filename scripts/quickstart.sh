#!/usr/bin/env bash
# Fresh machine to a running bridge: install, start ZooKeeper + 3-node KRaft Kafka on
# loopback, then run the bridge against them in the foreground (Ctrl-C stops the bridge;
# `.venv/bin/zk-bridge devstack down` stops the stack).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/zk-bridge devstack up --dir .devstack
eval "$(.venv/bin/zk-bridge devstack status --dir .devstack --output env)"
echo "running the bridge: zookeeper=$ZOOKEEPER bootstrap=$BOOTSTRAP_SERVERS" >&2
exec .venv/bin/zk-bridge run --zookeeper "$ZOOKEEPER" --bootstrap-server "$BOOTSTRAP_SERVERS" "$@"
