"""Old consumers' generation -1 commits in a group with the bridge's proxies: which
partitions commit as which proxy (``decide.simple_commits``), against a reference that
works the other way round (per proxy, the partitions its thread owns)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bridge.decide.simple_commits import (
    CommitPlan,
    ProxyIdentity,
    ahead,
    behind,
    is_simple_commit,
    plan_simple_commit,
)
from zkpaths import TopicPartition

T = [TopicPartition(t, p) for t in ("a", "b") for p in range(4)]
THREADS = ["g_c1-0", "g_c1-1", "g_c2-0", "mirrored-new-0"]


def joined(thread: str, generation: int = 3, assigned=tuple(T)) -> ProxyIdentity:
    """A joined proxy; by default its generation gave it every partition."""
    return ProxyIdentity(f"{thread}-member", thread, generation, frozenset(assigned))


def test_each_partition_commits_as_its_owners_proxy_and_the_rest_is_refused():
    owners = {T[0]: "g_c1-0", T[1]: "g_c1-0", T[2]: "g_c1-1", T[3]: "mirrored-new-0"}
    proxies = {"g_c1-0": joined("g_c1-0"), "g_c1-1": ProxyIdentity("", "g_c1-1", -1)}
    plan = plan_simple_commit([T[0], T[1], T[2], T[3], T[4]], owners, proxies)
    assert plan.as_proxy == {"g_c1-0": (T[0], T[1])}
    assert set(plan.refused) == {T[2], T[3], T[4]}
    assert "not joined" in plan.refused[T[2]]
    assert "'mirrored-new-0' is not an old thread" in plan.refused[T[3]]
    assert "no old thread owns it" in plan.refused[T[4]]


def test_only_generation_minus_one_without_a_member_is_a_simple_commit():
    assert is_simple_commit(-1, "")
    assert not is_simple_commit(-1, "m")
    assert not is_simple_commit(0, "")
    assert not is_simple_commit(5, "member-1")


def reference(partitions, owners, proxies) -> CommitPlan:
    """Per proxy: the asked partitions whose owner node names its thread and that its
    generation gave it; refused: the rest."""
    as_proxy = {}
    for thread, proxy in proxies.items():
        if proxy.member_id and proxy.generation_id >= 0:
            mine = tuple(
                sorted(
                    tp
                    for tp in set(partitions)
                    if owners.get(tp) == thread and tp in proxy.assigned
                )
            )
            if mine:
                as_proxy[thread] = mine
    committed = {tp for tps in as_proxy.values() for tp in tps}
    return CommitPlan(as_proxy, {tp: "" for tp in set(partitions) - committed})


@given(
    partitions=st.lists(st.sampled_from(T), max_size=10),
    owners=st.dictionaries(st.sampled_from(T), st.sampled_from(THREADS)),
    proxies=st.dictionaries(
        st.sampled_from(THREADS[:3]),
        st.tuples(
            st.sampled_from(["", "m"]), st.integers(-1, 5), st.frozensets(st.sampled_from(T))
        ),
    ),
)
def test_plan_matches_the_reference(partitions, owners, proxies):
    view = {t: ProxyIdentity(m and f"{t}-{m}", t, g, a) for t, (m, g, a) in proxies.items()}
    plan = plan_simple_commit(partitions, owners, view)
    want = reference(partitions, owners, view)
    assert plan.as_proxy == want.as_proxy
    assert set(plan.refused) == set(want.refused)
    assert plan.between == {tp for tp in want.refused if owners.get(tp) in view}
    assert all(plan.refused.values())  # every refusal says why


def test_an_unjoined_owners_partitions_are_kept_for_zookeeper_and_only_when_ahead():
    owners = {T[0]: "g_c1-0", T[1]: "g_c1-0", T[2]: "mirrored-new-0"}
    plan = plan_simple_commit(T[:3], owners, {"g_c1-0": ProxyIdentity("", "g_c1-0", -1)})
    assert plan.between == {T[0], T[1]} and not plan.as_proxy
    assert ahead({T[0]: 5, T[1]: 7, T[2]: 9}, {T[0]: 5, T[1]: 3}) == {T[1]: 7, T[2]: 9}


def test_a_partition_its_proxys_generation_did_not_give_it_is_kept_not_committed():
    """The old thread still owns T[1] in ZooKeeper, but the proxy's generation moved it on
    (a hand-over to a new member): Kafka would take the proxy's commit (it checks the
    generation, not the partition) over the new owner's, so it is kept for ZooKeeper."""
    owners = {T[0]: "g_c1-0", T[1]: "g_c1-0"}
    plan = plan_simple_commit(T[:2], owners, {"g_c1-0": joined("g_c1-0", 4, [T[0]])})
    assert plan.as_proxy == {"g_c1-0": (T[0],)}
    assert plan.between == {T[1]} and "generation 4 has not given it" in plan.refused[T[1]]


