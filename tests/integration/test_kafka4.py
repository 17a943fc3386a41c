"""The flows on Kafka 4.x: a smoke subset of the 3.9 tests, run unchanged on a 4.x stack.

Kafka 4 removed ZooKeeper mode and the request versions of clients older than 2.1
(KIP-896). Nothing the bridge itself sends is among them: the registry mirror, the group
mirror and the storage-mode steps work the same. The tests below are the 3.9 suite's own,
collected here again with ``stack`` overridden by a private Kafka 4.x stack (the newest 4.x
release on Maven Central, see ``bridge/jars/poms/kafka4``); every fixture built on ``stack``
(chroot, zk, admin, start_bridge) follows it. Set ``KZB_STACK4_DIR`` to reuse a 4.x stack
that is already up.
"""

from __future__ import annotations

import pytest

from tests.integration.test_group_mirror import (  # noqa: F401 - collected again on 4.x
    test_groups_mirror_joins_leaves_commits_and_deletion,
)
from tests.integration.test_migrate import (  # noqa: F401 - collected again on 4.x
    test_a_stopped_zookeeper_group_gets_a_mode_and_migrates,
    test_migrate_steps_and_gates,
)
from tests.integration.test_registry import (  # noqa: F401 - collected again on 4.x
    test_bridge_nodes_die_with_it_and_come_back,
    test_registry_follows_topics_and_brokers,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def stack(stack4):
    """This module on the session's Kafka 4.x stack (conftest's ``stack4``)."""
    return stack4


def test_the_stack_runs_kafka_4(stack, admin):
    """The override took: the brokers answer as Kafka 4 (no ZooKeeper mode to fall back on)."""
    assert stack.kafka_version == "4"
    assert stack.kafka_release().startswith("4.")
    versions = admin._client.get_broker_version()  # kafka-python probes the brokers
    assert versions >= (4, 0), versions
