"""Healing and balancing in one plan, within one budget (kops/planner/heal.py, docs/design/healing.md §3):
healing spends first, balancing what is left, `--max-duration` trims both the way a rebalance is trimmed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kops.model import plan_format
from kops.model.partitions import TopicPartition
from kops.planner.bounded import Request
from kops.planner.budget import Limits
from kops.planner.goal_rebalance import GoalRequest, rebalance_goals
from kops.planner.heal import heal, healed_first
from kops.planner.planner import Policy
from tests.builders import sizes_of
from tests.unit.test_healing import dead

HEALS = "heal absent broker(s) 4"
# Brokers 1-6, broker 4 gone: it held a replica of 4 partitions; brokers 5 and 6 hold nothing, 1-3 the rest.
LAYOUT = [(4, 1), (2, 4), (4, 3), (1, 4)] + [((p % 3) + 1, ((p + 1) % 3) + 1) for p in range(14)]
ON_4 = {TopicPartition("t", p) for p in range(4)}


def cluster():
    return dead(LAYOUT, {4}, racks=None)


def kinds(healing) -> tuple[set[TopicPartition], set[TopicPartition]]:
    """The partitions the plan heals and those it balances, by each move's reason."""
    healed = {m.tp for m in healing.plan.moves if m.reason == HEALS}
    return healed, {m.tp for m in healing.plan.moves if m.reason != HEALS}


def test_one_plan_heals_first_then_balances_what_healing_left_alone() -> None:
    healing = heal(cluster(), [4], Request("replicas", Limits(), 0.05))
    healed, balanced = kinds(healing)
    assert healed == ON_4 and healing.left == 0 and healing.brokers == (4,)
    assert balanced and not balanced & ON_4  # balancing moves no partition healing changed
    assert {m.reason for m in healing.plan.moves if m.tp in balanced} == {"rebalance replicas"}
    for m in healing.plan.moves:
        assert 4 not in m.to_replicas and len(m.to_replicas) == 2
    after = healing.plan.summary.replicas_after
    assert max(after[b] for b in (1, 2, 3, 5, 6)) - min(after[b] for b in (1, 2, 3, 5, 6)) <= 1
    assert healing.imbalance_after < healing.imbalance_before
    # what healing alone did to the live brokers, said apart from balancing's (kops rebalance's summary line)
    alone = heal(cluster(), [4], Request("replicas", Limits(), 0.99))
    assert healing.imbalance_healed == alone.imbalance_healed == alone.imbalance_after > healing.imbalance_after


def test_the_moves_budget_is_for_the_whole_run_and_healing_spends_it_first() -> None:
    snap = cluster()
    some = heal(snap, [4], Request("replicas", Limits(max_moves=6), 0.0))
    healed, balanced = kinds(some)
    assert healed == ON_4 and balanced and some.plan.summary.moves == 6  # replica moves: 4 heal, 2 balance
    short = heal(snap, [4], Request("replicas", Limits(max_moves=3), 0.0))
    healed, balanced = kinds(short)
    assert len(healed) == 3 and not balanced and short.left == 1


def test_balancing_below_the_threshold_is_left_out_and_the_healing_kept() -> None:
    healing = heal(cluster(), [4], Request("replicas", Limits(), 0.99))
    healed, balanced = kinds(healing)
    assert healed == ON_4 and not balanced and healing.worthwhile


def test_the_same_cluster_gives_the_same_plan() -> None:
    snap = cluster()
    request = Request("bytes", Limits(max_moves=7, max_seconds=1.0), 0.0)
    plans = {plan_format.dumps(heal(snap, [4], request, sizes_of(snap), Policy(throttle=10_000)).plan)
             for _ in range(3)}
    assert len(plans) == 1


def test_max_duration_trims_the_healing_as_it_trims_a_rebalance() -> None:
    snap = cluster()
    sizes = sizes_of(snap)  # 1,000 to 7,000 bytes a partition
    policy = Policy(throttle=1_000)
    whole = heal(snap, [4], Request("replicas", Limits(), 0.99), sizes, policy)
    assert whole.left == 0 and (whole.plan.summary.estimated_seconds or 0) > 8.0
    short = heal(snap, [4], Request("replicas", Limits(max_seconds=8.0), 0.99), sizes, policy)
    healed, _ = kinds(short)
    assert 0 < len(healed) < 4 and short.left == 4 - len(healed)  # the rest heals on the next run
    assert (short.plan.summary.estimated_seconds or 0) <= 8.0
    none = heal(snap, [4], Request("replicas", Limits(max_seconds=2.0), 0.99), sizes, policy)
    assert not none.plan.has_changes and none.left == 4 and none.brokers == ()  # no replica copies in 2 s


@settings(max_examples=40, deadline=None)
@given(max_moves=st.none() | st.integers(1, 12), max_bytes=st.none() | st.integers(0, 40_000),
       max_seconds=st.none() | st.floats(0.0, 12.0), goal=st.sampled_from(["replicas", "bytes", "leaders"]))
def test_every_limit_holds_for_healing_and_balancing_together(max_moves: int | None, max_bytes: int | None,
                                                              max_seconds: float | None, goal: str) -> None:
    snap = cluster()
    healing = heal(snap, [4], Request(goal, Limits(max_moves, max_bytes, max_seconds), 0.0), sizes_of(snap),
                   Policy(throttle=1_000))
    s = healing.plan.summary
    healed, balanced = kinds(healing)
    if goal != "leaders":
        assert max_moves is None or s.moves <= max_moves
    else:
        assert max_moves is None or len(healed) + s.leader_moves <= max_moves
    assert max_bytes is None or s.bytes <= max_bytes
    assert max_seconds is None or (s.estimated_seconds or 0.0) <= max_seconds + 1e-9
    assert healed <= ON_4 and not balanced & ON_4 and healing.left == 4 - len(healed)
    assert healing.brokers == ((4,) if healed else ())


def test_a_goal_list_heals_first_then_walks_what_healing_left_alone() -> None:
    # --heal-after with --goals: healing re-homes broker 4's replicas, then the walk evens replicas and leaders
    # without moving a healed partition, within the one budget
    snap = cluster()
    healed = healed_first(snap, [4], Limits(max_moves=8))
    assert set(healed.targets) == ON_4 and healed.brokers == (4,) and healed.moves == 4
    result = rebalance_goals(snap, GoalRequest(("replicas", "leaders"), Limits(max_moves=8), 0.0), healed=healed)
    moved = {m.tp: m for m in result.plan.moves}
    assert {tp for tp, m in moved.items() if m.reason == HEALS} == ON_4 and result.healed == (4,)
    for tp in ON_4:
        assert moved[tp].to_replicas == healed.targets[tp]  # the walk never moves a healed partition again
    balanced = {tp for tp, m in moved.items() if m.reason != HEALS}
    assert balanced and {m.reason for m in moved.values() if m.tp in balanced} <= {"rebalance replicas",
                                                                                 "rebalance leaders"}
    assert result.plan.summary.moves == 8 and result.worthwhile  # 4 healing, 4 balancing: the budget spent
    assert all(4 not in m.to_replicas for m in moved.values())
    unbounded = rebalance_goals(snap, GoalRequest(("replicas",), Limits(), 0.0), healed=healed_first(snap, [4],
                                                                                                       Limits()))
    after = unbounded.plan.summary.replicas_after
    assert max(after[b] for b in (1, 2, 3, 5, 6)) - min(after[b] for b in (1, 2, 3, 5, 6)) <= 1