# ---- the gateway's side: one retry with the proxy's fresh generation ---------------------


class FakeCore:
    """What ``gateway.simple_commits`` reads of the gateway: the proxies' view (changing
    between calls, as a proxy rejoins) and a ZooKeeper (only passed on here)."""

    def __init__(self, views: list[dict]) -> None:
        self.views = views
        self.zookeeper = object()

    def proxies(self, group: str) -> dict:
        return self.views.pop(0) if len(self.views) > 1 else self.views[0]


class Answers:
    """The coordinator: per OffsetCommit, the generation asked and the error codes given."""

    def __init__(self, codes_by_generation: dict[int, int], stored: int = -1) -> None:
        self.codes = codes_by_generation
        self.stored = stored  # every partition's committed offset in Kafka
        self.asked: list[tuple[str, int, str]] = []
        self.partitions: list[list[int]] = []  # per OffsetCommit, the partitions it carried

    async def __call__(self, core, group, build):
        from kafka.protocol.consumer import OffsetCommitResponse, OffsetFetchResponse

        request = build()
        if request.API_KEY == 9:  # OffsetFetch
            cls = OffsetFetchResponse[1]
            Topic = cls.OffsetFetchResponseTopic
            return 0, cls(
                topics=[
                    Topic(
                        name=t.name,
                        partitions=[
                            Topic.OffsetFetchResponsePartition(
                                partition_index=p,
                                committed_offset=self.stored,
                                metadata="",
                                error_code=0,
                            )
                            for p in t.partition_indexes
                        ],
                    )
                    for t in request.topics
                ]
            )
        self.asked.append(
            (request.member_id, request.generation_id_or_member_epoch, request.group_instance_id)
        )
        self.partitions.append(
            sorted(p.partition_index for t in request.topics for p in t.partitions)
        )
        code = self.codes.get(request.generation_id_or_member_epoch, 0)
        cls = OffsetCommitResponse[7]
        Topic = cls.OffsetCommitResponseTopic
        return 0, cls(
            throttle_time_ms=0,
            topics=[
                Topic(
                    name=t.name,
                    partitions=[
                        Topic.OffsetCommitResponsePartition(
                            partition_index=p.partition_index, error_code=code
                        )
                        for p in t.partitions
                    ],
                )
                for t in request.topics
            ],
        )


def commit(monkeypatch, core, answers, owners) -> tuple[dict, dict]:
    import asyncio

    from kafka.protocol.consumer import OffsetCommitRequest

    from bridge.gateway import groups, simple_commits

    kept: dict = {}

    async def read_owners(core, group, offsets):
        return owners, {}

    async def keep(core, group, offsets):
        kept.update(offsets)

    monkeypatch.setattr(groups, "to_group_coordinator", answers)
    monkeypatch.setattr(simple_commits, "_owners", read_owners)
    monkeypatch.setattr(simple_commits, "_keep_in_zookeeper", keep)
    monkeypatch.setattr(simple_commits, "RETRY_AFTER_S", 0)
    Topic = OffsetCommitRequest.OffsetCommitRequestTopic
    request = OffsetCommitRequest[2](
        group_id="g",
        generation_id_or_member_epoch=-1,
        member_id="",
        retention_time_ms=-1,
        topics=[
            Topic(
                name="a",
                partitions=[
                    Topic.OffsetCommitRequestPartition(partition_index=p, committed_offset=10 + p)
                    for p in range(3)
                ],
            )
        ],
    )
    codes = asyncio.run(simple_commits.commit_as_proxies(core, request))
    return codes, kept


def test_a_proxy_mid_rebalance_is_asked_again_with_its_fresh_generation(monkeypatch):
    owners = {T[0]: "g_c1-0", T[1]: "g_c1-0", T[2]: "mirrored-new-0"}
    core = FakeCore([{"g_c1-0": joined("g_c1-0", 3)}, {"g_c1-0": joined("g_c1-0", 4)}])
    answers = Answers({3: 22})  # ILLEGAL_GENERATION at generation 3, accepted at 4
    codes, kept = commit(monkeypatch, core, answers, owners)
    assert answers.asked == [("g_c1-0-member", 3, "g_c1-0"), ("g_c1-0-member", 4, "g_c1-0")]
    assert codes == {("a", 0): 0, ("a", 1): 0, ("a", 2): 27}
    assert kept == {}  # a new member's partition is not kept anywhere


