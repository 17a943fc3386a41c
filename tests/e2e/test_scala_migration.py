"""Every old Scala consumer release (0.8.2.2 to 0.11.0.3) through a migration and its
rollback, with ``offsets.storage=kafka``, and the I1 analysis' negative control per release;
one test, every release's groups side by side (one JVM per release and run, each with a
connector per group: ``LegacyConsumerProcess(more=...)``).

1. A registry-only bridge (no group flow) serves ``/brokers``. Per release, one old consumer
   with ``offsets.storage=zookeeper`` (group ``…-zk``) and one with ``offsets.storage=kafka``,
   ``dual.commit.enabled=false`` (group ``…-kafka``) consume a batch and stop. The first's
   offsets are in ZooKeeper only, the second's in Kafka only: KRaft 3.9 takes the old
   consumers' OffsetCommit v1 (0.8.2) and v2 (0.9+) while the group has no member.
   Meanwhile one more consumer per release and a kafka-python consumer share a group no
   bridge joins, while a producer writes: the I1 analysis of ``test_coexistence.py`` run on
   each release's own log must find partitions fetched by both at once.
2. The full bridge: the ``-zk`` groups get mode ``zookeeper`` and their offsets copied into
   Kafka, the ``-kafka`` groups mode ``kafka`` and their offsets mirrored into
   ``/consumers/<g>/offsets``. The ``-zk`` groups migrate ``zookeeper → dual → kafka``
   (``zk-bridge migrate --pattern``): a kafka-python consumer per group starts exactly where
   the old one stopped; then the rollback ``kafka → dual → zookeeper`` with the new
   consumers stopped, and the restarted old consumer resumes exactly where they stopped.
   Every message once per group over the three runs.
3. One ``-kafka`` consumer restarted under the full bridge: once the bridge's proxy is a
   member of the Kafka group, Kafka refuses the old consumer's commits (generation -1, no
   member id: ``UNKNOWN_MEMBER_ID``), so its offsets stay where they were.
"""

from __future__ import annotations

import signal
import subprocess
import time

import pytest
from kafka import KafkaProducer
from kafka.admin import NewTopic

from bridge.devstack.legacy import (
    MIGRATION_SETTINGS,
    SCALA_CONSUMERS,
    ConsumerProcess,
    LegacyConsumerProcess,
    NewConsumerProcess,
)
from tests.conftest import wait_for
from tests.e2e.test_coexistence import Producer, log_ends, overlaps, ownership_segments
from tests.e2e.test_gateway import kafka_offsets
from tests.e2e.test_scala_consumers import registry_env, wait_registry, zk_offsets
from tests.integration.test_migrate import cli, record

pytestmark = pytest.mark.e2e

PARTITIONS = 6
PER_PARTITION = 10
#: 0.9.0.0 parses only broker JSON v1 and v2; every other release reads v2 too
JSON_VERSION = 2
#: messages each old consumer of the control group takes while the new one fetches too
CONTROL_MESSAGES = 40
KAFKA_STORAGE = ("--offsets-storage", "kafka", "--dual-commit", "false")
#: the release whose offsets.storage=kafka consumer is restarted under the full bridge (the
#: refusal is the coordinator's rule; every release commits with generation -1, no member)
REFUSED = "0.8.2.2"


def produce(stack, topic: str, label: str) -> None:
    producer = KafkaProducer(bootstrap_servers=stack.bootstrap_servers.split(","), linger_ms=5)
    for i in range(PER_PARTITION * PARTITIONS):
        producer.send(topic, f"{label}{i}".encode(), partition=i % PARTITIONS)
    producer.flush()
    producer.close()


class Share:
    """One connector's part of a harness JVM that runs several: its group's messages."""

    def __init__(self, process: LegacyConsumerProcess, group: str) -> None:
        self.process, self.group = process, group

    @property
    def messages(self) -> list:
        return self.process.of_group(self.group)


