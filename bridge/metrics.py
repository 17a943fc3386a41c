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

        self.proxies = Gauge(
            "zkbridge_proxies", "proxy members run for old consumer threads", ["group"], registry=r
        )
        self.handover_hold = Histogram(
            "zkbridge_handover_hold_seconds",
            "how long a leader proxy held SyncGroup for a safe hand-over",
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30),
            registry=r,
        )
        self.gate_timeouts = Counter(
            "zkbridge_gate_timeouts",
            "hand-overs that withheld partitions after the hold limit",
            ["group"],
            registry=r,
        )
        self.offsets_copied = Counter(
            "zkbridge_offsets_copied",
            "offsets moved between the stores at hand-over",
            ["direction"],
            registry=r,
        )

        self.ungated_groups = Gauge(
            "zkbridge_ungated_groups",
            "1 while a new member leads a mixed group (hand-overs to it are not gated)",
            ["group"],
            registry=r,
        )
        self.protocol_conflicts = Gauge(
            "zkbridge_protocol_conflicts",
            "1 while a mixed group's members chose a protocol the proxies do not offer",
            ["group"],
            registry=r,
        )


METRICS = Metrics()