def test_the_retry_leaves_out_what_the_fresh_generation_moved_to_another_member(monkeypatch):
    """The race a clean-clone CI run hit: a commit refused mid-rebalance was retried as the
    proxy's next generation, in which its partition had been handed to a new member; the
    retry landed over the new member's own commit and the old consumer, given the partition
    back, re-read what the new member had consumed."""
    owners = {T[0]: "g_c1-0", T[1]: "g_c1-0"}
    fresh = joined("g_c1-0", 4, [T[0]])  # generation 4 handed T[1] on
    core = FakeCore([{"g_c1-0": joined("g_c1-0", 3)}, {"g_c1-0": fresh}])
    answers = Answers({3: 27})
    codes, kept = commit(monkeypatch, core, answers, owners)
    assert answers.asked == [("g_c1-0-member", 3, "g_c1-0"), ("g_c1-0-member", 4, "g_c1-0")]
    assert answers.partitions[-1] == [0]  # the retry carried T[0] only
    assert codes == {("a", 0): 0, ("a", 1): 27, ("a", 2): 27}
    assert kept == {T[1]: 11}  # where ahead, for the hand-over gate


def test_still_rebalancing_after_the_retry_is_retriable_and_kept_in_zookeeper(monkeypatch):
    owners = {T[0]: "g_c1-0", T[1]: "g_c1-0"}
    from bridge.metrics import METRICS

    def counted() -> dict[str, float]:
        return {
            o: METRICS.simple_commits.labels(outcome=o)._value.get()
            for o in ("committed", "kept", "refused")
        }

    before = counted()
    core = FakeCore([{"g_c1-0": joined("g_c1-0", 3)}])
    codes, kept = commit(monkeypatch, core, Answers({3: 27}), owners)
    assert codes == {("a", 0): 27, ("a", 1): 27, ("a", 2): 27}
    assert kept == {T[0]: 10, T[1]: 11}  # the hand-over gate carries these into Kafka
    after = counted()
    assert {o: after[o] - before[o] for o in after} == {"committed": 0, "kept": 2, "refused": 1}


def test_a_group_without_proxies_passes_through(monkeypatch):
    core = FakeCore([{}])
    assert commit(monkeypatch, core, Answers({}), {})[0] is None


def test_a_standby_bridges_gateway_sends_a_refused_simple_commit_to_look_again(monkeypatch):
    """On a standby (view None) Kafka's UNKNOWN_MEMBER_ID becomes NOT_COORDINATOR, so the
    old consumer looks the coordinator up again through /brokers/ids (the active gateway);
    a leading bridge without proxies in the group, or a member's own commit, is left alone."""
    from kafka.protocol.consumer import OffsetCommitRequest

    from bridge.gateway.simple_commits import redirect_from_standby

    def request(generation: int, member: str):
        return OffsetCommitRequest[2](
            group_id="g",
            generation_id_or_member_epoch=generation,
            member_id=member,
            retention_time_ms=-1,
            topics=[],
        )

    standby, leader = FakeCore([None]), FakeCore([{}])
    assert commit(monkeypatch, standby, Answers({}), {})[0] is None  # passed through
    cases = [(standby, request(-1, ""), 16), (leader, request(-1, ""), 25)]
    cases += [(standby, request(4, "m"), 25)]
    for core, req, want in cases:
        codes = {("a", 0): 25, ("a", 1): 0}
        redirect_from_standby(core, req, codes)
        assert codes == {("a", 0): want, ("a", 1): 0}


def test_a_bad_owner_node_is_reported_once_not_at_every_commit(caplog):
    from bridge.gateway.simple_commits import _report
    from bridge.zookeeper.reader import NodeProblem

    problem = NodeProblem("/consumers/g/owners/a/x", "unknown owner node name 'x'")
    for _ in range(3):
        _report(problem)
    assert [r.getMessage() for r in caplog.records].count(
        "bad node left alone: unknown owner node name 'x'"
    ) == 1


def test_an_older_commit_than_kafka_holds_is_a_stale_retry_and_not_sent(monkeypatch):
    """The Scala auto-commit retries a failed commit with the offsets of its first attempt;
    once Kafka holds more, storing it would move the group back (and its dual commit would
    move ZooKeeper back)."""
    owners = {T[0]: "g_c1-0", T[1]: "g_c1-0", T[2]: "g_c1-0"}
    core = FakeCore([{"g_c1-0": joined("g_c1-0", 3)}])
    answers = Answers({}, stored=11)  # commits are 10, 11, 12
    codes, kept = commit(monkeypatch, core, answers, owners)
    assert codes == {("a", 0): 27, ("a", 1): 0, ("a", 2): 0}
    assert kept == {}
    plain = {T[0]: 10, T[1]: 11, T[2]: 12}
    assert behind(plain, {T[0]: 9, T[2]: 13}, {T[1]: 11}) == {T[2]: 13}
