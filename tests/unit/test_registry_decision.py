"""Flow F1's decision, without servers: what the registry must hold for a cluster view."""

from __future__ import annotations

import json

import zkpaths
from bridge.decide.plan import Node, plan_writes
from bridge.decide.registry import decide_registry, with_gateway_endpoints, with_legacy_endpoints
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


def test_broker_json_version_2_for_0_9_0_0_clients():
    """registry.broker_json_version = 2: what 0.9.0.0 parses; the rack (v3+) is left out."""
    d = decide_registry(view(), {}, set(), NOW, broker_json_version=2).desired
    for bid, host in ((1, "10.0.0.1"), (2, "10.0.0.2")):
        assert json.loads(d[f"/brokers/ids/{bid}"].data) == {
            "endpoints": [f"PLAINTEXT://{host}:9092"],
            "jmx_port": -1,
            "port": 9092,
            "host": host,
            "version": 2,
            "timestamp": str(NOW),
        }
    # an unchanged v2 registration keeps its timestamp, as v4 does
    current = {"/brokers/ids/1": Node(d["/brokers/ids/1"].data, ephemeral_owner=7)}
    later = decide_registry(view(), current, {"/brokers/ids/1"}, NOW + 5, broker_json_version=2)
    assert later.desired["/brokers/ids/1"].data == d["/brokers/ids/1"].data


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


# ---- the legacy listener (registry.legacy_bootstrap_servers) -------------------------------


def sasl_view(**kw) -> ClusterView:
    """What the bridge sees connected over SASL: each broker's SASL_PLAINTEXT endpoint."""
    brokers = {
        1: BrokerView(1, "10.0.0.1", 9094, security_protocol="SASL_PLAINTEXT"),
        2: BrokerView(2, "10.0.0.2", 9094, rack="r2", security_protocol="SASL_PLAINTEXT"),
    }
    return view(brokers=brokers, **kw)


def test_legacy_endpoints_replace_the_ones_the_bridge_connects_through():
    legacy = {1: BrokerView(1, "k1.plain", 9092), 2: BrokerView(2, "k2.plain", 9092)}
    merged = with_legacy_endpoints(sasl_view(), legacy)
    assert merged.unsettled_brokers == frozenset()
    d = decide_registry(merged, {}, set(), NOW).desired
    reg = json.loads(d["/brokers/ids/2"].data)
    assert reg["endpoints"] == ["PLAINTEXT://k2.plain:9092"]
    assert (reg["host"], reg["port"]) == ("k2.plain", 9092)
    assert reg["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
    assert reg["rack"] == "r2", "rack and liveness come from the main view"


def test_without_legacy_endpoints_a_sasl_registration_has_no_plaintext_host():
    reg = json.loads(decide_registry(sasl_view(), {}, set(), NOW).desired["/brokers/ids/1"].data)
    assert reg["endpoints"] == ["SASL_PLAINTEXT://10.0.0.1:9094"]
    assert (reg["host"], reg["port"]) == (None, -1)


def test_a_broker_only_the_legacy_listener_knows_is_not_registered():
    legacy = {
        1: BrokerView(1, "k1.plain", 9092),
        2: BrokerView(2, "k2.plain", 9092),
        3: BrokerView(3, "k3.plain", 9092),  # fenced or gone in the main view
    }
    merged = with_legacy_endpoints(sasl_view(), legacy)
    assert set(merged.brokers) == {1, 2}
    assert "/brokers/ids/3" not in decide_registry(merged, {}, set(), NOW).desired


def test_a_broker_missing_from_the_legacy_answer_keeps_its_registration():
    legacy = {1: BrokerView(1, "k1.plain", 9092), 2: BrokerView(2, "k2.plain", 9092)}
    first = decide_registry(with_legacy_endpoints(sasl_view(), legacy), {}, set(), NOW).desired
    current = {p: Node(x.data, 0, 42 if x.ephemeral else 0) for p, x in first.items()}
    lagging = with_legacy_endpoints(sasl_view(), {1: legacy[1]})
    assert lagging.unsettled_brokers == frozenset({2})
    later = decide_registry(lagging, current, set(current), NOW + 1).desired
    assert later["/brokers/ids/2"].data == current["/brokers/ids/2"].data
    assert plan_writes(later, current, set(current), 42).ops == []
    # never published with the SASL endpoint when it has no registration yet
    fresh = decide_registry(lagging, {}, set(), NOW).desired
    assert "/brokers/ids/2" not in fresh and "/brokers/ids/1" in fresh


def test_a_broker_gone_from_both_views_is_deleted():
    legacy = {1: BrokerView(1, "k1.plain", 9092), 2: BrokerView(2, "k2.plain", 9092)}
    first = decide_registry(with_legacy_endpoints(sasl_view(), legacy), {}, set(), NOW).desired
    current = {p: Node(x.data, 0, 42 if x.ephemeral else 0) for p, x in first.items()}
    gone = view(brokers={1: BrokerView(1, "10.0.0.1", 9094, security_protocol="SASL_PLAINTEXT")})
    later = decide_registry(with_legacy_endpoints(gone, legacy), current, set(current), NOW + 1)
    assert "/brokers/ids/2" not in later.desired


# ---- the legacy gateway (registry.advertise = "gateway") ----------------------------------

GATEWAY = {1: ("bridge-1.example.com", 19091), 2: ("bridge-1.example.com", 19092)}


def test_the_gateway_endpoint_is_published_for_each_broker_id():
    d = decide_registry(with_gateway_endpoints(sasl_view(), GATEWAY), {}, set(), NOW).desired
    for bid, (host, port) in GATEWAY.items():
        reg = json.loads(d[f"/brokers/ids/{bid}"].data)
        assert reg["endpoints"] == [f"PLAINTEXT://{host}:{port}"]
        assert (reg["host"], reg["port"]) == (host, port)
        assert reg["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
    assert json.loads(d["/brokers/ids/2"].data)["rack"] == "r2"


def test_with_the_gateway_everything_but_the_endpoints_is_unchanged():
    plain = decide_registry(view(), {}, set(), NOW).desired
    gated = decide_registry(with_gateway_endpoints(view(), GATEWAY), {}, set(), NOW).desired
    assert set(plain) == set(gated)
    for path in plain:
        if path.startswith("/brokers/ids/"):
            a, b = json.loads(plain[path].data), json.loads(gated[path].data)
            for key in ("host", "port", "endpoints"):
                a.pop(key), b.pop(key)
            assert a == b, path
        else:
            assert plain[path] == gated[path], path


def test_a_broker_without_a_gateway_endpoint_keeps_its_registration():
    first = decide_registry(with_gateway_endpoints(view(), GATEWAY), {}, set(), NOW).desired
    current = {p: Node(x.data, 0, 42 if x.ephemeral else 0) for p, x in first.items()}
    partial = with_gateway_endpoints(view(), {1: GATEWAY[1]})
    assert partial.unsettled_brokers == frozenset({2})
    later = decide_registry(partial, current, set(current), NOW + 1).desired
    assert later["/brokers/ids/2"].data == current["/brokers/ids/2"].data
    # never published with the broker's own endpoint meanwhile
    assert "/brokers/ids/2" not in decide_registry(partial, {}, set(), NOW).desired


def test_a_gateway_endpoint_for_a_broker_kafka_does_not_list_registers_nothing():
    extra = {**GATEWAY, 3: ("bridge-1.example.com", 19093)}
    merged = with_gateway_endpoints(view(), extra)
    assert set(merged.brokers) == {1, 2}
    assert "/brokers/ids/3" not in decide_registry(merged, {}, set(), NOW).desired
