"""I1 end to end in a next-generation (KIP-848) mixed group on Kafka 4.x: real 0.10.2.2
Scala consumers (through the legacy gateway) and Kafka's own Java consumer 4.x with
``group.protocol=consumer`` in one group, a producer running throughout, membership changes
of both kinds (``kill -9`` included) and a failover of the bridge (``kill -9`` of the active
one, a standby takes over). The group turns ``consumer``-type when the first next-generation
consumer joins the proxies' classic group (the broker's online upgrade), and classic again
when the last one leaves.

From the consumers' own logs (the classic coexistence test's analysis): every message
consumed, no partition fetched by two members at overlapping times; from the offset stores:
no regression in ZooKeeper or Kafka. The negative control runs the same analysis over a run
whose bridge stands aside (coexistence off): it must find double ownership.
"""

from __future__ import annotations

import os
import time

import pytest
from kafka.admin import NewTopic

from bridge.devstack.legacy import MIGRATION_SETTINGS, ConsumerProcess, LegacyConsumerProcess
from bridge.devstack.next_gen import NextGenConsumerProcess
from bridge.kafka import coordinators
from bridge.kafka.groups import list_groups, read_groups
from bridge.kafka.views import CLASSIC, CONSUMER
from tests.conftest import wait_for
from tests.e2e.bridges import Bridges
from tests.e2e.fleet import COMMIT_MS, Fleet
from tests.e2e.test_coexistence import (
    Producer,
    doubles_seen,
    log_ends,
    overlaps,
    ownership_segments,
)
from tests.e2e.test_migration import OffsetWatcher

pytestmark = pytest.mark.e2e

PARTITIONS = 6
#: membership changes of the run (CI); ``KZB_NEXT_GEN_CHANGES`` for a longer one by hand
CHANGES = int(os.environ.get("KZB_NEXT_GEN_CHANGES", "20"))
#: what operators set on the next-generation consumers of a mixed group (docs/coexistence.md)
NEXT_GEN_PROPS = {"group.remote.assignor": "range", "auto.commit.interval.ms": str(COMMIT_MS)}


@pytest.fixture(scope="module")
def stack(stack4):
    """This module on the session's Kafka 4.x stack (conftest's ``stack4``)."""
    return stack4


def through_gateway(start_bridge):
    """``start_bridge`` with the legacy gateway on and advertised: the old consumers reach
    the 4.x cluster only through it (``test_gateway.py``)."""

    def start(*extra: str, env: dict | None = None):
        env = {"ZK_BRIDGE__REGISTRY__ADVERTISE": "gateway", **(env or {})}
        return start_bridge("--gateway-listen", "127.0.0.1:0", *extra, env=env)

    return start


class NextGenFleet(Fleet):
    """The classic fleet with Java 4.x consumers on ``group.protocol=consumer`` as its new
    members, and a settled check that reads either group type."""

    types_seen: set[str]

    def old(self, name: str, streams: int = 1, extra: tuple[str, ...] = ()) -> None:
        """Old consumers logging at INFO: their rebalances (claims refused, offsets read)
        are what a failure of this test is read from, beside ``timeline.txt``."""
        super().old(name, streams, ("--log-level", "INFO", *extra))

    def new(self, name: str) -> None:
        self.consumers[name] = NextGenConsumerProcess(
            self.stack.bootstrap_servers,
            self.group,
            [self.topic],
            client_id=name,
            props=NEXT_GEN_PROPS,
            log=self.logs / f"{name}.log",
        )
        self.threads[name] = 1

    def view(self):
        listed = list_groups(self.admin).get(self.group)
        kind = listed.group_type if listed is not None else CLASSIC
        return read_groups(self.admin, [self.group], {self.group: kind})[self.group]

    def settled(self) -> bool:
        """Every live thread a member, each member's current assignment its target, every
        partition owned in ZooKeeper by the thread the broker gives it to."""
        try:
            view = self.view()
        except Exception:  # noqa: BLE001 - a coordinator moving: ask again
            coordinators.forget(self.admin, [self.group])
            return False
        if view.error or view.state != "Stable" or len(view.members) != sum(self.threads.values()):
            return False
        self.types_seen.add(view.group_type)
        if view.group_type == CLASSIC:
            return super().settled()
        owners = f"/consumers/{self.group}/owners/{self.topic}"
        if not self.zk.exists(owners) or len(self.zk.get_children(owners)) != PARTITIONS:
            return False
        return all(m.assignment == m.target_assignment for m in view.members)


