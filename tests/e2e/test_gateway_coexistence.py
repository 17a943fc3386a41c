"""A mixed group on Kafka 4.x: old Scala consumers fetching through the legacy gateway and
kafka-python consumers in one group, invariant I1 kept over the coexistence test's twelve
membership changes (old and new members started, stopped and killed).

The 3.9 test (``tests/e2e/test_coexistence.py``) is collected again here with ``stack``
overridden by a Kafka 4.x stack and ``start_bridge`` starting every bridge with its gateway
on and advertised, so the old consumers reach the cluster only through it (without it they
get nothing from 4.x: ``test_gateway.py``'s negative control). Set ``KZB_STACK4_DIR`` to
reuse a 4.x stack that is already up.
"""

from __future__ import annotations

import pytest

from tests.conftest import BridgeProcess
from tests.e2e.test_coexistence import (  # noqa: F401 - collected again, through the gateway
    test_old_and_new_consumers_share_a_group_without_double_ownership,
)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(stack4):
    """This module on the session's Kafka 4.x stack (conftest's ``stack4``)."""
    return stack4


@pytest.fixture
def start_bridge(stack, chroot, tmp_path):
    """conftest's ``start_bridge``, each bridge with ``--gateway-listen`` on a free port and
    ``registry.advertise = "gateway"``."""
    started: list[BridgeProcess] = []

    def start(*extra: str, env: dict | None = None) -> BridgeProcess:
        b = BridgeProcess(
            stack.zk_connect + chroot,
            stack.bootstrap_servers,
            tmp_path / f"bridge-{len(started)}.log",
            "--gateway-listen",
            "127.0.0.1:0",
            *extra,
            env={"ZK_BRIDGE__REGISTRY__ADVERTISE": "gateway", **(env or {})},
        )
        started.append(b)
        return b

    yield start
    for b in started:
        b.stop()
