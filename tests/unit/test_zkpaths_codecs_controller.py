"""/controller, /controller_epoch and /cluster/id."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkpaths import (
    CodecError,
    ControllerRegistration,
    UnknownVersionError,
    decode_cluster_id,
    decode_controller,
    decode_controller_epoch,
    encode_cluster_id,
    encode_controller,
    encode_controller_epoch,
)


def test_controller_v1_golden_vector() -> None:
    data = b'{"version":1,"brokerid":0,"timestamp":"1500000000000"}'
    reg = decode_controller(data)
    assert reg == ControllerRegistration(0, 1500000000000)
    assert reg.version == 1
    assert encode_controller(reg) == data


def test_controller_v2_golden_vector() -> None:
    # what a 3.4+ ZooKeeper-mode controller writes (-1: not a KRaft controller)
    data = b'{"version":2,"brokerid":1,"timestamp":"1700000000000","kraftControllerEpoch":-1}'
    reg = decode_controller(data)
    assert reg == ControllerRegistration(1, 1700000000000, -1)
    assert reg.version == 2
    assert encode_controller(reg) == data
    kraft = decode_controller(data.replace(b"-1}", b"7}"))
    assert kraft.kraft_controller_epoch == 7


def test_controller_v2_without_epoch_and_numeric_timestamp() -> None:
    reg = decode_controller(b'{"version":2,"brokerid":3,"timestamp":17}')
    assert reg == ControllerRegistration(3, 17, None)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b'{"version":3,"brokerid":0,"timestamp":"1"}', "unknown version 3"),
        (b'{"version":1,"timestamp":"1"}', "missing 'brokerid'"),
        (b'{"version":1,"brokerid":"0","timestamp":"1"}', "brokerid must be an integer"),
        (b'{"version":1,"brokerid":-3,"timestamp":"1"}', "brokerid -3 is outside"),
        (b'{"version":1,"brokerid":0}', "missing 'timestamp'"),
        (b'{"version":2,"brokerid":0,"timestamp":"1","kraftControllerEpoch":"x"}', "kraft"),
        (b"0", "expected a JSON object"),
    ],
)
def test_controller_rejects(data: bytes, needle: str) -> None:
    with pytest.raises(CodecError, match="controller registration at /controller") as info:
        decode_controller(data)
    assert needle in str(info.value)


@settings(max_examples=200)
@given(
    st.builds(
        ControllerRegistration,
        st.integers(0, 2**31 - 1),
        st.integers(0, 2**63 - 1),
        st.none() | st.integers(-1, 2**31 - 1),
    )
)
def test_controller_round_trip(reg: ControllerRegistration) -> None:
    assert decode_controller(encode_controller(reg)) == reg


def test_controller_encoder_rejects() -> None:
    with pytest.raises(ValueError, match="broker_id"):
        encode_controller(ControllerRegistration(-1, 0))
    with pytest.raises(ValueError, match="kraft_controller_epoch"):
        encode_controller(ControllerRegistration(1, 0, -2))


def test_controller_epoch() -> None:
    assert encode_controller_epoch(7) == b"7"
    assert decode_controller_epoch(b"7") == 7
    assert decode_controller_epoch(b"0") == 0
    for bad in (b"", b"-1", b"7\n", b" 7", b"x", b"2147483648", b"1" * 100):
        with pytest.raises(CodecError, match="controller epoch at /controller_epoch"):
            decode_controller_epoch(bad)
    with pytest.raises(ValueError):
        encode_controller_epoch(-1)


@settings(max_examples=200)
@given(st.integers(0, 2**31 - 1))
def test_controller_epoch_round_trip(epoch: int) -> None:
    assert decode_controller_epoch(encode_controller_epoch(epoch)) == epoch


def test_cluster_id_golden_vector() -> None:
    data = b'{"version":"1","id":"Jgz7bZvzTRO7hYzLjJdyrg"}'
    assert encode_cluster_id("Jgz7bZvzTRO7hYzLjJdyrg") == data
    assert decode_cluster_id(data) == "Jgz7bZvzTRO7hYzLjJdyrg"


def test_cluster_id_tolerates_numeric_version() -> None:
    assert decode_cluster_id(b'{"version":1,"id":"abc"}') == "abc"


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b'{"version":"2","id":"abc"}', UnknownVersionError),
        (b'{"version":true,"id":"abc"}', UnknownVersionError),
        (b'{"version":1.0,"id":"abc"}', UnknownVersionError),
        (b'{"id":"abc"}', CodecError),
        (b'{"version":"1"}', CodecError),
        (b'{"version":"1","id":5}', CodecError),
        (b'{"version":"1","id":""}', CodecError),
    ],
)
def test_cluster_id_rejects(data: bytes, error: type[Exception]) -> None:
    with pytest.raises(error, match="cluster id at /cluster/id"):
        decode_cluster_id(data)


@settings(max_examples=200)
@given(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40))
def test_cluster_id_round_trip(cluster_id: str) -> None:
    assert decode_cluster_id(encode_cluster_id(cluster_id)) == cluster_id
