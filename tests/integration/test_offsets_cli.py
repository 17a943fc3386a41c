"""``zk-bridge offsets export|import|reset`` on the real stack, run as the operator runs it.

Each test seeds a topic with messages, an old consumer's offsets in ZooKeeper (nodes as a
consumer with ``offsets.storage=zookeeper`` writes them) and *different* offsets in Kafka,
so that "restored exactly" is checked per store, not just "both equal something".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata
from kazoo.exceptions import NoNodeError

from bridge.commands.offsets.clients import Failure
from bridge.commands.offsets.stores import read_zk_keys, write_zk
from bridge.devstack.lost_join import rejoin_if_join_lost
from bridge.zookeeper.writer import OperatorWriter
from tests.conftest import ROOT, wait_for
from zkpaths import GroupPartition

pytestmark = pytest.mark.integration

MESSAGES = 10  # per partition: the log end of every partition
ZK_OFFSETS = {0: 4, 1: 7, 2: 9}
KAFKA_OFFSETS = {0: 3, 1: 6, 2: 8}
EARLIEST = {0: 2, 1: 0, 2: 0}  # records before offset 2 of partition 0 are deleted


@dataclass
class Seeded:
    group: str
    topic: str
    zk_connect: str
    bootstrap: str

    def path(self, p: int, group: str | None = None) -> str:
        return f"/consumers/{group or self.group}/offsets/{self.topic}/{p}"

    def line(self, p: int, offset: int) -> str:
        return f"{self.path(p)}:{offset}"


def cli(s: Seeded, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m bridge.cli offsets ...`` against the test's chroot, as a child process."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "bridge.cli",
            "offsets",
            *args,
            "--zookeeper",
            s.zk_connect,
            "--bootstrap-server",
            s.bootstrap,
        ],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )


def zk_offsets(zk, s: Seeded, group: str | None = None) -> dict[int, tuple[int, int]]:
    """partition -> (offset, node version) of every offset node of the group's topic."""
    base = f"/consumers/{group or s.group}/offsets/{s.topic}"
    try:
        children = zk.get_children(base)
    except NoNodeError:
        return {}
    out = {}
    for c in children:
        data, stat = zk.get(f"{base}/{c}")
        out[int(c)] = (int(data), stat.version)
    return out


def zk_values(zk, s: Seeded) -> dict[int, int]:
    return {p: o for p, (o, _) in zk_offsets(zk, s).items()}


def kafka_offsets(admin, group: str) -> dict[int, int]:
    got = admin.list_group_offsets({group: None})[group]
    return {tp.partition: om.offset for tp, om in got.items() if om.offset >= 0}


@pytest.fixture
def seeded(stack, chroot, zk, admin, topic_name) -> Seeded:
    topic = topic_name()
    group = f"{topic}-g"
    admin.create_topics([NewTopic(topic, 3, 1)])
    producer = KafkaProducer(bootstrap_servers=stack.bootstrap_servers.split(","))
    for i in range(3 * MESSAGES):
        producer.send(topic, b"m%d" % i, partition=i % 3)
    producer.flush()
    producer.close()
    admin.delete_records({TopicPartition(topic, 0): EARLIEST[0]})
    for p, o in ZK_OFFSETS.items():
        zk.create(f"/consumers/{group}/offsets/{topic}/{p}", str(o).encode(), makepath=True)
    errors = admin.alter_group_offsets(
        group,
        {TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in KAFKA_OFFSETS.items()},
    )
    assert all(e.__name__ == "NoError" for e in errors.values()), errors
    return Seeded(group, topic, stack.zk_connect + chroot, stack.bootstrap_servers)


