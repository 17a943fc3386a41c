"""The exception hierarchy, and what its messages tell an operator."""

from __future__ import annotations

import pytest

import zkpaths
from zkpaths import (
    CodecError,
    LegacyFormatError,
    NoCommonProtocolError,
    UnknownVersionError,
    ZkLayoutError,
    ZkPathError,
)
from zkpaths.errors import excerpt


def test_one_hierarchy() -> None:
    for error in (CodecError, UnknownVersionError, ZkPathError, LegacyFormatError):
        assert issubclass(error, ZkLayoutError)
    assert issubclass(UnknownVersionError, CodecError)
    assert issubclass(NoCommonProtocolError, ZkLayoutError)


def test_codec_error_is_not_a_value_error() -> None:
    # Callers handle "bad id in a path" (ValueError from int()) and "bad node data"
    # (CodecError) in separate except clauses; the two must not overlap.
    assert not issubclass(CodecError, ValueError)


def test_codec_error_carries_what_where_why_and_an_excerpt() -> None:
    err = CodecError(
        "topic assignment", "missing 'partitions'", path="/brokers/topics/t", data=b"{}"
    )
    assert (err.what, err.reason, err.path, err.excerpt) == (
        "topic assignment",
        "missing 'partitions'",
        "/brokers/topics/t",
        "'{}'",
    )
    assert str(err) == "bad topic assignment at /brokers/topics/t: missing 'partitions'; data: '{}'"
    assert str(CodecError("offset", "empty")) == "bad offset: empty"


def test_excerpt_is_bounded_and_printable() -> None:
    assert excerpt(b"\xff\x00ok") == "'\\\\xff\\x00ok'"
    long = excerpt(b"x" * 10_000)
    assert long.endswith("... (10000 bytes)")
    assert len(long) < 100


def test_unknown_version_error() -> None:
    err = UnknownVersionError("broker registration", 9, (1, 2), path="/brokers/ids/1", data=b"{}")
    assert err.version == 9 and err.known == (1, 2)
    assert "unknown version 9 (known: 1, 2)" in str(err)


def test_zk_path_error() -> None:
    err = ZkPathError("/brokers/ids/x", "broker id 'x' is not a number")
    assert err.path == "/brokers/ids/x"
    assert str(err) == "invalid ZooKeeper path '/brokers/ids/x': broker id 'x' is not a number"


def test_legacy_format_error_truncates() -> None:
    err = LegacyFormatError("thread id", "y" * 500, "does not end in -<n>")
    assert len(str(err)) < 200


def test_public_api_is_complete() -> None:
    for name in zkpaths.__all__:
        assert hasattr(zkpaths, name), name
    with pytest.raises(AttributeError):
        zkpaths.does_not_exist  # noqa: B018
