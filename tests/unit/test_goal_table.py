"""A goal list's table in the plan (issue 36): `summary.goals` round-trips through the plan file, a plan without it
(every plan before goal lists) still loads and is written without it, a bad row is one line naming its place, and
the pull-request Markdown shows the table with each broker's disk and network-in utilization before and after."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from kops.model import plan_format
from kops.model.capacity import CapacityDeclaration, Figure
from kops.model.plan import GoalOutcome, Plan
from kops.model.snapshot import Snapshot
from kops.planner.goal_rebalance import GoalRequest, rebalance_goals
from kops.planner.markdown import render_markdown
from kops.planner.planner import Policy
from tests.builders import crowded, sizes_of
from tests.unit.test_plan_files import PLAN, refused, resealed

GOALS = ("disk", "network_in", "replicas", "leaders", "preferred_leaders")
GIB = 1024 ** 3


def led_by_second(snap: Snapshot, topic: str, partitions: range) -> Snapshot:
    """`snap` with these partitions led by their second replica (in sync): what a broker's restart leaves."""
    parts = dict(snap.topics[topic].partitions)
    for p in partitions:
        state = parts[p].state
        assert state is not None
        parts[p] = replace(parts[p], state=replace(state, leader=parts[p].replicas[1]))
    return replace(snap, topics=snap.topics | {topic: replace(snap.topics[topic], partitions=parts)})


def goal_plan(capacity: bool = True) -> Plan:
    """A rebalance of the crowded cluster for GOALS, with write rates, and every broker's disk and network-in
    capacity declared (brokers 4-6 with twice the disk of 1-3) unless `capacity` is False; six partitions of logs
    (spread already, so no goal moves them) are led by their second replica."""
    snap = led_by_second(crowded(), "logs", range(6))
    sizes = sizes_of(snap, 10_000_000)
    write = {tp: float(1_000 * (1 + tp.partition % 3)) for tp in sizes}
    declared = CapacityDeclaration(
        default={"disk": Figure(2 * GIB, "declared inv.yml:3"), "network_in": Figure(100_000, "declared inv.yml:4")},
        brokers={b: {"disk": Figure(4 * GIB, "declared inv.yml:5")} for b in (4, 5, 6)}) if capacity else None
    return rebalance_goals(snap, GoalRequest(GOALS), sizes, Policy(capacity=declared, write=write)).plan


def _without_imbalances(goals: tuple[GoalOutcome, ...]) -> tuple[GoalOutcome, ...]:
    """The rows as the file holds them: each goal's imbalance is the run's, not the plan's."""
    return tuple(replace(g, imbalance_before=0.0, imbalance_after=0.0) for g in goals)


def test_the_goal_table_round_trips_through_the_plan_file() -> None:
    plan = goal_plan()
    assert [g.name for g in plan.summary.goals] == list(GOALS)
    written = plan_format.dumps(plan)
    back = plan_format.loads(written, "p.json")
    assert back.summary.goals == _without_imbalances(plan.summary.goals)
    assert plan_format.dumps(back) == written
    rows = json.loads(written)["summary"]["goals"]
    assert set(rows[0]) == {"name", "unit", "before", "after", "lower_bound", "moves", "leader_moves"}
    preferred = rows[-1]
    assert preferred["name"] == "preferred_leaders" and preferred["before"] == 20.0  # 6 of 30 partitions
    assert preferred["after"] == 0.0 and preferred["moves"] == 0
    # every one is elected: those the walk moved as every plan's moves are, the others by this goal
    assert {tp.partition for tp in plan.election if tp.topic == "logs"} == set(range(6))
    moved = {m.tp.partition for b in plan.batches for m in b.moves if m.tp.topic == "logs"}
    assert preferred["leader_moves"] == 6 - len(moved) > 0
    assert any("preferred leader" in line for line in plan.rollback.irreversible)
    disk = rows[0]
    assert disk["unit"] == "% of capacity" and disk["after"] < disk["before"] and disk["moves"] > 0


def test_a_plan_without_goals_loads_and_is_written_without_them() -> None:
    plan = plan_format.loads(PLAN, "p.json")
    assert plan.summary.goals == ()
    assert "goals" not in json.loads(PLAN)["summary"] and plan_format.dumps(plan).decode() == PLAN


