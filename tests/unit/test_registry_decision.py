"""Flow F1's decision, without servers: what the registry must hold for a cluster view."""

from __future__ import annotations

import json

import zkpaths
from bridge.decide.plan import Node, plan_writes
from bridge.decide.registry import decide_registry
from bridge.kafka.views import BrokerView, ClusterView, PartitionView, TopicView

NOW = 1_700_000_000_000


def view(**kw) -> ClusterView:
    base = dict(
        cluster_id="vf5Stp-0RmOgfXk1tLbhBw",
        controller_id=2,
        controller_epoch=7,
        brokers={
            1: BrokerView(1, "10.0.0.1", 9092),
            2: BrokerView(2, "10.0.0.2", 9092, rack="r2"),
        },
        topics={
            "orders": TopicView(
                "orders",
                "AAAAAAAAAAAAAAAAAAAAAQ",
                {
                    0: PartitionView(1, 3, (1, 2), (1, 2)),
                    1: PartitionView(-1, 5, (2, 1), ()),
                },
            )
        },
    )
    base.update(kw)
    return ClusterView(**base)


def test_brokers_are_v4_with_host_and_port_and_ephemeral():
    d = decide_registry(view(), {}, set(), NOW).desired
    reg = json.loads(d["/brokers/ids/1"].data)
    assert d["/brokers/ids/1"].ephemeral
    assert reg == {
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "endpoints": ["PLAINTEXT://10.0.0.1:9092"],
        "jmx_port": -1,
        "host": "10.0.0.1",
        "timestamp": str(NOW),
        "port": 9092,
        "version": 4,
    }
    assert json.loads(d["/brokers/ids/2"].data)["rack"] == "r2"


def test_topics_states_controller_and_cluster_id():
    d = decide_registry(view(), {}, set(), NOW).desired
    topic = zkpaths.decode_topic(d["/brokers/topics/orders"].data)
    assert topic.partitions == {0: (1, 2), 1: (2, 1)}
    state = json.loads(d["/brokers/topics/orders/partitions/1/state"].data)
    assert state["leader"] == -1 and state["isr"] == [] and state["leader_epoch"] == 5
    assert state["controller_epoch"] == 7
    assert json.loads(d["/controller"].data)["brokerid"] == 2 and d["/controller"].ephemeral
    assert d["/controller_epoch"].data == b"7"
    assert json.loads(d["/cluster/id"].data) == {"version": "1", "id": "vf5Stp-0RmOgfXk1tLbhBw"}


def test_unchanged_registration_keeps_its_timestamp():
    first = decide_registry(view(), {}, set(), NOW).desired
    current = {p: Node(x.data, 0, 42 if x.ephemeral else 0) for p, x in first.items()}
    owned = set(current)
    later = decide_registry(view(), current, owned, NOW + 60_000).desired
    plan = plan_writes(later, current, owned, 42)
    assert plan.ops == [], "a steady cluster must cause no writes"


def test_moved_broker_gets_a_new_registration():
    first = decide_registry(view(), {}, set(), NOW).desired
    current = {p: Node(x.data, 0, 42 if x.ephemeral else 0) for p, x in first.items()}
    moved = view(brokers={1: BrokerView(1, "10.0.0.9", 9093)})
    d = decide_registry(moved, current, set(current), NOW + 1).desired
    reg = json.loads(d["/brokers/ids/1"].data)
    assert (reg["host"], reg["port"], reg["timestamp"]) == ("10.0.0.9", 9093, str(NOW + 1))
    assert "/brokers/ids/2" not in d


def test_live_foreign_broker_means_refusal():
    foreign = zkpaths.encode_broker(
        zkpaths.BrokerRegistration.from_endpoints(5, ["PLAINTEXT://h:9092"], timestamp_ms=1)
    )
    decision = decide_registry(view(), {"/brokers/ids/5": Node(foreign, 0, 99)}, set(), NOW)
    assert decision.refusal and "ids [5]" in decision.refusal
    assert decision.desired == {}


def test_foreign_garbage_is_reported_and_the_rest_still_desired():
    current = {"/brokers/ids/1": Node(b"{oops", 0, 0), "/brokers/ids/x": Node(b"{}", 0, 0)}
    decision = decide_registry(view(), current, set(), NOW)
    assert decision.refusal is None
    assert {b.path for b in decision.bad_nodes} == {"/brokers/ids/1", "/brokers/ids/x"}
    assert "/brokers/ids/1" not in decision.desired  # left alone, not overwritten
    assert "/brokers/ids/2" in decision.desired


def test_a_topic_with_a_transient_metadata_error_is_kept_not_deleted():
    first = decide_registry(view(), {}, set(), NOW).desired
    current = {p: Node(x.data, 0, 42 if x.ephemeral else 0) for p, x in first.items()}
    hiccup = view(topics={}, unsettled=frozenset({"orders"}))
    later = decide_registry(hiccup, current, set(current), NOW + 1).desired
    plan = plan_writes(later, current, set(current), 42)
    assert not [op for op in plan.ops if "/brokers/topics/orders" in op.path]
