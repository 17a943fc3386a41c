"""The groups recorded in a storage mode other than kafka (``GroupScope._not_kafka_mode``),
kept in step as a cold start records new groups every tick (``_recorded``) instead of
derived again from every record: always the set a scan of the records gives, whatever
mix of new records, replaced answers (a watch fired) and changed modes comes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bridge.decide.migration import GroupRecord, StorageMode
from bridge.flows.group_scope import GroupScope

_names = st.sampled_from([f"g{i}" for i in range(12)])
_modes = st.sampled_from(list(StorageMode))
#: ("made", records made for groups) or ("read", the records answer read again)
_steps = st.lists(
    st.one_of(
        st.tuples(st.just("made"), st.dictionaries(_names, _modes, max_size=4)),
        st.tuples(st.just("read"), st.dictionaries(_names, _modes, max_size=8)),
    ),
    max_size=12,
)


class _Scope(GroupScope):
    def __init__(self) -> None:
        self.records = {}
        self._modes_of, self._modes_n, self._others = None, 0, set()


@given(_steps)
def test_the_groups_not_in_kafka_mode_are_what_a_scan_of_the_records_says(steps):
    scope = _Scope()
    for kind, groups in steps:
        if kind == "read":  # WatchedRecords.read's new answer: a new dict
            scope.records = {g: (GroupRecord(m), 1) for g, m in groups.items()}
        else:
            scope._recorded({g: GroupRecord(m) for g, m in groups.items()})
        reference = {g for g, (r, _) in scope.records.items() if r.mode != StorageMode.KAFKA}
        assert scope._not_kafka_mode() == reference
