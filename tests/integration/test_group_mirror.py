"""Flows F2/F3 on the real stack: kafka-python groups as legacy readers see them.

Real ``KafkaConsumer``s join, leave, rebalance and commit; the ZooKeeper tree is read with
plain kazoo and compared with what Kafka's admin API reports.
"""

from __future__ import annotations

import json
import logging
import threading
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import KafkaError
from kazoo.exceptions import NoNodeError

from bridge.devstack.lost_join import rejoin_if_join_lost
from bridge.kafka.range_assignor import KafkaRangeAssignor
from tests.conftest import wait_for
from tests.integration.raw_group import join_raw_group
from zkpaths import TopicPartition, legacy_range_assign
from zkpaths.mirror_ids import parse_mirrored

pytestmark = pytest.mark.integration

log = logging.getLogger(__name__)

CONVERGE_S = 5.0  # generous bound for a test; latency is measured by bench/offsets


class PolledConsumer:
    """A kafka-python consumer kept alive by a polling thread, committing as it goes."""

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topics: list[str],
        client_id: str,
        assignors=None,
        **client,
    ) -> None:
        """``client``: further kafka-python options (security settings, another bootstrap)."""
        self.consumer = KafkaConsumer(
            *topics,
            **{"bootstrap_servers": bootstrap.split(","), **client},
            group_id=group,
            client_id=client_id,
            auto_offset_reset="earliest",
            enable_auto_commit=True,
            auto_commit_interval_ms=200,
            partition_assignment_strategy=assignors or _range(),
            heartbeat_interval_ms=500,
            session_timeout_ms=6000,
        )
        self.client_id = client_id
        self.errors: list[str] = []
        self.consumed = 0
        self._stop = threading.Event()
        self._stalled = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stall(self) -> None:
        """Stay in the group but consume nothing more (a stuck application): lag grows."""
        self._stalled.set()

    def _run(self) -> None:
        # an application's poll loop: an error is logged and polling goes on (a consumer
        # that stops polling leaves its group, which is not what these tests are about)
        while not self._stop.is_set():
            try:
                if self._stalled.is_set():
                    self.consumer.pause(*self.consumer.assignment())
                for records in self.consumer.poll(200).values():
                    self.consumed += len(records)
                rejoin_if_join_lost(self.consumer)
            except Exception as e:  # noqa: BLE001 - kept for the failure message
                self.errors.append(f"{type(e).__name__}: {e}")
                log.exception("%s: poll failed; polling again", self.client_id)
                time.sleep(0.2)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.consumer.close()


def register_old_consumer(zk, group: str, topic: str) -> str:
    """An old consumer's registration with one thread, as the 0.10 consumer writes it (an
    ephemeral of ``zk``'s session); returns its consumer id."""
    consumer_id = f"{group}_host-1700000000000-abcd1234"
    zk.create(
        f"/consumers/{group}/ids/{consumer_id}",
        json.dumps(
            {"version": 1, "subscription": {topic: 1}, "pattern": "static", "timestamp": "1"}
        ).encode(),
        makepath=True,
        ephemeral=True,
    )
    return consumer_id


def _range():
    return (KafkaRangeAssignor,)


def kafka_view(admin, group: str) -> dict:
    """Members' partitions and committed offsets, as Kafka reports them."""
    desc = admin.describe_groups([group])[group]
    owners = {}
    for m in desc["members"]:
        assignment = m["member_assignment"] or {"assigned_partitions": []}
        for a in assignment["assigned_partitions"]:
            for p in a["partitions"]:
                owners[(a["topic"], p)] = m["member_id"]
    offsets = {
        (tp.topic, tp.partition): om.offset
        for tp, om in admin.list_group_offsets({group: None})[group].items()
        if om.offset >= 0
    }
    members = sorted(m["member_id"] for m in desc["members"])
    return {"members": members, "owners": owners, "offsets": offsets}


def zk_view(zk, group: str) -> dict:
    """The same, read from /consumers/<g> as a legacy reader does (plus id decoding)."""
    base = f"/consumers/{group}"

    def children(path: str) -> list[str]:
        try:
            return zk.get_children(path)
        except NoNodeError:
            return []

    def member_id_of(consumer_id: str) -> str:
        return parse_mirrored(group, consumer_id)[1]

    def data(path: str) -> bytes | None:  # a node can go between listing and reading it
        try:
            return zk.get(path)[0]
        except NoNodeError:
            return None

    out: dict = {"members": sorted(member_id_of(c) for c in children(f"{base}/ids"))}
    out["owners"] = {}
    for t in children(f"{base}/owners"):
        for p in children(f"{base}/owners/{t}"):
            if (thread := data(f"{base}/owners/{t}/{p}")) is not None:
                out["owners"][(t, int(p))] = member_id_of(thread.decode().rsplit("-", 1)[0])
    out["offsets"] = {}
    for t in children(f"{base}/offsets"):
        for p in children(f"{base}/offsets/{t}"):
            if (offset := data(f"{base}/offsets/{t}/{p}")) is not None:
                out["offsets"][(t, int(p))] = int(offset)
    return out


