"""What a mixed group's pass reports and will not fix itself: a new member leading the
group (no gate), a leader's assignment other than Kafka's range, a protocol the proxies
cannot join. Kept apart from the pass that decides the group (``flows.coexist``)."""

from __future__ import annotations

from collections.abc import Callable

from bridge.decide.handover import JoinedGeneration, ZkGroupState, range_mismatch
from bridge.kafka.proxy import ProxyMember
from bridge.kafka.views import GroupView
from bridge.metrics import METRICS


class GroupChecks:
    """The checks, mixed into ``Coexistence`` (its proxies, report and judgements)."""

    proxies: dict[tuple[str, str], ProxyMember]
    report: Callable[[str, str, str], None]
    #: per group, the last Stable generation judged against range, and the judgement
    judged: dict[str, tuple[JoinedGeneration, dict[str, int], dict]]

    def _check_leadership(self, group: str, view: GroupView, state: ZkGroupState) -> None:
        """Surface the one case the gate cannot cover: a new member leads the group."""
        proxies = [p for (g, _), p in self.proxies.items() if g == group]
        joined = {m.group_instance_id for m in view.members} & state.old_threads
        ungated = bool(joined) and not any(p.is_leader for p in proxies)
        METRICS.ungated_groups.labels(group=group).set(1 if ungated else 0)
        if ungated:
            self.report(
                group,
                "a new member leads this group: partitions moving from old threads to new "
                "members are handed over without the SyncGroup gate; the exposure is the old "
                "consumers' rebalance latency (see docs/coexistence.md)",
                "ungated",
            )

    def _check_assignment(
        self, group: str, view: GroupView, gen: JoinedGeneration, partitions: dict[str, int]
    ) -> None:
        """Surface a leader whose assignment is not Kafka's range (old consumers follow it).
        A group is judged again only when its members, assignment or partition counts
        changed (a mixed group is decided every tick; the range computed again each time
        was 7 % of the old consumers' ticks)."""
        last = self.judged.get(group)
        if last is not None and _same_generation(last[0], gen) and last[1] == partitions:
            mismatch = last[2]
        else:
            mismatch = range_mismatch(gen, partitions)
            self.judged[group] = (gen, dict(partitions), mismatch)
        # set every time: the next-generation checks set the same gauge for the group
        METRICS.assignment_mismatches.labels(group=group).set(len(mismatch))
        if not mismatch:
            return
        clients = {m.member_id: m.client_id for m in view.members}
        tp, (given, expected) = next(iter(mismatch.items()))
        self.report(
            group,
            f"the group's leader assigned {len(mismatch)} partition(s) other than Kafka's "
            f"range, e.g. {tp.topic}-{tp.partition} to {given or 'nobody'} where range gives "
            f"it to {expected or 'nobody'}; "
            "old consumers follow range over /ids, so those partitions are fetched by nobody "
            "or twice. Members' clients: "
            f"{', '.join(sorted(set(clients.values())))}. A kafka-python 3.0.x leader does "
            "this (its range assignor drops members); see docs/troubleshooting.md",
            "assignment_mismatch",
        )

    def _check_protocol(self, group: str, view: GroupView | None) -> bool:
        """The protocol vote, made visible: proxies offer only ``range``. True on conflict."""
        errors = [
            p.last_error
            for (g, _), p in self.proxies.items()
            if g == group and p.last_error and "InconsistentGroupProtocol" in p.last_error
        ]
        if not errors:
            METRICS.protocol_conflicts.labels(group=group).set(0)
            return False
        METRICS.protocol_conflicts.labels(group=group).set(1)
        chosen = view.protocol if view is not None and view.protocol else "unknown"
        members = (
            ", ".join(
                f"{m.member_id} (client {m.client_id})" for m in (view.members if view else ())
            )
            or "unknown"
        )
        self.report(
            group,
            f"the group runs protocol {chosen!r}, which its members chose without 'range': "
            f"{members}. The bridge's proxies offer only 'range' (the old consumers' "
            "assignment), so Kafka refuses them (INCONSISTENT_GROUP_PROTOCOL) and the two "
            "worlds cannot share the group. Configure those members with the range assignor. "
            "Nothing else was changed.",
            "protocol",
        )
        return True


def _same_generation(a: JoinedGeneration, b: JoinedGeneration) -> bool:
    return a.members == b.members and a.assignment == b.assignment
