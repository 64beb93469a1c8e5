"""`kops --help` and `kops --version` stay fast because they import no command: cron and CI call kops often, and
the commands' own imports (kafka-python, pydantic, yaml, kazoo, the executor, rich) take a second or more.
Checked by what Python reports importing (`-X importtime`), not by the clock."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kops.cli.main import COMMANDS

HEAVY = ("kafka", "pydantic", "yaml", "kazoo", "rich", "jinja2", "kops.executor", "kops.planner", "kops.cluster")


def imported(*args: str, python: tuple[str, ...] = ("-m", "kops.cli.main")) -> set[str]:
    """The modules a fresh Python loads for `kops ARGS` (or for other `python` arguments, such as `-c CODE`)."""
    done = subprocess.run([sys.executable, "-X", "importtime", *python, *args], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line.split("|")[-1] for line in done.stderr.splitlines() if line.startswith("import time:")]
    return {line.strip() for line in lines[1:]}  # the first line is the header


@pytest.mark.parametrize("args", [["--help"], ["--version"], []], ids=["--help", "--version", "no arguments"])
def test_help_and_version_import_no_command(args: list[str]) -> None:
    modules = imported(*args)
    assert "typer" in modules  # the report is read right
    heavy = sorted(m for m in modules if any(m == h or m.startswith(f"{h}.") for h in HEAVY))
    assert heavy == []
    assert sorted(m for m in modules if m.startswith("kops.cli.") and m != "kops.cli.main") == []


def test_a_command_s_own_help_loads_that_command_only() -> None:
    """(importlib.import_module, which loads a command, is not reported itself; what that command imports is.)"""
    modules = imported("validate", "--help")
    assert "kops.declare.loader" in modules  # validate's own
    assert not [m for m in modules if m.startswith(("kops.executor", "kops.rehearsal", "kops.lab", "kafka"))]


def test_kafka_python_loads_only_for_the_admin_api() -> None:
    """A command through ZooKeeper, or offline, never loads kafka-python nor the TLS stores' cryptography (a fifth
    of a command's start): the Admin-API adapter is imported where `-b` opens it (kops/cli/connection.py). Every
    toolkit command's module imported in one process (the lab's, `lab` and `rehearse`, start real Kafka's client)."""
    commands = sorted({c.target.split(":")[0] for name, c in COMMANDS.items() if name not in ("lab", "rehearse")})
    modules = imported(python=("-c", "import " + ", ".join(commands)))
    assert {"kops.cli.apply", "kops.cli.plan", "kops.cli.sizes", "kops.executor.executor"} <= modules
    transport = [m for m in modules
                 if m.split(".")[0] in ("kafka", "cryptography") or m.startswith("kops.cluster.admin")]
    assert transport == []
