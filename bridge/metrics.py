"""Prometheus metrics of the bridge, in one place so the documented list stays true."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.writes = Counter(
            "zkbridge_znode_writes", "znode creates/sets/deletes made", ["flow"], registry=r
        )
        self.batches = Histogram(
            "zkbridge_batch_ops",
            "operations per fenced ZooKeeper batch",
            buckets=(1, 2, 5, 10, 50, 100, 500, 1000),
            registry=r,
        )
        self.node_problems = Counter(
            "zkbridge_node_problems",
            "foreign nodes that are malformed (bad_node) or in the way (conflict)",
            ["flow", "kind"],
            registry=r,
        )
        self.zk_errors = Counter(
            "zkbridge_zookeeper_errors", "ZooKeeper errors by kind", ["kind"], registry=r
        )
        self.kafka_errors = Counter(
            "zkbridge_kafka_errors", "Kafka errors by kind", ["kind"], registry=r
        )
        self.registry_refused = Gauge(
            "zkbridge_registry_refused",
            "1 while a ZooKeeper-mode cluster owns /brokers and the registry mirror stands down",
            registry=r,
        )
        self.leader = Gauge(
            "zkbridge_leader", "1 while this bridge is the active (fenced) writer", registry=r
        )
        self.epoch = Gauge("zkbridge_epoch", "bridge epoch held by this process", registry=r)
        self.tick_seconds = Histogram(
            "zkbridge_flow_tick_seconds", "time for one pass of a flow", ["flow"], registry=r
        )


METRICS = Metrics()
