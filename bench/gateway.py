"""The legacy gateway against Kafka 3.9's own down-conversion, same client, same run.

    python -m bench.gateway [--mb 1024] [--codecs none lz4] [--consumers 50] [--with-4x]

Issue 13's benchmark. One Kafka 3.9 stack; per codec one topic filled by kafka-python with
1 KB messages (v2 record batches). The real 0.10.2.2 Scala consumer (ZooKeeper mode, Fetch
v3, so magic 1) reads the whole topic twice, each time in a new group:

- **direct**: its ZooKeeper chroot is kept by a bridge advertising the brokers themselves, so
  the 3.9 brokers down-convert (magic 2 -> 1) as they did for every old client until 4.0;
- **gateway**: its chroot is kept by a bridge advertising its legacy gateway, which fetches
  v2 batches (a Fetch version Kafka 4 still accepts) and down-converts itself.

The clock runs from the first to the last message the consumer took (its own wall clock, so
JVM start and the first rebalance are left out). CPU seconds per GB are the server side's:
the three brokers' (and, through the gateway, the bridge process's) user+system time over the
window, from /proc. The produce path likewise with the real 0.10.2.2 producer (magic 1 message
sets up-converted by the brokers, or by the gateway). Then ``--consumers`` old consumers, each
in a group of its own, read through the gateway at once and the bridge's peak RSS is taken.
With ``--with-4x`` the gateway figure on a private Kafka 4.x stack is printed beside.

Targets (issue 13): gateway throughput >= 50 % of 3.9's own down-conversion (consume and
produce); bridge RSS < 300 MB with 50 old consumers connected.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from kafka import KafkaAdminClient, KafkaProducer
from kazoo.client import KazooClient

from bench import bridge_command, create_topic
from bridge.devstack.legacy import LegacyConsumerProcess
from bridge.devstack.legacy_producer import produce_legacy

PARTITIONS = 6
TICKS = os.sysconf("SC_CLK_TCK")
TARGET_RATIO = 0.5
TARGET_RSS_MB = 300


def cpu_seconds(pids: list[int]) -> float:
    """User+system CPU time of ``pids`` (all their threads) so far."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / TICKS


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def payload(rng: random.Random, size: int) -> bytes:
    """About half-compressible text, so lz4 has something to do (as log lines would)."""
    words = [rng.choice(WORDS) for _ in range(size // 6 + 1)]
    return " ".join(words).encode()[:size]


WORDS = [f"w{n:x}{'abcdefgh'[n % 8] * (n % 5)}" for n in range(4096)]


def fill(bootstrap: str, topic: str, codec: str, count: int, size: int) -> None:
    codec_arg = None if codec == "none" else codec
    p = KafkaProducer(
        bootstrap_servers=bootstrap.split(","),
        compression_type=codec_arg,
        linger_ms=20,
        batch_size=256 * 1024,
        max_request_size=8 * 1024 * 1024,
        acks=1,
    )
    rng = random.Random(topic)
    values = [payload(rng, size) for _ in range(256)]
    for i in range(count):
        p.send(topic, key=str(i).encode(), value=values[i % 256], partition=i % PARTITIONS)
    p.flush(300)
    p.close()


@dataclass
class Bridge:
    proc: subprocess.Popen
    log: Path
    chroot: str

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def start_bridge(zookeeper: str, bootstrap: str, gateway: bool, workdir: Path) -> Bridge:
    """A bridge keeping only the registry of a fresh chroot (the group flows are off, so its
    CPU is the gateway's and the registry's)."""
    chroot = f"/bench-gw-{uuid.uuid4().hex[:8]}"
    boot = KazooClient(zookeeper)
    boot.start()
    boot.ensure_path(chroot)
    boot.stop()
    env = {
        **os.environ,
        "ZK_BRIDGE__GROUPS__ENABLED": "false",
        "ZK_BRIDGE__COEXISTENCE__ENABLED": "false",
    }
    extra: list[str] = []
    if gateway:
        env["ZK_BRIDGE__REGISTRY__ADVERTISE"] = "gateway"
        extra = ["--gateway-listen", "127.0.0.1:0"]
    log = workdir / f"bridge{'-gateway' if gateway else ''}.log"
    proc = subprocess.Popen(
        bridge_command(zookeeper + chroot, bootstrap, *extra),
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        env=env,
    )
    return Bridge(proc, log, chroot)


def advertised(zookeeper: str, bridge: Bridge, timeout: float = 60) -> list[tuple[str, int]]:
    """The endpoints ``/brokers/ids`` shows (waits for the registry's first write)."""
    zk = KazooClient(zookeeper + bridge.chroot)
    zk.start()
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if bridge.proc.poll() is not None:
                raise SystemExit(f"bridge exited; see {bridge.log}")
            ids = zk.get_children("/brokers/ids") if zk.exists("/brokers/ids") else []
            if len(ids) >= 3:
                regs = [json.loads(zk.get(f"/brokers/ids/{i}")[0]) for i in ids]
                return [(r["host"], r["port"]) for r in regs]
            time.sleep(0.2)
    finally:
        zk.stop()
        zk.close()
    raise SystemExit(f"bridge registered no brokers in {timeout}s; see {bridge.log}")


@dataclass
class Run:
    messages: int
    bytes: int
    seconds: float
    server_cpu: float

    @property
    def msgs_per_s(self) -> float:
        return self.messages / self.seconds

    @property
    def mb_per_s(self) -> float:
        return self.bytes / self.seconds / 1e6

    @property
    def cpu_per_gb(self) -> float:
        return self.server_cpu / (self.bytes / 1e9)


def consume(zk_connect: str, topic: str, count: int, server_pids: list[int], log: Path) -> Run:
    """One old consumer, a group of its own, reading ``count`` messages from the start."""
    c = LegacyConsumerProcess(
        zk_connect,
        f"bench-{uuid.uuid4().hex[:8]}",
        [topic],
        streams=PARTITIONS,
        extra=[
            "--quiet",
            "true",
            "--max-messages",
            str(count),
            "--commit-on-exit",
            "false",
            "--auto-offset-reset",
            "smallest",
        ],
        log=log,
    )
    c.wait_ready(120)
    cpu0 = cpu_seconds(server_pids)
    if not c.exited.wait(1800):
        c.stop()
        raise SystemExit(f"old consumer did not finish; last lines {c.lines[-5:]}")
    cpu1 = cpu_seconds(server_pids)
    c.stop()
    stats = next((ln for ln in c.lines if ln.startswith("STATS ")), None)
    done = next((ln for ln in c.lines if ln.startswith("EXIT ")), "")
    if stats is None or f"consumed={count}" not in done:
        raise SystemExit(f"old consumer stopped short: {c.lines[-5:]} (log {log})")
    f = dict(kv.split("=") for kv in stats.split()[1:])
    seconds = max(1, int(f["last_ms"]) - int(f["first_ms"])) / 1000
    return Run(count, int(f["bytes"]), seconds, cpu1 - cpu0)


def produce(
    bootstrap: str, topic: str, codec: str, count: int, size: int, pids: list[int], log: Path
) -> Run:
    """The 0.10.2.2 producer sends ``count`` messages of ``size`` bytes (magic 1 message sets,
    acks=1, batched as an application tuned for throughput would)."""
    cpu0 = cpu_seconds(pids)
    run = produce_legacy(
        bootstrap,
        topic,
        count,
        compression=codec,
        acks="1",
        value_bytes=size,
        quiet=True,
        props={
            "linger.ms": "20",
            "batch.size": str(256 * 1024),
            "max.in.flight.requests.per.connection": "5",
            "buffer.memory": str(64 << 20),
        },
        log=log,
        timeout=1800,
    )
    cpu1 = cpu_seconds(pids)
    stats = next((ln for ln in run.lines if ln.startswith("STATS ")), None)
    if run.returncode != 0 or stats is None:
        raise SystemExit(f"old producer failed: {run.errors[:3]} {run.lines[-3:]} (log {log})")
    f = dict(kv.split("=") for kv in stats.split()[1:])
    seconds = max(1, int(f["end_ms"]) - int(f["start_ms"])) / 1000
    return Run(count, int(f["bytes"]), seconds, cpu1 - cpu0)


def row(name: str, r: Run) -> str:
    return (
        f"  {name:<22} {r.msgs_per_s:>10,.0f} msg/s {r.mb_per_s:>8.1f} MB/s "
        f"{r.cpu_per_gb:>7.1f} CPU s/GB  ({r.messages:,} msgs in {r.seconds:.1f} s)"
    )


def report(what: str, codec: str, d: Run, g: Run, g4: Run | None) -> bool:
    """One line: the gateway's throughput as a share of the brokers' own; True when MET."""
    ratio = g.mb_per_s / d.mb_per_s
    met = ratio >= TARGET_RATIO
    line = (
        f"{what} {codec:<5} gateway {g.mb_per_s:7.1f} MB/s vs direct {d.mb_per_s:7.1f} MB/s "
        f"= {ratio:5.0%} (target >= {TARGET_RATIO:.0%}): {verdict(met)}; server CPU "
        f"{g.cpu_per_gb:.1f} vs {d.cpu_per_gb:.1f} s/GB"
    )
    if g4 is not None:
        line += f"; gateway on 4.x {g4.mb_per_s:.1f} MB/s"
    print(line)
    return met


def verdict(ok: bool) -> str:
    return "MET" if ok else "MISSED"


def broker_pids(stack) -> list[int]:
    return [stack.state.pids[n] for n in ("kafka-1", "kafka-2", "kafka-3")]


def peak_rss(zk_connect: str, topic: str, n: int, bridge: Bridge, workdir: Path) -> float:
    """``n`` old consumers, each a group of its own, all fetching through the gateway."""
    consumers = []
    peak = rss_mb(bridge.proc.pid)
    try:
        for i in range(n):
            consumers.append(
                LegacyConsumerProcess(
                    zk_connect,
                    f"bench-rss-{i}-{uuid.uuid4().hex[:6]}",
                    [topic],
                    streams=1,
                    extra=[
                        "--quiet",
                        "true",
                        "--commit-on-exit",
                        "false",
                        "--auto-offset-reset",
                        "smallest",
                    ],
                    log=workdir / f"rss-{i}.log",
                )
            )
        for c in consumers:
            c.wait_ready(300)
            peak = max(peak, rss_mb(bridge.proc.pid))
        deadline = time.monotonic() + 20  # all connected and fetching
        while time.monotonic() < deadline:
            peak = max(peak, rss_mb(bridge.proc.pid))
            time.sleep(0.2)
    finally:
        for c in consumers:
            c.stop()
    return peak


def _measure_codec(
    stack,
    args,
    admin: KafkaAdminClient,
    bridges: dict[str, Bridge],
    codec: str,
    label: str,
    workdir: Path,
) -> dict[str, Run]:
    """One codec: a topic filled once, then per path (gateway, direct) the old producer into
    a topic of its own and the old consumer reading the filled one."""
    count = args.mb * 1024 * 1024 // args.message_bytes
    results: dict[str, Run] = {}
    topic = f"bench-gw-{codec}-{uuid.uuid4().hex[:6]}"
    create_topic(admin, topic, PARTITIONS)
    t0 = time.monotonic()
    fill(stack.bootstrap_servers, topic, codec, count, args.message_bytes)
    print(
        f"{label}: {topic}: {count:,} x {args.message_bytes} B written in "
        f"{time.monotonic() - t0:.1f} s",
        flush=True,
    )
    for path, b in bridges.items():
        pids = broker_pids(stack) + ([b.proc.pid] if path == "gateway" else [])
        boot = ",".join(f"{h}:{p}" for h, p in advertised(stack.zk_connect, b)[:1])
        target = f"{topic}-p{path}"
        create_topic(admin, target, PARTITIONS)
        r = produce(
            boot,
            target,
            codec,
            count,
            args.message_bytes,
            pids,
            workdir / f"producer-{label}-{codec}-{path}.log",
        )
        results[f"produce/{codec}/{path}"] = r
        print(row(f"{label} produce {codec} {path}", r), flush=True)
        r = consume(
            stack.zk_connect + b.chroot,
            topic,
            count,
            pids,
            workdir / f"consumer-{label}-{codec}-{path}.log",
        )
        results[f"{codec}/{path}"] = r
        print(row(f"{label} {codec} {path}", r), flush=True)
    return results


def measure_stack(stack, args, workdir: Path, label: str, direct: bool) -> dict[str, Run]:
    """Fill a topic per codec, then consume it directly (3.9 only) and through the gateway."""
    count = args.mb * 1024 * 1024 // args.message_bytes
    admin = KafkaAdminClient(bootstrap_servers=stack.bootstrap_servers.split(","))
    bridges = {"gateway": start_bridge(stack.zk_connect, stack.bootstrap_servers, True, workdir)}
    if direct:
        bridges["direct"] = start_bridge(stack.zk_connect, stack.bootstrap_servers, False, workdir)
    results: dict[str, Run] = {}
    try:
        for b in bridges.values():
            advertised(stack.zk_connect, b)
        for codec in args.codecs:
            results.update(_measure_codec(stack, args, admin, bridges, codec, label, workdir))
        if args.consumers and direct:
            topic = f"bench-gw-rss-{uuid.uuid4().hex[:6]}"
            create_topic(admin, topic, PARTITIONS)
            fill(stack.bootstrap_servers, topic, "lz4", count // 4, args.message_bytes)
            g = bridges["gateway"]
            peak = peak_rss(stack.zk_connect + g.chroot, topic, args.consumers, g, workdir)
            print(
                f"  bridge peak RSS with {args.consumers} old consumers through the gateway: "
                f"{peak:.0f} MB",
                flush=True,
            )
            results["rss"] = Run(args.consumers, int(peak * 1e6), 1.0, 0.0)
    finally:
        for b in bridges.values():
            b.stop()
        admin.close()
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--mb", type=int, default=1024, help="topic size per codec (default 1 GB)")
    ap.add_argument("--message-bytes", type=int, default=1024)
    ap.add_argument("--codecs", nargs="+", default=["none", "lz4"])
    ap.add_argument("--consumers", type=int, default=50, help="for the RSS figure (0: skip)")
    ap.add_argument("--with-4x", action="store_true", help="also the gateway on Kafka 4.x")
    args = ap.parse_args(argv)

    from bridge.devstack.stack import private_stack

    workdir = Path(tempfile.mkdtemp(prefix="bench-gateway-"))
    print(
        f"bench.gateway: {args.mb} MB per codec, {args.message_bytes} B messages, "
        f"{PARTITIONS} partitions; logs in {workdir}",
        flush=True,
    )
    stack = private_stack("kzb-bench-gw-")
    try:
        res = measure_stack(stack, args, workdir, "3.9", direct=True)
    finally:
        stack.down()
    res4: dict[str, Run] = {}
    if args.with_4x:
        stack4 = private_stack("kzb-bench-gw4-", kafka_version="4.x")
        try:
            res4 = measure_stack(stack4, args, workdir, "4.x", direct=False)
        finally:
            stack4.down()

    print("\n== bench.gateway: old 0.10.2.2 clients, gateway vs Kafka 3.9's own conversion")
    ok = True
    for what, prefix in (("consume", ""), ("produce", "produce/")):
        for codec in args.codecs:
            ok &= report(
                what,
                codec,
                res[f"{prefix}{codec}/direct"],
                res[f"{prefix}{codec}/gateway"],
                res4.get(f"{prefix}{codec}/gateway"),
            )
    if "rss" in res:
        peak = res["rss"].bytes / 1e6
        met = peak < TARGET_RSS_MB
        ok &= met or args.consumers < 50
        size = "" if args.consumers >= 50 else " (NOT TESTED at the target's 50)"
        print(
            f"bridge RSS with {args.consumers} old consumers: {peak:.0f} MB (target < "
            f"{TARGET_RSS_MB} MB with 50): {verdict(met)}{size}"
        )
    print("bench.gateway: " + ("all targets MET" if ok else "some targets MISSED"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