def converged(zk, admin, group: str, ready=lambda k: True) -> dict:
    """Wait until Kafka is in a state ``ready`` accepts and ZooKeeper shows the same."""
    last = {}

    def same():
        nonlocal last
        try:
            k = kafka_view(admin, group)
        except KafkaError:  # e.g. the coordinator is still loading on a fresh cluster
            return False
        last = {"kafka": k, "zk": zk_view(zk, group)}
        return ready(k) and last["zk"] == k

    try:
        # generous: on 2 busy cores a kafka-python consumer can take a while to (re)join
        wait_for(same, 120 if ready else CONVERGE_S, 0.1)
    except AssertionError:
        raise AssertionError(f"{group}: ZooKeeper does not match Kafka: {last}") from None
    return last["kafka"]


def idle_owner_dirs(zk, group: str) -> dict[str, list[str]]:
    """``owners/<t>`` of a group and the owner nodes under each."""
    base = f"/consumers/{group}/owners"
    try:
        return {t: zk.get_children(f"{base}/{t}") for t in zk.get_children(base)}
    except NoNodeError:
        return {}


def test_a_deleted_group_goes_whole_under_the_delete_policy(
    stack, zk, admin, start_bridge, topic_name
):
    """``on_group_deleted = delete``: idle, the layout stays; deleted in Kafka, it all goes."""
    topic = topic_name("del")
    admin.create_topics([NewTopic(topic, 2, 1)])
    group = f"{topic}-g"
    producer = KafkaProducer(bootstrap_servers=stack.bootstrap_servers.split(","))
    for i in range(10):
        producer.send(topic, b"x", partition=i % 2)
    producer.close()
    start_bridge(env={"ZK_BRIDGE__GROUPS__ON_GROUP_DELETED": "delete"})
    c = PolledConsumer(stack.bootstrap_servers, group, [topic], "solo")
    try:
        converged(zk, admin, group, lambda k: sum(k["offsets"].values()) == 10)
    finally:
        c.close()
    converged(zk, admin, group, lambda k: k["members"] == [] and k["offsets"])
    assert idle_owner_dirs(zk, group) == {topic: []}
    assert admin.delete_groups([group])[group] == "OK"
    wait_for(lambda: not zk.exists(f"/consumers/{group}"), 30, what="group removed")
    admin.delete_topics([topic])


def legacy_range_over_zookeeper(zk, group: str) -> dict:
    """What an old consumer of ``group`` would compute from the tree, knowing no bridge."""
    threads_per_topic: dict[str, list[str]] = {}
    for cid in zk.get_children(f"/consumers/{group}/ids"):
        reg = json.loads(zk.get(f"/consumers/{group}/ids/{cid}")[0])
        for topic, streams in reg["subscription"].items():
            for n in range(streams):
                threads_per_topic.setdefault(topic, []).append(f"{cid}-{n}")
    partitions = {
        t: len(json.loads(zk.get(f"/brokers/topics/{t}")[0])["partitions"])
        for t in threads_per_topic
    }
    assignment = legacy_range_assign(threads_per_topic, partitions)
    return {(tp.topic, tp.partition): owner for tp, owner in assignment.items()}


