"""`kops rebalance --goals` planning: one plan for the list, applied on paper a second run plans nothing, a time
budget keeps a prefix of the walk, and the goal table says before, after, lower bound and what was spent."""

from __future__ import annotations

from kops.model.partitions import TopicPartition
from kops.planner.budget import Limits
from kops.planner.goal_rebalance import GoalRequest, PlanOf, _fitted, rebalance_goals, replay
from kops.planner.goal_state import assignment_of
from kops.planner.optimizer import Action
from kops.planner.planner import Policy
from tests.builders import brokers, crowded, sizes_of, snapshot, topic
from tests.simulate import apply_plan

GOALS = ("disk", "replicas", "leaders")


def _skewed():
    """Six brokers in three racks; two topics crowded on brokers 1-3, brokers 4-6 nearly empty."""
    snap = crowded()
    return snap, sizes_of(snap, 10_000_000)


def test_one_plan_evens_the_list_and_a_second_run_plans_nothing() -> None:
    snap, sizes = _skewed()
    first = rebalance_goals(snap, GoalRequest(GOALS), sizes)
    table = {o.name: o for o in first.outcomes}
    assert first.worthwhile and first.converged
    assert table["disk"].after < table["disk"].before and table["replicas"].after < table["replicas"].before
    assert all(o.after >= o.lower_bound - 0.01 for o in first.outcomes)
    assert table["disk"].moves > 0 and first.plan.moves
    again = rebalance_goals(apply_plan(snap, first.plan), GoalRequest(GOALS), sizes)
    assert not again.plan.has_changes and not again.worthwhile


def test_a_time_budget_keeps_the_longest_prefix_that_fits() -> None:
    snap, sizes = _skewed()
    whole = rebalance_goals(snap, GoalRequest(GOALS), sizes)
    estimate = whole.plan.summary.estimated_seconds or 0.0
    bounded = rebalance_goals(snap, GoalRequest(GOALS, Limits(max_seconds=estimate / 3)), sizes)
    assert (bounded.plan.summary.estimated_seconds or 0.0) <= estimate / 3
    assert 0 < len(bounded.plan.moves) < len(whole.plan.moves)
    assert not bounded.converged


def test_a_time_budget_never_keeps_half_a_step() -> None:
    """A swap (two moves judged as one step) whose first half alone fits the time budget: the prefix ends before
    the swap, not inside it (half a swap can leave its destination over a limit only the whole swap stays within)."""
    snap, sizes = _skewed()
    start = assignment_of(snap)
    a, b, c = TopicPartition("orders", 0), TopicPartition("orders", 1), TopicPartition("orders", 2)
    held = {tp: start[tp] for tp in (a, b, c)}
    assert all(4 not in r for r in held.values())
    actions = (Action("disk", a, held[a][0], 4), Action("disk", b, held[b][0], 4),
               Action("disk", c, held[c][0], 4, joined=True))
    plan_of = PlanOf(snap, start, actions, (Policy(), "cluster", None), sizes)
    seconds = [plan_of(k).summary.estimated_seconds or 0.0 for k in range(4)]
    assert seconds[0] < seconds[1] < seconds[2] < seconds[3]  # each prefix copies more onto broker 4
    plan, kept = _fitted(actions, plan_of, Limits(max_seconds=(seconds[2] + seconds[3]) / 2))
    assert kept == 1 and len(plan.moves) == 1  # not 2: the second move is the swap's first half


def test_move_budgets_bound_the_walk() -> None:
    snap, sizes = _skewed()
    result = rebalance_goals(snap, GoalRequest(GOALS, Limits(max_moves=2), max_leader_moves=0), sizes)
    assert sum(len(set(m.to_replicas) - set(m.from_replicas)) for m in result.plan.moves) <= 2


def test_byte_and_leadership_budgets_bound_the_list() -> None:
    """--max-bytes and --max-leader-moves bound a goal list's plan as --max-moves does: every byte the plan copies
    and every leadership change it makes (its moves' new leaders and its elections) counted against them."""
    snap, sizes = _skewed()
    whole = rebalance_goals(snap, GoalRequest(GOALS), sizes).plan.summary
    budget = whole.bytes // 3
    bounded = rebalance_goals(snap, GoalRequest(GOALS, Limits(max_bytes=budget)), sizes).plan.summary
    assert 0 < bounded.bytes <= budget
    led_by_1 = snapshot(brokers(6), [topic("t", [(1, 2, 3)] * 6 + [(2, 3, 1)] * 2)])  # broker 1 leads 6 of 8
    free, capped = (rebalance_goals(led_by_1, GoalRequest(("leaders",), max_leader_moves=n), sizes_of(led_by_1)).plan
                    for n in (None, 1))
    assert free.summary.leader_moves == 2 and capped.summary.leader_moves == 1
    assert all(m.kind == "leader" for m in (*free.moves, *capped.moves))


def test_replay_takes_moves_and_leadership_changes_in_order() -> None:
    tp = TopicPartition("t", 0)
    actions = (Action("disk", tp, 1, 4), Action("leaders", tp, 4, 2, leadership=True))
    assert replay({tp: (1, 2, 3)}, actions) == {tp: (2, 4, 3)}


def test_kops_own_topic_is_never_moved_by_a_goal_walk() -> None:
    """kops's own topic (__kops: its records and lease, which the first apply creates) crowded on brokers 1-3 with
    the rest: the walk evens the others around it (found on Kafka 4.3.1: the rebalance right after the first apply
    moved __kops itself)."""
    from tests.builders import brokers, round_robin, snapshot

    snap = snapshot(brokers(6), [round_robin("orders", 24, 3, [1, 2, 3]), round_robin("__kops", 1, 3, [1, 2, 3])])
    planned = rebalance_goals(snap, GoalRequest(("replicas", "leaders")), sizes_of(snap, 10_000_000))
    assert planned.plan.moves and not [m for m in planned.plan.moves if m.topic == "__kops"]
