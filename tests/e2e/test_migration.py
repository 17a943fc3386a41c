"""A migration and its rollback, end to end, with a producer running throughout.

Real 0.10.2.2 Scala consumers on ZooKeeper offset storage → ``dual`` → rolling replacement
by kafka-python consumers → ``kafka``; then back ``kafka → dual`` → old consumers again →
``zookeeper``. A watcher records every offset write in both stores: the test asserts no
offset ever moved backward (I2), no message was lost, and duplicates stay within the
commit interval of each hand-over (counted and printed).

The stopped-application migration (old consumers stop, the group moves, new consumers start
exactly where they stopped, and back) runs for every Scala consumer release in
``test_scala_migration.py``.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import KafkaError

from bridge.kafka import coordinators
from tests.conftest import wait_for
from tests.e2e.bridges import Bridges
from tests.e2e.fleet import COMMIT_MS, Fleet
from tests.e2e.test_coexistence import RATE, Producer, log_ends
from tests.integration.test_migrate import cli, record

pytestmark = pytest.mark.e2e

PARTITIONS = 6


class OffsetWatcher:
    """Every value each store held, in order: ZooKeeper by data watches, Kafka by polling."""

    def __init__(self, zk, bootstrap: str, group: str, topic: str) -> None:
        self.zk, self.group, self.topic = zk, group, topic
        self.zk_seen: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
        self.kafka_seen: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
        #: (wall ms, partition, what) of every value seen, owners included: a failure's
        #: timeline (``timeline``)
        self.events: list[tuple[int, int, str]] = []
        self._stop = threading.Event()
        self._admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","))
        for p in range(PARTITIONS):
            zk.DataWatch(f"/consumers/{group}/offsets/{topic}/{p}", self._on_zk(p))
            zk.DataWatch(f"/consumers/{group}/owners/{topic}/{p}", self._on_owner(p))
        self._thread = threading.Thread(target=self._poll_kafka, daemon=True)
        self._thread.start()

    def _on_zk(self, p: int):
        def on_change(data, stat):
            if data:
                self.zk_seen[p].append(int(data))
                self.events.append((_now_ms(), p, f"zookeeper offset {int(data)}"))
            return not self._stop.is_set()

        return on_change

    def _on_owner(self, p: int):
        def on_change(data, stat):
            owner = data.decode(errors="replace") if data is not None else "none"
            self.events.append((_now_ms(), p, f"owner {owner}"))
            return not self._stop.is_set()

        return on_change

    def _poll_kafka(self) -> None:
        while not self._stop.is_set():
            try:
                got = self._admin.list_group_offsets({self.group: None})[self.group]
                for tp, om in got.items():
                    if tp.topic == self.topic and om.offset >= 0:
                        seen = self.kafka_seen[tp.partition]
                        if not seen or seen[-1] != om.offset:
                            seen.append(om.offset)
                            self.events.append((_now_ms(), tp.partition, f"kafka {om.offset}"))
            except KafkaError:
                coordinators.forget(self._admin, [self.group])  # moved: found again next time
            time.sleep(0.05)

    def regressions(self) -> list[str]:
        out = []
        for store, seen in (("zookeeper", self.zk_seen), ("kafka", self.kafka_seen)):
            for p, values in seen.items():
                out += [
                    f"{store} {self.topic}-{p}: {a} -> {b}"
                    for a, b in zip(values, values[1:], strict=False)
                    if b < a
                ]
        return out

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._admin.close()

    def timeline(self, out: Path, consumers: dict | None = None) -> None:
        """Every value seen, per partition and in time, with the consumers' own segments of
        consumption (first and last offset): what a failure is read from."""
        events = list(self.events)
        for name, c in (consumers or {}).items():
            per: dict[int, list] = {}
            for m in c.messages:
                per.setdefault(m.partition, []).append(m)
            for p, ms in per.items():
                ms.sort(key=lambda m: m.wall_ms)
                start = ms[0]
                for a, b in zip(ms, [*ms[1:], None], strict=True):
                    if b is None or b.wall_ms - a.wall_ms > 1000:
                        events.append((start.wall_ms, p, f"{name} consumes from {start.offset}"))
                        events.append((a.wall_ms, p, f"{name} consumed to {a.offset}"))
                        start = b
        lines = [
            f"{time.strftime('%H:%M:%S', time.gmtime(t / 1000))}.{t % 1000:03d} p{p} {what}"
            for t, p, what in sorted(events)
        ]
        out.write_text("\n".join(lines) + "\n")


def _now_ms() -> int:
    return int(time.time() * 1000)


def record_mode(zk, group: str) -> str:
    return record(zk, group)["mode"]


@pytest.mark.parametrize("failover", [False, True], ids=["steady", "failover-at-each-step"])
def test_migrate_to_kafka_and_roll_back_with_nothing_lost(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path, failover
):
    """With ``failover``, two bridges run and the active one is killed (``kill -9``) right
    before every step: the step is asked of the standby while it is still taking over."""
    topic = topic_name("mig")
    group = f"{topic}-g"
    admin.create_topics([NewTopic(topic, PARTITIONS, 2)])
    bridges = Bridges(start_bridge, zk)
    if failover:
        bridges.add()
        bridges.add()
    else:
        start_bridge()
    wait_for(lambda: zk.exists(f"/brokers/topics/{topic}"), 30, what="topic mirrored")
    zk.ensure_path(f"/consumers/{group}/offsets/{topic}")
    watcher = OffsetWatcher(zk, stack.bootstrap_servers, group, topic)
    producer = Producer(stack.bootstrap_servers, topic, partitions=PARTITIONS)
    fleet = Fleet(stack, chroot, zk, admin, group, topic, PARTITIONS, tmp_path)

    def change(label: str, action) -> None:
        fleet.change(label, action)
        time.sleep(2)

    def migrate(to: str) -> None:
        if failover:
            killed, _ = bridges.kill_active(wait=False)
            fleet.steps.append(f"kill -9 {killed}")
        # the default --sync-timeout (15 s) outlasts a takeover (session + ~1 s)
        result = cli(stack, chroot, "migrate", group, "--to", to, "--lag-window", "3")
        assert result.returncode == 0, f"migrate --to {to}:\n{result.stdout}{result.stderr}"
        assert record_mode(zk, group) == to
        fleet.steps.append(f"migrate -> {to}")

    try:
        change("old consumer A", lambda: fleet.old("oldA"))
        change("old consumer B", lambda: fleet.old("oldB"))
        wait_for(lambda: zk.exists(f"/kafka-zk-bridge/groups/{group}"), 30)
        assert record_mode(zk, group) == "zookeeper"
        time.sleep(3)
        epoch = bridges.epoch()[0] if failover else 0
        migrate("dual")
        change("new consumer N1", lambda: fleet.new("newN1"))
        change("stop old A", lambda: fleet.stop("oldA"))
        change("new consumer N2", lambda: fleet.new("newN2"))
        change("stop old B", lambda: fleet.stop("oldB"))
        migrate("kafka")
        # and back: the rollback runbook
        migrate("dual")
        change("old consumer C", lambda: fleet.old("oldC"))
        change("stop new N1", lambda: fleet.stop("newN1"))
        change("old consumer D", lambda: fleet.old("oldD"))
        change("stop new N2", lambda: fleet.stop("newN2"))
        migrate("zookeeper")

        producer.stop()
        ends = log_ends(admin, topic, PARTITIONS)
        wait_for(lambda: fleet.consumed_everything(ends), 120, 0.5, "every message consumed")
    finally:
        producer.stop()
        fleet.stop_all()
        watcher.stop()

    steps = fleet.steps
    counts = fleet.counts()
    duplicates = sum(n - 1 for n in counts.values())
    regressions = watcher.regressions()
    total = sum(ends.values())
    writes = sum(map(len, watcher.zk_seen.values())), sum(map(len, watcher.kafka_seen.values()))
    print(f"\nsteps: {steps}")
    print(
        f"produced {total}, distinct consumed {len(counts)}, duplicates {duplicates}, "
        f"offset writes seen zk/kafka {writes}, regressions {len(regressions)}"
    )
    assert regressions == [], regressions[:10]
    assert all(counts[(p, o)] for p, e in ends.items() for o in range(e))
    if failover:  # every step was answered by a bridge that took over during it
        kills = sum(1 for s in steps if s.startswith("kill"))
        assert kills == 4 and bridges.epoch()[0] >= epoch + kills
        assert "Traceback" not in bridges.logs()
    handovers = sum(1 for s in steps if not s.startswith(("migrate", "kill")))
    window = handovers * RATE * (COMMIT_MS / 1000 + 1.0)
    assert duplicates <= window, f"{duplicates} duplicates exceed the window of {window:.0f}"
