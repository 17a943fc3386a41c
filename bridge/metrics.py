"""Prometheus metrics of the bridge, in one place so the documented list stays true."""

from __future__ import annotations

import threading

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from bridge import __version__


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self._generations: dict[str, int] = {}
        self._generations_lock = threading.Lock()
        self._writer(self.registry)
        self._operations(self.registry)
        self._coexistence(self.registry)

    def _writer(self, r: CollectorRegistry) -> None:
        """ZooKeeper writes, errors and the active writer's leadership."""
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
        self.share_held = Gauge(
            "zkbridge_share_held",
            "each share (partition of __consumer_offsets) this bridge holds, at 1 (scale.mode "
            '= "shares"); a share released is no longer listed',
            ["share"],
            registry=r,
        )
        self.epoch = Gauge("zkbridge_epoch", "bridge epoch held by this process", registry=r)
        self.tick_seconds = Histogram(
            "zkbridge_flow_tick_seconds", "time for one pass of a flow", ["flow"], registry=r
        )
        self.phase_seconds = Histogram(
            "zkbridge_flow_phase_seconds",
            "time for one phase of a flow's pass (the groups flow: requests, verify, kafka, "
            "zookeeper, decide, modes, write, answer): where a slow pass went",
            ["flow", "phase"],
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
            registry=r,
        )
        self.gc_pause = Histogram(
            "zkbridge_gc_pause_seconds",
            "each full collection of Python's cyclic garbage collector (every thread waits)",
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
            registry=r,
        )

    def _operations(self, r: CollectorRegistry) -> None:
        """Operations (issue 8): lag, freshness, groups; docs/operations.md lists them all."""
        self.mirror_lag = Histogram(
            "zkbridge_mirror_lag_seconds",
            "from the start of the pass that read a Kafka-side change to its ZooKeeper write",
            ["flow"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=r,
        )
        self.flow_last_success = Gauge(
            "zkbridge_flow_last_success_timestamp_seconds",
            "Unix time of the last pass of a flow that ended without error",
            ["flow"],
            registry=r,
        )
        self.groups_by_mode = Gauge(
            "zkbridge_groups",
            "groups by offset storage mode (zookeeper, dual, kafka)",
            ["mode"],
            registry=r,
        )
        for mode in ("zookeeper", "dual", "kafka"):
            self.groups_by_mode.labels(mode=mode).set(0)
        self.rebalances = Counter(
            "zkbridge_group_rebalances",
            "new generations of a group seen by the bridge's proxy members",
            ["group"],
            registry=r,
        )
        self.info = Gauge(
            "zkbridge_build_info",
            "always 1; the version label says what runs",
            ["version"],
            registry=r,
        )
        self.info.labels(version=__version__).set(1)

    def _coexistence(self, r: CollectorRegistry) -> None:
        """Old and new members in one group: proxies, hand-overs and their gate."""
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
        self.simple_commits = Counter(
            "zkbridge_gateway_simple_commits",
            "partitions of old consumers' generation -1 commits in groups with proxies",
            ["outcome"],
            registry=r,
        )
        self.offsets_copied = Counter(
            "zkbridge_offsets_copied",
            "offsets moved between the stores at hand-over",
            ["direction"],
            registry=r,
        )
        self.kafka_commits = Counter(
            "zkbridge_kafka_commits",
            "commits of ZooKeeper offsets into Kafka, by how they were made",
            ["via"],
            registry=r,
        )
        self.own_commit_records = Counter(
            "zkbridge_own_commit_records",
            "records of __consumer_offsets that were the bridge's own commits (not re-read)",
            registry=r,
        )
        self.commit_records_taken = Counter(
            "zkbridge_commit_records_taken",
            "offsets taken from commit records of __consumer_offsets as they are (not re-read)",
            registry=r,
        )

        self.ungated_groups = Gauge(
            "zkbridge_ungated_groups",
            "1 while a new member leads a mixed group (hand-overs to it are not gated)",
            ["group"],
            registry=r,
        )
        self.assignment_mismatches = Gauge(
            "zkbridge_assignment_mismatches",
            "partitions of a mixed group its leader assigned other than Kafka's range",
            ["group"],
            registry=r,
        )
        self.protocol_conflicts = Gauge(
            "zkbridge_protocol_conflicts",
            "1 while a mixed group's members chose a protocol the proxies do not offer",
            ["group"],
            registry=r,
        )

    def note_generation(self, group: str, generation: int) -> None:
        """Count the rebalances of ``group`` from the generation ids its proxies join.

        Kafka adds one to the generation per rebalance, so the difference to the last seen
        generation is the number of rebalances, even those no proxy took part in. The first
        generation seen only sets the baseline.
        """
        with self._generations_lock:
            last = self._generations.get(group)
            if last is None or generation > last:
                self._generations[group] = generation
            if last is not None and generation > last:
                self.rebalances.labels(group=group).inc(generation - last)


METRICS = Metrics()
