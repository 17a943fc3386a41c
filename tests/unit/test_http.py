"""The HTTP endpoint: readiness rules (pure), and the real wsgiref server answering them."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, Counter
from prometheus_client.parser import text_string_to_metric_families

from bridge.http import Readiness, readiness, serve
from bridge.metrics import Metrics

TICKS, FLOOR = 20.0, 10.0


def _ready(state="leader", connected=True, flows=None, now=100.0) -> Readiness:
    if flows is None:
        flows = {"registry": (99.5, 0.5), "groups": (99.9, 0.1)}
    return readiness(state, connected, flows, now, TICKS, FLOOR)


def test_leader_with_fresh_flows_is_ready():
    r = _ready()
    assert r.ready and r.state == "leader"
    assert r.flows["registry"].last_ok_s_ago == 0.5
    assert r.flows["registry"].limit_s == 10.0  # the floor: 20 x 0.5 s = 10 s
    assert r.flows["groups"].limit_s == 10.0  # 20 x 0.1 s = 2 s, raised to the floor


def test_limit_is_ticks_times_interval_when_above_the_floor():
    r = _ready(flows={"registry": (50.0, 5.0)}, now=140.0)
    assert r.flows["registry"].limit_s == 100.0 and r.ready


def test_stale_flow_makes_leader_unready_and_says_which():
    r = _ready(flows={"registry": (99.0, 0.5), "groups": (80.0, 0.1)})
    assert not r.ready
    assert "groups (20.0s ago)" in r.reason and "registry" not in r.reason


def test_just_elected_leader_is_not_ready_until_every_flow_passed():
    r = _ready(flows={"registry": (99.0, 0.5), "groups": (None, 0.1)})
    assert not r.ready and "groups (never)" in r.reason
    r = _ready(flows={})
    assert not r.ready and "no flow is running" in r.reason


def test_standby_is_ready_while_zookeeper_is_connected():
    assert _ready("standby", flows={}).ready
    r = _ready("standby", connected=False, flows={})
    assert not r.ready and r.reason == "ZooKeeper is not connected"


@pytest.mark.parametrize("state", ["connecting", "stopping"])
def test_connecting_and_stopping_are_not_ready(state):
    r = _ready(state)
    assert not r.ready and r.reason == f"bridge is {state}"


def test_leader_without_zookeeper_is_not_ready():
    assert not _ready(connected=False).ready


def test_rebalances_counted_from_generations():
    m = Metrics()
    m.note_generation("g", 5)  # baseline: nothing counted
    m.note_generation("g", 5)  # the same generation seen by a second proxy
    m.note_generation("g", 6)
    m.note_generation("g", 9)  # three rebalances the proxies did not each see
    m.note_generation("g", 7)  # a late report of an older generation
    assert m.registry.get_sample_value("zkbridge_group_rebalances_total", {"group": "g"}) == 4


def test_storage_modes_are_exposed_at_zero():
    m = Metrics()
    for mode in ("zookeeper", "dual", "kafka"):
        assert m.registry.get_sample_value("zkbridge_groups", {"mode": mode}) == 0


def _get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read().decode()


@pytest.mark.parametrize("host", ["127.0.0.1", "[::1]"])
def test_server_routes(host):
    registry = CollectorRegistry()
    hits = Counter("zkbridge_test_hits", "test", registry=registry)
    hits.inc(3)
    state = {"r": Readiness(True, "standby", "standby: waiting")}
    endpoint = serve(f"{host}:0", lambda: state["r"], registry)
    try:
        base = f"http://{endpoint.address}"
        assert endpoint.address.startswith(host)
        code, ctype, body = _get(base + "/metrics")
        assert code == 200 and ctype.startswith("text/plain")
        families = {f.name: f for f in text_string_to_metric_families(body)}
        assert families["zkbridge_test_hits"].samples[0].value == 3
        assert _get(base + "/healthz")[:1] == (200,)
        code, ctype, body = _get(base + "/readyz")
        assert code == 200 and ctype == "application/json"
        assert json.loads(body)["state"] == "standby"
        state["r"] = Readiness(False, "connecting", "bridge is connecting")
        code, _, body = _get(base + "/readyz")
        assert code == 503 and json.loads(body)["reason"] == "bridge is connecting"
        assert _get(base + "/healthz")[0] == 200  # alive, though not ready
        assert _get(base + "/nope")[0] == 404
    finally:
        endpoint.close()


def test_address_in_use_raises_oserror():
    endpoint = serve("127.0.0.1:0", lambda: Readiness(True, "standby", ""), CollectorRegistry())
    try:
        with pytest.raises(OSError):
            serve(endpoint.address, lambda: Readiness(True, "standby", ""), CollectorRegistry())
    finally:
        endpoint.close()