def test_old_and_next_gen_consumers_share_a_group_without_double_ownership(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    topic = topic_name("ngmix")
    group = f"{topic}-g"
    admin.create_topics([NewTopic(topic, PARTITIONS, 2)])
    bridges = Bridges(through_gateway(start_bridge), zk)
    bridges.add()
    bridges.add()  # a standby
    wait_for(lambda: zk.exists(f"/brokers/topics/{topic}"), 60, what="topic mirrored")
    zk.ensure_path(f"/consumers/{group}/offsets/{topic}")
    watcher = OffsetWatcher(zk, stack.bootstrap_servers, group, topic)
    producer = Producer(stack.bootstrap_servers, topic, partitions=PARTITIONS)
    fleet = NextGenFleet(stack, chroot, zk, admin, group, topic, PARTITIONS, tmp_path)
    fleet.types_seen = set()
    script = [
        ("start old A (2 threads)", lambda: fleet.old("oldA", streams=2)),
        ("start next-gen N1", lambda: fleet.new("N1")),
        ("start old B", lambda: fleet.old("oldB")),
        ("start next-gen N2", lambda: fleet.new("N2")),
        ("stop next-gen N1", lambda: fleet.stop("N1")),
        ("kill -9 old B", lambda: fleet.kill("oldB")),
        ("kill -9 the active bridge", lambda: bridges.kill_active()),
        ("start next-gen N3", lambda: fleet.new("N3")),
        ("start old C", lambda: fleet.old("oldC")),
        ("kill -9 next-gen N2", lambda: fleet.kill("N2")),
        ("stop old C", lambda: fleet.stop("oldC")),
        ("start next-gen N4", lambda: fleet.new("N4")),
        ("stop next-gen N3", lambda: fleet.stop("N3")),
        ("start old D", lambda: fleet.old("oldD")),
        ("start next-gen N5", lambda: fleet.new("N5")),
        ("kill -9 old D", lambda: fleet.kill("oldD")),
        ("stop next-gen N4", lambda: fleet.stop("N4")),
        ("start old E", lambda: fleet.old("oldE")),
        ("kill -9 next-gen N5", lambda: fleet.kill("N5")),
        ("start next-gen N6", lambda: fleet.new("N6")),
        ("stop old E", lambda: fleet.stop("oldE")),
    ][: CHANGES + 1]  # the bridge's failover is not a membership change
    timeline = []
    t_run = time.monotonic()
    try:
        for label, action in script:
            timeline.append((label, round(fleet.change(label, action), 1)))
            time.sleep(0.3)  # consumption goes on while the next change settles
        producer.stop()
        ends = log_ends(admin, topic, PARTITIONS)
        wait_for(lambda: fleet.consumed_everything(ends), 120, 0.5, "every message consumed")
    finally:
        producer.stop()
        fleet.stop_all()
        watcher.stop()
    regressions = watcher.regressions()
    watcher.timeline(tmp_path / "timeline.txt", fleet.consumers)
    counts = fleet.counts()
    double = overlaps(ownership_segments(fleet.consumers))
    print(f"\nmembership changes: {len(script) - 1}; run {time.monotonic() - t_run:.0f} s")
    print(f"settle times (s): {timeline}")
    print(
        f"produced {sum(ends.values())}, consumed {sum(counts.values())}, distinct "
        f"{len(counts)}, double-ownership intervals {len(double)}, "
        f"regressions {len(regressions)}"
    )
    per_consumer = {n: len(c.messages) for n, c in fleet.consumers.items()}
    print(f"consumed per consumer: {per_consumer}; group types seen settled: {fleet.types_seen}")
    assert fleet.consumed_everything(ends)
    # not vacuous: the group settled as a consumer-type group with both kinds consuming
    assert CONSUMER in fleet.types_seen, fleet.types_seen
    assert all(per_consumer[n] for n in ("oldA", "N1")), per_consumer
    assert double == [], f"partitions fetched by two members at once: {double[:5]}"
    assert regressions == [], regressions
    assert "Traceback" not in bridges.logs()


def test_the_i1_check_sees_double_ownership_when_the_bridge_stands_aside(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    """Negative control: coexistence off, an old consumer and a next-generation consumer
    balance separately; the same analysis must find partitions fetched by both at once."""
    topic = topic_name("ngctl")
    group = f"{topic}-g"
    admin.create_topics([NewTopic(topic, PARTITIONS, 2)])
    through_gateway(start_bridge)(env={"ZK_BRIDGE__COEXISTENCE__ENABLED": "false"})
    wait_for(lambda: zk.exists(f"/brokers/topics/{topic}"), 60, what="topic mirrored")
    producer = Producer(stack.bootstrap_servers, topic, partitions=PARTITIONS)
    consumers: dict[str, ConsumerProcess] = {
        "oldA": LegacyConsumerProcess(
            stack.zk_connect + chroot,
            group,
            [topic],
            extra=MIGRATION_SETTINGS,
            log=tmp_path / "oldA.log",
        ),
        "N1": NextGenConsumerProcess(
            stack.bootstrap_servers,
            group,
            [topic],
            client_id="N1",
            props=NEXT_GEN_PROPS,
            log=tmp_path / "N1.log",
        ),
    }
    assert doubles_seen(producer, consumers, 30, 1.0), "the I1 check must be able to fail"
