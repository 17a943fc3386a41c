"""The docker-compose stack, for users with Docker: runs only where a Docker engine answers.

On machines without an engine (like CI here) it skips with the reason; the same behaviour
is covered on local processes by the rest of the suite.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import wait_for

pytestmark = [pytest.mark.docker, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]


def _docker_engine() -> str | None:
    """None when an engine answers, else why not."""
    try:
        import docker

        docker.from_env(timeout=3).ping()
        return None
    except Exception as exc:  # noqa: BLE001 - any failure means "no engine here"
        return f"no Docker engine answers ({type(exc).__name__}); local-process tests cover this"


@pytest.fixture(scope="module")
def compose():
    reason = _docker_engine()
    if reason:
        pytest.skip(reason)
    from testcontainers.compose import DockerCompose

    with DockerCompose(str(ROOT), compose_file_name="docker-compose.yml", build=True) as c:
        yield c


def test_compose_bridge_registers_the_kraft_brokers(compose):
    from kazoo.client import KazooClient

    zk = KazooClient("127.0.0.1:2181")
    zk.start(timeout=60)
    try:
        wait_for(
            lambda: zk.exists("/brokers/ids") and len(zk.get_children("/brokers/ids")) == 3,
            120,
            0.5,
            "bridge container registering 3 brokers",
        )
        reg = json.loads(zk.get("/brokers/ids/1")[0])
        assert reg["version"] == 4 and reg["port"] == 9092
    finally:
        zk.stop()
