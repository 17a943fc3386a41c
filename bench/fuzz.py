"""Decoder fuzzing (issue 7): every decoder of foreign bytes, zero unhandled exceptions.

    python -m bench.fuzz [--inputs 1000000] [--engine auto|atheris|mutate|hypothesis]
                         [--jobs 1] [--only NAME ...] [--seed 1] [--list]

Every decoder that reads bytes another program wrote is driven with ``--inputs`` inputs in
all, split evenly between them: the ZooKeeper node decoders of :mod:`zkpaths` (broker,
topic, partition state, controller, controller epoch, cluster id, consumer registration,
owner, offset), the names of the legacy layout (``parse_path``, thread and consumer ids,
mirrored ids, endpoints), and the ``__consumer_offsets`` decoders of :mod:`bridge.audit`
(key, offset commit and group metadata values of every version, the consumer protocol's
subscription and assignment blobs, and the audit's whole per-record decode, ``decode_row``).

Each decoder may fail only with its own documented error (:class:`zkpaths.CodecError`,
:class:`bridge.audit.wire.RecordError`, ...), whose message must be non-empty and bounded;
anything else - ``IndexError``, ``struct.error``, ``UnicodeDecodeError``, ``RecursionError``,
``MemoryError``, a hang - is an *unhandled exception*. Those are counted, the first few are
printed with the input as hex, and the run exits 1. Otherwise it exits 0.

Engines:

* ``atheris`` (the default when it is installed): libFuzzer, coverage-guided over the
  instrumented decoder modules, one subprocess per decoder (``-runs``-style budget), seeded
  with valid encodings of every version (``fuzz_seeds.py``); half of the mutations are
  libFuzzer's own, half the structure-aware mutator (``fuzz_mutate.py``). libFuzzer's
  timeout (10 s) and RSS limit catch hangs and runaway allocations, reported with the
  input that caused them.
* ``mutate`` (the fallback): the same seeds and structure-aware mutator in a plain loop,
  in-process; an input whose outcome (result type, or error reason with the numbers and
  quoted data masked) is new joins the corpus, a cheap stand-in for coverage feedback.
* ``hypothesis``: the same mutator driven by Hypothesis (seed choice, mutation seed), plus
  arbitrary binaries; slower, kept so the harness runs where only the test extra is.

The structure-aware mutator knows three shapes: JSON documents (a field replaced by a value
of the wrong type, deleted, duplicated, a huge or non-finite number, deep nesting, lone
surrogates, invalid UTF-8, another version), Kafka binary (versions -1..12 and extremes
written over the int16 prefix, huge int16/int32 lengths and over-long varints written over
a random offset, truncation, splicing with another seed), and plain text; plus libFuzzer's
style byte edits (bit flips, inserts, deletes, interesting integers).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from bench.fuzz_mutate import MAX_LEN, mutate
from bench.fuzz_targets import DEFAULT_EXCLUDED, Target, build_targets

ROOT = Path(__file__).resolve().parents[1]

#: failures kept per decoder, with their input
KEEP_FAILURES = 5
#: corpus size cap per decoder for the mutate engine
MAX_CORPUS = 2000
#: the issue's target
TARGET_INPUTS = 1_000_000


# Targets: bench/fuzz_targets.py (seeds: fuzz_seeds.py); the mutator: fuzz_mutate.py.


# -- running one input -------------------------------------------------------------------------


@dataclass
class Stats:
    """What one decoder did with its inputs; ``failures`` hold the input as hex."""

    name: str
    inputs: int = 0
    decoded: int = 0
    rejected: int = 0
    unhandled: int = 0
    bad_messages: int = 0
    seconds: float = 0.0  # in the decoder
    wall: float = 0.0  # the engine's whole loop: mutations, bookkeeping, decoder
    slowest: float = 0.0
    slowest_hex: str = ""
    failures: list[dict] = field(default_factory=list)
    corpus: int = 0
    engine: str = ""
    crashed: str = ""  # the engine itself died (timeout, out of memory...): its report

    def as_dict(self) -> dict:
        return dict(self.__dict__)

    @property
    def failed(self) -> int:
        return self.unhandled + self.bad_messages + (1 if self.crashed else 0)


def _mask(message: str) -> str:
    """An error reason without the data in it: what the mutate engine calls an outcome."""
    message = message.split("; data: ", 1)[0]
    message = re.sub(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", "Q", message)
    return re.sub(r"-?[0-9]+", "N", message)[:200]


def run_one(target: Target, data: bytes, stats: Stats) -> str | None:
    """Decode ``data``; count the outcome; return an outcome label (None for a failure)."""
    stats.inputs += 1
    start = time.perf_counter()
    try:
        result = target.decode(data)
    except target.expected as exc:
        took = time.perf_counter() - start
        stats.rejected += 1
        label = "E:" + type(exc).__name__ + ":" + _mask(str(exc))
        message = str(exc)
        if not message.strip() or (
            target.max_message is not None and len(message) > target.max_message
        ):
            stats.bad_messages += 1
            _keep(stats, data, f"{type(exc).__name__} message of {len(message)} chars", exc)
            label = None
    except Exception as exc:  # noqa: BLE001 - exactly what the fuzzer hunts
        took = time.perf_counter() - start
        stats.unhandled += 1
        _keep(stats, data, f"unhandled {type(exc).__name__}", exc)
        label = None
    else:
        took = time.perf_counter() - start
        stats.decoded += 1
        label = "OK:" + type(result).__name__
        if isinstance(result, dict):  # decode_row: what it made of the key, the value
            label += ":".join(str(result.get(k)) for k in ("key_kind", "value_kind"))
            label += _mask(str(result.get("error", "")))
    stats.seconds += took
    if took > stats.slowest:
        stats.slowest, stats.slowest_hex = took, data[:256].hex()
    return label


def _keep(stats: Stats, data: bytes, what: str, exc: BaseException) -> None:
    """Keep the input of the first failures: per kind, one per failure site, a few sites."""
    kind = what.split()[0]
    same_kind = [f for f in stats.failures if f["what"].split()[0] == kind]
    if len(same_kind) >= KEEP_FAILURES:
        return
    tb = traceback.extract_tb(exc.__traceback__)
    where = f"{tb[-1].filename}:{tb[-1].lineno}" if tb else "?"
    if any(f["where"] == where and f["what"] == what for f in same_kind):
        return
    stats.failures.append(
        {
            "what": what,
            "where": where,
            "message": str(exc)[:300],
            "input_hex": data.hex(),
            "traceback": "".join(traceback.format_exception(exc, limit=-4))[-3000:],
        }
    )


# -- engines -----------------------------------------------------------------------------------


def run_mutate(target: Target, n: int, seed: int) -> Stats:
    """The pure-Python engine: seeds first, then mutations of the corpus."""
    stats = Stats(target.name, engine="mutate")
    started = time.perf_counter()
    rng = random.Random(f"{seed}:{target.name}")
    corpus = list(target.seeds)
    seen: set[str] = set()
    for data in target.seeds[:n]:
        label = run_one(target, data, stats)
        if label:
            seen.add(label)
    while stats.inputs < n:
        parent = rng.choice(corpus)
        child = mutate(target, parent, rng)
        label = run_one(target, child, stats)
        if label and label not in seen:
            seen.add(label)
            if len(corpus) < MAX_CORPUS:
                corpus.append(child)
    stats.corpus = len(corpus)
    stats.wall = time.perf_counter() - started
    return stats


def run_hypothesis(target: Target, n: int, seed: int) -> Stats:
    """The mutator driven by Hypothesis: a seed and a mutation seed per example, or raw bytes."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    stats = Stats(target.name, engine="hypothesis")
    seeds = target.seeds

    def mutated(args: tuple[int, int]) -> bytes:
        i, s = args
        return mutate(target, seeds[i], random.Random(s))

    inputs = st.one_of(
        st.tuples(st.integers(0, len(seeds) - 1), st.integers(0, 2**32 - 1)).map(mutated),
        st.binary(max_size=300),
        st.sampled_from(seeds),
    )

    @settings(
        max_examples=n,
        database=None,
        deadline=None,
        derandomize=False,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(inputs)
    def run(data: bytes) -> None:
        if stats.inputs < n:
            run_one(target, data, stats)

    from hypothesis import seed as hseed

    started = time.perf_counter()
    hseed(seed)(run)()
    stats.corpus = len(seeds)
    stats.wall = time.perf_counter() - started
    return stats


def atheris_available() -> bool:
    try:
        import atheris  # noqa: F401
    except ImportError:
        return False
    return True


def _worker(name: str, n: int, seed: int, result: Path, workdir: Path) -> int:
    """Inside the atheris subprocess: fuzz one decoder for ``n`` inputs, write ``result``."""
    import atheris

    atheris.enabled_hooks.add("RegEx")
    atheris.enabled_hooks.add("str")
    decoders = ["zkpaths", "bridge.audit.wire", "bridge.audit.consumer_protocol"]
    decoders += ["bridge.audit.records", "bridge.audit.decode", "bridge.gateway"]
    with atheris.instrument_imports(include=decoders):
        targets = build_targets()
    target = targets[name]
    stats = Stats(name, engine="atheris")
    started = time.perf_counter()

    def finish() -> None:
        stats.corpus = sum(1 for _ in (workdir / "corpus").iterdir())
        stats.wall = time.perf_counter() - started
        result.write_text(json.dumps(stats.as_dict()))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    def test_one_input(data: bytes) -> None:
        run_one(target, data, stats)
        if stats.inputs >= n:
            finish()

    def custom_mutator(data: bytes, max_size: int, mseed: int) -> bytes:
        rng = random.Random(mseed)
        if rng.random() < 0.5:
            return atheris.Mutate(data, max_size)
        return mutate(target, data, rng, max_size)

    corpus = workdir / "corpus"
    corpus.mkdir(exist_ok=True)
    for i, s in enumerate(target.seeds):
        (corpus / f"seed-{i:03d}").write_bytes(s)
    argv = [
        sys.argv[0],
        f"-runs={max(2 * n, n + 10_000)}",
        f"-seed={seed}",
        f"-max_len={MAX_LEN}",
        "-timeout=10",
        "-rss_limit_mb=2048",
        f"-artifact_prefix={workdir}/",
        "-print_final_stats=0",
        "-detect_leaks=0",
        str(corpus),
    ]
    atheris.Setup(argv, test_one_input, custom_mutator=custom_mutator)
    atheris.Fuzz()
    finish()  # libFuzzer stopped before n inputs: report what was run
    return 0


def run_atheris(
    names: Sequence[str], per: dict[str, int], seed: int, jobs: int, quiet: bool = False
) -> list[Stats]:
    """One atheris subprocess per decoder, ``jobs`` at a time."""
    out: dict[str, Stats] = {}
    pending = list(names)
    running: list[tuple[str, subprocess.Popen, Path, IO[bytes], float]] = []
    with tempfile.TemporaryDirectory(prefix="kzb-fuzz-") as base:
        while pending or running:
            while pending and len(running) < jobs:
                name = pending.pop(0)
                work = Path(base) / name
                work.mkdir()
                log = open(work / "log", "wb")  # noqa: SIM115 - closed with the process
                cmd = [
                    sys.executable,
                    "-m",
                    "bench.fuzz",
                    "--worker",
                    name,
                    "--inputs",
                    str(per[name]),
                    "--seed",
                    str(seed),
                    "--workdir",
                    str(work),
                ]
                env = {**os.environ, "PYTHONPATH": str(ROOT)}
                proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=log, env=env)
                # libFuzzer's own -timeout catches a slow input; this, a stuck worker
                deadline = time.monotonic() + 120 + per[name] / 500
                running.append((name, proc, work, log, deadline))
            time.sleep(0.05)
            for item in list(running):
                name, proc, work, log, deadline = item
                if proc.poll() is None:
                    if time.monotonic() < deadline:
                        continue
                    proc.kill()
                    proc.wait()
                running.remove(item)
                log.close()
                out[name] = _collect(name, proc.returncode, work)
                if not quiet:
                    _progress(out[name])
    return [out[n] for n in names]


