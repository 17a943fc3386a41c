"""A pykafka ``BalancedConsumer`` (ZooKeeper-balanced, pure Python) as a separate process.

It speaks the legacy harness's stdout protocol (``CONSUMER <id>``, ``READY``,
``MSG <consumer id> <topic> <partition> <offset> <wall_ms> <value>``, ``EXIT consumed=<n>``),
so tests treat it like the Scala and kafka-python consumers and can ``kill -9`` it.

It runs under pykafka's own interpreter (``bridge.devstack.pykafka_client.ensure_pykafka``: pykafka
pins kazoo 2.5.0, the bridge needs a newer one), so it imports nothing from the bridge:

    <pykafka venv>/bin/python bridge/devstack/pykafka_consumer.py \
        --zookeeper H:P/chroot --group G --topic T

Brokers are found the legacy way, through ``/brokers/ids`` in ZooKeeper (what the bridge's
registry mirror writes); offsets are committed to Kafka (OffsetCommit to the coordinator),
as pykafka always does.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--zookeeper", required=True, help="host:port[/chroot]")
    ap.add_argument("--group", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--auto-commit-interval-ms", type=int, default=500)
    ap.add_argument("--broker-version", default="0.10.2")
    # pykafka gives up (and stops consuming) after this many attempts to claim its
    # partitions (default 5, backoff i*2 s): consumers started together on a loaded
    # machine need more while the others release theirs
    ap.add_argument("--rebalance-max-retries", type=int, default=10)
    args = ap.parse_args(argv)
    # pykafka's own warnings and errors (a refused request, a failed rebalance) on stderr
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    from pykafka import KafkaClient
    from pykafka.common import OffsetType

    client = KafkaClient(zookeeper_hosts=args.zookeeper, broker_version=args.broker_version)
    topic = client.topics[args.topic]
    consumer = topic.get_balanced_consumer(
        consumer_group=args.group.encode(),
        zookeeper_hosts=args.zookeeper,
        auto_commit_enable=True,
        auto_commit_interval_ms=args.auto_commit_interval_ms,
        auto_offset_reset=OffsetType.EARLIEST,
        consumer_timeout_ms=200,
        use_rdkafka=False,
        rebalance_max_retries=args.rebalance_max_retries,
    )
    stopping = False

    def stop(*_):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    out = sys.stdout
    cid = consumer._consumer_id.decode()
    print(f"CONSUMER {cid}", flush=True)
    print("READY", flush=True)
    consumed = 0
    while not stopping:
        message = consumer.consume(block=True)  # None after consumer_timeout_ms
        if message is None:
            continue
        value = (message.value or b"").decode("utf-8", "replace").replace("\n", "\\n")
        out.write(
            f"MSG {cid} {args.topic} {message.partition_id} {message.offset} "
            f"{int(time.time() * 1000)} {value}\n"
        )
        out.flush()
        consumed += 1
    print("STOP signal", flush=True)
    consumer.commit_offsets()
    consumer.stop()  # deletes its owner nodes and its registration
    print(f"EXIT consumed={consumed}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
