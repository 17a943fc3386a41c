"""The coordinator's protocol election, with tie-breaking checked against kafka_2.13-3.9.1.

Expected winners come from running GroupMetadata.selectProtocol (Scala classic
coordinator) and ClassicGroup.selectProtocol (Java coordinator) on the same groups, members
joining in the order listed.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkpaths import (
    Coordinator,
    NoCommonProtocolError,
    candidate_protocols,
    select_protocol,
    supports_protocols,
    tally,
)

JVM_VECTORS = [
    # (members in join order, GroupMetadata.scala winner, ClassicGroup.java winner)
    ({"a": ["range", "roundrobin"], "b": ["roundrobin", "range"]}, "roundrobin", "range"),
    ({"b": ["roundrobin", "range"], "a": ["range", "roundrobin"]}, "roundrobin", "range"),
    (
        {"c1": ["range", "cooperative-sticky"], "c2": ["cooperative-sticky", "range"]},
        "cooperative-sticky",
        "range",
    ),
    ({"m1": ["Aa", "BB"], "m2": ["BB", "Aa"]}, "Aa", "Aa"),  # "Aa".hashCode == "BB".hashCode
    ({"m2": ["BB", "Aa"], "m1": ["Aa", "BB"]}, "Aa", "Aa"),
    (
        {"x": ["range", "roundrobin"], "y": ["roundrobin", "range"], "z": ["range"]},
        "range",
        "range",
    ),
    (
        {
            "x": ["sticky", "range"],
            "y": ["range", "sticky"],
            "z": ["roundrobin", "sticky", "range"],
            "w": ["roundrobin", "range", "sticky"],
        },
        "range",
        "sticky",
    ),
    (
        {
            "m0-43476": ["x2", "b", "Aa", "sticky", "p17", "c"],
            "m1-36674": ["sticky", "Aa", "x2", "b"],
        },
        "x2",
        "sticky",
    ),
    ({"m0-79890": ["p16", "p2"], "m1-69572": ["x1", "proto-5", "p10", "p2", "p16"]}, "p16", "p2"),
    ({"m0-27455": ["BB", "roundrobin"], "m1-26458": ["roundrobin", "BB"]}, "roundrobin", "BB"),
    (
        {
            "m0-63260": ["p0", "range", "proto-5"],
            "m1-15174": ["p12", "proto-5", "p0", "range", "Aa"],
        },
        "proto-5",
        "p0",
    ),
    ({"m0-79084": ["b", "a"], "m1-30327": ["a", "b"]}, "a", "a"),
    (
        {"m0-9023": ["Aa", "p1", "p14", "p7", "p12", "BB"], "m1-28809": ["BB", "p14", "Aa"]},
        "BB",  # "Aa"/"BB" collide: m1 votes first in the Scala member map
        "BB",
    ),
]


@pytest.mark.parametrize(("members", "scala", "java"), JVM_VECTORS)
def test_ties_break_as_kafka_3_9_does(members, scala, java) -> None:
    assert select_protocol(members) == scala  # Coordinator.SCALA is the default
    assert select_protocol(members, Coordinator.SCALA) == scala
    assert select_protocol(members, Coordinator.JAVA) == java


def test_most_votes_wins() -> None:
    members = {"a": ["roundrobin", "range"], "b": ["range", "roundrobin"], "c": ["range"]}
    assert candidate_protocols(members) == {"range"}
    assert select_protocol(members) == "range"
    members = {"a": ["x", "y"], "b": ["y", "x"], "c": ["y", "x"]}
    assert tally(members) == {"x": 1, "y": 2}
    for coordinator in Coordinator:
        assert select_protocol(members, coordinator) == "y"


def test_members_vote_for_their_first_candidate() -> None:
    members = {"a": ["sticky", "range"], "b": ["range"]}
    assert tally(members) == {"range": 2}


def test_bridge_proxies_force_range() -> None:
    new_members = {f"consumer-{i}": ["cooperative-sticky", "range"] for i in range(5)}
    proxies = {f"proxy-{i}": ["range"] for i in range(2)}
    for coordinator in Coordinator:
        assert select_protocol({**new_members, **proxies}, coordinator) == "range"


def test_no_common_protocol_names_the_odd_member_out() -> None:
    members = {
        "proxy-1": ["range"],
        "proxy-2": ["range"],
        "consumer-1-abc": ["cooperative-sticky"],
    }
    with pytest.raises(NoCommonProtocolError) as info:
        select_protocol(members)
    err = info.value
    assert err.best == "range"
    assert (err.supporters, err.group_size) == (2, 3)
    assert err.lacking == {"consumer-1-abc": ("cooperative-sticky",)}
    message = str(err)
    assert "'range' is supported by 2 of 3 members" in message
    assert "member 'consumer-1-abc' supports ['cooperative-sticky']" in message


def test_no_common_protocol_with_a_member_supporting_nothing() -> None:
    with pytest.raises(NoCommonProtocolError, match="member 'b' supports no protocol at all"):
        select_protocol({"a": ["range"], "b": []})
    with pytest.raises(NoCommonProtocolError, match="no protocol is supported by every member"):
        select_protocol({"a": [], "b": []})


def test_empty_group_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match="empty group"):
        select_protocol({})


def test_supports_protocols() -> None:
    group = {"a": ["range", "roundrobin"], "b": ["range"]}
    assert supports_protocols(group, ["sticky", "range"])
    assert not supports_protocols(group, ["roundrobin"])  # b lacks it
    assert not supports_protocols(group, [])
    assert supports_protocols({}, ["anything"])


protocols = st.sampled_from(["range", "roundrobin", "sticky", "cooperative-sticky", "Aa", "BB"])
member_lists = st.lists(protocols, min_size=1, max_size=4, unique=True)


@settings(max_examples=300)
@given(st.dictionaries(st.text(min_size=1, max_size=8), member_lists, min_size=1, max_size=6))
def test_winner_is_a_candidate_with_the_most_votes(members) -> None:
    candidates = candidate_protocols(members)
    for coordinator in Coordinator:
        if not candidates:
            with pytest.raises(NoCommonProtocolError):
                select_protocol(members, coordinator)
            continue
        winner = select_protocol(members, coordinator)
        votes = tally(members)
        assert winner in candidates
        assert votes[winner] == max(votes.values())