def test_export_reset_import_round_trip_restores_both_stores_exactly(
    seeded: Seeded, zk, admin, tmp_path: Path
) -> None:
    s = seeded
    zk_file, kafka_file = tmp_path / "zk.txt", tmp_path / "kafka.txt"
    r = cli(s, "export", s.group, "--output", str(zk_file), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert zk_file.read_text() == "".join(s.line(p, o) + "\n" for p, o in ZK_OFFSETS.items())
    r = cli(s, "export", s.group, "--store", "kafka", "-o", str(kafka_file), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert kafka_file.read_text() == "".join(s.line(p, o) + "\n" for p, o in KAFKA_OFFSETS.items())
    # stdout export is the same bytes
    assert cli(s, "export", s.group, cwd=tmp_path).stdout == zk_file.read_text()

    r = cli(
        s, "reset", s.group, "--to-earliest", "--backup", str(tmp_path / "bk.txt"), cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    bk_zk, bk_kafka = tmp_path / "bk-zookeeper.txt", tmp_path / "bk-kafka.txt"
    assert f"written to {bk_zk}" in r.stdout and f"written to {bk_kafka}" in r.stdout
    assert bk_zk.read_text() == zk_file.read_text()
    assert bk_kafka.read_text() == kafka_file.read_text()
    assert zk_values(zk, s) == EARLIEST
    assert kafka_offsets(admin, s.group) == EARLIEST

    r = cli(s, "import", str(bk_zk), "--store", "zookeeper", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = cli(s, "import", str(bk_kafka), "--store", "kafka", "--group", s.group, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert zk_values(zk, s) == ZK_OFFSETS
    assert kafka_offsets(admin, s.group) == KAFKA_OFFSETS
    # and what the stores now hold exports to the very same files
    assert cli(s, "export", s.group, cwd=tmp_path).stdout == zk_file.read_text()
    kafka_again = cli(s, "export", s.group, "--store", "kafka", cwd=tmp_path).stdout
    assert kafka_again == kafka_file.read_text()


def test_import_into_both_stores_creates_missing_nodes_and_dry_run_writes_nothing(
    seeded: Seeded, zk, admin, tmp_path: Path
) -> None:
    s = seeded
    other = f"{s.group}-new"  # no node at all yet: /consumers/<other> is created
    f = tmp_path / "in.txt"
    f.write_text(f"{s.line(1, 5)}\n{s.path(2, other)}:6\n")
    before_zk, before_kafka = zk_offsets(zk, s), kafka_offsets(admin, s.group)

    r = cli(s, "import", str(f), "--store", "both", "--dry-run", "--output", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert plan["dry_run"] is True
    assert [
        (p["group"], p["partition"], p["current"], p["target"]) for p in plan["partitions"]
    ] == [
        (s.group, 1, {"zookeeper": 7, "kafka": 6}, 5),
        (other, 2, {"zookeeper": None, "kafka": None}, 6),
    ]
    assert zk_offsets(zk, s) == before_zk and kafka_offsets(admin, s.group) == before_kafka
    assert zk.exists(f"/consumers/{other}") is None

    r = cli(s, "import", str(f), "--store", "both", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert zk_values(zk, s) == {**ZK_OFFSETS, 1: 5}
    assert kafka_offsets(admin, s.group) == {**KAFKA_OFFSETS, 1: 5}
    assert int(zk.get(s.path(2, other))[0]) == 6
    assert kafka_offsets(admin, other) == {2: 6}


def test_bad_file_reports_every_line_and_writes_nothing(
    seeded: Seeded, zk, admin, tmp_path: Path
) -> None:
    s = seeded
    lines = [
        s.line(0, 1),  # 1 valid
        f"{s.path(1)} 5",  # 2 no colon
        f"{s.path(2)}:abc",  # 3 non-numeric
        f"/consumers/{s.group}/offsets/{s.topic}-missing/0:1",  # 4 unknown topic
        s.line(3, 1),  # 5 partition out of range (0..2)
        f"{s.path(0, 'someone-else')}:1",  # 6 wrong group
        f"{s.path(1)}:-1",  # 7 -1 refused
        f"/consumers/{s.group}/owners/{s.topic}/1:3",  # 8 not an offset node
        s.line(2, 5),  # 9 valid
        s.line(0, 2),  # 10 duplicate of line 1
    ]
    f = tmp_path / "bad.txt"
    f.write_text("\n".join(lines) + "\n")
    zk_before, kafka_before = zk_offsets(zk, s), kafka_offsets(admin, s.group)

    r = cli(s, "import", str(f), "--store", "both", "--group", s.group, cwd=tmp_path)
    assert r.returncode == 1
    reported = [line for line in r.stderr.splitlines() if line.startswith(f"{f}:")]
    expected = {
        2: "no ':'",
        3: "offset 'abc' is not a decimal number",
        4: f"topic '{s.topic}-missing' does not exist",
        5: f"partition 3 of topic '{s.topic}' does not exist (it has 3: 0..2)",
        6: "group 'someone-else' is not the one expected",
        7: "offset -1 means 'no committed offset'",
        8: "is not an offset node",
        10: "is already on line 1",
    }
    assert [int(line.split(":")[1]) for line in reported] == sorted(expected)
    for line, (number, reason) in zip(reported, sorted(expected.items()), strict=True):
        assert line.startswith(f"{f}:{number}: ") and reason in line, line
    assert f"{f}: 8 bad line(s); nothing was written" in r.stderr
    # nothing written: same values and versions, no node of the wrong group, Kafka unchanged
    assert zk_offsets(zk, s) == zk_before
    assert zk.exists("/consumers/someone-else") is None
    assert kafka_offsets(admin, s.group) == kafka_before
    assert kafka_offsets(admin, "someone-else") == {}

    # the same file as a reset source is refused the same way, before any backup
    r = cli(s, "reset", s.group, "--from-file", str(f), cwd=tmp_path)
    assert r.returncode == 1 and f"{f}:6: group 'someone-else'" in r.stderr
    assert list(tmp_path.glob("*backup*")) == []
    assert zk_offsets(zk, s) == zk_before and kafka_offsets(admin, s.group) == kafka_before


def test_import_stops_at_the_first_empty_line_and_says_so(
    seeded: Seeded, zk, tmp_path: Path
) -> None:
    s = seeded
    f = tmp_path / "in.txt"
    f.write_text(f"{s.line(0, 5)}\n\n{s.line(1, 1)}\nnot even a line\n")
    r = cli(s, "import", str(f), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"{f}:2: warning: empty line ends the file" in r.stderr
    assert "the 2 non-empty line(s) after it are not read" in r.stderr
    assert zk_values(zk, s) == {**ZK_OFFSETS, 0: 5}


def test_reset_refused_on_a_live_old_consumer_unless_forced(
    seeded: Seeded, zk, admin, tmp_path: Path
) -> None:
    s = seeded
    zk.create(
        f"/consumers/{s.group}/ids/{s.group}_host-1-abcd", b"{}", ephemeral=True, makepath=True
    )
    r = cli(s, "reset", s.group, "--to-latest", cwd=tmp_path)
    assert r.returncode == 1
    assert f"group '{s.group}' is live" in r.stderr and f"{s.group}_host-1-abcd" in r.stderr
    assert "--force" in r.stderr and "nothing was written" in r.stderr
    assert list(tmp_path.iterdir()) == []  # not even a backup
    assert zk_values(zk, s) == ZK_OFFSETS and kafka_offsets(admin, s.group) == KAFKA_OFFSETS

    r = cli(s, "reset", s.group, "--to-latest", "--force", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    latest = dict.fromkeys(range(3), MESSAGES)
    assert zk_values(zk, s) == latest and kafka_offsets(admin, s.group) == latest
    backups = sorted(p.name for p in tmp_path.iterdir())
    assert len(backups) == 2 and all(b.startswith(f"{s.group}-offsets-backup-") for b in backups)
    zk_backup = next(p for p in tmp_path.iterdir() if p.name.endswith("-zookeeper.txt"))
    assert zk_backup.read_text() == "".join(s.line(p, o) + "\n" for p, o in ZK_OFFSETS.items())


def test_reset_refused_on_a_live_kafka_group_and_forced_commit_is_accepted(
    seeded: Seeded, stack, admin, zk, tmp_path: Path
) -> None:
    s = seeded
    consumer = KafkaConsumer(
        s.topic,
        bootstrap_servers=stack.bootstrap_servers.split(","),
        group_id=s.group,
        enable_auto_commit=False,
        heartbeat_interval_ms=500,
        session_timeout_ms=10000,
    )
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            consumer.poll(200)
            rejoin_if_join_lost(consumer)

    t = threading.Thread(target=poll, daemon=True)
    t.start()
    try:
        wait_for(
            lambda: admin.describe_groups([s.group])[s.group]["group_state"] == "Stable",
            30,
            0.2,
            "the consumer to join",
        )
        r = cli(s, "reset", s.group, "--to-offset", "1", "--store", "kafka", cwd=tmp_path)
        assert r.returncode == 1
        assert "Kafka classic group is Stable with 1 member(s)" in r.stderr
        assert kafka_offsets(admin, s.group) == KAFKA_OFFSETS

        r = cli(
            s,
            *("reset", s.group, "--to-offset", "1", "--store", "kafka", "--force"),
            *("--output", "json"),
            cwd=tmp_path,
        )
        assert r.returncode == 0, r.stderr
        plan = json.loads(r.stdout)
        # clamped into [earliest, latest] like kafka-consumer-groups: partition 0 starts at 2
        assert {p["partition"]: (p["target"], p["note"]) for p in plan["partitions"]} == {
            0: (2, "clamped: 1 is before the earliest offset 2"),
            1: (1, ""),
            2: (1, ""),
        }
        assert kafka_offsets(admin, s.group) == {0: 2, 1: 1, 2: 1}
        assert zk_values(zk, s) == ZK_OFFSETS  # --store kafka leaves ZooKeeper alone
        backup = Path(plan["backups"]["kafka"])
        assert backup.parent == Path(".") and (tmp_path / backup).read_text() == "".join(
            s.line(p, o) + "\n" for p, o in KAFKA_OFFSETS.items()
        )
    finally:
        stop.set()
        t.join(5)
        consumer.close(autocommit=False)


def test_reset_from_file_is_exact_and_topic_scope_is_respected(
    seeded: Seeded, zk, admin, tmp_path: Path
) -> None:
    s = seeded
    r = cli(s, "reset", s.group, "--to-latest", "--topic", f"{s.topic}:1", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert zk_values(zk, s) == {**ZK_OFFSETS, 1: MESSAGES}
    assert kafka_offsets(admin, s.group) == {**KAFKA_OFFSETS, 1: MESSAGES}

    f = tmp_path / "restore.txt"
    f.write_text(f"{s.line(0, 1)}\n")  # below the earliest offset 2: restored as is
    r = cli(s, "reset", s.group, "--from-file", str(f), "--backup", "b.txt", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert zk_values(zk, s)[0] == 1 and kafka_offsets(admin, s.group)[0] == 1
    assert (tmp_path / "b-zookeeper.txt").exists() and (tmp_path / "b-kafka.txt").exists()

    # a backup is never overwritten: the second run with the same name is refused
    r = cli(s, "reset", s.group, "--to-earliest", "--backup", "b.txt", cwd=tmp_path)
    assert r.returncode == 1 and "already exists" in r.stderr
    assert zk_values(zk, s)[0] == 1

    r = cli(s, "reset", s.group, "--to-earliest", "--topic", f"{s.topic}:5", cwd=tmp_path)
    assert r.returncode == 1 and "no partition 5" in r.stderr


def test_export_reports_bad_nodes_and_still_writes_the_good_ones(
    seeded: Seeded, zk, tmp_path: Path
) -> None:
    s = seeded
    zk.create(f"/consumers/{s.group}/offsets/{s.topic}/x", b"1")
    zk.create(f"/consumers/{s.group}/offsets/{s.topic}-gone/0", b"abc", makepath=True)
    zk.create(f"/consumers/{s.group}-none/offsets/{s.topic}/0", b"-1", makepath=True)
    r = cli(s, "export", cwd=tmp_path)  # every group
    assert r.returncode == 1
    assert r.stdout == "".join(s.line(p, o) + "\n" for p, o in ZK_OFFSETS.items())
    assert f"/consumers/{s.group}/offsets/{s.topic}/x: partition 'x' is not a canonical" in r.stderr
    assert (
        f"/consumers/{s.group}/offsets/{s.topic}-gone/0: bad committed offset: not an offset"
        in r.stderr
    )
    assert "data: 'abc'" in r.stderr
    assert "-none" not in r.stderr  # -1 is "no offset", not a bad node
    assert "2 problem(s)" in r.stderr

    r = cli(s, "export", f"{s.group}-typo", cwd=tmp_path)
    assert r.returncode == 1 and f"group '{s.group}-typo' has no committed offsets" in r.stderr


def test_zookeeper_write_fails_whole_when_a_node_changed_since_it_was_read(
    seeded: Seeded, zk
) -> None:
    s = seeded
    keys = [GroupPartition(s.group, s.topic, p) for p in range(3)]
    keys.append(GroupPartition(s.group + "-x", s.topic, 0))
    current = read_zk_keys(zk, keys)
    assert {k.partition: n.offset for k, n in current.items()} == ZK_OFFSETS
    zk.set(s.path(2), b"9")  # a concurrent writer: same value, new version
    before = zk_offsets(zk, s)
    with pytest.raises(Failure, match="changed since it was read"):
        write_zk(OperatorWriter(zk), {k: 1 for k in keys}, current)
    assert zk_offsets(zk, s) == before
    assert zk.exists(f"/consumers/{s.group}-x") is None


def test_unreachable_zookeeper_exits_3(tmp_path: Path, stack) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[zookeeper]\nconnection_timeout_s = 0.5\n")
    s = Seeded("g", "t", "127.0.0.1:1", stack.bootstrap_servers)
    r = cli(s, "export", "--config", str(cfg), cwd=tmp_path)
    assert r.returncode == 3 and "ZooKeeper at 127.0.0.1:1 did not answer" in r.stderr
