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


def test_a_shorter_backoff_keeps_the_old_consumers_retry_window():
    """Every case's old consumers get the same settings; a shorter rebalance.backoff.ms
    comes with as many more retries as keep 30 s (a ConsumerRebalanceFailedException
    otherwise ends an old consumer whose claim waits for a slow hand-over)."""
    import argparse

    from bench.coexist import OLD, old_settings

    assert old_settings(argparse.Namespace(rebalance_backoff_ms=None)) == OLD

    def props(backoff: int) -> dict[str, str]:
        argv = old_settings(argparse.Namespace(rebalance_backoff_ms=backoff))
        pairs = [argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--prop"]
        return dict(pairs)  # the harness keeps the last value of a repeated key

    for backoff, retries in ((1000, 30), (300, 100), (250, 120), (333, 91)):
        got = props(backoff)
        assert got["rebalance.backoff.ms"] == str(backoff)
        assert int(got["rebalance.max.retries"]) == retries
        assert retries * backoff >= 30_000
