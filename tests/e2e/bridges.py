"""Several real ``zk-bridge run`` processes of one chroot: an active bridge and standbys,
or (``shares_of``) several active bridges sharing the shares with ``[scale] mode = "shares"``.

Short ZooKeeper sessions (``SESSION_S``) so that a standby takes over within seconds of
the active bridge's death, as the fault tests need; with shares, a short session in the
bridges' Kafka group too (``SHARE_SESSION_S``), after which a dead bridge's shares move.
"""

from __future__ import annotations

import json
import time
import uuid

from bridge.decide.shares import epoch_path, share_of_group
from tests.conftest import wait_for

SESSION_S = 4.0  # the bridges' ZooKeeper session timeout
SHARE_SESSION_S = 6.0  # with shares: their session in the bridges' Kafka group
BRIDGE_ENV = {
    "ZK_BRIDGE__ZOOKEEPER__SESSION_TIMEOUT_S": str(SESSION_S),
    "ZK_BRIDGE__ZOOKEEPER__CONNECTION_TIMEOUT_S": "30",
}
ROOT = "/kafka-zk-bridge"
SHARES = 50  # the devstack's offsets.topic.num.partitions
#: the log lines that start and end a bridge's hold on the epoch it is judged by
CLAIM = {"single": "claimed bridge epoch", "shares": "claimed shares"}
LET_GO = {"single": "stepping down", "shares": "released shares"}


class Bridges:
    """Several ``zk-bridge run`` processes of one chroot, named b1, b2, ... in start order.

    ``shares_of``: run them with ``[scale] mode = "shares"``; "the active bridge" is then
    the holder of that group's share, and its epoch the share's (``<root>/shares/<n>``)."""

    def __init__(self, start_bridge, zk, shares_of: str | None = None) -> None:
        self._start, self.zk = start_bridge, zk
        self.procs: dict[str, object] = {}
        self.takeovers: list[float] = []
        self.mode = "single" if shares_of is None else "shares"
        self.env = dict(BRIDGE_ENV)
        self.epoch_path = f"{ROOT}/epoch"
        self.session_s = SESSION_S
        if shares_of is not None:
            self.env |= {
                "ZK_BRIDGE__SCALE__MODE": "shares",
                "ZK_BRIDGE__SCALE__GROUP_ID": f"zkb-{uuid.uuid4().hex[:8]}",
                "ZK_BRIDGE__SCALE__SESSION_TIMEOUT_MS": str(int(SHARE_SESSION_S * 1000)),
            }
            self.epoch_path = epoch_path(ROOT, share_of_group(shares_of, SHARES))
            self.session_s = SHARE_SESSION_S

    def add(self) -> None:
        name = f"b{len(self.procs) + 1}"
        self.procs[name] = self._start(env={**self.env, "ZK_BRIDGE__BRIDGE__ID": name})

    def epoch(self) -> tuple[int, str]:
        if not self.zk.exists(self.epoch_path):
            return 0, ""
        raw = self.zk.get(self.epoch_path)[0]
        body = json.loads(raw)
        return int(body["epoch"]), str(body.get("holder", ""))

    def active(self) -> str:
        """The bridge leading now (with shares: holding the share): the holder of the
        current epoch, alive and not let go of it since its claim (waits for one)."""

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
            leads = text.rfind(CLAIM[self.mode]) > text.rfind(LET_GO[self.mode])
            return name if leads else None

        return wait_for(holder, 60, 0.05, "a live bridge leads")

    def let_go(self, text: str) -> bool:
        """Whether a bridge's log (from some point on) says it stopped writing as the
        active one: stepped down, or with shares released its shares."""
        return LET_GO[self.mode] in text

    def wait_takeover(self, before: int, t0: float) -> float:
        """Until a bridge other than the deposed one bumps the epoch; records the time."""
        wait_for(lambda: self.epoch()[0] > before, self.session_s + 30, 0.02, "takeover")
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
