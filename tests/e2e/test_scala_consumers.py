"""Every old Scala high-level consumer release a migration meets (0.8.2.2, 0.9.0.0, 0.9.0.1,
0.10.2.2, 0.11.0.3, from Maven Central, driven by ``harness/LegacyConsumer.java``) on Kafka
3.9 through the bridge, one JVM per release:

* discovery: given only ``zookeeper.connect`` (a chroot only the bridge writes), it finds the
  brokers and the topic in the registry mirror;
* consuming: every message written by kafka-python exactly once, with key, value and (0.10+)
  timestamp;
* a mixed group: a kafka-python consumer joins its group and leaves again while a producer
  writes; from the consumers' own logs no partition is fetched by two members at once (I1,
  the analysis of ``test_coexistence.py``), every message is consumed;
* commits: its offsets in ZooKeeper are the log ends once it stopped.

0.9.0.0 parses only broker JSON versions 1 and 2, so its bridge runs with
``registry.broker_json_version = 2``; the negative control shows the same consumer against
the default v4 failing.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from kafka.admin import NewTopic

from bridge.devstack.legacy import SCALA_CONSUMERS, LegacyConsumerProcess
from tests.conftest import wait_for
from tests.e2e.fleet import Fleet
from tests.e2e.legacy_io import KEEP_OLD_TIMESTAMPS, check_consumed, produce_python
from tests.e2e.test_coexistence import Producer, log_ends, overlaps, ownership_segments

pytestmark = pytest.mark.e2e

PARTITIONS = 6
BATCH = 60
#: messages each member of the mixed group consumes while they share it
SIDE_BY_SIDE = 20
#: the timestamp type each release reports (None: it fetches message format v0, no timestamp)
TIMESTAMPS = {
    "0.8.2.2": None,
    "0.9.0.0": None,
    "0.9.0.1": None,
    "0.10.2.2": "CreateTime",
    "0.11.0.3": "CreateTime",
}
#: the broker JSON version each release's bridge writes: 2 where 0.9.0.0 runs, else the default
JSON_VERSION = {release: 2 if release == "0.9.0.0" else 4 for release in SCALA_CONSUMERS}


def registry_env(version: int) -> dict[str, str]:
    return {"ZK_BRIDGE__REGISTRY__BROKER_JSON_VERSION": str(version)}


def wait_registry(zk, topic: str, version: int) -> None:
    """The topic mirrored and every broker registered with broker JSON ``version``."""
    wait_for(
        lambda: zk.exists(f"/brokers/topics/{topic}/partitions/{PARTITIONS - 1}/state"),
        30,
        what=f"{topic} mirrored",
    )
    ids = wait_for(lambda: zk.get_children("/brokers/ids"), 30, what="brokers registered")
    for i in ids:
        assert json.loads(zk.get(f"/brokers/ids/{i}")[0])["version"] == version, i


def zk_offsets(zk, group: str, topic: str) -> dict[int, int]:
    path = f"/consumers/{group}/offsets/{topic}"
    if not zk.exists(path):
        return {}
    return {int(p): int(zk.get(f"{path}/{p}")[0]) for p in zk.get_children(path)}


def share_the_group(fleet: Fleet, stack, admin, topic: str) -> dict[int, int]:
    """A kafka-python member joins while a producer writes, consumes a while and leaves;
    returns the log ends once the producer stopped and everything was consumed."""
    producer = Producer(stack.bootstrap_servers, topic, PARTITIONS)
    try:
        fleet.change("start new", lambda: fleet.new("new"))
        # both members consume side by side (waited for, not slept: at a load of 30 on two
        # cores a kafka-python member took longer than 4 s to fetch its first message)
        new, old = fleet.consumers["new"], fleet.consumers["old"]
        before = len(old.messages)
        wait_for(
            lambda: (
                len(new.messages) >= SIDE_BY_SIDE and len(old.messages) >= before + SIDE_BY_SIDE
            ),
            90,
            0.2,
            "both members consuming",
        )
        fleet.change("stop new", lambda: fleet.stop("new"))
        time.sleep(2)
        producer.stop()
        ends = log_ends(admin, topic, PARTITIONS)
        wait_for(lambda: fleet.consumed_everything(ends), 90, 0.5, "every message consumed")
    finally:
        producer.stop()
        fleet.stop_all()
    return ends


@pytest.mark.parametrize("release", list(SCALA_CONSUMERS))
def test_scala_consumer_discovers_consumes_commits_and_shares_a_group(
    release, stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    topic = topic_name(release.replace(".", ""))
    group = f"{topic}-g"  # Kafka's groups outlive the chroot: a group id of its own
    admin.create_topics([NewTopic(topic, PARTITIONS, 2, topic_configs=KEEP_OLD_TIMESTAMPS)])
    sent = produce_python(stack.bootstrap_servers, topic, PARTITIONS, BATCH)
    bridge = start_bridge(env=registry_env(JSON_VERSION[release]))
    wait_registry(zk, topic, JSON_VERSION[release])
    # settle_s: at a load of 40 on two cores (Kafka requests timing out) the first join of
    # the old consumer's proxies took longer than 90 s; a quiet machine needs a few seconds
    fleet = Fleet(
        stack, chroot, zk, admin, group, topic, PARTITIONS, tmp_path, SCALA_CONSUMERS[release], 240
    )
    # its own log (fetchers, rebalances) at INFO in tmp_path: what a failure is read from
    flags = ("--details", "true", "--log-level", os.environ.get("KZB_LEGACY_LOG_LEVEL", "INFO"))
    fleet.change("start old", lambda: fleet.old("old", streams=2, extra=flags))
    old = fleet.consumers["old"]
    try:
        old.wait_consumed(len(sent), timeout=90)
    except Exception:
        fleet.stop_all()
        raise
    check_consumed(old.messages[: len(sent)], sent, timestamps=TIMESTAMPS[release])
    assert old.consumer_id and old.consumer_id.startswith(f"{group}_")

    ends = share_the_group(fleet, stack, admin, topic)
    double = overlaps(ownership_segments(fleet.consumers))
    assert double == [], f"partitions fetched by two members at once: {double[:5]}"
    # not vacuous: the new member took some partitions, and the old one kept consuming others
    # while the new one did
    new = fleet.consumers["new"].messages
    assert new and len({m.partition for m in new}) < PARTITIONS, "the new member got nothing"
    first, last = min(m.wall_ms for m in new), max(m.wall_ms for m in new)
    assert any(first <= m.wall_ms <= last for m in old.messages), "no side-by-side consumption"
    # its final commit: the log ends, in ZooKeeper where every legacy tool looks
    assert zk_offsets(zk, group, topic) == ends
    assert "Traceback" not in bridge.text()
    admin.delete_topics([topic])


def test_0_9_0_0_fails_on_the_default_broker_json(
    stack, zk, admin, start_bridge, topic_name, chroot, tmp_path
):
    """Negative control of the 0.9.0.0 case above: with the registry's default (v4) the same
    consumer cannot parse /brokers/ids, so its first rebalance fails and nothing is consumed."""
    topic = topic_name("v4")
    admin.create_topics([NewTopic(topic, PARTITIONS, 2, topic_configs=KEEP_OLD_TIMESTAMPS)])
    produce_python(stack.bootstrap_servers, topic, PARTITIONS, 30)
    start_bridge()
    wait_registry(zk, topic, 4)
    log = tmp_path / "old.log"
    consumer = LegacyConsumerProcess(
        stack.zk_connect + chroot,
        f"{topic}-g",
        [topic],
        # the parse error is logged at INFO ("exception during rebalance"), each retry's
        extra=["--auto-offset-reset", "smallest", "--log-level", "INFO"]
        + ["--rebalance-max-retries", "2", "--rebalance-backoff-ms", "500"],
        log=log,
        jars=SCALA_CONSUMERS["0.9.0.0"],
    )
    try:
        assert consumer.wait_ended(90), f"still running: {consumer.lines[-5:]}"
    finally:
        code = consumer.stop()
    assert code == 2 and consumer.messages == [], consumer.lines[-5:]
    errors = [line for line in consumer.lines if line.startswith("ERROR connector")]
    assert errors and "can't rebalance after 2 retries" in errors[0], consumer.lines
    assert "Only versions 1 and 2 are supported" in log.read_text(errors="replace")
    admin.delete_topics([topic])
