"""docs/cron.md's example files stay runnable: the systemd units pass `systemd-analyze verify` (where the machine
has systemd's tools), and the command lines of the service and of the Kubernetes CronJob parse as `kops
rebalance`'s own options, with a metrics file node_exporter reads and nothing that waits for a terminal."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml

from kops.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs/examples/cron"
SERVICE, TIMER = EXAMPLES / "kops-rebalance.service", EXAMPLES / "kops-rebalance.timer"
CRONJOB = EXAMPLES / "kops-rebalance-cronjob.yaml"


def unit_values(path: Path, key: str) -> list[str]:
    """A key's values in a unit file, continuation lines joined as systemd joins them."""
    text = path.read_text().replace("\\\n", " ")
    return [line.split("=", 1)[1].strip() for line in text.splitlines() if line.startswith(f"{key}=")]


def parsed_rebalance(args: list[str]) -> dict[str, Any]:
    """The arguments as `kops rebalance` parses them (an unknown option or a bad value raises)."""
    command = typer.main.get_command(app).commands["rebalance"]  # type: ignore[attr-defined]  # kops's group has them
    return command.make_context("rebalance", list(args)).params


def test_the_systemd_units_verify(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not on this machine (Debian: apt-get install systemd)")
    # The unit runs /opt/kops/bin/kops, which verify wants to find: here it is this checkout's.
    kops = Path(sys.executable).with_name("kops")
    for unit in (SERVICE, TIMER):
        (tmp_path / unit.name).write_text(unit.read_text().replace("/opt/kops/bin/kops", str(kops)))
    done = subprocess.run([analyze, "verify", "--man=no", *(str(tmp_path / u.name) for u in (SERVICE, TIMER))],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")  # unknown keys are warnings only: none allowed


def test_the_service_runs_kops_rebalance_with_a_metrics_file() -> None:
    (command,) = unit_values(SERVICE, "ExecStart")
    binary, verb, *args = shlex.split(command)
    assert (binary, verb) == ("/opt/kops/bin/kops", "rebalance")
    params = parsed_rebalance(args)
    assert params["apply_now"] and params["yes"]  # unattended: no prompt
    assert params["metrics_file"].suffix == ".prom"
    assert unit_values(SERVICE, "SuccessExitStatus") == ["3"] and unit_values(SERVICE, "KillSignal") == ["SIGTERM"]
    assert unit_values(TIMER, "OnCalendar")


def test_the_cronjob_runs_kops_rebalance_with_a_metrics_file_on_a_host_path() -> None:
    (job,) = list(yaml.safe_load_all(CRONJOB.read_text()))
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "CronJob")
    assert len(job["spec"]["schedule"].split()) == 5 and job["spec"]["concurrencyPolicy"] == "Forbid"
    pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    (container,) = pod["containers"]
    assert container["command"] == ["kops"] and container["args"][0] == "rebalance"
    params = parsed_rebalance(container["args"][1:])
    assert params["apply_now"] and params["yes"]
    metrics_file = params["metrics_file"]
    assert metrics_file.suffix == ".prom"
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert str(metrics_file.parent) in mounts, "the metrics file's folder is not a volume"
    assert volumes[mounts[str(metrics_file.parent)]]["hostPath"]["path"] == str(metrics_file.parent)
    assert params["inventory"].parent.as_posix() in mounts and params["sizes"].as_posix().startswith(
        next(p for p, n in mounts.items() if n == "state"))
