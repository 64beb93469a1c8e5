"""`kops rebalance --snapshot FILE`: a bounded rebalance planned offline from a kops-snapshot/1 file, as
`kops plan --snapshot` plans (kops/cli/targets.py `offline_snapshot`), reaching no cluster; an offline run never
heals (docs/design/healing.md §1)."""

from __future__ import annotations

import json
from pathlib import Path

from kops.cli.main import main
from kops.model import plan_format, snapshot_format
from kops.planner.bounded import Request, rebalance
from kops.planner.budget import Limits
from tests.builders import brokers, snapshot, topic
from tests.unit.test_healing import dead

NOWHERE = ["-b", "127.0.0.1:9"]  # nothing listens: a run that tried to reach it would fail (exit 1)


def written(tmp_path: Path, snap) -> Path:
    path = tmp_path / "snap.json"
    path.write_bytes(snapshot_format.dumps(snap))
    return path


def last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def test_plans_offline_what_the_planner_plans_from_the_same_snapshot(tmp_path: Path, capsys) -> None:
    snap = snapshot(brokers(6), [topic("t", [((p % 3) + 1, ((p + 1) % 3) + 1) for p in range(24)])])
    out = tmp_path / "plan.json"
    code = main(["rebalance", "--snapshot", str(written(tmp_path, snap)), *NOWHERE, "--max-moves", "5",
                 "-o", str(out), "--format", "json", "--metrics-file", str(tmp_path / "run.prom")])
    assert code == 0
    doc = last_json(capsys.readouterr().out)
    assert doc["status"] == "planned" and doc["moves"] == 5 and doc["absent"] == [] and doc["plan"] == str(out)
    expected = rebalance(snap, Request("replicas", Limits(max_moves=5), 0.05), cluster=snap.connect or "")
    planned = plan_format.loads(out.read_bytes(), str(out))
    assert [(m.tp, m.to_replicas) for m in planned.moves] == [(m.tp, m.to_replicas) for m in expected.plan.moves]


def test_an_absent_broker_is_reported_and_not_healed_offline(tmp_path: Path, capsys) -> None:
    snap = dead([(4, 1), (2, 3), (1, 2)], {4})
    code = main(["rebalance", "--snapshot", str(written(tmp_path, snap)), "--heal-after", "1s", "--format", "json",
                 "-o", str(tmp_path / "plan.json")])
    assert code == 3
    captured = capsys.readouterr()
    doc = last_json(captured.out)
    assert doc["status"] == "refused" and doc["absent"] == [{"broker": 4, "seconds": None}] and doc["healed"] == []
    assert "broker(s) 4 absent in the snapshot, not healed: an offline run (--snapshot) never heals" in captured.err
    assert not (tmp_path / "plan.json").exists()


def test_offline_runs_neither_apply_nor_plan_a_fleet(tmp_path: Path, capsys) -> None:
    path = written(tmp_path, snapshot(brokers(3), [topic("t", [(1, 2)])]))
    assert main(["rebalance", "--snapshot", str(path), "--apply", "--yes"]) == 1
    assert "--snapshot plans one cluster offline" in capsys.readouterr().err
    assert main(["rebalance", "--snapshot", str(path), "--out-dir", str(tmp_path / "fleet")]) == 1
    assert main(["rebalance", "--snapshot", str(tmp_path / "missing.json")]) == 1
    assert "cannot read the snapshot" in capsys.readouterr().err


def test_a_run_that_plans_nothing_names_the_brokers_already_over_a_limit(tmp_path: Path, capsys) -> None:
    """Found by an outside check: every broker over its declared disk said 'nothing to do', exit 0, and not a word
    about the limits, which a cron job reads as healthy. Now a warning names them, in the text and the JSON."""
    golden = Path(__file__).parents[1] / "golden" / "capacity-decommission"
    capacity = tmp_path / "capacity.json"
    capacity.write_text(json.dumps({"brokerCapacities": [
        {"brokerId": "-1", "capacity": {"DISK": "5", "CPU": "100", "NW_IN": "100000", "NW_OUT": "100000"}}]}))
    args = ["rebalance", "--snapshot", str(golden / "snapshot.json"), "--sizes", str(golden / "sizes.json"),
            "--capacity", str(capacity), "--goals", "disk,replicas", "-o", str(tmp_path / "plan.json")]
    assert main(args) == 0
    said = capsys.readouterr()
    over = "broker(s) 1, 2, 3, 4, 5, 6 are already over a capacity limit, and no move within the limits relieves"
    assert "nothing to do" in said.out and over in " ".join(said.err.split())
    assert main([*args, "--format", "json"]) == 0
    doc = last_json(capsys.readouterr().out)
    assert doc["status"] == "noop" and over in doc["warnings"][0]