def first_offsets(consumer) -> dict[int, int]:
    first: dict[int, int] = {}
    for m in consumer.messages:
        first[m.partition] = min(first.get(m.partition, m.offset), m.offset)
    return first


def consumed_to(consumer, ends: dict[int, int]) -> bool:
    seen = {(m.partition, m.offset) for m in consumer.messages}
    return all((p, end - 1) in seen for p, end in ends.items() if end)


def wait_until(cond, consumers: dict, what: str) -> None:
    try:
        wait_for(cond, 150, 0.2, what)
    except AssertionError:
        late = {n: len(c.messages) for n, c in consumers.items()}
        raise AssertionError(f"{what}: messages so far {late}") from None


def stop_all(processes) -> None:
    """SIGTERM to every one at once (each commits and leaves its groups), then wait."""
    processes = list(processes)
    for c in processes:
        if c.proc.poll() is None:
            c.proc.send_signal(signal.SIGTERM)
    for c in processes:
        try:
            c.proc.wait(30)
        except subprocess.TimeoutExpired:
            pass  # stop() kills it
    codes = [c.stop() for c in processes]
    assert all(code in (0, 143) for code in codes), codes


def by_partition(offsets: dict[tuple[str, int], int]) -> dict[int, int]:
    return {p: o for (_, p), o in offsets.items()}


def side_by_side(old: dict, new: ConsumerProcess) -> bool:
    """Every old control consumer took CONTROL_MESSAGES since the new one's first message."""
    if not new.messages:
        return False
    since = new.messages[0].wall_ms
    return all(
        sum(1 for m in c.messages if m.wall_ms >= since) >= CONTROL_MESSAGES for c in old.values()
    )


class Releases:
    """Every release's groups on one topic, the consumers each group has had, in order."""

    def __init__(self, stack, chroot, zk, admin, topic: str, logs) -> None:
        self.stack, self.chroot, self.zk, self.admin = stack, chroot, zk, admin
        self.topic, self.logs = topic, logs
        self.tag = {r: r.replace(".", "") for r in SCALA_CONSUMERS}
        self.zk_group = {r: f"{topic}-{t}-zk" for r, t in self.tag.items()}
        self.kafka_group = {r: f"{topic}-{t}-kafka" for r, t in self.tag.items()}
        self.runs: dict[str, list] = {}
        self.ends: list[dict[int, int]] = []
        self.timings: list[tuple[str, float]] = []
        self._t0 = time.monotonic()

    def lap(self, what: str) -> None:
        now = time.monotonic()
        self.timings.append((what, round(now - self._t0, 1)))
        self._t0 = now

    def batch(self, label: str) -> dict[int, int]:
        produce(self.stack, self.topic, label)
        self.ends.append(log_ends(self.admin, self.topic, PARTITIONS))
        return self.ends[-1]

    def jvm(self, release: str, log: str, groups: list[tuple[str, str, tuple[str, ...]]]):
        """One JVM of ``release`` with a connector per (group, topic, flags); its shares."""
        # their own logs (rebalances, fetchers) at INFO: what a failure is read from
        flags = [*MIGRATION_SETTINGS, "--auto-commit-interval-ms", "500", "--log-level", "INFO"]
        (group, topic, extra), *more = groups
        process = LegacyConsumerProcess(
            self.stack.zk_connect + self.chroot,
            group,
            [topic],
            extra=[*flags, *extra],
            log=self.logs / f"{log}.log",
            jars=SCALA_CONSUMERS[release],
            more=tuple((g, [t], [*flags, *x]) for g, t, x in more),
        )
        return process, {g: Share(process, g) for g, _, _ in groups}

    def migrate(self, to: str) -> None:
        pattern = f"{self.topic}-.*-zk"
        args = ("migrate", "--pattern", pattern, "--to", to, "--lag-window", "0")
        step = cli(self.stack, self.chroot, *args)
        assert step.returncode == 0, f"--to {to}:\n{step.stdout}{step.stderr}"
        self.lap(f"migrate --to {to}")

    def keep(self, shares: dict) -> None:
        for g, c in shares.items():
            self.runs.setdefault(g, []).append(c)

    def exactly_once(self, release: str, since: dict[int, int] | None = None) -> None:
        """Every message of the release's ``-zk`` group once over the runs kept, from
        ``since`` (where the runs kept began) to the last batch's ends."""
        seen: list[tuple[int, int]] = []
        for c in self.runs[self.zk_group[release]]:
            seen += [(m.partition, m.offset) for m in c.messages]
        since = since or {}
        want = {(p, o) for p, end in self.ends[-1].items() for o in range(since.get(p, 0), end)}
        assert set(seen) == want, f"{release}: {len(want - set(seen))} never consumed"
        assert len(seen) == len(want), f"{release}: {len(seen) - len(want)} duplicates"


