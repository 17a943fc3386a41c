"""The decoder fuzzing harness (``bench/fuzz.py``, issue 7) at a small size, and regression
tests for what it found.

The full run is ``python -m bench.fuzz --inputs 1000000`` (``docs/benchmarks.md``); here each
engine runs a few thousand inputs so the wiring - every decoder reached, counts, failure
reports with the input as hex, the exit code - is tested on every change.
"""

from __future__ import annotations

import json
import random

import pytest

import zkpaths
from bench import fuzz, fuzz_targets
from zkpaths import CodecError, UnknownVersionError, ZkLayoutError

TARGETS = fuzz.build_targets()
DEFAULT = [n for n in TARGETS if n not in fuzz.DEFAULT_EXCLUDED]

needs_atheris = pytest.mark.skipif(
    not fuzz.atheris_available(), reason="atheris is in the test extra (Linux x86-64)"
)


def test_every_decoder_is_a_target():
    names = set(DEFAULT)
    assert {
        "broker",
        "topic",
        "partition_state",
        "controller",
        "controller_epoch",
        "cluster_id",
        "consumer_registration",
        "owner",
        "offset",
        "offsets_key",
        "offset_commit_value",
        "group_metadata_value",
        "subscription",
        "assignment",
        "audit_row",
        "down_convert",
        "up_convert",
        "gateway_request",
    } <= names
    exported = {n for n in zkpaths.__all__ if n.startswith("decode_")}
    covered = {
        "decode_broker",
        "decode_topic",
        "decode_partition_state",
        "decode_controller",
        "decode_controller_epoch",
        "decode_cluster_id",
        "decode_consumer_registration",
        "decode_owner",
        "decode_offset",
    }
    assert exported == covered, "a new zkpaths decoder needs a target in bench/fuzz_targets.py"


@pytest.mark.parametrize("name", DEFAULT)
def test_seeds_are_valid_encodings(name):
    """The seeds decode (the corpus starts from valid data of every version)."""
    target = TARGETS[name]
    assert target.seeds
    for seed in target.seeds:
        target.decode(seed)


@pytest.mark.parametrize("name", DEFAULT)
def test_mutator_stays_within_the_length_cap(name):
    target = TARGETS[name]
    rng = random.Random(7)
    data = target.seeds[0]
    for _ in range(300):
        data = fuzz.mutate(target, data, rng, max_len=512)
        assert isinstance(data, bytes) and len(data) <= 512


def test_mutate_engine_small_run_is_clean():
    code, stats = fuzz.fuzz(4000, engine="mutate", seed=3, quiet=True)
    assert code == 0, [s.failures for s in stats if s.failed]
    assert [s.name for s in stats] == DEFAULT
    assert sum(s.inputs for s in stats) == 4000
    for s in stats:
        assert s.inputs == s.decoded + s.rejected + s.unhandled
        assert s.inputs >= 4000 // len(DEFAULT)
        assert s.unhandled == 0 and s.bad_messages == 0
    # the mutations reach past the seeds: something decodes, something is refused
    assert sum(s.decoded for s in stats) > 0 and sum(s.rejected for s in stats) > 0


def test_hypothesis_engine_small_run_is_clean():
    only = ["consumer_registration", "group_metadata_value", "mirrored_id"]
    code, stats = fuzz.fuzz(150, engine="hypothesis", only=only, quiet=True)
    assert code == 0, [s.failures for s in stats if s.failed]
    assert [s.inputs for s in stats] == [50, 50, 50]


def test_gateway_decoders_raise_only_their_errors():
    """Arbitrary and mutated fetch responses / produce message sets, and request frames
    (issue 13): ConversionError / BadRequest only."""
    only = ["down_convert", "up_convert", "gateway_request"]
    code, stats = fuzz.fuzz(6000, engine="mutate", only=only, seed=5, quiet=True)
    assert code == 0, [s.failures for s in stats if s.failed]
    assert all(s.decoded > 0 and s.rejected > 0 for s in stats)
    code, stats = fuzz.fuzz(200, engine="hypothesis", only=only, quiet=True)
    assert code == 0, [s.failures for s in stats if s.failed]


@needs_atheris
def test_atheris_engine_small_run_is_clean():
    only = ["broker", "offset_commit_value"]
    code, stats = fuzz.fuzz(3000, engine="atheris", only=only, quiet=True)
    assert code == 0, [(s.crashed, s.failures) for s in stats if s.failed]
    assert [(s.name, s.inputs, s.engine) for s in stats] == [
        ("broker", 1500, "atheris"),
        ("offset_commit_value", 1500, "atheris"),
    ]
    assert all(s.corpus >= len(TARGETS[s.name].seeds) for s in stats)


@pytest.mark.parametrize("engine", ["mutate", pytest.param("atheris", marks=needs_atheris)])
def test_an_unhandled_exception_is_reported_with_its_input(engine):
    code, (stats,) = fuzz.fuzz(2000, engine=engine, only=["_selftest_broken"], quiet=True)
    assert code == 1
    assert stats.unhandled > 0
    failure = next(f for f in stats.failures if f["what"] == "unhandled IndexError")
    with pytest.raises(IndexError):
        TARGETS["_selftest_broken"].decode(bytes.fromhex(failure["input_hex"]))


def test_cli_prints_the_failing_input_as_hex_and_exits_1(capsys):
    code = fuzz.main(["--engine", "mutate", "--inputs", "300", "--only", "_selftest_broken"])
    out = capsys.readouterr().out
    assert code == 1
    assert "unhandled exceptions: " in out and "zero unhandled exceptions: MISSED" in out
    assert "hex): " in out and "IndexError" in out


