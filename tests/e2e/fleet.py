"""A mixed fleet of real consumers in one group, for end-to-end tests: old Scala consumers
and kafka-python consumers started, stopped and killed by name, and a check that the group
has settled on both sides."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from kafka.errors import KafkaError

from bridge.devstack.legacy import (
    MIGRATION_SETTINGS,
    ConsumerProcess,
    LegacyConsumerProcess,
    NewConsumerProcess,
)
from bridge.kafka import coordinators
from tests.conftest import wait_for

COMMIT_MS = 500


class Fleet:
    def __init__(
        self,
        stack,
        chroot: str,
        zk,
        admin,
        group: str,
        topic: str,
        partitions: int,
        logs: Path,
        jars: str = "legacy",
        settle_s: float = 90,
    ) -> None:
        """``jars``: the old consumers' classpath (a release of ``SCALA_CONSUMERS``);
        ``settle_s``: how long one membership change may take to settle on both sides."""
        self.stack, self.chroot, self.zk, self.admin = stack, chroot, zk, admin
        self.jars, self.settle_s = jars, settle_s
        self.group, self.topic, self.partitions, self.logs = group, topic, partitions, logs
        self.consumers: dict[str, ConsumerProcess] = {}
        self.threads: dict[str, int] = {}  # live consumer -> Kafka members it stands for
        self.steps: list[str] = []

    def old(self, name: str, streams: int = 1, extra: tuple[str, ...] = ()) -> None:
        self.consumers[name] = LegacyConsumerProcess(
            self.stack.zk_connect + self.chroot,
            self.group,
            [self.topic],
            streams=streams,
            extra=[*MIGRATION_SETTINGS, "--auto-commit-interval-ms", str(COMMIT_MS), *extra],
            log=self.logs / f"{name}.log",
            jars=self.jars,
        )
        self.threads[name] = streams

    def new(self, name: str) -> None:
        self.consumers[name] = NewConsumerProcess(
            self.stack.bootstrap_servers,
            self.group,
            [self.topic],
            client_id=name,
            extra=["--auto-commit-interval-ms", str(COMMIT_MS)],
            log=self.logs / f"{name}.log",
        )
        self.threads[name] = 1

    def stop(self, name: str) -> None:
        self.consumers[name].stop()
        self.threads.pop(name)

    def kill(self, name: str) -> None:
        self.consumers[name].kill()
        self.threads.pop(name)

    def settled(self) -> bool:
        """Kafka Stable with one member per live thread, and every partition owned in ZK."""
        try:
            d = self.admin.describe_groups([self.group])[self.group]
        except KafkaError:
            coordinators.forget(self.admin, [self.group])
            return False
        if d.get("error"):
            coordinators.forget(self.admin, [self.group])  # it moved: ask again next time
            return False
        owners = f"/consumers/{self.group}/owners/{self.topic}"
        n = len(self.zk.get_children(owners)) if self.zk.exists(owners) else 0
        return (
            d["group_state"] == "Stable"
            and len(d["members"]) == sum(self.threads.values())
            and n == self.partitions
        )

    def describe(self) -> str:
        """Both sides' view, for a failure message."""
        try:
            d = self.admin.describe_groups([self.group])[self.group]
            kafka = f"{d['group_state']} with {len(d['members'])} members {d.get('error')}"
        except KafkaError as exc:
            kafka = f"describe failed: {exc!r}"
        owners = f"/consumers/{self.group}/owners/{self.topic}"
        zk = {
            p: self.zk.get(f"{owners}/{p}")[0].decode(errors="replace")[-40:]
            for p in (self.zk.get_children(owners) if self.zk.exists(owners) else [])
        }
        return f"Kafka {kafka}; expected {sum(self.threads.values())}; ZK owners {zk}"

    def change(self, label: str, action) -> float:
        """Apply one membership change and wait until both sides settle; returns the wait."""
        action()
        t0 = time.monotonic()
        try:
            wait_for(self.settled, self.settle_s, 0.2, f"group settled after '{label}'")
        except AssertionError:
            raise AssertionError(f"not settled after '{label}': {self.describe()}") from None
        self.steps.append(label)
        return time.monotonic() - t0

    def counts(self) -> Counter:
        return Counter((m.partition, m.offset) for c in self.consumers.values() for m in c.messages)

    def consumed_everything(self, ends: dict[int, int]) -> bool:
        seen = set(self.counts())
        return all((p, o) in seen for p, end in ends.items() for o in range(end))

    def stop_all(self) -> None:
        for name in list(self.threads):
            self.consumers[name].stop()
        self.threads.clear()