def _collect(name: str, rc: int, work: Path) -> Stats:
    result = work / "result.json"
    if rc == 0 and result.exists():
        return Stats(**json.loads(result.read_text()))
    stats = Stats(name, engine="atheris")
    log = (work / "log").read_text(errors="replace")
    stats.crashed = f"atheris worker exited {rc}:\n" + "\n".join(log.splitlines()[-30:])
    for art in sorted(work.glob("*-*")):
        if art.is_file() and art.name.split("-")[0] in ("crash", "timeout", "oom", "leak", "slow"):
            data = art.read_bytes()
            stats.failures.append(
                {
                    "what": f"libFuzzer {art.name.split('-')[0]}",
                    "where": "",
                    "message": "",
                    "input_hex": data.hex(),
                    "traceback": "",
                }
            )
    return stats


# -- reporting ---------------------------------------------------------------------------------


def _progress(s: Stats) -> None:
    rate = s.inputs / s.wall if s.wall else 0.0
    flag = "" if not s.failed else "  <-- FAILED"
    print(
        f"  {s.name:<22} {s.inputs:>9,} inputs {s.decoded:>8,} decoded {s.rejected:>9,} rejected "
        f"{s.unhandled:>3} unhandled {s.bad_messages:>3} bad msg  {rate:>7,.0f} inputs/s  "
        f"corpus {s.corpus:>4}  slowest {s.slowest * 1000:6.2f} ms{flag}",
        flush=True,
    )


