"""`kops plan` of a playbook whose `rebalance:` section sets `heal_after` (issue 38, docs/design/healing.md §6), on a
real ZooKeeper holding a cluster whose broker 4 is no longer registered: the first plan notes the absence in the
cluster (`/kops/absent/4`) and plans the playbook; a plan after the duration, another process, heals it with
kops/planner/heal.py as `kops rebalance --heal-after` does; an offline plan (`--snapshot`) never heals; with two
brokers absent the plan is refused (exit 3)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from kops.cli.main import main
from kops.lab.snapshot_writer import write_snapshot
from kops.model import plan_format
from kops.zk_layout import paths
from kops.zk_layout.client import ZkClient
from tests.unit.test_healing import dead

HEAL_AFTER = 2.0
PLAYBOOK = f"- hosts: all\n  rebalance: {{goal: replicas, heal_after: {HEAL_AFTER:g}s}}\n"
LAYOUT = [(4, 1), (2, 4), (1, 2), (2, 3), (3, 1), (4, 3)]


def playbook(tmp_path: Path) -> Path:
    path = tmp_path / "heal.yml"
    path.write_text(PLAYBOOK)
    return path


def test_a_playbook_that_asks_for_healing_heals_past_the_duration(zk: ZkClient, zk_connect: str, tmp_path: Path,
                                                                  capsys) -> None:
    write_snapshot(zk, dead(LAYOUT, {4}, n_brokers=5, racks=None))
    pb, first, healed = playbook(tmp_path), tmp_path / "first.json", tmp_path / "healed.json"

    assert main(["plan", str(pb), "-z", zk_connect, "-o", str(first)]) == 0
    assert "broker 4 absent for " in capsys.readouterr().err and zk.exists(f"{paths.KOPS_ABSENT}/4") is not None
    planned = plan_format.loads(first.read_bytes(), str(first))
    assert not any(m.reason.startswith("heal") for m in planned.moves)  # the playbook's plan: not yet due

    time.sleep(HEAL_AFTER + 0.5)
    done = subprocess.run([sys.executable, "-m", "kops.cli.main", "plan", str(pb), "-z", zk_connect, "-o",
                           str(healed), "--detailed-exitcode"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr  # changes
    plan = plan_format.loads(healed.read_bytes(), str(healed))
    on_4 = {p for p, replicas in enumerate(LAYOUT) if 4 in replicas}
    assert {m.partition for m in plan.moves} == on_4
    assert all(m.reason == "heal absent broker(s) 4" and 4 not in m.to_replicas
               and len(m.to_replicas) == len(LAYOUT[m.partition]) for m in plan.moves)
    assert any("this plan only heals absent broker(s) 4" in w for w in plan.warnings)

    snap = tmp_path / "snap.json"
    assert main(["state", "-z", zk_connect, "--out", str(snap)]) == 0
    capsys.readouterr()
    offline = tmp_path / "offline.json"
    assert main(["plan", str(pb), "--snapshot", str(snap), "-o", str(offline)]) == 0
    assert "an offline plan (--snapshot) never heals" in capsys.readouterr().err
    assert not any(m.reason.startswith("heal") for m in plan_format.loads(offline.read_bytes(), "offline").moves)


def test_two_absent_brokers_are_not_healed_by_a_plan(zk: ZkClient, zk_connect: str, tmp_path: Path, capsys) -> None:
    write_snapshot(zk, dead(LAYOUT + [(5, 1)], {4, 5}, n_brokers=6, racks=None))
    pb = playbook(tmp_path)
    assert main(["plan", str(pb), "-z", zk_connect]) == 0  # the first sighting: not due yet
    time.sleep(HEAL_AFTER + 0.5)
    capsys.readouterr()
    assert main(["plan", str(pb), "-z", zk_connect]) == 3
    assert "not healing: 2 brokers absent (4, 5), more than --heal-max-brokers 1" in capsys.readouterr().err