def first_runs(s: Releases, ends: dict[int, int], ctl_topic: str) -> None:
    """Both storages of every release consume a batch with no group flow in the way; a third
    connector per release shares the control group with a kafka-python consumer."""
    control = f"{ctl_topic}-ctl"
    producer = Producer(s.stack.bootstrap_servers, ctl_topic, PARTITIONS)
    new = NewConsumerProcess(
        s.stack.bootstrap_servers, control, [ctl_topic], client_id="ctl", log=s.logs / "ctl.log"
    )
    processes, shares, controls = [new], {}, {}
    for r, t in s.tag.items():
        zk_g, kafka_g = s.zk_group[r], s.kafka_group[r]
        groups = [(zk_g, s.topic, ()), (kafka_g, s.topic, KAFKA_STORAGE), (control, ctl_topic, ())]
        process, share = s.jvm(r, f"first{t}", groups)
        processes.append(process)
        shares.update({zk_g: share[zk_g], kafka_g: share[kafka_g]})
        controls[r] = share[control]
    try:
        wait_until(
            lambda: (
                all(consumed_to(c, ends) for c in shares.values()) and side_by_side(controls, new)
            ),
            {**shares, **controls},
            "first runs",
        )
        s.lap("first runs and controls")
    finally:
        producer.stop()
        stop_all(processes)
    s.keep(shares)
    s.lap("stopped")
    for r in s.tag:
        both = overlaps(ownership_segments({r: controls[r], "new": new}))
        assert both, f"{r}: the I1 check must be able to fail on this release's log"
        assert zk_offsets(s.zk, s.zk_group[r], s.topic) == ends, r
        assert kafka_offsets(s.admin, s.zk_group[r]) == {}, f"{r}: zookeeper storage in Kafka"
        assert by_partition(kafka_offsets(s.admin, s.kafka_group[r])) == ends, r
        assert zk_offsets(s.zk, s.kafka_group[r], s.topic) == {}, f"{r}: kafka storage in ZK"


def taken_up_by_storage(s: Releases, ends: dict[int, int]) -> None:
    for r in s.tag:
        for g, mode in ((s.zk_group[r], "zookeeper"), (s.kafka_group[r], "kafka")):
            wait_for(lambda g=g: s.zk.exists(f"/kafka-zk-bridge/groups/{g}"), 60, what=g)
            assert record(s.zk, g)["mode"] == mode, (r, g)
        wait_for(
            lambda r=r: zk_offsets(s.zk, s.kafka_group[r], s.topic) == ends,
            30,
            what=f"{r}: Kafka offsets mirrored into ZooKeeper",
        )
    s.lap("modes inferred, offsets mirrored")