def test_bad_goal_rows_are_one_line_naming_where() -> None:
    row = {"name": "disk", "unit": "% of capacity", "before": 80.0, "after": 60.0, "lower_bound": 55.5, "moves": 3,
           "leader_moves": 0}
    cases = [({"name": "cpu"}, "summary.goals[0].name is cpu, not a goal: one of disk, network_in"),
             ({"before": -1.0}, "summary.goals[0].before is out of range: -1.0"),
             ({"after": "60"}, 'summary.goals[0].after must be a JSON number, got "60"'),
             ({"moves": 1.5}, "summary.goals[0].moves must be a JSON integer, got 1.5"),
             ({"slack": 2.0}, "summary.goals[0].slack is not a field of this format")]
    for change, words in cases:
        doc = json.loads(PLAN)
        doc["summary"]["goals"] = [row | change]
        assert words in refused(resealed(doc)), change
    doc = json.loads(PLAN)
    doc["summary"]["goals"] = [row, row | {"before": 70.0}]
    assert "summary.goals names goal disk more than once" in refused(resealed(doc))
    doc = json.loads(PLAN)
    del row["lower_bound"]
    doc["summary"]["goals"] = [row]
    assert "summary.goals[0].lower_bound is missing" in refused(resealed(doc))


def _charts(markdown: str) -> dict[str, str]:
    """Each Mermaid chart by its title."""
    return {m.group(1): m.group(0) for m in re.finditer(r'```mermaid\nxychart-beta\n    title "([^"]*)".*?```',
                                                         markdown, re.S)}


def test_the_markdown_shows_the_goal_table_and_utilization_charts() -> None:
    plan = goal_plan()
    markdown = render_markdown(plan)
    assert "| goal | unit | before | after | lower bound | moves | leader moves |" in markdown
    disk = plan.summary.goals[0]
    assert (f"| disk | % of capacity | {disk.before:.2f} | {disk.after:.2f} | {disk.lower_bound:.2f} | {disk.moves} "
            f"| {disk.leader_moves} |") in markdown
    assert "| preferred_leaders | % of partitions | 20.00 | 0.00 |" in markdown
    charts = _charts(markdown)
    disk_chart = charts["Disk utilization per broker (% of capacity) bars after the plan, line before"]
    usage = plan.summary.capacity.brokers  # type: ignore[union-attr]  # capacities were declared
    after = [round(100 * usage[b]["disk"].after / usage[b]["disk"].capacity, 2) for b in range(1, 7)]
    assert "    bar [" + ", ".join(f"{v:g}" for v in after) + "]" in disk_chart
    assert max(after) <= max(round(100 * usage[b]["disk"].before / usage[b]["disk"].capacity, 2) for b in range(1, 7))
    assert "Network-in utilization per broker (% of capacity) bars after the plan, line before" in charts


def test_without_capacities_the_markdown_says_why_there_is_no_chart() -> None:
    markdown = render_markdown(goal_plan(capacity=False))
    assert "| goal | unit |" in markdown
    assert "Disk utilization is not charted: no disk capacity is known for any broker" in markdown
    assert "Network-in utilization is not charted" in markdown
    assert not any("utilization" in title for title in _charts(markdown))


def test_some_brokers_without_capacity_are_named_and_a_plan_without_goals_shows_no_table() -> None:
    plan = goal_plan()
    report = plan.summary.capacity
    assert report is not None
    partial = replace(report, brokers={b: u for b, u in report.brokers.items() if b not in (5, 6)})
    markdown = render_markdown(replace(plan, summary=replace(plan.summary, capacity=partial)))
    assert "Disk utilization is not charted: no disk capacity is known for broker(s) 5,6" in markdown
    plain = render_markdown(replace(plan, summary=replace(plan.summary, goals=())))
    assert "| goal |" not in plain and "utilization" not in plain


def test_only_the_golden_plan_of_a_goal_list_carries_a_goal_table() -> None:
    """A play without `rebalance.goals` plans as before goal lists (no table); the `goals` golden's play has one."""
    golden = Path(__file__).resolve().parents[1] / "golden"
    tables = {path.parent.name: json.loads(path.read_text())["summary"].get("goals")
              for path in sorted(golden.glob("*/expected-plan.json"))}
    assert [name for name, table in tables.items() if table] == ["goals"]
    assert [g["name"] for g in tables["goals"]] == ["disk", "network_in", "replicas", "leaders"]
