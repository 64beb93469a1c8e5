"""`heal_after:` in a playbook's `rebalance:` section (issue 38, docs/declarations.md): read as seconds, refused
with one line where it is not a duration or two plays disagree; and what `kops plan` does with it without a
cluster to note absences in (kops/cli/healing.py `healed_declared`). The live half, on a real ZooKeeper, is
tests/integration/test_cli_heal_plan.py."""

from __future__ import annotations

from pathlib import Path

from kops.cli.healing import healed_declared
from kops.planner.planner import Policy
from tests.unit.test_declare_playbooks import load, messages
from tests.unit.test_healing import dead


def test_heal_after_is_read_as_seconds_beside_the_goal(tmp_path: Path) -> None:
    decl = load(tmp_path, """
        - hosts: prod
          rebalance: {goal: bytes, heal_after: 30m}
    """)
    assert decl.ok, messages(decl)
    rebalance = decl.desired["prod"].rebalance
    assert (rebalance.goal, rebalance.tolerance, rebalance.heal_after) == ("bytes", 0.1, 1800.0)
    assert load(tmp_path, "- hosts: prod\n  rebalance: {goal: replicas}\n").desired["prod"].rebalance.heal_after is None


def test_a_bad_duration_is_one_line_naming_the_field(tmp_path: Path) -> None:
    decl = load(tmp_path, """
        - hosts: prod
          rebalance: {heal_after: soon}
    """)
    assert not decl.ok
    (line,) = [m for m in messages(decl) if "heal_after" in m]
    assert "play.yml" in line and "rebalance.heal_after" in line
    assert any("rebalance.heal_after" in m for m in messages(load(tmp_path, "- hosts: prod\n  rebalance: "
                                                                             "{heal_after: -5m}\n")))


def test_two_plays_that_disagree_on_heal_after_are_refused(tmp_path: Path) -> None:
    decl = load(tmp_path, """
        - hosts: prod
          rebalance: {heal_after: 30m}
        - hosts: all
          rebalance: {heal_after: 1h}
    """)
    assert any("a different rebalance is already declared for cluster prod" in m for m in messages(decl))


def test_an_offline_plan_never_heals_and_a_playbook_without_heal_after_is_left_alone(tmp_path: Path,
                                                                                      capsys) -> None:
    snap = dead([(4, 1), (2, 3)], {4})
    asks = load(tmp_path, "- hosts: prod\n  rebalance: {heal_after: 1s}\n").desired["prod"]
    assert healed_declared(asks, snap, None, {}, Policy()) is None
    assert "broker(s) 4 absent in the snapshot, not healed: an offline plan (--snapshot) never heals" in (
        capsys.readouterr().err)
    plain = load(tmp_path, "- hosts: prod\n  rebalance: {goal: replicas}\n").desired["prod"]
    assert healed_declared(plain, snap, None, {}, Policy()) is None
    assert capsys.readouterr().err == ""
