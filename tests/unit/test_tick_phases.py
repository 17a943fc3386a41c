"""Timing a flow's pass by phase, and ``bench.fleet`` reading it back from ``/metrics``."""

from __future__ import annotations

from prometheus_client import generate_latest

from bench.bridge_metrics import SLOW_S, metrics_address, parse, window
from bridge.flows import phases
from bridge.metrics import Metrics


class Clock:
    """perf_counter standing still until told to move."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_each_mark_observes_the_time_since_the_mark_before(monkeypatch):
    clock, m = Clock(), Metrics()
    monkeypatch.setattr(phases.time, "perf_counter", clock)
    monkeypatch.setattr(phases, "METRICS", m)
    p = phases.TickPhases("groups")
    clock.t += 0.25
    p.mark("kafka")
    clock.t += 0.5
    p.mark("write")
    p.mark("answer")
    assert p.took == [("kafka", 0.25), ("write", 0.5), ("answer", 0.0)]
    samples = parse(generate_latest(m.registry).decode())
    key = "zkbridge_flow_phase_seconds_sum", (("flow", "groups"), ("phase", "write"))
    assert samples[key] == 0.5


def test_a_window_is_what_happened_between_two_scrapes():
    """Passes of 50, 200 and 300 ms and two collections after the first scrape: three
    passes, two of them slow, phases and pauses summed (figures worked out by hand)."""
    m = Metrics()
    ticks = m.tick_seconds.labels(flow="groups")
    ticks.observe(2.0)  # before the window: not counted
    m.phase_seconds.labels(flow="groups", phase="kafka").observe(1.0)
    m.gc_pause.observe(0.5)
    m.commit_records_taken.inc(7)  # before the window
    before = parse(generate_latest(m.registry).decode())
    m.commit_records_taken.inc(100)
    m.own_commit_records.inc(3)
    for took in (0.05, 0.2, 0.3):
        ticks.observe(took)
    m.tick_seconds.labels(flow="registry").observe(9.0)  # another flow: not counted
    m.phase_seconds.labels(flow="groups", phase="kafka").observe(0.125)
    m.phase_seconds.labels(flow="groups", phase="write").observe(0.25)
    m.gc_pause.observe(0.03)
    m.gc_pause.observe(0.07)
    w = window(before, parse(generate_latest(m.registry).decode()))
    assert (w.ticks, w.slow_ticks) == (3, 2)
    assert abs(w.tick_s - 0.55) < 1e-9
    assert w.phases == {"kafka": 0.125, "write": 0.25}
    assert (w.gc_count, round(w.gc_s, 9)) == (2, 0.1)
    assert (w.taken, w.echoes) == (100, 3)
    assert SLOW_S == 0.1  # a bucket bound of the tick histogram, or slow_ticks is wrong


def test_the_metrics_address_is_read_from_the_bridges_log(tmp_path):
    log = tmp_path / "bridge.log"
    assert metrics_address(log) is None  # not there yet
    log.write_text("2026-11-28 07:19:55,700 INFO    bridge.cli: starting\n")
    assert metrics_address(log) is None
    log.write_text(
        "2026-11-28 07:19:55,829 INFO    bridge.cli: serving /metrics, /healthz and /readyz "
        "[address=127.0.0.1:34365]\n"
    )
    assert metrics_address(log) == "127.0.0.1:34365"
