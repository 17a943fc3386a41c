"""One loop per data flow: Kafka view → decision → fenced ZooKeeper batch."""

from typing import Protocol


class Flow(Protocol):
    """What the service needs of a flow."""

    name: str

    def resync(self) -> None:
        """Re-read the flow's whole ZooKeeper tree (start, drift, rejected batch)."""

    def tick(self) -> int:
        """Mirror once; return the number of znode writes made."""
