"""Invariant I5 at the codec level: whatever the bytes, a decoder returns or raises CodecError."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zkpaths
from zkpaths import CodecError

DECODERS: dict[str, Callable[[bytes], object]] = {
    "broker": lambda data: zkpaths.decode_broker(1, data),
    "topic": zkpaths.decode_topic,
    "partition_state": zkpaths.decode_partition_state,
    "controller": zkpaths.decode_controller,
    "controller_epoch": zkpaths.decode_controller_epoch,
    "cluster_id": zkpaths.decode_cluster_id,
    "consumer_registration": zkpaths.decode_consumer_registration,
    "owner": zkpaths.decode_owner,
    "offset": zkpaths.decode_offset,
}

# A valid document per JSON decoder, to be mutated field by field.
VALID: dict[str, dict[str, Any]] = {
    "broker": {
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "endpoints": ["PLAINTEXT://h:9092"],
        "jmx_port": -1,
        "host": "h",
        "timestamp": "1500000000000",
        "port": 9092,
        "version": 4,
        "rack": "r",
        "features": {"f": {"min_version": 1, "max_version": 2}},
    },
    "topic": {
        "version": 3,
        "partitions": {"0": [1, 2]},
        "adding_replicas": {"0": [2]},
        "removing_replicas": {},
        "topic_id": "ooEOTJNkQzq_OfLeXvvHEQ",
    },
    "partition_state": {
        "controller_epoch": 4,
        "leader": 1,
        "version": 1,
        "leader_epoch": 1,
        "isr": [1, 0],
        "leader_recovery_state": 1,
    },
    "controller": {"version": 2, "brokerid": 0, "timestamp": "1", "kraftControllerEpoch": 3},
    "cluster_id": {"version": "1", "id": "abc"},
    "consumer_registration": {
        "version": 1,
        "subscription": {"t": 1},
        "pattern": "static",
        "timestamp": "1",
    },
}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)

FUZZ = settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])


def _only_codec_errors(decode: Callable[[bytes], object], data: bytes) -> None:
    try:
        decode(data)
    except CodecError as exc:
        assert len(str(exc)) < 1000
    # anything else propagates and fails the test


@pytest.mark.parametrize("name", sorted(DECODERS))
@FUZZ
@given(data=st.binary(max_size=200))
def test_arbitrary_bytes(name: str, data: bytes) -> None:
    _only_codec_errors(DECODERS[name], data)


@pytest.mark.parametrize("name", sorted(DECODERS))
@FUZZ
@given(value=json_values)
def test_arbitrary_json(name: str, value: object) -> None:
    _only_codec_errors(DECODERS[name], json.dumps(value).encode())


@pytest.mark.parametrize("name", sorted(VALID))
@FUZZ
@given(st.data())
def test_valid_documents_with_one_field_replaced(name: str, data: st.DataObject) -> None:
    doc = dict(VALID[name])
    key = data.draw(st.sampled_from(sorted(doc)))
    if data.draw(st.booleans()):
        del doc[key]
    else:
        doc[key] = data.draw(json_values)
    _only_codec_errors(DECODERS[name], json.dumps(doc).encode())


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_documents_decode(name: str) -> None:
    DECODERS[name](json.dumps(VALID[name]).encode())


@pytest.mark.parametrize(
    "data",
    [
        b"[" * 100_000,  # deeper than Python's recursion limit
        b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
        b'{"version":' + b"9" * 5000 + b"}",  # beyond int()'s digit limit
        b'{"version":1e999}',
        b'{"version":-Infinity}',
        b'{"id":"\\ud800","version":"1"}',  # lone surrogate escape
        b"\xef\xbb\xbf{}",  # UTF-8 BOM
        b"\x00" * 10,
        b'{"version":4}' + b" " * (2 * 1024 * 1024),  # over the size limit
    ],
)
@pytest.mark.parametrize("name", sorted(DECODERS))
def test_nasty_inputs(name: str, data: bytes) -> None:
    if name in VALID:  # the JSON decoders must refuse all of these
        with pytest.raises(CodecError):
            DECODERS[name](data)
    else:
        _only_codec_errors(DECODERS[name], data)


@pytest.mark.parametrize("name", sorted(DECODERS))
def test_non_bytes_input(name: str) -> None:
    with pytest.raises(CodecError, match="expected bytes"):
        DECODERS[name]("a string")  # type: ignore[arg-type]
    if name in {"owner", "offset", "controller_epoch"}:
        DECODERS[name](bytearray(b"1"))  # any bytes-like object will do