def report(all_stats: list[Stats], wall: float, engine: str, jobs: int) -> int:
    total = sum(s.inputs for s in all_stats)
    unhandled = sum(s.unhandled for s in all_stats)
    bad = sum(s.bad_messages for s in all_stats)
    crashed = [s for s in all_stats if s.crashed]
    print()
    print(f"engine: {engine}, {jobs} job(s), {len(all_stats)} decoders")
    engines = sum(s.wall for s in all_stats)
    decoders = sum(s.seconds for s in all_stats)
    print(
        f"total: {total:,} inputs in {wall:.1f} s wall = {total / wall:,.0f} inputs/s "
        f"(fuzzing loops alone {total / max(1e-9, engines):,.0f} inputs/s, "
        f"decoders alone {total / max(1e-9, decoders):,.0f} inputs/s)"
    )
    slow = max(all_stats, key=lambda s: s.slowest, default=None)
    if slow is not None:
        print(f"slowest input: {slow.slowest * 1000:.1f} ms ({slow.name})")
    print(
        f"decoded {sum(s.decoded for s in all_stats):,}, rejected with the decoder's own error "
        f"{sum(s.rejected for s in all_stats):,}"
    )
    print(f"unhandled exceptions: {unhandled}; over-long or empty error messages: {bad}")
    if crashed:
        print(f"engine crashes (timeouts, out of memory, uncaught): {len(crashed)}")
    for s in all_stats:
        if s.crashed:
            print(f"\n== {s.name}: {s.crashed}")
        for f in s.failures:
            print(f"\n== {s.name}: {f['what']} at {f['where']}: {f['message']}")
            print(f"input ({len(f['input_hex']) // 2} bytes, hex): {f['input_hex']}")
            if f["traceback"]:
                print(f["traceback"].rstrip())
    failed = unhandled + bad + len(crashed)
    verdict = "MET" if not failed else "MISSED"
    print(f"\nzero unhandled exceptions: {verdict}")
    if total >= TARGET_INPUTS:
        print(f">= {TARGET_INPUTS:,} inputs: MET ({total:,})")
    else:
        print(f">= {TARGET_INPUTS:,} inputs: NOT TESTED (this run: {total:,}; use --inputs)")
    return 1 if failed else 0