def test_cli_clean_run_exits_0(capsys):
    code = fuzz.main(["--engine", "mutate", "--inputs", "400", "--only", "offset", "topic"])
    out = capsys.readouterr().out
    assert code == 0
    assert "zero unhandled exceptions: MET" in out
    assert "inputs/s" in out and ">= 1,000,000 inputs: NOT TESTED" in out


def test_an_over_long_error_message_is_a_failure():
    target = fuzz.Target(
        "long", lambda d: (_ for _ in ()).throw(ValueError("x" * 2000)), (ValueError,), "text", []
    )
    stats = fuzz.Stats("long")
    assert fuzz.run_one(target, b"a", stats) is None
    assert stats.bad_messages == 1 and stats.failed


def test_a_dead_atheris_worker_is_reported_with_its_artifact(tmp_path):
    (tmp_path / "log").write_text("==1== ERROR: libFuzzer: timeout after 10 seconds\n")
    (tmp_path / "timeout-0123abcd").write_bytes(b"\x00\xff")
    stats = fuzz._collect("topic", 70, tmp_path)
    assert stats.failed and "exited 70" in stats.crashed and "timeout" in stats.crashed
    assert stats.failures[0]["what"] == "libFuzzer timeout"
    assert stats.failures[0]["input_hex"] == "00ff"


# -- regressions found by the fuzzer -----------------------------------------------------------


@pytest.mark.parametrize(
    "escaped", ["~-007", "~+07e", "~ 07e", "~\u0663\u0663\u0663\u0663", ". -1", ". +1"]
)
def test_unescape_id_refuses_signed_or_spaced_hex(escaped):
    """``int(x, 16)`` takes "-7", " 7", "+7" and non-ASCII digits; "~-007" used to escape as
    OverflowError (a negative code unit), the others decoded ids escape_id never writes."""
    with pytest.raises(ZkLayoutError, match="is not an escaped id"):
        zkpaths.unescape_id(escaped)


def test_unescape_id_still_inverts_escape_id():
    for text in ("consumer-1-3f2a", "a/b c", "\u00e9\U0001f600", "~.-_", "\x00\x1f", "\uffff"):
        assert zkpaths.unescape_id(zkpaths.escape_id(text)) == text
    assert zkpaths.unescape_id("~00E9") == "\u00e9"  # upper-case hex, as int() took it


def _bounded(exc: BaseException) -> str:
    message = str(exc)
    assert len(message) < fuzz_targets.MAX_MESSAGE, message
    return message


def test_an_out_of_range_huge_integer_is_not_quoted_whole():
    data = b'{"version":1,"brokerid":1' + b"0" * 1800 + b',"timestamp":"1"}'
    with pytest.raises(CodecError) as err:
        zkpaths.decode_controller(data)
    message = _bounded(err.value)
    assert "brokerid" in message and "1801-digit" not in message  # "<N-bit number>"
    assert "bit number" in message


@pytest.mark.parametrize(
    "decode",
    [zkpaths.decode_cluster_id, zkpaths.decode_consumer_registration],
)
def test_a_huge_unknown_version_is_not_quoted_whole(decode):
    doc = {"version": [[1, "x" * 10]] * 200, "id": "c", "subscription": {}, "pattern": "static"}
    with pytest.raises(UnknownVersionError) as err:
        decode(json.dumps(doc).encode())
    message = _bounded(err.value)
    assert "unknown version [[1, " in message and "chars)" in message
    assert err.value.version == doc["version"]  # the value itself is kept


def test_a_long_endpoint_in_a_broker_registration_is_cut():
    endpoint = "PLAINTEXT://" + "h" * 3000 + "!:9092"
    doc = {"version": 4, "jmx_port": -1, "timestamp": "1", "endpoints": [endpoint]}
    with pytest.raises(CodecError) as err:
        zkpaths.decode_broker(1, json.dumps(doc).encode())
    message = _bounded(err.value)
    assert "is not LISTENER://host:port" not in message  # cut before the end...
    assert "endpoint 'PLAINTEXT://hhh" in message and "chars)" in message  # ...but named


def test_many_unknown_partitions_in_a_reassignment_are_cut():
    doc = {"version": 2, "partitions": {"0": [1]}, "adding_replicas": {}}
    doc["adding_replicas"] = {str(p): [1] for p in range(1, 600)}
    with pytest.raises(CodecError) as err:
        zkpaths.decode_topic(json.dumps(doc).encode())
    assert "adding_replicas names partitions [1, 2, 3" in _bounded(err.value)


def test_short_reasons_are_unchanged():
    with pytest.raises(UnknownVersionError, match=r"unknown version 9 \(known: 1, 2\)"):
        zkpaths.decode_controller(b'{"version":9,"brokerid":1,"timestamp":"1"}')
    with pytest.raises(CodecError, match=r"brokerid -1 is outside 0..2147483647"):
        zkpaths.decode_controller(b'{"version":1,"brokerid":-1,"timestamp":"1"}')


def test_down_convert_offsets_past_int64_are_a_conversion_error():
    """Found by atheris: a batch at base offset 2**63-1 with offset deltas > 0 made
    ``struct.pack`` of the message offset raise ``struct.error``."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    from bridge.gateway.convert import ConversionError, down_convert

    for codec in (0, 2):
        builder = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 20)
        for i in range(3):
            builder.append(i, timestamp=1, key=None, value=b"v" * 50, headers=[])
        data = bytearray(builder.build())
        data[0:8] = (2**63 - 1).to_bytes(8, "big")
        with pytest.raises(ConversionError, match="64 bits"):
            down_convert(bytes(data), magic=1, fetch_offset=0, max_bytes=1 << 20)
