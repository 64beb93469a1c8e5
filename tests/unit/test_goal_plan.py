"""`kops plan` through a playbook's goal list (docs/design/goals.md commit 9): forced changes, new brokers and the
rebalance placed by the same walk as `kops rebalance --goals`, so a rebalance with the same goals right after the
plan moves nothing, and a rebalance after a rebalance moves nothing; the plan carries its goal table."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kops.cli.main import main
from kops.model.desired import Rebalance
from kops.model.goals import GOAL_NAMES
from kops.model.partitions import TopicPartition
from kops.model.snapshot import Snapshot
from kops.planner.goal_rebalance import GoalRequest, rebalance_goals
from kops.planner.planner import Policy, plan
from tests.builders import HERE, brokers, crowded, declare, round_robin, sizes_of, snapshot, td, topic
from tests.simulate import apply_plan

GOALS = ("disk", "network_in", "replicas", "topic_replicas", "leaders", "leader_bytes_in")
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def _write(snap: Snapshot) -> dict[TopicPartition, float]:
    return {tp: float(size % 997 + 1) for tp, size in sizes_of(snap, 10).items()}


def _without(snap: Snapshot, gone: tuple[int, ...]) -> Snapshot:
    """The cluster once the decommissioned brokers are stopped (a registered empty broker would look new)."""
    return replace(snap, brokers=tuple(b for b in snap.brokers if b.id not in gone))


def _rebalance_after(snap: Snapshot, result, goals, sizes, write, gone=()):
    after = _without(apply_plan(snap, result), tuple(gone))
    return rebalance_goals(after, GoalRequest(goals, min_improvement=0.0), sizes, Policy(write=write))


def test_a_decommission_and_new_brokers_placed_by_the_list_leave_nothing_for_a_rebalance() -> None:
    snap = crowded()  # brokers 1-6; 7 and 8 join empty, 3 retires
    snap = replace(snap, brokers=brokers(8))
    sizes, write = sizes_of(snap, 10_000_000), _write(snap)
    desired = declare(decommission=[3], add=[7, 8], rebalance=Rebalance(tolerance=0.0, location=HERE, goals=GOALS))
    result = plan(desired, snap, sizes, Policy(write=write))
    table = {o.name: o for o in result.summary.goals}
    assert list(table) == list(GOALS)
    assert table["replicas"].moves > 0 and table["disk"].imbalance_after < table["disk"].imbalance_before
    assert table["disk"].after == table["disk"].lower_bound  # broker 6, alone in its rack, holds every partition
    assert all(o.after <= o.before + 0.01 for o in table.values() if o.skipped is None)
    after = apply_plan(snap, result)
    held = {b for t in after.topics.values() for p in t.partitions.values() for b in p.replicas}
    assert 3 not in held and {7, 8} <= held
    again = _rebalance_after(snap, result, GOALS, sizes, write, gone=(3,))
    assert not again.plan.has_changes, [m.tp for m in again.plan.moves]


def test_created_partitions_are_placed_by_the_goals() -> None:
    """Partitions a play creates cost no bytes to place, so the count goals even with them first; the creation's
    assignment is where the walk left them."""
    snap = crowded()
    sizes, write = sizes_of(snap, 10_000_000), _write(snap)
    desired = declare(td("events", 12, 3), rebalance=Rebalance(tolerance=0.0, location=HERE, goals=("replicas",)))
    result = plan(desired, snap, sizes, Policy(write=write))
    created = {TopicPartition("events", p): r for c in result.creations for p, r in c.assignment.items()}
    assert len(created) == 12 and all(len(set(r)) == 3 for r in created.values())
    again = _rebalance_after(snap, result, ("replicas",), sizes, write)
    assert not again.plan.has_changes


def test_the_worked_example_of_goal_plan() -> None:
    """kops/planner/goal_plan.py's docstring: brokers 1-3 with 6 replicas each, broker 4 added, goals [replicas]."""
    snap = snapshot(brokers(4, None), [round_robin("t", 6, 3, [1, 2, 3])])
    desired = declare(add=[4], rebalance=Rebalance(tolerance=0.0, location=HERE, goals=("replicas",)))
    result = plan(desired, snap, sizes_of(snap))
    (row,) = result.summary.goals
    assert (row.before, row.after, row.lower_bound) == (133.33, 111.11, 111.11)
    assert sorted(result.summary.replicas_after.values()) == [4, 4, 5, 5]