def fuzz(
    inputs: int,
    engine: str = "auto",
    only: Sequence[str] | None = None,
    seed: int = 1,
    jobs: int = 1,
    quiet: bool = False,
) -> tuple[int, list[Stats]]:
    """Run the harness; returns the exit code and the per-decoder stats."""
    if engine == "auto":
        engine = "atheris" if atheris_available() else "mutate"
    targets = build_targets()
    names = list(only) if only else [n for n in targets if n not in DEFAULT_EXCLUDED]
    unknown = [n for n in names if n not in targets]
    if unknown:
        raise SystemExit(f"unknown decoder(s) {unknown}; --list shows them")
    per = {
        n: inputs // len(names) + (1 if i < inputs % len(names) else 0) for i, n in enumerate(names)
    }
    started = time.perf_counter()
    if not quiet:
        print(f"fuzzing {len(names)} decoders with {inputs:,} inputs ({engine})", flush=True)
    if engine == "atheris":
        all_stats = run_atheris(names, per, seed, jobs, quiet)
    else:
        run = run_mutate if engine == "mutate" else run_hypothesis
        all_stats = []
        for n in names:
            s = run(targets[n], per[n], seed)
            all_stats.append(s)
            if not quiet:
                _progress(s)
    wall = time.perf_counter() - started
    label = {
        "atheris": "atheris (libFuzzer, coverage-guided, with the structure-aware mutator)",
        "mutate": "mutate (pure Python, structure-aware mutator, outcome-guided corpus)",
        "hypothesis": "hypothesis (structure-aware mutator and arbitrary bytes)",
    }[engine]
    if quiet:
        failed = sum(s.failed for s in all_stats)
        return (1 if failed else 0), all_stats
    return report(all_stats, wall, label, jobs), all_stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inputs", type=int, default=TARGET_INPUTS, help="inputs in all, split evenly")
    ap.add_argument("--engine", choices=("auto", "atheris", "mutate", "hypothesis"), default="auto")
    ap.add_argument("--jobs", type=int, default=1, help="atheris workers at a time")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="these decoders only")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--list", action="store_true", help="list the decoders and exit")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return _worker(
            args.worker, args.inputs, args.seed, args.workdir / "result.json", args.workdir
        )
    if args.list:
        for name, t in build_targets().items():
            errors = ", ".join(e.__name__ for e in t.expected) or "nothing"
            note = " (harness self-test, not run by default)" if name in DEFAULT_EXCLUDED else ""
            print(f"{name:<22} {t.shape:<7} raises only {errors}; {len(t.seeds)} seeds{note}")
        return 0
    code, _ = fuzz(args.inputs, args.engine, args.only, args.seed, max(1, args.jobs))
    return code


if __name__ == "__main__":
    sys.exit(main())
