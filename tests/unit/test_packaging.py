"""What an operator installs: the ``zk-bridge`` console script with ``--help`` everywhere, the
systemd unit, the compose file and the Dockerfile, each checked against the real CLI."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
#: the console script pip installed next to the interpreter running the tests (.venv/bin)
ZK_BRIDGE = Path(sys.executable).parent / "zk-bridge"
UNIT = ROOT / "packaging" / "kafka-zk-bridge.service"


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """Every command path of the argparse tree, the top level included."""
    yield path
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


def test_the_tree_has_the_documented_commands():
    paths = {" ".join(p) for p in _commands(build_parser())}
    assert {"", "run", "devstack", "config", "config check", "snapshot", "audit"} <= paths
    assert "audit dump" in paths


@pytest.mark.parametrize("path", list(_commands(build_parser())), ids=lambda p: " ".join(p) or "-")
def test_installed_script_has_help_on_every_command(path):
    assert ZK_BRIDGE.exists(), f"{ZK_BRIDGE} missing: scripts/setup.sh installs it with pip"
    out = subprocess.run(
        [str(ZK_BRIDGE), *path, "--help"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"usage: zk-bridge {' '.join(path)}".rstrip())
    assert len(out.stdout.splitlines()) > 3


def test_run_help_documents_the_metrics_address():
    out = subprocess.run([str(ZK_BRIDGE), "run", "--help"], capture_output=True, text=True)
    assert "--metrics-address HOST:PORT" in out.stdout and "127.0.0.1:9308" in out.stdout


# ---- systemd ------------------------------------------------------------------------------


def _unit_commands() -> dict[str, list[str]]:
    text = UNIT.read_text()
    return {
        key: shlex.split(value)
        for key, value in re.findall(r"^(ExecStart(?:Pre)?)=(.+)$", text, re.M)
    }


def test_unit_commands_are_real_cli_invocations():
    text = UNIT.read_text()
    for key in ("User=kafka-zk-bridge", "EnvironmentFile=", "Restart=on-failure", "--config"):
        assert key in text
    commands = _unit_commands()
    assert set(commands) == {"ExecStart", "ExecStartPre"}
    for argv in commands.values():
        assert argv[0].endswith("/bin/zk-bridge")
        build_parser().parse_args(argv[1:])  # exits (fails the test) on an unknown flag
    assert commands["ExecStartPre"][1:3] == ["config", "check"]


def test_unit_passes_systemd_analyze_verify(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (no systemd here)")
    unit = tmp_path / UNIT.name
    unit.write_text(UNIT.read_text().replace("/opt/kafka-zk-bridge/bin/zk-bridge", str(ZK_BRIDGE)))
    out = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "kafka-zk-bridge.service" not in out.stderr, out.stderr  # no warning about it


# ---- Docker -------------------------------------------------------------------------------


def test_compose_and_dockerfile_commands_parse():
    yaml = pytest.importorskip("yaml", reason="PyYAML comes with mkdocs (test extra)")
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    bridge = compose["services"]["bridge"]
    args = build_parser().parse_args(bridge["command"])
    assert args.metrics_address == "0.0.0.0:9308"
    assert "127.0.0.1:9308:9308" in bridge["ports"]
    cmd = re.search(r"^CMD (\[.*\])$", (ROOT / "Dockerfile").read_text(), re.M)
    assert cmd, "Dockerfile has no exec-form CMD"
    build_parser().parse_args(json.loads(cmd.group(1)))


def test_docker_compose_config_validates():
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no Docker CLI here; `docker compose config` runs where it is installed")
    version = subprocess.run(
        [docker, "compose", "version"], capture_output=True, text=True, timeout=60
    )
    if version.returncode != 0:
        pytest.skip(
            "the Docker CLI has no compose plugin (`docker compose version` exits "
            f"{version.returncode}); `docker compose config` runs where it is installed"
        )
    out = subprocess.run(
        [docker, "compose", "-f", str(ROOT / "docker-compose.yml"), "config", "-q"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
