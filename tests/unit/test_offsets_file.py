"""The ExportZkOffsets line format: round trips, and every bad line found with its number.

An import must write nothing unless every line is valid, so the parser has to report all
problems of a file at once; these tests pin each kind of problem to its line.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge import offsets_file as of
from bridge.offsets_file import INT64_MAX, LineError, OffsetEntry

topics = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
    min_size=1,
    max_size=60,
).filter(lambda t: t not in (".", ".."))
# a group id is any ZooKeeper node name: spaces, ':', U+2028 and other non-ASCII included
groups = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs",),
        blacklist_characters="/",
        min_codepoint=0x20,
        max_codepoint=0xD7FF,
    ).filter(lambda c: not 0x7F <= ord(c) <= 0x9F),
    min_size=1,
    max_size=40,
).filter(lambda g: g not in (".", ".."))
entries = st.builds(
    OffsetEntry,
    group=groups,
    topic=topics,
    partition=st.integers(0, 2**31 - 1),
    offset=st.integers(0, INT64_MAX),
)
entry_lists = st.lists(entries, max_size=30, unique_by=lambda e: e.key)


@given(entry_lists)
def test_format_then_parse_is_identity(items: list[OffsetEntry]) -> None:
    text = of.format_entries(items)
    parsed = of.parse(text, "f")
    assert parsed.errors == []
    assert parsed.entries == sorted(items)
    assert parsed.stopped_at is None and parsed.ignored == 0
    # and back again: the file is a fixed point
    assert of.format_entries(parsed.entries) == text


@given(entries)
def test_one_line_is_exactly_the_legacy_path_and_offset(e: OffsetEntry) -> None:
    line = of.format_line(e)
    assert line == f"/consumers/{e.group}/offsets/{e.topic}/{e.partition}:{e.offset}"
    assert of.parse_line(line) == e


def test_lines_are_sorted_by_partition_number_not_text() -> None:
    items = [OffsetEntry("g", "t", p, p) for p in (10, 9, 100, 0)]
    assert of.format_entries(items).splitlines() == [
        f"/consumers/g/offsets/t/{p}:{p}" for p in (0, 9, 10, 100)
    ]


def test_group_with_colon_splits_at_the_last_colon() -> None:
    # ImportZkOffsets splits at every ':' and would misread this group
    e = of.parse_line("/consumers/app:blue/offsets/t/0:42")
    assert e == OffsetEntry("app:blue", "t", 0, 42)


def test_whitespace_and_crlf_are_tolerated() -> None:
    parsed = of.parse("  /consumers/g/offsets/t/0:5 \r\n/consumers/g/offsets/t/1 : 6\r\n", "f")
    assert parsed.errors == []
    assert parsed.entries == [OffsetEntry("g", "t", 0, 5), OffsetEntry("g", "t", 1, 6)]


BAD = [
    ("/consumers/g/offsets/t/0 17", "no ':'"),
    ("/consumers/g/offsets/t/0:", "no offset after ':'"),
    ("/consumers/g/offsets/t/0:abc", "offset 'abc' is not a decimal number"),
    ("/consumers/g/offsets/t/0:1.5", "is not a decimal number"),
    ("/consumers/g/offsets/t/0:+5", "is not a decimal number"),
    ("/consumers/g/offsets/t/0:1_000", "is not a decimal number"),
    ("/consumers/g/offsets/t/0:\u0663", "is not a decimal number"),  # an Arabic-Indic 3
    ("/consumers/g/offsets/t/0:-1", "offset -1 means 'no committed offset'"),
    ("/consumers/g/offsets/t/0:-7", "offset -7 is negative"),
    (f"/consumers/g/offsets/t/0:{INT64_MAX + 1}", "is larger than"),
    ("/consumers/g/owners/t/0:5", "is not an offset node"),
    ("/consumers/g/offsets/t:5", "is not an offset node"),
    ("/consumers/g/offsets/t/0/x:5", "not a node of Kafka's legacy layout"),
    ("/consumers/g/offsets/t/07:5", "partition '07' is not a canonical number"),
    ("/consumers/g/offsets/t/-1:5", "partition '-1' is not a canonical number"),
    ("/consumers/g/offsets/t/2147483648:5", "is not a canonical number"),
    ("/consumers/g/offsets/bad topic/0:5", "contains a character other than"),
    ("/brokers/topics/t:5", "is not an offset node"),
    ("consumers/g/offsets/t/0:5", "starts with '/'"),
    ("hello", "no ':'"),
]


@pytest.mark.parametrize(("line", "reason"), BAD)
def test_each_kind_of_bad_line_is_named(line: str, reason: str) -> None:
    parsed = of.parse(f"/consumers/g/offsets/t/9:1\n{line}\n/consumers/g/offsets/t/8:1\n", "in.txt")
    assert len(parsed.errors) == 1, parsed.errors
    err = parsed.errors[0]
    assert (err.source, err.line) == ("in.txt", 2)
    assert reason in err.reason
    assert str(err).startswith("in.txt:2: ")
    assert [e.partition for e in parsed.entries] == [9, 8]  # good lines still parsed


def test_every_error_is_collected_not_just_the_first() -> None:
    text = "\n".join(
        ["/consumers/g/offsets/t/0:1"] + [line for line, _ in BAD] + ["/consumers/g/offsets/t/1:2"]
    )
    parsed = of.parse(text, "f")
    assert [e.line for e in parsed.errors] == list(range(2, len(BAD) + 2))
    assert not parsed.ok
    assert len(parsed.entries) == 2


def test_duplicate_partition_names_the_first_line() -> None:
    parsed = of.parse(
        "/consumers/g/offsets/t/0:1\n/consumers/g/offsets/t/1:1\n/consumers/g/offsets/t/0:2\n", "f"
    )
    assert [(e.line, e.reason) for e in parsed.errors] == [
        (3, "t/0 of group 'g' is already on line 1")
    ]


def test_group_filter_makes_other_groups_errors() -> None:
    text = "/consumers/a/offsets/t/0:1\n/consumers/b/offsets/t/0:1\n/consumers/a/offsets/t/1:3\n"
    parsed = of.parse(text, "f", groups=["a"])
    assert [(e.line, e.reason) for e in parsed.errors] == [
        (2, "group 'b' is not the one expected ('a')")
    ]
    assert [e.key for e in parsed.entries] == [("a", "t", 0), ("a", "t", 1)]
    assert of.parse(text, "f", groups=["a", "b"]).ok
    assert of.parse(text, "f").ok


def test_empty_line_ends_the_file_like_import_zk_offsets() -> None:
    text = (
        "/consumers/g/offsets/t/0:1\n\n/consumers/g/offsets/t/1:x\n\n/consumers/g/offsets/t/2:3\n"
    )
    parsed = of.parse(text, "f")
    assert parsed.ok  # the bad line after the stop is not read at all
    assert parsed.entries == [OffsetEntry("g", "t", 0, 1)]
    assert parsed.stopped_at == 2
    assert parsed.ignored == 2  # so the caller can warn


def test_blank_line_ends_the_file_too_and_final_newline_is_not_a_stop() -> None:
    assert of.parse("/consumers/g/offsets/t/0:1\n   \n", "f").stopped_at == 2
    one = of.parse("/consumers/g/offsets/t/0:1\n", "f")
    assert one.stopped_at is None and one.ignored == 0
    assert of.parse("", "f").entries == []


def test_unicode_line_separator_in_a_group_is_not_a_line_break() -> None:
    e = OffsetEntry("a\u2028b\u0085c", "t", 0, 1)  # U+0085 is refused by ZooKeeper, see below
    with pytest.raises(ValueError):
        of.format_line(e)
    e = OffsetEntry("a\u2028b", "t", 0, 1)
    assert of.parse(of.format_line(e) + "\n", "f").entries == [e]


def test_format_refuses_what_import_would_refuse() -> None:
    with pytest.raises(ValueError, match="outside"):
        of.format_line(OffsetEntry("g", "t", 0, -1))
    with pytest.raises(ValueError):
        of.format_line(OffsetEntry("g/h", "t", 0, 1))


def test_check_cluster_unknown_topic_and_partition_out_of_range() -> None:
    parsed = of.parse(
        "/consumers/g/offsets/t/0:1\n/consumers/g/offsets/gone/0:1\n/consumers/g/offsets/t/3:1\n",
        "f",
    )
    errors = of.check_cluster(parsed, {"t": 3})
    assert errors == [
        LineError("f", 2, "topic 'gone' does not exist"),
        LineError("f", 3, "partition 3 of topic 't' does not exist (it has 3: 0..2)"),
    ]
    assert of.check_cluster(parsed, {"t": 4, "gone": 1}) == []


def test_beyond_log_end_is_a_warning_with_the_line() -> None:
    parsed = of.parse("/consumers/g/offsets/t/0:10\n/consumers/g/offsets/t/1:11\n", "f")
    warnings = of.beyond_log_end(parsed, {("t", 0): 10, ("t", 1): 10})
    assert [(w.line, w.reason.split(":")[0]) for w in warnings] == [(2, "warning")]


def test_select_is_the_export_group_filter() -> None:
    items = [OffsetEntry("b", "t", 0, 1), OffsetEntry("a", "t", 1, 1), OffsetEntry("a", "t", 0, 2)]
    assert of.select(items, ["a"]) == [OffsetEntry("a", "t", 0, 2), OffsetEntry("a", "t", 1, 1)]
    assert of.select(items, None) == sorted(items)
    assert of.select(items, []) == sorted(items)
    assert of.select(items, ["zzz"]) == []


@given(st.integers(0, 100), st.integers(0, 50), st.integers(0, 50))
def test_clamp_lands_in_range_and_says_why(offset: int, a: int, b: int) -> None:
    earliest, latest = min(a, b), max(a, b)
    value, why = of.clamp(offset, earliest, latest)
    assert earliest <= value <= latest
    assert (why == "") == (value == offset)
