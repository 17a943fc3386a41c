"""The docs build without warnings, and the parts that describe code cannot drift from it:
the example config holds every key with its default, the metrics table every metric."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.config import Settings, load
from bridge.metrics import METRICS

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_mkdocs_build_strict_has_no_warnings(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is in the test extra: pip install -e '.[test]'")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(ROOT / "mkdocs.yml"),
            "--site-dir",
            str(tmp_path / "site"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    log = out.stdout + out.stderr
    assert out.returncode == 0, log
    assert "WARNING" not in log, log
    for page in ("index", "concepts", "quickstart", "operations", "compatibility"):
        assert (tmp_path / "site" / ("" if page == "index" else page) / "index.html").exists()


def test_nav_lists_every_page():
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in (
        "index.md",
        "concepts.md",
        "quickstart.md",
        "operations.md",
        "security.md",
        "compatibility.md",
        "gateway.md",
        "troubleshooting.md",
        "coexistence.md",
        "migration.md",
        "benchmarks.md",
        "audit.md",
    ):
        assert re.search(rf":\s*{re.escape(page)}\s*$", nav, re.M), f"{page} missing from nav"
        assert (DOCS / page).exists(), page


# ---- docs/config.toml ----------------------------------------------------------------------


def _sections(text: str) -> dict[str, str]:
    """The body of each ``[section]`` of a TOML file, comments included."""
    parts = re.split(r"^\[([a-z_]+)\]\s*$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_example_config_validates_and_holds_the_defaults():
    settings = load(DOCS / "config.toml", environ={})
    assert settings.model_dump() == Settings().model_dump()


def test_example_config_mentions_every_key_of_every_section():
    sections = _sections((DOCS / "config.toml").read_text())
    assert set(sections) == set(Settings.model_fields), "sections differ from the model"
    for name, info in Settings.model_fields.items():
        body = sections[name]
        for key in info.annotation.model_fields:
            assert re.search(rf"^#?\s*{key}\s*=", body, re.M), f"[{name}] {key} not in config.toml"


def test_example_config_leaves_only_unset_keys_commented():
    """A commented-out key must be one without a default, else the file would not show it."""
    sections = _sections((DOCS / "config.toml").read_text())
    for name, info in Settings.model_fields.items():
        defaults = info.annotation().model_dump()
        for key in re.findall(r"^#\s*([a-z_]+)\s*=", sections[name], re.M):
            assert defaults[key] is None, f"[{name}] {key} has a default; write it uncommented"


# ---- docs/operations.md --------------------------------------------------------------------


def _documented_metrics() -> set[str]:
    text = (DOCS / "operations.md").read_text()
    table = text.split("### Metrics reference", 1)[1]
    return set(re.findall(r"^\| `(zkbridge_[a-z0-9_]+)` \|", table, re.M))


def _exposed_metrics() -> set[str]:
    names = set()
    for family in METRICS.registry.collect():
        names.add(family.name + "_total" if family.type == "counter" else family.name)
    return names


def test_every_metric_is_in_the_reference_table():
    missing = _exposed_metrics() - _documented_metrics()
    assert not missing, f"add to docs/operations.md: {sorted(missing)}"


def test_the_reference_table_lists_no_metric_that_does_not_exist():
    stale = _documented_metrics() - _exposed_metrics()
    assert not stale, f"not registered in bridge/metrics.py: {sorted(stale)}"


def test_config_check_sample_in_operations_is_real_output(tmp_path):
    """The sample error in operations.md is what `config check` prints for that input."""
    text = (DOCS / "operations.md").read_text()
    block = text.split("$ zk-bridge config check bridge.toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "bridge.toml").write_text(
        '[zookeeper]\nconect = "a:1"\n[kafka]\nsecurity_protocol = "PLAIN"\n'
        "[registry]\npoll_interval_s = 0\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "bridge.cli", "config", "check", "bridge.toml"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"ZK_BRIDGE__METRICS__ADDRESS": "localhost", "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert out.returncode == 2
    assert out.stderr.strip() == block.strip()


def test_operations_points_at_the_packaging():
    text = (DOCS / "operations.md").read_text()
    assert "packaging/kafka-zk-bridge.service" in text
    assert (ROOT / "packaging" / "kafka-zk-bridge.service").exists()
