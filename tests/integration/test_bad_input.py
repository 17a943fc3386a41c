"""I5 on a live tree: malformed nodes written by others are reported with their path and
left alone, and every other group keeps mirroring."""

from __future__ import annotations

import json

import pytest
from kafka import KafkaProducer
from kafka.admin import NewTopic

from tests.conftest import wait_for
from tests.integration.test_group_mirror import PolledConsumer

pytestmark = pytest.mark.integration


def test_malformed_nodes_are_reported_and_others_keep_mirroring(
    stack, zk, admin, start_bridge, topic_name
):
    topic = topic_name("bad")
    admin.create_topics([NewTopic(topic, 2, 1)])
    good, bad = f"{topic}-ok", f"{topic}-bad"
    bridge = start_bridge()
    producer = KafkaProducer(bootstrap_servers=stack.bootstrap_servers.split(","))
    consumer = PolledConsumer(stack.bootstrap_servers, good, [topic], "ok-1")
    try:

        def good_offsets() -> int:
            base = f"/consumers/{good}/offsets/{topic}"
            if not zk.exists(base):
                return -1
            return sum(int(zk.get(f"{base}/{p}")[0]) for p in zk.get_children(base))

        wait_for(lambda: good_offsets() >= 0, 60, what="healthy group mirrored")

        ids, offsets = f"/consumers/{bad}/ids", f"/consumers/{bad}/offsets/{topic}"
        reg = {"version": 1, "subscription": {topic: 1}, "pattern": "static", "timestamp": "1"}
        injected = {
            f"{ids}/{bad}_host-1-aaaaaaaa": json.dumps(reg).encode(),  # a usable old consumer
            f"{ids}/{bad}_badjson": b"{not json",
            f"{ids}/{bad}_future": json.dumps({**reg, "version": 9}).encode(),
            f"{ids}/{bad}_binary": b"\xff\xfe\x00garbage",
            # ZooKeeper names are validated UTF-8 strings (it refuses U+FFFD and control
            # characters), so "non-UTF-8 ids" arrive as odd characters in the name and
            # undecodable bytes in the data
            f"{ids}/{bad}_h\u00f6st-\u2603": b"\xc3\x28\xa0\xa1",
            f"{offsets}/0": b"not-a-number",
            f"{offsets}/1": b"7" * 1_000_000,
            f"/consumers/{bad}/owners/{topic}/99": b"someone",
        }
        for path, data in injected.items():
            zk.create(path, data, makepath=True)

        for path in list(injected)[1:]:
            wait_for(lambda p=path: p in bridge.text(), 60, what=f"a report naming {path}")
        # the healthy group keeps mirroring after the injection
        before = good_offsets()
        for i in range(40):
            producer.send(topic, b"x", partition=i % 2)
        producer.flush()
        wait_for(lambda: good_offsets() >= before + 40, 60, what="healthy group still mirrored")
        # nothing injected was changed by the bridge
        for path, data in injected.items():
            assert zk.get(path)[0] == data, path
        assert "Traceback" not in bridge.text()
    finally:
        consumer.close()
        producer.close()
        admin.delete_topics([topic])
