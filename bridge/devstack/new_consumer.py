"""A kafka-python consumer as a separate process, speaking the legacy harness's stdout
protocol (``MSG <member> <topic> <partition> <offset> <wall_ms> <value>``), so tests treat
old and new consumers alike and can ``kill -9`` either.

    python -m bridge.devstack.new_consumer --bootstrap-server H:P --group G --topic T
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

from kafka import KafkaConsumer

from bridge.devstack.lost_join import rejoin_if_join_lost
from bridge.kafka.range_assignor import KafkaRangeAssignor


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap-server", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--topic", action="append", required=True)
    ap.add_argument("--client-id", default="new-consumer")
    ap.add_argument("--auto-commit-interval-ms", type=int, default=500)
    ap.add_argument("--session-timeout-ms", type=int, default=6000)
    args = ap.parse_args(argv)

    consumer = KafkaConsumer(
        *args.topic,
        bootstrap_servers=args.bootstrap_server.split(","),
        group_id=args.group,
        client_id=args.client_id,
        auto_offset_reset="earliest",
        enable_auto_commit=True,
        auto_commit_interval_ms=args.auto_commit_interval_ms,
        session_timeout_ms=args.session_timeout_ms,
        heartbeat_interval_ms=max(500, args.session_timeout_ms // 6),
        # kafka-python's own range assignor drops members in a group with proxies
        partition_assignment_strategy=(KafkaRangeAssignor,),
    )
    stopping = False

    def stop(*_):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    out = sys.stdout
    print("READY", flush=True)
    consumed = 0
    while not stopping:
        batches = consumer.poll(200)
        rejoin_if_join_lost(consumer)
        member = consumer._coordinator._generation.member_id or "?"
        for tp, records in batches.items():
            for r in records:
                value = (r.value or b"").decode("utf-8", "replace").replace("\n", "\\n")
                out.write(
                    f"MSG {member} {tp.topic} {tp.partition} {r.offset} "
                    f"{int(time.time() * 1000)} {value}\n"
                )
                consumed += 1
        out.flush()
    print("STOP signal", flush=True)
    consumer.close()  # commits and leaves the group
    print(f"EXIT consumed={consumed}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
