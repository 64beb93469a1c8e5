"""Golden planning scenarios: `kops plan` on a committed snapshot must give the committed plan, byte for byte.

Regenerate after an intended change with KOPS_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kops.cli.main import main
from kops.model import plan_format
from tests.golden.scenarios import HERE, SCENARIOS, write_all

if os.environ.get("KOPS_UPDATE_GOLDEN"):
    write_all()


def _args(folder: Path) -> list[str]:
    return ["plan", str(folder / "playbook.yml"), "-i", str(folder / "inventory.yml"),
            "--snapshot", str(folder / "snapshot.json"), "--sizes", str(folder / "sizes.json")]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_plan_matches_golden(name: str, tmp_path: Path, capsys) -> None:
    folder = HERE / name
    out = tmp_path / "plan.json"
    assert main([*_args(folder), "-o", str(out)]) == 0
    expected = (folder / "expected-plan.json").read_bytes()
    assert out.read_bytes() == expected, f"plan for {name} changed; KOPS_UPDATE_GOLDEN=1 to accept"
    capsys.readouterr()
    assert main([*_args(folder), "--format", "markdown"]) == 0
    assert capsys.readouterr().out == (folder / "expected.md").read_text()


def test_scenarios_show_what_they_are_named_for() -> None:
    plans = {name: plan_format.loads((HERE / name / "expected-plan.json").read_bytes(), name) for name in SCENARIOS}
    assert [c.topic for c in plans["create"].creations] == ["events"]
    assert sum(len(a.assignment) for a in plans["add-partitions"].partition_additions) == 4
    assert plans["rf-up"].summary.moves == 6 and all(len(m.to_replicas) == 3 for m in plans["rf-up"].moves)
    assert all(len(m.to_replicas) == 2 for m in plans["rf-down"].moves) and plans["rf-down"].summary.bytes == 0
    assert all(3 not in m.to_replicas for m in plans["decommission"].moves)
    assert len(plans["decommission"].batches) > 1
    assert plans["add-brokers"].summary.replicas_after[7] > 0 and plans["add-brokers"].summary.replicas_after[8] > 0
    before, after = plans["rebalance"].summary.replicas_before, plans["rebalance"].summary.replicas_after
    # Rack r2 has two brokers (3, 6) and every RF-3 partition needs one replica there: ±1 across all brokers is
    # impossible, so the spread shrinks as far as the rack rule allows.
    assert max(after.values()) - min(after.values()) < max(before.values()) - min(before.get(b, 0) for b in after)
    assert min(after.values()) >= 10
    assert plans["leader-balance"].summary.moves == 0 and plans["leader-balance"].summary.leader_moves > 0
    assert plans["config-change"].configs[0].destructive and "segment.ms" not in plans["config-change"].configs[0].set
    goals = plans["goals"].summary.goals  # one list placed the new brokers' share, the created topic and leaders
    assert [g.name for g in goals] == ["disk", "network_in", "replicas", "leaders"]
    assert all(g.lower_bound <= g.after < g.before for g in goals), goals
    assert min(plans["goals"].summary.replicas_after[b] for b in (7, 8)) > 0
    assert plans["destructive-guard"].summary.destructive == ("delete topic legacy (2 partitions)",)


def test_destructive_guard_without_allow_delete(tmp_path: Path, capsys) -> None:
    folder = HERE / "destructive-guard"
    playbook = tmp_path / "playbook.yml"
    playbook.write_text((folder / "playbook.yml").read_text().replace("  allow_delete: true\n", ""))
    assert main(["plan", str(playbook), "-i", str(folder / "inventory.yml"), "--snapshot",
                 str(folder / "snapshot.json")]) == 1
    assert "does not allow deletion" in capsys.readouterr().err
