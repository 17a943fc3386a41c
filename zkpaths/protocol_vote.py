"""Kafka's election of a group's assignment protocol (classic JoinGroup protocol).

The candidates are the protocols every member supports; each member votes for the first
protocol of its own ordered list that is a candidate; the protocol with the most votes wins.

On a tie the winner is whichever tied protocol the coordinator's hash map yields first:

* ``GroupMetadata.selectProtocol`` (the Scala classic coordinator, Kafka's default through
  3.9, built with Scala 2.13) does ``votes.groupBy(identity).maxBy(_.size)``: an
  ``immutable.HashMap`` scanned in CHAMP order, first maximum kept.
* ``ClassicGroup.selectProtocol`` (the Java coordinator: Kafka 4.x, or 3.x with the new
  coordinator enabled) streams a ``java.util.HashMap`` and keeps the first maximum.

Both orders depend on the protocol names' ``hashCode`` and, where two names share a bucket
(Java) or a whole hash (Scala), on which got its first vote earlier; members vote in the
order of the coordinator's own member map, which is derived here from the join order the
caller gives. Verified against ``kafka_2.13-3.9.1`` on thousands of random groups. The
bridge sidesteps all this by having its proxies advertise only ``range``, which makes
``range`` the only possible candidate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum

from zkpaths.errors import NoCommonProtocolError
from zkpaths.jvmorder import (
    java_hashmap_order,
    scala_immutable_hashmap_order,
    scala_mutable_hashmap_order,
)


class Coordinator(Enum):
    """Which group coordinator implementation's tie-breaking to reproduce."""

    SCALA = "GroupMetadata.scala"
    JAVA = "ClassicGroup.java"


def candidate_protocols(members: Mapping[str, Sequence[str]]) -> frozenset[str]:
    """The protocols every member supports."""
    sets = [set(protocols) for protocols in members.values()]
    return frozenset(set.intersection(*sets)) if sets else frozenset()


def member_vote(protocols: Sequence[str], candidates: frozenset[str]) -> str | None:
    """``MemberMetadata.vote``: the member's most preferred candidate."""
    return next((p for p in protocols if p in candidates), None)


def tally(members: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """Votes per protocol, in the order each protocol received its first vote.

    Raises :class:`NoCommonProtocolError` when the members share no protocol.
    """
    if not members:
        raise ValueError("cannot select a protocol for an empty group")
    candidates = candidate_protocols(members)
    if not candidates:
        raise no_common_protocol(members)
    votes: dict[str, int] = {}
    for protocols in members.values():
        choice = member_vote(protocols, candidates)
        assert choice is not None  # every member supports every candidate
        votes[choice] = votes.get(choice, 0) + 1
    return votes


def select_protocol(
    members: Mapping[str, Sequence[str]], coordinator: Coordinator = Coordinator.SCALA
) -> str:
    """The protocol Kafka's coordinator selects for a group of ``members``.

    ``members`` maps member id to its protocols in preference order; the mapping's order is
    the order the members joined in, which only matters for exact tie-breaking.
    """
    if coordinator is Coordinator.SCALA:
        in_map_order = scala_mutable_hashmap_order(members)
    else:
        in_map_order = java_hashmap_order(members)
    votes = tally({member: members[member] for member in in_map_order})
    if coordinator is Coordinator.SCALA:
        order = scala_immutable_hashmap_order(votes)
    else:
        order = java_hashmap_order(votes)
    best = max(votes.values())
    return next(p for p in order if votes[p] == best)


def supports_protocols(members: Mapping[str, Sequence[str]], protocols: Sequence[str]) -> bool:
    """Whether a member offering ``protocols`` may join a group of ``members``.

    ``GroupMetadata.supportsProtocols``: an empty group takes any non-empty list; otherwise
    the newcomer must offer a protocol every current member supports. Kafka refuses the
    join with INCONSISTENT_GROUP_PROTOCOL otherwise.
    """
    if not protocols:
        return False
    if not members:
        return True
    return bool(candidate_protocols(members) & set(protocols))


def no_common_protocol(members: Mapping[str, Sequence[str]]) -> NoCommonProtocolError:
    """An error naming who lacks the protocol most of the group shares."""
    support: dict[str, int] = {}
    for protocols in members.values():
        for protocol in dict.fromkeys(protocols):
            support[protocol] = support.get(protocol, 0) + 1
    if not support:
        return NoCommonProtocolError(None, 0, len(members), dict(members))
    best = max(support, key=lambda p: (support[p], -_first_mention(members, p)))
    lacking = {m: tuple(p) for m, p in members.items() if best not in p}
    return NoCommonProtocolError(best, support[best], len(members), lacking)


def _first_mention(members: Mapping[str, Sequence[str]], protocol: str) -> int:
    """Rank of ``protocol`` in the first member's list naming it: earlier is preferred."""
    for protocols in members.values():
        if protocol in protocols:
            return list(protocols).index(protocol)
    return len(members)  # pragma: no cover - only called for mentioned protocols
