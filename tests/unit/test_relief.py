"""Hard limits first (kops/planner/relief.py): a broker over a capacity limit is brought within it before any goal
of the list is balanced, whatever the list, and a rebalance that does so is worth applying."""

from __future__ import annotations

from kops.model.capacity import CapacityDeclaration, Figure
from kops.model.partitions import TopicPartition
from kops.planner.goal_rebalance import GoalRequest, rebalance_goals
from kops.planner.goal_state import GoalState
from kops.planner.goal_values import GoalInputs
from kops.planner.optimizer import optimize
from kops.planner.planner import Policy
from tests.builders import brokers, snapshot, topic
from tests.simulate import apply_plan

INV = "declared inv.yml:3"


def _over_on_disk() -> tuple[dict[TopicPartition, tuple[int, ...]], GoalInputs, dict[str, dict[int, float]]]:
    """Four brokers, three replicas each (replicas even); broker 1's three are large: 900 of its 800 limit."""
    layout = {TopicPartition("big", p): (1,) for p in range(3)}
    layout |= {TopicPartition("small", p): (b,) for p, b in enumerate([2, 2, 2, 3, 3, 3, 4, 4, 4])}
    sizes = {tp: 300 if tp.topic == "big" else 10 for tp in layout}
    inputs = GoalInputs(racks=dict.fromkeys(range(1, 5)), sizes=sizes, write={},
                        capacity={"disk": dict.fromkeys(range(1, 5), 1000.0)})
    return layout, inputs, {"disk": dict.fromkeys(range(1, 5), 800.0)}


def test_a_replica_goal_alone_still_sheds_a_broker_over_its_disk_limit() -> None:
    layout, inputs, limits = _over_on_disk()
    state = GoalState(layout, inputs, limits)
    outcome = optimize(state, ("replicas",))
    assert state.load["disk"][1] <= 800
    assert all(state.load["disk"][b] <= 800 for b in state.brokers)
    assert [a.goal for a in outcome.actions][0] == "disk limit"
    assert optimize(GoalState(dict(state.replicas), inputs, limits), ("replicas",)).actions == ()


def test_nothing_over_a_limit_nothing_relieved() -> None:
    layout, inputs, _limits = _over_on_disk()
    roomy = {"disk": dict.fromkeys(range(1, 5), 2000.0)}
    outcome = optimize(GoalState(layout, inputs, roomy), ("replicas",))
    assert not any(a.goal.endswith(" limit") for a in outcome.actions)


def test_network_out_over_its_limit_hands_leadership_over_without_moving_data() -> None:
    """Broker 1 leads three hot partitions (each 100 out: write 50 × (1 follower + fan-out 1)), limit 160."""
    layout = {TopicPartition("hot", p): (1, 2 + p % 3) for p in range(3)}
    inputs = GoalInputs(racks=dict.fromkeys(range(1, 5)), sizes=dict.fromkeys(layout, 10),
                        write=dict.fromkeys(layout, 50.0), capacity={"network_out": dict.fromkeys(range(1, 5), 200.0)})
    state = GoalState(layout, inputs, {"network_out": dict.fromkeys(range(1, 5), 160.0)})
    outcome = optimize(state, ("replicas",))
    relief = [a for a in outcome.actions if a.goal == "network_out limit"]
    assert relief and all(a.leadership for a in relief)
    assert state.load["network_out"][1] <= 160


def test_kops_rebalance_by_replicas_on_a_cluster_over_its_limit_is_worth_applying() -> None:
    """Replicas are even (two each), so the goal gains nothing; broker 1's disk is over its limit (2 × 45,000 of
    80,000): the plan relieves it and is worthwhile."""
    snap = snapshot(brokers(4, racks=None), [topic("big", [(1,), (1,)]), topic("small", [(2,), (2,), (3,), (3,)]),
                                             topic("other", [(4,), (4,)])])
    sizes = {TopicPartition(t, p): 45_000 if t == "big" else 1_000
             for t, top in snap.topics.items() for p in top.partitions}
    policy = Policy(capacity=CapacityDeclaration(default={"disk": Figure(100_000, INV)}))
    result = rebalance_goals(snap, GoalRequest(("replicas",)), sizes, policy)
    assert result.relieved > 0 and result.worthwhile
    after = apply_plan(snap, result.plan)
    on_one = sum(sizes[TopicPartition(t, p)] for t, top in after.topics.items() for p, part in top.partitions.items()
                 if 1 in part.replicas)
    assert on_one <= 80_000
