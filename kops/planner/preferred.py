"""The goal `preferred_leaders` (Cruise Control's PreferredLeaderElectionGoal): partitions led by another replica
than their first get a preferred-leader election, the one Kafka's own `auto.leader.rebalance.enable` makes, and only
where the first replica is in sync (Kafka would refuse the rest: PREFERRED_LEADER_NOT_AVAILABLE). Every plan elects
the partitions it moves already; this goal adds those the walk left where they were, and it comes last in a goal
list because an election moves leadership, which the leadership goals above it count by first replica anyway
(docs/design/goals.md §3, §4). The rollback cannot elect the previous leader back: the plan says so.
"""

from __future__ import annotations

from collections.abc import Collection

from kops.model.partitions import TopicPartition
from kops.planner.goal_values import Assignment, GoalInputs


def preferred_elections(start: Assignment, after: Assignment, inputs: GoalInputs, pinned: Collection[TopicPartition],
                        allowed: int | None = None) -> tuple[TopicPartition, ...]:
    """Partitions `after` leaves as in `start` (not `pinned`) whose elected leader is not their first replica and
    whose first replica is in sync: at most `allowed` (the leadership budget left), in partition order."""
    leaders, isr = inputs.leaders, inputs.isr
    wanted = sorted(tp for tp, leader in leaders.items()
                    if (r := after.get(tp)) and r == start.get(tp) and leader != r[0] and r[0] in isr.get(tp, ())
                    and tp not in pinned)
    return tuple(wanted if allowed is None else wanted[:max(0, allowed)])


def leaders_after(start: Assignment, after: Assignment, inputs: GoalInputs,
                  elected: Collection[TopicPartition]) -> dict[TopicPartition, int]:
    """Who leads after the plan, where it is not the first replica: a partition the plan changes or elects ends led
    by its first replica (every plan elects what it moves), any other keeps its leader."""
    chosen = set(elected)
    return {tp: leader for tp, leader in inputs.leaders.items()
            if tp not in chosen and after.get(tp) == start.get(tp)}
