"""The example CI workflow (docs/examples/kops-review.yml) runs: its validate, plan and guard steps' scripts are
executed with bash as GitHub would, against golden declarations and snapshots, offline."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "docs" / "examples" / "kops-review.yml"
GOLDEN = ROOT / "tests" / "golden"


def steps() -> dict[str, str]:
    doc = yaml.safe_load(WORKFLOW.read_text())
    return {s["id"]: s["run"] for s in doc["jobs"]["review"]["steps"] if "id" in s}


def run_step(name: str, repo: Path, approved: bool, **extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, **extra, PLAYBOOK="playbooks/platform.yml", INVENTORY="inventories/example",
               CLUSTER="golden",
               SNAPSHOT="snapshots/golden.json", SIZES="sizes/golden", APPROVED="true" if approved else "false",
               GITHUB_OUTPUT=str(repo / "github-output"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(["bash", "-e", "-c", steps()[name]], cwd=repo, env=env, capture_output=True, text=True)


def repository(tmp_path: Path, scenario: str) -> Path:
    """A declarations repository as the workflow expects it, from a golden scenario."""
    source = GOLDEN / scenario
    (tmp_path / "playbooks").mkdir()
    (tmp_path / "inventories" / "example").mkdir(parents=True)
    (tmp_path / "snapshots").mkdir()
    shutil.copy(source / "playbook.yml", tmp_path / "playbooks" / "platform.yml")
    shutil.copy(source / "inventory.yml", tmp_path / "inventories" / "example" / "hosts.yml")
    shutil.copy(source / "snapshot.json", tmp_path / "snapshots" / "golden.json")
    if (source / "sizes.json").exists():
        (tmp_path / "sizes").mkdir()
        shutil.copy(source / "sizes.json", tmp_path / "sizes" / "golden")
    return tmp_path


def test_workflow_steps_read_only_environment_variables() -> None:
    for script in steps().values():
        assert "${{" not in script  # expressions live in env:, so the scripts run anywhere


def test_the_rehearsal_fetches_its_zookeeper_first_and_the_install_names_no_made_up_tag() -> None:
    """A fresh runner has no ZooKeeper (it comes with Maven, `kops lab install`), and a pinned tag that does not
    exist would fail the install: the example says REF, for the reader to replace."""
    doc = yaml.safe_load(WORKFLOW.read_text())
    runs = [s.get("run", "") for s in doc["jobs"]["review"]["steps"]]
    fetch = next(i for i, run in enumerate(runs) if run.startswith("kops lab install --engine kops"))
    rehearse = next(i for i, run in enumerate(runs) if "kops rehearse" in run)
    assert fetch < rehearse
    install = next(s for s in doc["jobs"]["review"]["steps"] if s.get("name") == "Install kops")
    assert install["env"]["KOPS_REF"] == "REF" and "git+https://" in install["run"]


def test_a_destructive_plan_fails_the_review_unless_approved(tmp_path: Path) -> None:
    repo = repository(tmp_path, "destructive-guard")
    assert run_step("validate", repo, False).returncode == 0
    planned = run_step("plan", repo, False)
    assert planned.returncode == 0, planned.stderr
    markdown = (repo / "plan.md").read_text()
    assert markdown.startswith("### kops plan for `golden`") and "Destructive changes" in markdown
    assert "changes=true" in (repo / "github-output").read_text()
    guarded = run_step("guard", repo, False)
    assert guarded.returncode == 1
    assert "::error title=destructive change on golden::delete topic legacy (2 partitions)" in guarded.stdout
    assert run_step("guard", repo, True).returncode == 0


@pytest.mark.parametrize("scenario", ["create", "decommission"])
def test_an_ordinary_change_passes_with_its_plan_posted(tmp_path: Path, scenario: str) -> None:
    repo = repository(tmp_path, scenario)
    assert run_step("plan", repo, False).returncode == 0
    assert "<details>" in (repo / "plan.md").read_text()
    assert run_step("guard", repo, False).returncode == 0


def test_an_invalid_playbook_fails_validation_with_its_location(tmp_path: Path) -> None:
    repo = repository(tmp_path, "create")
    (repo / "playbooks" / "platform.yml").write_text("- hosts: all\n  topics:\n    - {name: 'bad name!', partitions: "
                                                     "1}\n")
    result = run_step("validate", repo, False)
    assert result.returncode == 1 and "playbooks/platform.yml:3:" in result.stdout + result.stderr


@pytest.mark.lab
def test_a_plan_with_changes_is_rehearsed_and_its_report_posted(tmp_path: Path) -> None:
    """The rehearse step on the golden rf-up (8 brokers, one batch, a kops-engine clone started for real): the
    workflow's step is under test, so the plan is the quickest to rehearse."""
    repo = repository(tmp_path, "rf-up")
    assert run_step("plan", repo, False).returncode == 0
    assert "changes=true" in (repo / "github-output").read_text()
    rehearsed = run_step("rehearse", repo, False, REHEARSAL_SCALE="60")
    assert rehearsed.returncode == 0, rehearsed.stderr[-2000:]
    report = (repo / "rehearsal.md").read_text()
    assert report.startswith("### kops rehearsal of the plan for `golden`") and "```mermaid\ngantt" in report
    assert re.search(r"^verdict=(0|2)$", (repo / "github-output").read_text(), re.M)
