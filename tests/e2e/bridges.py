"""Several real ``zk-bridge run`` processes of one chroot: an active bridge and standbys.

Short ZooKeeper sessions (``SESSION_S``) so that a standby takes over within seconds of
the active bridge's death, as the fault tests need.
"""

from __future__ import annotations

import json
import time

from tests.conftest import wait_for

SESSION_S = 4.0  # the bridges' ZooKeeper session timeout
BRIDGE_ENV = {
    "ZK_BRIDGE__ZOOKEEPER__SESSION_TIMEOUT_S": str(SESSION_S),
    "ZK_BRIDGE__ZOOKEEPER__CONNECTION_TIMEOUT_S": "30",
}


class Bridges:
    """Several ``zk-bridge run`` processes of one chroot, named b1, b2, ... in start order."""

    def __init__(self, start_bridge, zk) -> None:
        self._start, self.zk = start_bridge, zk
        self.procs: dict[str, object] = {}
        self.takeovers: list[float] = []

    def add(self) -> None:
        name = f"b{len(self.procs) + 1}"
        self.procs[name] = self._start(env={**BRIDGE_ENV, "ZK_BRIDGE__BRIDGE__ID": name})

    def epoch(self) -> tuple[int, str]:
        raw = self.zk.get("/kafka-zk-bridge/epoch")[0]
        body = json.loads(raw)
        return int(body["epoch"]), str(body.get("holder", ""))

    def active(self) -> str:
        """The bridge leading now: the holder of the current epoch, alive and not stepped
        down since its claim (waits for one)."""

        def holder() -> str | None:
            try:
                _, name = self.epoch()
            except Exception:  # noqa: BLE001 - ZooKeeper may be coming back
                return None
            p = self.procs.get(name)
            if p is None or p.proc.poll() is not None:
                return None
            # the epoch node names the last bridge to claim it; one that stepped down since
            # (a ZooKeeper outage) stays named until the next leader claims: not the active
            # one (CI: a SIGSTOP fault right after a ZooKeeper one paused the deposed b1)
            text = p.text()
            leads = text.rfind("claimed bridge epoch") > text.rfind("stepping down")
            return name if leads else None

        return wait_for(holder, 60, 0.05, "a live bridge leads")

    def wait_takeover(self, before: int, t0: float) -> float:
        """Until a bridge other than the deposed one bumps the epoch; records the time."""
        wait_for(lambda: self.epoch()[0] > before, SESSION_S + 30, 0.02, "standby takeover")
        took = time.monotonic() - t0
        self.takeovers.append(took)
        return took

    def kill_active(self, wait: bool = True) -> tuple[str, float | None]:
        """``kill -9`` the active bridge and start a fresh standby in its place; with
        ``wait``, also wait for the takeover. The killed bridge's name and the takeover time."""
        name = self.active()
        before, t0 = self.epoch()[0], time.monotonic()
        self.procs[name].proc.kill()
        self.add()  # keep the number of standbys
        return name, (self.wait_takeover(before, t0) if wait else None)

    def logs(self) -> str:
        return "".join(p.text() for p in self.procs.values())
