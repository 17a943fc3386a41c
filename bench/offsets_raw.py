"""bench.offsets' raw ZooKeeper ceiling: the bridge's batch size of ``set_data`` ops sent
back to back, from a process of its own, as the yardstick for the mirror's throughput."""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor

from kazoo.client import KazooClient

from bridge.zookeeper.txn import Multi
from bridge.zookeeper.writer import MAX_BATCH_OPS

now = time.perf_counter


def raw_ceiling(zk: KazooClient, root: str, n: int, seconds: float) -> tuple[float, int]:
    """Back-to-back transactions of ``MAX_BATCH_OPS`` set_data ops over ``n`` nodes: ops/s."""
    paths = [f"{root}/{i}" for i in range(n)]
    batches = [paths[i : i + MAX_BATCH_OPS] for i in range(0, n, MAX_BATCH_OPS)]
    zk.ensure_path(root)
    for b in batches:
        txn = zk.transaction()
        for p in b:
            txn.create(p, b"0")
        txn.commit()
    ops, value = 0, 0
    t0 = now()
    warm = True  # the first half second warms the JIT of a freshly started server
    while now() - t0 < seconds or ops == 0:
        if warm and now() - t0 > min(0.5, seconds / 4):
            warm, ops, t0 = False, 0, now()
        value += 1
        data = str(value).encode()
        for b in batches:
            txn = Multi(zk)  # built and sent as the bridge's own (like with like)
            for p in b:
                txn.set_data(p, data)
            results = txn.commit()
            if any(isinstance(r, Exception) for r in results):
                raise SystemExit(f"raw ceiling: a transaction failed: {results[:3]}")
            ops += len(b)
    elapsed = now() - t0
    for b in batches:
        txn = zk.transaction()
        for p in b:
            txn.delete(p)
        txn.commit()
    zk.delete(root)
    return ops / elapsed, len(batches[0])


def raw_ceiling_at(connect: str, root: str, n: int, seconds: float) -> tuple[float, int]:
    zk = KazooClient(connect)
    zk.start()
    try:
        return raw_ceiling(zk, root, n, seconds)
    finally:
        zk.stop()
        zk.close()


class RawWriter:
    """A separate process for the raw ceiling, so it never shares a GIL with the load."""

    def __init__(self) -> None:
        self.pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        self.pool.submit(time.sleep, 0).result(60)  # pay for the start-up now

    def ceiling(self, connect: str, root: str, n: int, seconds: float) -> tuple[float, int]:
        return self.pool.submit(raw_ceiling_at, connect, root, n, seconds).result(120 + seconds)

    def close(self) -> None:
        self.pool.shutdown()
