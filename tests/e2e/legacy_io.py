"""What the legacy-client tests write with kafka-python and how they check what old clients
consumed: every message once per group, in offset order per partition, with its key, value
and (where the client sees one) timestamp."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from bridge.devstack.legacy import Consumed

#: a fixed base so a timestamp read back is told from the broker's clock
TS_BASE = 1_600_000_000_000
#: config of every topic written with TS_BASE timestamps (2020): without it the brokers' time
#: retention (7 days by the largest record timestamp, checked every 5 minutes) deletes such a
#: partition's only segment, rolling it, so its log start jumps to its end between producing
#: and consuming (seen: an old consumer reset to "smallest" was given the log end, and got
#: nothing of the partition)
KEEP_OLD_TIMESTAMPS = {"retention.ms": "-1"}


@dataclass(frozen=True)
class Sent:
    topic: str
    partition: int
    offset: int
    key: bytes
    value: bytes
    timestamp: int


def produce_python(
    bootstrap: str,
    topic: str,
    partitions: int,
    count: int,
    *,
    compression: str | None = None,
    prefix: str = "py",
) -> list[Sent]:
    """``count`` keyed messages round-robin over ``partitions``, timestamps TS_BASE + i (the
    topic needs ``KEEP_OLD_TIMESTAMPS``)."""
    producer = KafkaProducer(
        bootstrap_servers=bootstrap.split(","), compression_type=compression, linger_ms=20
    )
    futures = []
    for i in range(count):
        key, value = f"{prefix}-k{i}".encode(), f"{prefix}-v{i}".encode()
        fut = producer.send(
            topic, key=key, value=value, partition=i % partitions, timestamp_ms=TS_BASE + i
        )
        futures.append((key, value, TS_BASE + i, fut))
    producer.flush()
    producer.close()
    sent = []
    for key, value, ts, fut in futures:
        md = fut.get(timeout=30)
        sent.append(Sent(topic, md.partition, md.offset, key, value, ts))
    return sent


def produce_transactions(
    bootstrap: str, topic: str, partitions: int, per_txn: int, *, prefix: str = "txn"
) -> tuple[list[Sent], list[Sent]]:
    """Three transactions of ``per_txn`` messages: committed, aborted, committed. Returns
    (committed, aborted); the log then holds control batches and aborted records too."""
    producer = KafkaProducer(
        bootstrap_servers=bootstrap.split(","), transactional_id=f"{topic}-tx", linger_ms=20
    )
    producer.init_transactions()
    out: dict[bool, list[Sent]] = {True: [], False: []}
    i = 0
    for commit in (True, False, True):
        producer.begin_transaction()
        futures = []
        for _ in range(per_txn):
            key, value = f"{prefix}-k{i}".encode(), f"{prefix}-v{i}".encode()
            fut = producer.send(
                topic, key=key, value=value, partition=i % partitions, timestamp_ms=TS_BASE + i
            )
            futures.append((key, value, TS_BASE + i, fut))
            i += 1
        producer.flush()
        if commit:
            producer.commit_transaction()
        else:
            producer.abort_transaction()
        for key, value, ts, fut in futures:
            md = fut.get(timeout=30)
            out[commit].append(Sent(topic, md.partition, md.offset, key, value, ts))
    producer.close()
    return out[True], out[False]


def read_python(bootstrap: str, topic: str, count: int, timeout: float = 60) -> list:
    """Every record of ``topic`` from the start, until ``count`` are read (committed only)."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap.split(","),
        isolation_level="read_committed",
        enable_auto_commit=False,
    )
    parts = consumer.partitions_for_topic(topic) or set()
    consumer.assign([TopicPartition(topic, p) for p in sorted(parts)])
    consumer.seek_to_beginning()
    records: list = []
    deadline = time.monotonic() + timeout
    while len(records) < count and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            records.extend(batch)
    consumer.close()
    return records


def check_consumed(
    got: list[Consumed], expected: list[Sent], *, timestamps: str | None = "CreateTime"
) -> None:
    """``got`` holds each of ``expected`` exactly once, with its key and value, in offset order
    per partition, and nothing else; ``timestamps``: the type every message must carry with
    its own timestamp (None: the client has none, ``-1 NONE``)."""
    by_place = {(s.topic, s.partition, s.offset): s for s in expected}
    seen = Counter((m.topic, m.partition, m.offset) for m in got)
    dupes = [k for k, n in seen.items() if n > 1]
    assert not dupes, f"consumed more than once: {dupes[:10]}"
    missing = sorted(set(by_place) - set(seen))
    extra = sorted(set(seen) - set(by_place))
    assert not missing, f"{len(missing)} never consumed, e.g. {missing[:10]}"
    assert not extra, f"{len(extra)} consumed that were never committed, e.g. {extra[:10]}"
    per_partition: dict[tuple[str, int], list[int]] = defaultdict(list)
    for m in got:
        s = by_place[(m.topic, m.partition, m.offset)]
        per_partition[(m.topic, m.partition)].append(m.offset)
        assert (m.key, m.value) == (s.key, s.value.decode()), (m, s)
        if timestamps is None:
            assert (m.timestamp, m.timestamp_type) == (-1, "NONE"), m
        else:
            assert (m.timestamp, m.timestamp_type) == (s.timestamp, timestamps), (m, s)
    for tp, offsets in per_partition.items():
        assert offsets == sorted(offsets), f"{tp} consumed out of order"
