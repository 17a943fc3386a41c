"""Benchmarks: printed figures against the issues' targets (docs/benchmarks.md)."""

from __future__ import annotations

from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import UnknownBrokerIdError
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed


def create_topic(admin: KafkaAdminClient, name: str, partitions: int) -> None:
    """Right after a stack starts, kafka-python's admin client may not yet know the broker it
    names as controller (UnknownBrokerIdError): retried for a while."""
    for attempt in Retrying(
        retry=retry_if_exception_type(UnknownBrokerIdError),
        stop=stop_after_delay(30),
        wait=wait_fixed(0.5),
        reraise=True,
    ):
        with attempt:
            admin.create_topics([NewTopic(name, partitions, 1)])
