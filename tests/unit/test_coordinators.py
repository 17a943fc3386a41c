"""Which answers make the bridge look a group's coordinator up again."""

from kafka.errors import (
    CoordinatorLoadInProgressError,
    GroupAuthorizationFailedError,
    NodeNotReadyError,
    NotCoordinatorError,
)

from bridge.kafka.coordinators import moved


def test_a_moved_or_restarting_coordinator_is_looked_up_again():
    assert moved(NotCoordinatorError())
    assert moved(CoordinatorLoadInProgressError())
    assert moved(NodeNotReadyError(2))
    # kafka-python's describe answers carry the error as a string
    assert moved(str(NotCoordinatorError("")))


def test_other_errors_keep_the_coordinator():
    assert not moved(GroupAuthorizationFailedError())
    assert not moved("")
