"""Which groups with pykafka consumers the bridge carries, and what it keeps of a refused one."""

from __future__ import annotations

import zkpaths
from bridge.decide.dialects import (
    pykafka_members,
    pykafka_refusal,
    pykafka_step_problem,
    stand_aside,
)
from bridge.decide.plan import Node
from zkpaths.dialects import PYKAFKA, SCALA, Member

PYK = {"h:1": Member("h:1", PYKAFKA, ("t",)), "h:2": Member("h:2", PYKAFKA, ("t",))}
SCALA_MEMBER = {
    "g_h-1-abc": Member(
        "g_h-1-abc", SCALA, ("t",), zkpaths.ConsumerRegistration({"t": 1}, timestamp_ms=1)
    )
}


def test_pykafka_alone_is_carried():
    assert pykafka_members(PYK) == ["h:1", "h:2"]
    assert pykafka_refusal("g", PYK, {}) is None


def test_no_pykafka_is_not_this_decision():
    assert pykafka_refusal("g", SCALA_MEMBER, {"m-1": "kp"}) is None


def test_pykafka_with_kafka_members_is_refused_naming_both():
    why = pykafka_refusal("g", PYK, {"kp-1": "kp"})
    assert why is not None and why.startswith("group g not bridged")
    assert "h:1, h:2" in why and "kp-1 (client kp)" in why and "outside any generation" in why


def test_pykafka_with_scala_consumers_is_refused_naming_both():
    why = pykafka_refusal("g", PYK | SCALA_MEMBER, {})
    assert why is not None and "g_h-1-abc" in why and "owners/<t>/<leader>-<p>" in why


def test_stand_aside_drops_mirrored_members_and_owners_keeps_dirs_and_offsets():
    g = "/consumers/g"
    owned = {
        g,
        f"{g}/ids",
        f"{g}/ids/g_~~mirrored",
        f"{g}/owners",
        f"{g}/owners/t",
        f"{g}/owners/t/0",
        f"{g}/offsets",
        f"{g}/offsets/t",
        f"{g}/offsets/t/0",
    }
    current = {p: Node(b"7" if p.endswith("offsets/t/0") else b"") for p in owned}
    desired = stand_aside("g", current, owned)
    assert set(desired) == owned - {f"{g}/ids/g_~~mirrored", f"{g}/owners/t/0"}
    assert desired[f"{g}/offsets/t/0"].data == b"7"


def test_a_step_away_from_kafka_storage_does_not_fit_pykafka():
    assert pykafka_step_problem(PYK, None, "kafka") is None
    assert "read and commit their offsets in Kafka only" in pykafka_step_problem(PYK, None, "dual")
    assert pykafka_step_problem(PYK, "group g not bridged: ...", "kafka").startswith("group g")
    assert pykafka_step_problem(SCALA_MEMBER, None, "zookeeper") is None
