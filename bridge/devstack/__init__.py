"""The local stack: real ZooKeeper and 3-node KRaft Kafka processes, no Docker."""

from bridge.devstack.stack import Devstack, Ports, StackError

__all__ = ["Devstack", "Ports", "StackError"]
