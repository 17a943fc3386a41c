"""bench.coexist_next_gen's convergence check: Kafka's owners against ZooKeeper's."""

from __future__ import annotations

from bench.coexist_next_gen import PARTITIONS, agrees, kafka_owners
from bridge.kafka.views import CONSUMER, GroupView, MemberView
from zkpaths.mirror_ids import mirrored_thread_id

G = "g"
HALF = PARTITIONS // 2


def member(mid: str, owned: range, target: range, instance: str | None = None) -> MemberView:
    return MemberView(
        mid, "c", "h", ("t",), {"t": tuple(owned)}, instance, target_assignment={"t": tuple(target)}
    )


def view(*members: MemberView) -> GroupView:
    return GroupView(G, "Stable", "consumer", "range", members, group_type=CONSUMER)


def test_a_proxy_and_a_mirrored_member_agree_with_zookeeper():
    old = "g_old-1-0"
    kafka = kafka_owners(
        view(
            member("p", range(HALF), range(HALF), instance=old),
            member("n", range(HALF, PARTITIONS), range(HALF, PARTITIONS)),
        ),
        G,
    )
    assert kafka is not None
    zk = {p: old for p in range(HALF)} | {
        p: mirrored_thread_id(G, "n") for p in range(HALF, PARTITIONS)
    }
    assert agrees(zk, kafka, G)
    # negative controls: one partition owned by the other member, one missing
    assert not agrees(zk | {0: mirrored_thread_id(G, "n")}, kafka, G)
    assert not agrees({p: o for p, o in zk.items() if p}, kafka, G)


def test_a_member_still_revoking_is_not_converged():
    revoking = member("n", range(PARTITIONS), range(HALF, PARTITIONS))
    assert kafka_owners(view(revoking), G) is None
