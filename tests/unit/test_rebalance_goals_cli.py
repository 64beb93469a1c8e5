"""`kops rebalance --goals`: one plan for a goal list, offline from a snapshot file; the JSON summary names each
goal, the text shows the goal table, a bad list or a goal without its load is one line (exit 1)."""

from __future__ import annotations

import json
from pathlib import Path

from kops.cli.main import main
from kops.model import plan_format, snapshot_format
from kops.model.sizes import PartitionSize
from kops.sizes.reader import sizes_text
from tests.builders import crowded

GOALS = "disk,network_in,replicas,leaders"


def _files(tmp_path: Path, rates: bool = True) -> tuple[Path, Path]:
    snap = crowded()
    path = tmp_path / "snap.json"
    path.write_bytes(snapshot_format.dumps(snap))
    rows = [PartitionSize(t, p, 10_000_000 * (1 + p % 5), None, float(1000 * (1 + p % 3)) if rates else None)
            for t, topic in snap.topics.items() for p in topic.partitions]
    sizes = tmp_path / "sizes.json"
    sizes.write_text(sizes_text(rows), encoding="utf-8")
    return path, sizes


def test_a_goal_list_plans_once_and_the_summary_names_each_goal(tmp_path: Path, capsys) -> None:
    snap, sizes = _files(tmp_path)
    out = tmp_path / "plan.json"
    code = main(["rebalance", "--snapshot", str(snap), "--sizes", str(sizes), "--goals", GOALS, "-o", str(out),
                 "--format", "json", "--metrics-file", str(tmp_path / "run.prom")])
    assert code == 0
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert doc["status"] == "planned" and doc["goal"] == GOALS
    assert [g["name"] for g in doc["goals"]] == GOALS.split(",")
    disk = doc["goals"][0]
    assert disk["after"] < disk["before"] and disk["after"] >= disk["lower_bound"] and disk["moves"] > 0
    assert doc["imbalance_before"] == disk["imbalance_before"] > doc["imbalance_after"] == disk["imbalance_after"]
    assert plan_format.loads(out.read_bytes(), str(out)).moves
    metrics = (tmp_path / "run.prom").read_text()
    assert 'goal="disk"' in metrics and 'goal="replicas"' in metrics


def test_the_summary_lines_goals_are_the_plans_rows_and_markdown_shows_them(tmp_path: Path, capsys) -> None:
    snap, sizes = _files(tmp_path)
    out, comment = tmp_path / "plan.json", tmp_path / "plan.md"
    assert main(["rebalance", "--snapshot", str(snap), "--sizes", str(sizes), "--goals", GOALS, "-o", str(out),
                 "--markdown", str(comment), "--format", "json"]) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["goals"]
    written = json.loads(out.read_text())["summary"]["goals"]
    assert [{k: v for k, v in row.items() if k not in ("imbalance_before", "imbalance_after")
             and (k, v) != ("skipped", None)} for row in line] == written
    assert all(row["imbalance_after"] <= row["imbalance_before"] for row in line)
    text = comment.read_text()
    disk = written[0]
    assert "#### Goals" in text and f"| disk | % of mean | {disk['before']:.2f} | {disk['after']:.2f} |" in text
    assert "Disk utilization is not charted: no disk capacity is known for any broker" in text


def test_markdown_is_for_one_cluster(tmp_path: Path, capsys) -> None:
    assert main(["rebalance", "-b", "127.0.0.1:9", "--out-dir", str(tmp_path / "plans"), "--markdown",
                 str(tmp_path / "plan.md")]) == 1
    err = capsys.readouterr().err
    assert "--markdown writes the plan of one cluster" in err and len(err.strip().splitlines()) == 1, err


def test_the_text_shows_the_goal_table(tmp_path: Path, capsys) -> None:
    snap, sizes = _files(tmp_path)
    assert main(["rebalance", "--snapshot", str(snap), "--sizes", str(sizes), "--goals", GOALS,
                 "-o", str(tmp_path / "plan.json")]) == 0
    out = capsys.readouterr().out
    assert "Goals" in out and "Lower bound" in out and "network_in" in out and "% of capacity" not in out


def test_bad_lists_and_missing_loads_are_one_line_each(tmp_path: Path, capsys) -> None:
    snap, sizes = _files(tmp_path, rates=False)
    cases = [(["--goals", "disk,cpu", "--sizes", str(sizes)], "--goals: unknown goal 'cpu'"),
             (["--goals", "disk"], "goal disk needs partition sizes"),
             (["--goals", "network_in", "--sizes", str(sizes)], "goal network_in needs write rates"),
             (["--goals", "disk", "--goal", "leaders", "--sizes", str(sizes)], "--goal and --goals together"),
             (["--goals", "disk", "--goal", "replicas", "--sizes", str(sizes)], "--goal and --goals together"),
             (["--goal", "cpu"], "--goal: unknown goal 'cpu'"),
             (["--goal", "network_out", "--sizes", str(sizes)], "goal network_out needs write rates"),
             (["--max-leader-moves", "3"], "--max-leader-moves goes with a goal list")]
    for args, message in cases:
        assert main(["rebalance", "--snapshot", str(snap), *args]) == 1, args
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err


def _inventory(tmp_path: Path, goals: str) -> Path:
    path = tmp_path / "inventory.yml"
    path.write_text(f"all:\n  hosts:\n    prod:\n      bootstrap_servers: 127.0.0.1:9\n"
                    f"      rebalance_goals: {goals}\n", encoding="utf-8")
    return path


def test_the_clusters_inventory_list_applies_without_goal_or_goals(tmp_path: Path, capsys) -> None:
    snap, sizes = _files(tmp_path)
    inventory = _inventory(tmp_path, "[disk, replicas]")
    base = ["rebalance", "-i", str(inventory), "-l", "prod", "--snapshot", str(snap), "--sizes", str(sizes),
            "-o", str(tmp_path / "plan.json"), "--format", "json"]
    assert main(base) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["goal"] == "disk,replicas"
    assert main([*base, "--goals", "leaders"]) == 0  # the command line wins
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["goal"] == "leaders"
    assert main([*base, "--goal", "bytes"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["goal"] == "bytes"
    assert main([*base, "--goal", "replicas"]) == 0  # named, even as the default's name: not the inventory's list
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["goal"] == "replicas"


def test_a_goal_other_than_the_balancers_is_a_list_of_one(tmp_path: Path, capsys) -> None:
    snap, sizes = _files(tmp_path)
    plans = {}
    for option in ("--goal", "--goals"):
        out = tmp_path / f"plan{option}.json"
        assert main(["rebalance", "--snapshot", str(snap), "--sizes", str(sizes), option, "network_in", "-o",
                     str(out), "--format", "json"]) == 0
        doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert doc["goal"] == "network_in" and [g["name"] for g in doc["goals"]] == ["network_in"]
        plans[option] = plan_format.loads(out.read_bytes(), str(out))
    assert plans["--goal"].moves and plans["--goal"].moves == plans["--goals"].moves


def test_a_bad_inventory_list_is_one_line_naming_the_host(tmp_path: Path, capsys) -> None:
    snap, sizes = _files(tmp_path)
    inventory = _inventory(tmp_path, "disk,cpu")
    assert main(["rebalance", "-i", str(inventory), "-l", "prod", "--snapshot", str(snap), "--sizes", str(sizes)]) == 1
    err = capsys.readouterr().err
    assert "host prod: rebalance_goals: unknown goal 'cpu'" in err and len(err.strip().splitlines()) == 1, err