def test_groups_mirror_joins_leaves_commits_and_deletion(
    stack, zk, admin, start_bridge, topic_name
):
    topic, other = topic_name("g"), topic_name("h")
    admin.create_topics([NewTopic(topic, 6, 2), NewTopic(other, 3, 2)])
    producer = KafkaProducer(bootstrap_servers=stack.bootstrap_servers.split(","))
    for i in range(120):
        producer.send(topic, f"v{i}".encode(), partition=i % 6)
        producer.send(other, f"w{i}".encode(), partition=i % 3)
    producer.flush()
    ga, gb = f"{topic}-ga", f"{topic}-gb"
    start_bridge()
    consumers = [
        PolledConsumer(stack.bootstrap_servers, ga, [topic], "alpha"),
        PolledConsumer(stack.bootstrap_servers, ga, [topic, other], "beta"),
        PolledConsumer(stack.bootstrap_servers, gb, [other], "gamma"),
    ]
    try:
        k = converged(
            zk,
            admin,
            ga,
            lambda k: (
                len(k["members"]) == 2
                and len(k["owners"]) == 9
                and sum(v for (t, _), v in k["offsets"].items() if t == topic) == 120
            ),
        )
        converged(zk, admin, gb, lambda k: len(k["members"]) == 1 and len(k["offsets"]) == 3)

        # the legacy JSON a reader parses
        cid = zk.get_children(f"/consumers/{ga}/ids")[0]
        reg = json.loads(zk.get(f"/consumers/{ga}/ids/{cid}")[0])
        assert reg["version"] == 1 and reg["pattern"] == "static"
        assert isinstance(reg["timestamp"], str)
        assert all(v == 1 for v in reg["subscription"].values())

        # a legacy range computation over the mirrored /ids gives Kafka's owners
        legacy = legacy_range_over_zookeeper(zk, ga)
        decoded = {tp: parse_mirrored(ga, t.rsplit("-", 1)[0])[1] for tp, t in legacy.items()}
        assert decoded == k["owners"]

        # more data and commits: offsets follow
        for i in range(60):
            producer.send(topic, f"x{i}".encode(), partition=i % 6)
        producer.flush()
        converged(
            zk,
            admin,
            ga,
            lambda k: sum(v for (t, _), v in k["offsets"].items() if t == topic) == 180,
        )

        # a member leaves: the group rebalances and the tree follows
        consumers[1].close()
        k = converged(zk, admin, ga, lambda k: len(k["members"]) == 1 and len(k["owners"]) == 6)
        assert zk_view(zk, ga)["owners"] == k["owners"]

        # a member joins again
        consumers[1] = PolledConsumer(stack.bootstrap_servers, ga, [topic], "delta")
        converged(zk, admin, ga, lambda k: len(k["members"]) == 2 and len(k["owners"]) == 6)

        # group emptied: members and owner nodes go; owners/<t> stays, empty, as the old
        # consumers left it (lag tools list a stopped group's topics from there)
        consumers[2].close()
        converged(zk, admin, gb, lambda k: k["members"] == [] and k["offsets"])
        assert idle_owner_dirs(zk, gb) == {other: []}
        before = zk_view(zk, gb)["offsets"]
        # then deleted: offsets and owners/<t> stay (keep-offsets, the default)
        assert admin.delete_groups([gb])[gb] == "OK"
        wait_for(
            lambda: (
                not zk.exists(f"/consumers/{gb}/ids") or not zk.get_children(f"/consumers/{gb}/ids")
            ),
            CONVERGE_S,
        )
        time.sleep(1)
        assert zk_view(zk, gb)["offsets"] == before
        assert idle_owner_dirs(zk, gb) == {other: []}
    finally:
        for c in consumers:
            c.close()
        producer.close()
        admin.delete_topics([topic, other])


def test_mirror_alone_leaves_groups_with_real_old_consumers(
    stack, zk, admin, start_bridge, topic_name
):
    """With coexistence switched off, the mirror detects old consumers and keeps out."""
    topic = topic_name("old")
    admin.create_topics([NewTopic(topic, 2, 1)])
    group = f"{topic}-mixed"
    old = register_old_consumer(zk, group, topic)
    bridge = start_bridge(env={"ZK_BRIDGE__COEXISTENCE__ENABLED": "false"})
    c = PolledConsumer(stack.bootstrap_servers, group, [topic], "newbie")
    try:
        wait_for(lambda: "old ZooKeeper consumers are registered" in bridge.text(), 30)
        time.sleep(1)
        assert zk.get_children(f"/consumers/{group}/ids") == [old]
        assert not zk.exists(f"/consumers/{group}/owners/{topic}")
    finally:
        c.close()
        admin.delete_topics([topic])


def test_non_consumer_groups_are_skipped_with_a_reason(stack, zk, admin, start_bridge, topic_name):
    """A Connect-style group (protocol type 'connect') is counted and explained, not mirrored."""
    group = topic_name("connect")
    stop = join_raw_group(stack.bootstrap_servers, group, protocol_type="connect")
    bridge = start_bridge()
    try:
        wait_for(lambda: "protocol type 'connect' is not 'consumer'" in bridge.text(), 30)
        assert not zk.exists(f"/consumers/{group}")
    finally:
        stop()


def test_a_connect_group_described_beside_consumer_groups(stack, admin, topic_name):
    """kafka-python decodes every member's metadata as the consumer protocol's, and a
    Connect group's is not: DescribeGroups of a chunk holding one failed whole ("Buffer
    underrun decoding string"), and the tick with it. Read beside a consumer group, each
    gets its own answer: the Connect group its protocol type, from the listing."""
    from bench import create_topic
    from bridge.kafka.groups import read_groups
    from tests.integration.test_offsets_trigger import commit_each

    connect, plain, topic = topic_name("connect"), topic_name("plain"), topic_name("t")
    create_topic(admin, topic, 1)
    commit_each(admin, [plain], topic, 3)
    stop = join_raw_group(stack.bootstrap_servers, connect, protocol_type="connect")
    try:
        with pytest.raises(ValueError):  # negative control: kafka-python alone
            admin.describe_groups([connect, plain])
        views = read_groups(admin, [connect, plain])
        assert views[connect].error is None and views[connect].protocol_type == "connect"
        assert views[plain].error is None and views[plain].offsets == {TopicPartition(topic, 0): 3}
    finally:
        stop()
        admin.delete_topics([topic])
