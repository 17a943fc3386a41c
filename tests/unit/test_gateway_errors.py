"""Error codes as old clients know them (``bridge.gateway.errors``)."""

from __future__ import annotations

import pytest

from bridge.gateway import errors

PRODUCE, FETCH, METADATA = 0, 1, 3


@pytest.mark.parametrize(
    ("code", "api", "version", "expected"),
    [
        (0, FETCH, 0, 0),
        (errors.OFFSET_OUT_OF_RANGE, FETCH, 0, errors.OFFSET_OUT_OF_RANGE),
        (errors.NOT_LEADER_FOR_PARTITION, PRODUCE, 0, errors.NOT_LEADER_FOR_PARTITION),
        (20, PRODUCE, 0, 20),  # NOT_ENOUGH_REPLICAS_AFTER_APPEND: 0.8.2 knows it
        # leadership errors newer than the client: retried as NOT_LEADER by every old client
        (errors.FENCED_LEADER_EPOCH, FETCH, 0, errors.NOT_LEADER_FOR_PARTITION),
        (errors.UNKNOWN_LEADER_EPOCH, FETCH, 3, errors.NOT_LEADER_FOR_PARTITION),
        (errors.KAFKA_STORAGE_ERROR, PRODUCE, 2, errors.NOT_LEADER_FOR_PARTITION),
        (errors.OFFSET_NOT_AVAILABLE, FETCH, 2, errors.NOT_LEADER_FOR_PARTITION),
        # record errors: CORRUPT_MESSAGE
        (errors.UNSUPPORTED_COMPRESSION_TYPE, FETCH, 3, errors.CORRUPT_MESSAGE),
        (errors.INVALID_RECORD, PRODUCE, 2, errors.CORRUPT_MESSAGE),
        # by generation: TOPIC_AUTHORIZATION_FAILED (29) came with 0.9
        (29, FETCH, 0, errors.UNKNOWN),
        (29, FETCH, 1, 29),
        (35, METADATA, 1, 35),  # UNSUPPORTED_VERSION: 0.10.0
        (35, METADATA, 0, errors.UNKNOWN),
        (43, FETCH, 3, 43),
        (44, FETCH, 3, errors.UNKNOWN),
        (errors.UNKNOWN, FETCH, 0, errors.UNKNOWN),
    ],
)
def test_codes_for_the_asking_clients_generation(code, api, version, expected):
    assert errors.for_client(code, api, version) == expected


def test_every_answer_is_known_to_0_8_2():
    for code in range(-1, 120):
        assert -1 <= errors.for_client(code, FETCH, 0) <= errors.GENERATION_MAX["0.8.2"]
