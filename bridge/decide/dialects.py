"""Which groups of ZooKeeper consumers of other dialects the bridge can carry, and why not.

Pure. A pykafka ``BalancedConsumer`` (see :mod:`zkpaths.dialects.pykafka`) balances only
among the ``/ids`` nodes whose data is its topic name, claims ``owners/<t>/<leader>-<p>``
and commits its offsets to Kafka outside any generation (generation -1, its own consumer id
as member id), which Kafka accepts only while the group has no members. So:

- a group of pykafka consumers alone is carried: its Kafka-stored offsets are mirrored
  under ``/consumers/<g>/offsets`` (storage mode ``kafka``), nothing is written under its
  ``ids`` or ``owners``, and no proxy joins its Kafka group (a member there would make Kafka
  refuse pykafka's commits);
- a group where pykafka consumers meet Kafka members or Scala consumers is refused: no
  balancing both sides follow exists (pykafka does not see the others' registrations,
  the Scala consumer cannot parse pykafka's, and their owner nodes never collide), so
  I1 could not be kept. The bridge writes nothing into such a group and says why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet

import zkpaths
from bridge.decide.groups import group_paths, keep_offsets
from bridge.decide.plan import Desired, Node
from zkpaths.dialects import PYKAFKA, Member


def some(names: Iterable[str], limit: int = 3) -> str:
    """At most ``limit`` names, sorted, and how many more there are: for refusal lines."""
    names = sorted(names)
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def refusal_reasons(
    members: Mapping[str, Member],
    kafka_clients: Mapping[str, str],
    dialect: str,
    with_kafka: Callable[[str], str],
    with_others: Callable[[list[str]], str],
) -> tuple[list[str], list[str]]:
    """The consumer ids of ``dialect`` among ``members`` and, when there are any, why they
    cannot share the group with its Kafka members (``with_kafka`` of their names) and with
    its other ZooKeeper consumers (``with_others`` of their ids): the parts of a refusal."""
    mine = sorted(c for c, m in members.items() if m.dialect == dialect)
    if not mine:
        return mine, []
    others = sorted(c for c, m in members.items() if m.dialect != dialect)
    why = []
    if kafka_clients:
        why.append(with_kafka(some(f"{m} (client {c})" for m, c in kafka_clients.items())))
    if others:
        why.append(with_others(others))
    return mine, why


def pykafka_members(members: Mapping[str, Member]) -> list[str]:
    """The consumer ids of ``members`` that are pykafka BalancedConsumers."""
    return sorted(c for c, m in members.items() if m.dialect == PYKAFKA)


def pykafka_refusal(
    group: str, members: Mapping[str, Member], kafka_clients: Mapping[str, str]
) -> str | None:
    """Why ``group`` cannot be carried, or None (no pykafka member, or pykafka alone).

    ``members`` are the group's ZooKeeper consumers (the bridge's own mirrored ids left
    out); ``kafka_clients`` its Kafka members other than the bridge's proxies (member id ->
    client id)."""
    pyk, why = refusal_reasons(
        members,
        kafka_clients,
        PYKAFKA,
        lambda clients: (
            f"Kafka group members {clients}: pykafka balances only among /ids nodes holding "
            "its topic name and never sees them, and Kafka refuses pykafka's offset commits "
            "(made outside any generation) while the group has members"
        ),
        lambda others: (
            f"old ZooKeeper consumers {some(others)}: they cannot parse pykafka's "
            "registration (a bare topic name, not JSON), and they claim owners/<t>/<p> where "
            "pykafka claims owners/<t>/<leader>-<p>, so neither sees the other's claims"
        ),
    )
    if not why:
        return None
    return (
        f"group {group} not bridged: pykafka BalancedConsumers ({some(pyk)}) share it with "
        + "; and with ".join(why)
        + ". Both sides would fetch the same partitions (I1), so the bridge stands aside: "
        "it removes its own member and owner nodes of this group, writes nothing else into it "
        "and joins no proxy for it; run pykafka consumers in a group of their own"
    )


def stand_aside(
    group: str, current: Mapping[str, Node], owned: AbstractSet[str]
) -> dict[str, Desired]:
    """A refused group's desired nodes: the bridge's mirrored members and owners go, its
    offset nodes stay as they are, and so do the directories it created (``ids``, ``owners``,
    ``owners/<t>``), which the refused group's consumers now register under."""
    desired = keep_offsets(group, current, owned)
    ids, owners = zkpaths.consumer_ids_path(group), zkpaths.owners_path(group)
    for path in group_paths(group, owned):
        if path in (ids, owners) or (path.startswith(owners + "/") and path.count("/") == 4):
            desired[path] = Desired(structural=True)
    return desired


def pykafka_step_problem(
    members: Mapping[str, Member], note: str | None, target: str
) -> str | None:
    """Why a storage-mode step to ``target`` does not fit a group with pykafka consumers,
    or None. pykafka reads and commits its offsets in Kafka only, so only ``kafka`` mode
    describes it; a refused group (``note``) takes no step at all."""
    pyk = pykafka_members(members)
    if not pyk:
        return None
    if note:
        return note
    if target == "kafka":
        return None
    return (
        f"pykafka BalancedConsumers ({some(pyk)}) read and commit their offsets in Kafka "
        f"only and never read ZooKeeper's: in mode {target} the bridge would treat "
        "ZooKeeper offsets no consumer of this group reads or writes as the truth; the "
        "group stays in mode kafka"
    )