def test_tolerance_is_the_trigger_not_the_slack() -> None:
    """A goal whose brokers all lie within the tolerance of their fair share is left alone; at tolerance 0 the same
    cluster is evened to the goal's band."""
    snap = snapshot(brokers(3, None), [topic("t", [(1,)] * 5 + [(2,)] * 4 + [(3,)] * 3)])
    sizes = sizes_of(snap)
    loose = plan(declare(rebalance=Rebalance(tolerance=0.3, location=HERE, goals=("replicas",))), snap, sizes)
    tight = plan(declare(rebalance=Rebalance(tolerance=0.0, location=HERE, goals=("replicas",))), snap, sizes)
    assert not loose.moves and loose.summary.goals[0].moves == 0
    assert tight.moves and sorted(tight.summary.replicas_after.values()) == [4, 4, 4]


def test_a_play_without_goals_plans_as_before() -> None:
    """`goal:` alone (and no rebalance section) keeps the balancers and the leader step: no goal table."""
    snap = crowded()
    result = plan(declare(rebalance=Rebalance("replicas", 0.0, HERE)), snap, sizes_of(snap))
    assert result.moves and result.summary.goals == ()


@st.composite
def _plays(draw):
    count = draw(st.integers(4, 8))
    broker_list = brokers(count, draw(st.sampled_from([None, 2, 3])))
    ids = [b.id for b in broker_list]
    layout = [tuple(draw(st.permutations(ids[:count - 1]))[:draw(st.integers(1, 3))])
              for _ in range(draw(st.integers(4, 24)))]
    snap = snapshot(broker_list, [topic("a", layout[::2]), topic("b", layout[1::2])])
    sizes = {tp: draw(st.integers(1, 10**6)) for tp in sizes_of(snap)}
    goals = tuple(draw(st.permutations(GOAL_NAMES))[:draw(st.integers(1, 5))])
    decommission = [draw(st.sampled_from(ids[:-1]))] if draw(st.booleans()) else []
    add = [ids[-1]] if draw(st.booleans()) else []
    created = [td("c", draw(st.integers(1, 6)), 2)] if draw(st.booleans()) else []
    desired = declare(*created, decommission=decommission, add=add,
                      rebalance=Rebalance(tolerance=0.0, location=HERE, goals=goals))
    return snap, sizes, desired


@SETTINGS
@given(_plays())
def test_plan_then_rebalance_and_rebalance_then_rebalance_move_nothing(play) -> None:
    snap, sizes, desired = play
    write = _write(snap)
    goals = desired.rebalance.goals
    result = plan(desired, snap, sizes, Policy(write=write))
    assert [o.name for o in result.summary.goals] == list(goals)
    assert all(o.after <= o.before + 0.01 for o in result.summary.goals if o.skipped is None)
    again = _rebalance_after(snap, result, goals, sizes, write, gone=desired.brokers.decommission)
    assert not again.plan.has_changes, [m.tp for m in again.plan.moves]
    first = rebalance_goals(snap, GoalRequest(goals, min_improvement=0.0), sizes, Policy(write=write))
    second = rebalance_goals(apply_plan(snap, first.plan), GoalRequest(goals, min_improvement=0.0), sizes,
                             Policy(write=write))
    assert not second.plan.has_changes


def test_kops_plan_prints_the_goal_table(capsys) -> None:
    """The text output shows the play's goal table as `kops rebalance --goals` does (the golden `goals` play)."""
    folder = Path(__file__).resolve().parents[1] / "golden" / "goals"
    assert main(["plan", str(folder / "playbook.yml"), "-i", str(folder / "inventory.yml"), "--snapshot",
                 str(folder / "snapshot.json"), "--sizes", str(folder / "sizes.json")]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["disk"], ["replicas"])]
    figures = re.findall(r"\d+\.\d+", " ".join(rows[0]))  # before, after, bound (the unit may wrap on a narrow console)
    assert "Goals" in out and [r[0] for r in rows] == ["disk", "replicas"] and figures[:2] == ["61.77", "41.26"]


def test_a_play_without_the_clusters_cron_list_is_told_the_rebalance_may_undo_it() -> None:
    """The inventory gives `kops rebalance` a goal list for the cluster (`rebalance_goals`); a play that names none
    places by the balancers, which that rebalance may move again: the plan says so and how to place by the list."""
    snap, sizes = crowded(), sizes_of(crowded(), 10_000_000)
    cron = {"rebalance_goals": ["disk", "replicas"]}
    said = "the inventory gives this cluster rebalance_goals (disk, replicas) for kops rebalance"
    drained = replace(declare(decommission=[3]), host_vars=cron)
    assert any(w.startswith(said) for w in plan(drained, snap, sizes).warnings)
    listed = replace(drained, rebalance=Rebalance(tolerance=0.0, location=HERE, goals=("disk", "replicas")))
    assert not any(w.startswith(said) for w in plan(listed, snap, sizes).warnings)
    assert not any(w.startswith(said) for w in plan(declare(decommission=[3]), snap, sizes).warnings)
