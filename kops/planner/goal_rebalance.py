"""`kops rebalance --goals`: one bounded plan for a prioritized goal list (docs/design/goals.md).

The optimizer walks the list over the cluster as it is (kops/planner/optimizer.py) within the run's move, leader-
move and byte budgets; the plan is then the difference, assembled as any plan of given targets is (batches,
throttles, rollback, capacity checks at every batch peak). Where the plan's estimate exceeds `--max-duration`, the
longest prefix of the walk's actions whose plan fits is kept, found by bisection: every prefix is a state the walk
passed through, within every band and limit it had reached (a step of two actions is kept whole). The report per
goal is its figure before and after, its lower bound and what was spent on it (`GoalOutcome`), which the plan
carries as `summary.goals`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from kops.model.capacity import Capacities, resolve
from kops.model.desired import Execution
from kops.model.goals import DISK_WITHIN_BROKER, PREFERRED, broker_goals
from kops.model.partitions import TopicPartition
from kops.model.plan import GoalOutcome, Plan
from kops.model.problems import Problem
from kops.model.snapshot import Snapshot
from kops.planner.budget import Limits
from kops.planner.goal_plan import goal_table, replay
from kops.planner.goal_state import GoalState, assignment_of, goal_state, state_of, with_elected
from kops.planner.intra_broker import band
from kops.planner.log_dirs import place_dirs
from kops.planner.optimizer import Action, Spend, optimize
from kops.planner.planner import PlanningError, Policy, plan_targets
from kops.planner.preferred import preferred_elections
from kops.planner.relief import RELIEF_GOALS


@dataclass(frozen=True)
class GoalRequest:
    goals: tuple[str, ...]
    limits: Limits = Limits()
    min_improvement: float = 0.05  # percentage points of the first goal that gains, as a fraction (0.05: 5 points)
    max_leader_moves: int | None = None


@dataclass(frozen=True)
class Healed:
    """What healing did before the walk (kops/planner/heal.py, `--heal-after` with `--goals`): each re-homed
    partition's replicas and why, the absent brokers it re-homed replicas of, those left for the next run, and the
    budget it spent first."""

    targets: Mapping[TopicPartition, tuple[int, ...]]
    reasons: Mapping[TopicPartition, str]
    brokers: tuple[int, ...]
    left: int
    moves: int
    bytes: int


@dataclass(frozen=True)
class GoalRebalance:
    plan: Plan
    outcomes: tuple[GoalOutcome, ...]
    converged: bool
    min_improvement: float
    relieved: int = 0  # actions that brought a broker back within a capacity limit (kops/planner/relief.py)
    healed: tuple[int, ...] = ()  # absent brokers whose replicas the plan re-homes (`Healed.brokers`)

    @property
    def _first(self) -> GoalOutcome | None:
        return next((o for o in self.outcomes if o.skipped is None), None)

    @property
    def imbalance_before(self) -> float:
        """The first goal's, for the summary's existing fields (each goal's is in `outcomes`)."""
        return self._first.imbalance_before if self._first else 0.0

    @property
    def imbalance_after(self) -> float:
        return self._first.imbalance_after if self._first else 0.0

    @property
    def improvement(self) -> float:
        """The largest fall of any goal's imbalance (no goal rises: the walk never worsens one)."""
        return max((o.imbalance_before - o.imbalance_after for o in self.outcomes if o.skipped is None), default=0.0)

    @property
    def worthwhile(self) -> bool:
        """A plan that brings a broker back within a limit is worth applying whatever the goals gain, and so is
        one with disk moves (`disk_within_broker` makes them only for a broker's dirs out of their band)."""
        return self.plan.has_changes and (self.relieved > 0 or bool(self.healed) or bool(self.plan.disk_moves)
                                          or self.improvement > 0 and self.improvement >= self.min_improvement)


def _plan(snapshot: Snapshot, start: Mapping[TopicPartition, tuple[int, ...]], after: Mapping[TopicPartition,
          tuple[int, ...]], reasons: Mapping[TopicPartition, str], context: tuple[Policy, str, Execution | None],
          sizes: Mapping[TopicPartition, int], elected: tuple[TopicPartition, ...]) -> Plan:
    """The plan that takes the cluster (`start`: the snapshot's assignment) to `after`."""
    policy, cluster, execution = context
    targets = {tp: r for tp, r in after.items() if r != start[tp]}
    return plan_targets(snapshot, targets, cluster, execution=execution, policy=policy, sizes=dict(sizes),
                        reason="rebalance goals", reasons={tp: reasons[tp] for tp in targets}, elect=elected)


def _within(plan: Plan, limits: Limits) -> bool:
    return limits.max_seconds is None or (plan.summary.estimated_seconds or 0.0) <= limits.max_seconds


class PlanOf:
    """The plan of the first k actions, made once per k: the walk's actions replayed from `start` (where healing
    left the cluster, else as it is), diffed against the snapshot's assignment."""

    def __init__(self, snapshot: Snapshot, start: dict[TopicPartition, tuple[int, ...]], actions: tuple[Action, ...],
                 context: tuple[Policy, str, Execution | None], sizes: Mapping[TopicPartition, int],
                 elected: tuple[TopicPartition, ...] = (), healed: Healed | None = None) -> None:
        self.snapshot, self.start, self.actions, self.context, self.sizes = snapshot, start, actions, context, sizes
        self.elected = elected
        self.reasons: dict[TopicPartition, str] = dict(healed.reasons) if healed is not None else {}
        self.base = assignment_of(snapshot) if healed is not None else start  # what the plan's moves start from
        for a in actions:  # the reason of a partition is the first goal that changed it
            self.reasons.setdefault(a.tp, f"rebalance {a.goal}")

    def __call__(self, k: int) -> Plan:
        after = replay(self.start, self.actions[:k])
        return _plan(self.snapshot, self.base, after, self.reasons, self.context, self.sizes, self.elected)


def _fitted(actions: tuple[Action, ...], plan_of: PlanOf, limits: Limits) -> tuple[Plan, int]:
    """The plan of the longest prefix of `actions` within `limits.max_seconds`, and how many actions it keeps. A
    prefix ends only where a step of the walk ends: half a swap can leave its destination over a limit the walk
    checked for the whole swap, and half a relay a broker a leader above where it started."""
    whole = plan_of(len(actions))
    if _within(whole, limits):
        return whole, len(actions)
    cuts = [k for k in range(len(actions)) if not actions[k].joined]  # before action k: a step's end (0 included)
    low, high, best = 1, len(cuts) - 1, plan_of(0)
    kept = 0
    while low <= high:
        middle = (low + high + 1) // 2
        candidate = plan_of(cuts[middle])
        if _within(candidate, limits):
            best, kept, low = candidate, cuts[middle], middle + 1
        else:
            high = middle - 1
    return best, kept


def rebalance_goals(snapshot: Snapshot, request: GoalRequest, sizes: Mapping[TopicPartition, int] | None = None,
                    policy: Policy = Policy(), cluster: str = "cluster", execution: Execution | None = None,
                    healed: Healed | None = None) -> GoalRebalance:
    """The bounded rebalance of `snapshot` for `request.goals`, as a plan (possibly empty), with its goal table.
    With `healed`, the walk starts where healing left the cluster, never moves what healing moved (nor what still
    sits on an absent broker), and spends what healing left of the budget."""
    sizes = dict(sizes or {})
    caps = resolve(policy.capacity, snapshot)
    state = _start(snapshot, sizes, policy, caps, healed)
    start, first = dict(state.replicas), state.measured()
    limits = request.limits
    goals = broker_goals(request.goals)  # a goal inside the brokers is a step after the walk
    spend = Spend.left(limits, *((healed.moves, healed.bytes) if healed is not None else (0, 0)),
                       request.max_leader_moves)  # the run's budget, less what healing spent first
    outcome = optimize(state, goals, spend)
    elected = _elected(goals, start, state, request.max_leader_moves, spend)
    plan_of = PlanOf(snapshot, start, outcome.actions, (policy, cluster, execution), sizes, elected, healed)
    plan, kept = _fitted(outcome.actions, plan_of, limits)
    after = replay(start, outcome.actions[:kept])
    measured = (first, state.measured()) if kept == len(outcome.actions) else None  # a prefix: not the state's
    table = goal_table(goals, start, after, state.inputs, outcome.actions[:kept], outcome.skipped, measured, elected)
    plan = replace(plan, summary=replace(plan.summary, goals=table))  # the plan file carries the table
    if DISK_WITHIN_BROKER in request.goals:
        plan = _dirs_evened(plan, snapshot, sizes, policy, execution)
    relieved = sum(1 for a in outcome.actions[:kept] if a.goal in RELIEF_GOALS)
    return GoalRebalance(plan, table, outcome.converged and kept == len(outcome.actions), request.min_improvement,
                         relieved, healed.brokers if healed is not None and healed.targets else ())


def _start(snapshot: Snapshot, sizes: Mapping[TopicPartition, int], policy: Policy, caps: Capacities,
           healed: Healed | None) -> GoalState:
    """The walk's state: the cluster as it is, or as healing leaves it, with healed partitions and those still
    on an absent broker pinned."""
    if healed is None:
        return state_of(snapshot, sizes, policy.write, caps, policy.fanout)
    assignment = assignment_of(snapshot) | dict(healed.targets)
    racks = {b.id: b.rack for b in snapshot.brokers}
    state = with_elected(goal_state(assignment, racks, sizes, policy.write, caps, policy.fanout), snapshot)
    registered = set(racks)  # healed partitions, and those still on an absent broker, stay where they are
    state.pinned |= frozenset(healed.targets) | {tp for tp, r in assignment.items() if not registered.issuperset(r)}
    return state


def _elected(goals: tuple[str, ...], start: Mapping[TopicPartition, tuple[int, ...]], state: GoalState,
             max_leader_moves: int | None, spend: Spend) -> tuple[TopicPartition, ...]:
    """The goal `preferred_leaders`: elections of the partitions the walk left, within the leadership budget the
    walk did not spend (partitions it left in every prefix `_fitted` may keep, so each prefix's plan takes them)."""
    if PREFERRED not in goals:
        return ()
    left = None if max_leader_moves is None else max_leader_moves - spend.leader_moves
    return preferred_elections(start, state.replicas, state.inputs, (), left)


def _dirs_evened(plan: Plan, snapshot: Snapshot, sizes: Mapping[TopicPartition, int], policy: Policy,
                 execution: Execution | None) -> Plan:
    """The goal `disk_within_broker` after the walk: each broker's log dirs evened by disk moves (Cruise Control's
    band, kops/planner/intra_broker.py), new replicas born in the dir with the most room."""
    declared = execution.throttle if execution is not None else None
    throttle = policy.throttle if policy.throttle is not None else declared
    caps = resolve(policy.capacity, snapshot)
    placed, problems = place_dirs(plan, snapshot, sizes, {}, caps.limits, band(0.0),
                                  (throttle, policy.port_rate(declared)))
    if problems:  # no dir is removed: only a metadata.version without JBOD refuses
        raise PlanningError([Problem(None, line) for line in problems])
    return placed
