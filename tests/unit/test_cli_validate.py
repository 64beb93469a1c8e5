"""`kops validate` from the command line, and every example in the repository validating cleanly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kops.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOKS = sorted((ROOT / "playbooks").glob("*.yml"))
INVENTORIES = sorted([*(ROOT / "inventories").glob("*.yml"),
                      *[p for p in (ROOT / "inventories").iterdir() if p.is_dir()]])


@pytest.mark.parametrize("inventory", INVENTORIES, ids=lambda p: p.name)
@pytest.mark.parametrize("playbook", PLAYBOOKS, ids=lambda p: p.name)
def test_every_example_validates(playbook: Path, inventory: Path, capsys) -> None:
    assert main(["validate", str(playbook), "-i", str(inventory)]) == 0, capsys.readouterr().err


def test_examples_exist() -> None:
    assert len(PLAYBOOKS) >= 3 and len(INVENTORIES) >= 2


def test_invalid_playbook_exit_1_with_every_problem(tmp_path: Path, capsys) -> None:
    pb = tmp_path / "pb.yml"
    pb.write_text("- hosts: all\n  topics:\n    - {name: 'x y'}\n    - {name: ok, partitions: zero}\n")
    assert main(["validate", str(pb), "-z", "127.0.0.1:2181"]) == 1
    captured = capsys.readouterr()
    assert f"{pb}:3:14: error: illegal character" in captured.err
    assert f"{pb}:4:30: error: partitions must be an integer" in captured.err
    assert "invalid: 2 error(s)" in captured.out


def test_json_for_ci_annotations(tmp_path: Path, capsys) -> None:
    pb = tmp_path / "pb.yml"
    pb.write_text("- hosts: all\n  topics:\n    - {name: t, config: {retention.ms: x}}\n")
    assert main(["validate", str(pb), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["valid"] is False and doc["errors"] == 1
    [problem] = doc["problems"]
    assert problem["file"] == str(pb) and problem["line"] == 3 and problem["severity"] == "error"
    assert "retention.ms must be an integer" in problem["message"]


def test_random_bytes_exit_1_no_traceback(tmp_path: Path, capsys) -> None:
    pb = tmp_path / "noise.yml"
    pb.write_bytes(bytes(range(256)) * 3)
    assert main(["validate", str(pb)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "noise.yml:1:1: error:" in err


def test_valid_with_limit_and_extra_vars(capsys) -> None:
    args = ["validate", str(ROOT / "playbooks/platform.yml"), "-i", str(ROOT / "inventories/example"),
            "-l", "staging", "-e", "default_partitions=9"]
    assert main(args) == 0
    assert "valid: " in capsys.readouterr().out
    assert main([*args, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert list(doc["clusters"]) == ["staging"] and doc["valid"]


def test_missing_inventory_is_one_clear_line(tmp_path: Path, capsys) -> None:
    pb = tmp_path / "pb.yml"
    pb.write_text("- hosts: all\n  topics: []\n")
    assert main(["validate", str(pb), "-i", str(tmp_path / "nope")]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"error: {tmp_path / 'nope'}: no such inventory file or folder (pass an Ansible YAML inventory with "
                   f"-i, or a cluster with -z)")
