"""Who reads which ``/brokers/ids`` JSON: the registry's encodings (v2 and v4) parsed by each
old Scala consumer release's own ``kafka.cluster.Broker.createBroker``, the parser its
``ZkUtils`` calls, through ``harness/BrokerJsonReader.java`` (one JVM per release).

The independent reference for ``registry.broker_json_version``: 0.9.0.0 throws on v4 ("Only
versions 1 and 2 are supported") and reads v2; every other release reads both, to the same
PLAINTEXT endpoint. (Kafka 3.9's own reader, what current tools use, reads v1-v5:
``test_zkpaths_codecs_golden``.) Needs the jars and javac (``scripts/setup.sh``).
"""

from __future__ import annotations

import subprocess

import pytest

from bridge.devstack.legacy import HARNESS, SCALA_CONSUMERS, harness_classpath
from bridge.devstack.stack import _java
from zkpaths import BrokerRegistration, encode_broker

pytestmark = pytest.mark.integration

READER = HARNESS.with_name("BrokerJsonReader.java")

#: what each release makes of v2 and v4 (None: it reads the endpoint; else its error)
EXPECTED = {
    "0.8.2.2": {2: None, 4: None},
    "0.9.0.0": {2: None, 4: "Only versions 1 and 2 are supported"},
    "0.9.0.1": {2: None, 4: None},
    "0.10.2.2": {2: None, 4: None},
    "0.11.0.3": {2: None, 4: None},
}


def read_with(release: str, lines: list[str]) -> list[str]:
    cp = harness_classpath(READER, SCALA_CONSUMERS[release])
    run = subprocess.run(
        [_java(), "-Xmx64m", "-cp", cp, "BrokerJsonReader"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout.splitlines()


@pytest.mark.parametrize("release", list(SCALA_CONSUMERS))
def test_each_release_parses_what_the_registry_writes(release: str) -> None:
    reg = BrokerRegistration.from_endpoints(
        7, ["PLAINTEXT://legacy.example:9092"], timestamp_ms=1_700_000_000_000
    )
    versions = (2, 4)
    got = read_with(release, [f"7 {encode_broker(reg, version=v).decode()}" for v in versions])
    assert len(got) == len(versions), got
    for version, line in zip(versions, got, strict=True):
        error = EXPECTED[release][version]
        if error is None:
            assert line == "OK 7 legacy.example:9092", (release, version, line)
        else:
            assert line.startswith("FAIL 7 ") and error in line, (release, version, line)


def test_the_reader_fails_on_what_no_release_reads() -> None:
    """Negative control of the harness itself: a broken registration is a FAIL line, so an
    OK above is the release's parser answering, not the harness passing things through."""
    got = read_with("0.10.2.2", ['7 {"version":4,"endpoints":["nonsense"]}', "7 {"])
    assert [line.split(" ", 2)[:2] for line in got] == [["FAIL", "7"], ["FAIL", "7"]], got