def migrate_and_roll_back(s: Releases, before: dict[int, int]) -> None:
    """zookeeper -> dual, a kafka-python consumer per group from where the old one stopped,
    -> kafka, and the rollback -> dual, new consumers stopped, -> zookeeper."""
    ends = s.batch("b")
    s.migrate("dual")
    new = {
        s.zk_group[r]: NewConsumerProcess(
            s.stack.bootstrap_servers,
            s.zk_group[r],
            [s.topic],
            client_id=f"new{t}",
            log=s.logs / f"new{t}.log",
        )
        for r, t in s.tag.items()
    }
    try:
        wait_until(lambda: all(consumed_to(c, ends) for c in new.values()), new, "new ones")
        for r in s.tag:
            assert first_offsets(new[s.zk_group[r]]) == before, f"{r}: not where old stopped"
        s.migrate("kafka")
        s.migrate("dual")
    finally:
        stop_all(new.values())
    s.keep(new)
    s.migrate("zookeeper")
    for r in s.tag:
        assert zk_offsets(s.zk, s.zk_group[r], s.topic) == ends, r


def proxied(admin, group: str) -> bool:
    d = admin.describe_groups([group])[group]
    return any(m["client_id"] == "zk-bridge-proxy" for m in d["members"])


def old_consumers_again(
    s: Releases, first: dict[int, int], before: dict[int, int], refusal: bool = True
) -> None:
    """The -zk consumers resume where the new ones stopped; with ``refusal``, one -kafka
    consumer's commits are refused by Kafka once the bridge's proxy is a member of its group."""
    refused = s.kafka_group[REFUSED] if refusal else None
    processes, shares = [], {}
    for r, g in s.zk_group.items():
        groups = [(g, s.topic, ())]
        if refused and r == REFUSED:
            groups.append((refused, s.topic, KAFKA_STORAGE))
        process, share = s.jvm(r, f"again{s.tag[r]}", groups)
        processes.append(process)
        shares.update(share)
    try:
        if refused:
            wait_for(lambda: proxied(s.admin, refused), 90, 0.5, f"a proxy in {refused}")
            kept = kafka_offsets(s.admin, refused)  # from here on every commit is refused
        ends = s.batch("c")
        wait_until(lambda: all(consumed_to(c, ends) for c in shares.values()), shares, "again")
        s.lap("old consumers again")
    finally:
        stop_all(processes)
    s.keep(shares)
    s.lap("stopped")
    for r, g in s.zk_group.items():
        assert first_offsets(shares[g]) == before, f"{r}: not where the new ones stopped"
        assert zk_offsets(s.zk, g, s.topic) == ends, r
    if not refused:
        return
    assert first_offsets(shares[refused]) == first
    assert kafka_offsets(s.admin, refused) == kept and by_partition(kept) != ends
    wait_for(lambda: zk_offsets(s.zk, refused, s.topic) == by_partition(kept), 30)


def test_every_release_migrates_rolls_back_and_commits_to_kafka(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    topic, ctl_topic = topic_name("mig"), topic_name("ctl")
    admin.create_topics([NewTopic(t, PARTITIONS, 2) for t in (topic, ctl_topic)])
    s = Releases(stack, chroot, zk, admin, topic, tmp_path)
    registry_only = start_bridge(
        env={**registry_env(JSON_VERSION), "ZK_BRIDGE__GROUPS__ENABLED": "false"}
    )
    wait_registry(zk, topic, JSON_VERSION)
    first = s.batch("a")
    first_runs(s, first, ctl_topic)

    registry_only.stop()
    # the control group's nodes stay in ZooKeeper: left alone, as an operator would exclude it
    bridge = start_bridge(
        env={**registry_env(JSON_VERSION), "ZK_BRIDGE__GROUPS__EXCLUDE": '[".*-ctl"]'}
    )
    taken_up_by_storage(s, first)
    migrate_and_roll_back(s, first)
    old_consumers_again(s, first, s.ends[1])
    print(f"\n{s.timings}")
    for r in SCALA_CONSUMERS:
        s.exactly_once(r)
    assert "Traceback" not in bridge.text()
