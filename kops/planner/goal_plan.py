"""A goal list's walk and its table, shared by `kops rebalance --goals` and `kops plan` (docs/design/goals.md §2, §6.4).

`kops plan` with a playbook's `rebalance: {goals: [...]}` first makes the play's forced changes (declared topics,
decommissions) as always, then walks the list over the result with the optimizer (kops/planner/optimizer.py), from
the brokers the play leaves eligible only: new brokers get their share, the decommissioned brokers' replicas end
where the goals want them, and partitions the play creates are placed by the goals too (they cost no bytes, so the
count goals move them first). The walk ends at a state where a second walk with the same goals finds nothing to do,
so `kops rebalance --goals` with the same list right after such a plan moves nothing.

Worked example: brokers 1-3 hold 6 replicas each, broker 4 is added with `goals: [replicas]`, tolerance 0: the
fair share is 4.5, the band [4, 5]; the walk moves the lightest replicas from the fullest brokers to broker 4 until
it holds 4 (5, 5, 4, 4), and the table reports replicas at 133% of the mean before, 111% after, lower bound 111%.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from kops.model.capacity import Capacities
from kops.model.goals import PREFERRED, broker_goals
from kops.model.partitions import TopicPartition
from kops.model.plan import GoalOutcome
from kops.model.snapshot import Snapshot
from kops.planner.goal_state import goal_state, with_elected
from kops.planner.goal_values import GoalFigure, GoalInputs, Measured, reports
from kops.planner.layout import Layout
from kops.planner.optimizer import Action, Spend, optimize
from kops.planner.preferred import leaders_after, preferred_elections

Replicas = dict[TopicPartition, tuple[int, ...]]


@dataclass(frozen=True)
class Loads:
    """What the goals read besides the assignment: sizes, write rates, consumer fan-out, capacities."""

    sizes: Mapping[TopicPartition, int]
    write: Mapping[TopicPartition, float]
    fanout: Mapping[str, int]
    caps: Capacities


@dataclass(frozen=True)
class GoalPlacement:
    after: Replicas  # every partition's replicas after the walk
    actions: tuple[Action, ...]
    outcomes: tuple[GoalOutcome, ...]
    converged: bool
    elected: tuple[TopicPartition, ...] = ()  # preferred-leader elections of partitions the walk left (preferred.py)


def replay(start: Mapping[TopicPartition, tuple[int, ...]], actions: Sequence[Action]) -> Replicas:
    """The assignment after `actions`, taken in order from `start`."""
    replicas = dict(start)
    for a in actions:
        current = replicas[a.tp]
        if a.leadership:
            replicas[a.tp] = (a.dest, *(b for b in current if b != a.dest))
        else:
            replicas[a.tp] = tuple(a.dest if b == a.source else b for b in current)
    return replicas


def place_by_goals(start: Mapping[TopicPartition, tuple[int, ...]], racks: Mapping[int, str | None], loads: Loads,
                   goals: tuple[str, ...], tolerance: float, pinned: Collection[TopicPartition],
                   snapshot: Snapshot | None = None) -> GoalPlacement:
    """`kops plan`'s walk: `goals` over `start` (the play's forced changes made), on the brokers of `racks` only,
    moving no partition of `pinned` (static or constrained placements, deletions pending, reassignments in flight);
    `tolerance` is the playbook's trigger. Unbounded: a plan does what its play declares. A goal inside the
    brokers (`disk_within_broker`) is the plan's step after the walk (kops/planner/log_dirs.py)."""
    goals = broker_goals(goals)
    state = goal_state(start, racks, loads.sizes, loads.write, loads.caps, loads.fanout)
    if snapshot is not None:
        state = with_elected(state, snapshot)
    state.pinned |= frozenset(pinned)
    begin, first = dict(state.replicas), state.measured()
    outcome = optimize(state, goals, tolerance=tolerance)
    after = dict(state.replicas)
    elected = preferred_elections(begin, after, state.inputs, state.pinned) if PREFERRED in goals else ()
    table = goal_table(goals, begin, after, state.inputs, outcome.actions, outcome.skipped, (first, state.measured()),
                       elected)
    return GoalPlacement(after, outcome.actions, table, outcome.converged, elected)


# a single balancer's goal as the walk names it: bytes by share of disk, then network in without raising the disk
ONE_GOAL = {"replicas": ("replicas",), "bytes": ("disk", "network_in")}


def walk_one(layout: Layout, brokers: Sequence[int], goal: str, tolerance: float,
             movable: Collection[TopicPartition] | None, spend: Spend | None = None,
             leaders: bool = False) -> tuple[Action, ...]:
    """A single `goal` (a play's `rebalance: {goal: ...}`, `kops rebalance --goal`) where a capacity is known, as a
    goal list of one: the walk brings brokers back within their limits first (kops/planner/relief.py) and keeps
    every move within them, which the count and byte balancers (kops/planner/rebalance.py) do not do at scale.
    Only `movable` partitions move (None: all); `leaders`: leadership is the walk's last goal (a play's plan), else
    the caller orders the leaders of what moved. `layout` takes the result."""
    assert layout.headroom is not None, "walk_one is the balancer of layouts with capacities"
    state = goal_state(layout.replicas, {b: layout.rack(b) for b in brokers}, layout.sizes, layout.write,
                       layout.headroom.caps, layout.fanout)
    if movable is not None:
        state.pinned |= frozenset(tp for tp in layout.replicas if tp not in movable)
    outcome = optimize(state, ONE_GOAL[goal] + ("leaders",) * leaders, spend, tolerance)
    layout.set_changed({a.tp for a in outcome.actions}, state.replicas)
    return outcome.actions


def goal_table(goals: tuple[str, ...], start: Mapping[TopicPartition, tuple[int, ...]],
               after: Mapping[TopicPartition, tuple[int, ...]], inputs: GoalInputs, actions: Sequence[Action],
               skipped: Mapping[str, str], measured: tuple[Measured, Measured] | None = None,
               elected: Collection[TopicPartition] = ()) -> tuple[GoalOutcome, ...]:
    """Per goal, in order: its figure before and after, its lower bound, the moves and leadership changes the walk
    spent on it, its imbalance before and after, and why it was skipped (if it was). `measured`: the loads and topic
    figure of `start` and `after` where the optimizer's state has them (GoalState.measured); `elected`: the
    preferred-leader elections the plan adds (kops/planner/preferred.py), counted as the goal's leadership changes."""
    at_start, at_end = measured if measured is not None else (None, None)
    (first, share_before), (last, share_after) = (
        reports(start, inputs, goals, at_start, inputs.leaders),
        reports(after, inputs, goals, at_end, leaders_after(start, after, inputs, elected)))
    before, now = {f.name: f for f in first}, {f.name: f for f in last}
    moves = Counter(a.goal for a in actions if not a.leadership)
    leads = Counter(a.goal for a in actions if a.leadership)
    leads[PREFERRED] += len(elected)
    shares = (share_before, share_after)

    def row(name: str) -> GoalOutcome:
        b: GoalFigure = before[name]
        return GoalOutcome(name, b.unit, b.value, now[name].value, b.lower_bound, moves[name], leads[name],
                           shares[0].get(name, 0.0), shares[1].get(name, 0.0), b.skipped or skipped.get(name))

    return tuple(row(g) for g in goals)
