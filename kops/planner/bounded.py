"""A rebalance bounded by moves, bytes and time, and worth doing only above a threshold (`kops rebalance`).

Made for cron: each run spends at most its budget on the moves that buy the most balance per byte (the
replica balancer moves the smallest partition that fits, the bytes balancer the one that best fills a gap),
then says how far the chosen goal's imbalance fell. The imbalance is the share of the load that sits above
the brokers' fair share — Σ max(0, load − mean) / Σ load over live brokers: 0 is even, 0.25 means a quarter of
the replicas (leaders, bytes) would have to move to even it out. Every move from a broker above the mean to
one below it lowers it, so small bounded runs show their progress. Below `min_improvement` a run does nothing.
Where every broker's disk capacity is known, `bytes` is evened by share of capacity and its fair share is
u* × the broker's disk limit, u* = Σ bytes ÷ Σ limits (capacity.md §6.3); where any capacity is known every move
keeps its destination within its limits (disk, network in, max_replicas; leaders: network out).

`readiness` is why a run must not start now: a reassignment in flight, partitions offline or
under-replicated, replicas on brokers that are gone, a snapshot that could not be read whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kops.model.capacity import resolve
from kops.model.desired import Execution
from kops.model.partitions import TopicPartition
from kops.model.plan import Plan
from kops.model.snapshot import Snapshot
from kops.planner.actions import Spend
from kops.planner.budget import Budget, Limits
from kops.planner.goal_plan import walk_one
from kops.planner.headroom import Headroom
from kops.planner.layout import Layout
from kops.planner.leaders import balance_leaders
from kops.planner.planner import Policy, plan_targets
from kops.planner.rebalance import balance_bytes, balance_replicas, disk_share
from kops.planner.time_fit import moves_to_drop

GOALS = ("replicas", "leaders", "bytes")


@dataclass(frozen=True)
class Request:
    goal: str = "replicas"
    limits: Limits = Limits()
    min_improvement: float = 0.05


@dataclass(frozen=True)
class Rebalance:
    plan: Plan
    goal: str
    imbalance_before: float
    imbalance_after: float
    min_improvement: float

    @property
    def improvement(self) -> float:
        return self.imbalance_before - self.imbalance_after

    @property
    def worthwhile(self) -> bool:
        return self.plan.has_changes and self.improvement > 0 and self.improvement >= self.min_improvement


def loads(layout: Layout, goal: str) -> dict[int, int]:
    return {"replicas": layout.replica_count, "leaders": layout.leader_count, "bytes": layout.bytes}[goal]


def imbalance(load: Mapping[int, float], brokers: list[int], scale: Mapping[int, float] | None = None) -> float:
    """Σ max(0, load − fair share) / Σ load over `brokers` (0 when there is nothing to balance). The fair share is
    the mean, or, given each broker's limit as `scale`, the load by share of capacity (disk utilization, as
    `--goal bytes` evens it where every disk is known: capacity.md §6.3)."""
    total = sum(load.get(b, 0) for b in brokers)
    if not brokers or total == 0:
        return 0.0
    level = total / (sum(scale[b] for b in brokers) if scale is not None else len(brokers))
    return round(sum(max(0.0, load.get(b, 0) - level * (scale[b] if scale is not None else 1))
                     for b in brokers) / total, 6)


def readiness(snapshot: Snapshot) -> list[str]:
    """Reasons not to start a rebalance now (empty: go)."""
    reasons = []

    def named(items: list[str]) -> str:
        return ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")

    if not snapshot.complete:
        reasons.append(f"the cluster could not be read whole ({len(snapshot.problems)} problem(s), "
                       f"first: {snapshot.problems[0].path}: {snapshot.problems[0].message})")
    in_flight = snapshot.in_flight()
    if in_flight:
        reasons.append(f"a reassignment of {len(in_flight)} partition(s) is in flight "
                       f"({named([f'{m.topic}-{m.partition}' for m in in_flight])})")
    offline = snapshot.offline()
    if offline:
        reasons.append(f"{len(offline)} partition(s) offline ({named([str(tp) for tp in offline])})")
    under = snapshot.under_replicated()
    if under:
        reasons.append(f"{len(under)} partition(s) under-replicated ({named([str(tp) for tp in under])})")
    live = snapshot.live_broker_ids
    gone = sorted({b for t in snapshot.topics.values() for p in t.partitions.values() for b in p.replicas} - live)
    if gone:
        reasons.append(f"replicas on broker(s) {gone}, which are not registered")
    return reasons


FIT_ATTEMPTS = 3  # rounds of trimming the moves that set the batches' durations before the last resort


def rebalance(snapshot: Snapshot, request: Request, sizes: dict[TopicPartition, int] | None = None,
              policy: Policy = Policy(), cluster: str = "cluster", execution: Execution | None = None) -> Rebalance:
    """The bounded rebalance of `snapshot` for `request.goal`, as a plan (possibly empty)."""
    if request.goal not in GOALS:
        raise ValueError(f"unknown goal {request.goal!r}: one of {', '.join(GOALS)}")
    limits = request.limits
    brokers = sorted(snapshot.live_broker_ids)
    rate = policy.port_rate(execution.throttle if execution else None)
    layout = Layout(snapshot, dict(sizes or {}), policy.write, policy.fanout)
    caps = resolve(policy.capacity, snapshot)
    if caps.known:  # every move keeps its destination within its limits (capacity.md §6.3)
        layout.headroom = Headroom(caps, layout)
    scale = disk_share(layout, brokers).scale if request.goal == "bytes" else None
    before = imbalance(loads(layout, request.goal), brokers, scale)
    original = dict(layout.replicas)
    leaders = {tp: r[0] for tp, r in original.items() if r}
    balance(snapshot, layout, brokers, request.goal, Budget(limits, leaders, rate))
    replan = Replan(snapshot, original, f"rebalance {request.goal}", policy, cluster, execution)
    result = fit(replan, layout, limits, rate)
    after = imbalance(loads(layout, request.goal), brokers, scale)
    return Rebalance(result, request.goal, before, after, request.min_improvement)


def _fits(plan: Plan, limits: Limits) -> bool:
    return limits.max_seconds is None or (plan.summary.estimated_seconds or 0.0) <= limits.max_seconds


def balance(snapshot: Snapshot, layout: Layout, brokers: list[int], goal: str, budget: Budget,
            kept: frozenset[TopicPartition] = frozenset()) -> None:
    """Spend what is left of `budget` on the goal's balancer, in `layout`, moving no partition of `kept` (those
    a run changed before balancing: healing, kops/planner/heal.py) nor of a topic being deleted."""
    limits = budget.limits
    rack_aware = bool(snapshot.brokers) and all(b.rack for b in snapshot.brokers)
    deleting = set(snapshot.pending_deletions)
    movable = {tp for tp in layout.replicas if tp.topic not in deleting and tp not in kept}
    if goal == "leaders":
        left = None if limits.max_moves is None else limits.max_moves - budget.moves
        if left is None or left > 0:
            balance_leaders(layout, brokers, movable, max_changes=left)
        return
    before = {tp: layout.replicas[tp] for tp in movable}
    if layout.headroom is not None:  # capacities known: limits first, then the goal (walk_one)
        walk_one(layout, brokers, goal, 0.0, movable, Spend.left(budget.limits, budget.moves, budget.bytes))
    else:
        balancer = balance_replicas if goal == "replicas" else balance_bytes
        balancer(layout, brokers, 0.0, movable=movable, rack_aware=rack_aware, budget=budget)
    changed = {tp for tp, r in before.items() if set(layout.replicas[tp]) != set(r)}
    if changed:
        balance_leaders(layout, brokers, changed)  # order only: moves nothing more


@dataclass(frozen=True)
class Replan:
    """How a layout becomes a plan: its moves from `original`, each for `reasons`' reason or `reason`."""

    snapshot: Snapshot
    original: dict[TopicPartition, tuple[int, ...]]
    reason: str
    policy: Policy
    cluster: str
    execution: Execution | None
    reasons: Mapping[TopicPartition, str] = field(default_factory=dict)

    def plan(self, layout: Layout) -> Plan:
        original = self.original
        targets = {tp: r for tp, r in layout.replicas.items() if r != original[tp]}
        return plan_targets(self.snapshot, targets, self.cluster, execution=self.execution, policy=self.policy,
                            sizes=layout.sizes, reason=self.reason, reasons=self.reasons)


def fit(replan: Replan, layout: Layout, limits: Limits, rate: float,
        kept: frozenset[TopicPartition] = frozenset()) -> Plan:
    """The plan of `layout`, its moves trimmed until its estimate fits `limits.max_seconds`: the balancer budgets
    time as bytes per broker port and batching adds to that, so the moves on the ports that set the batches'
    durations are put back (kops/planner/time_fit.py), re-planned, and checked again; those of `kept` (healing)
    only where the ports that set the durations carry nothing else."""
    result = replan.plan(layout)
    for _ in range(FIT_ATTEMPTS):
        if _fits(result, limits):
            break
        dropped = moves_to_drop(result.batches, limits.max_seconds or 0.0, rate)
        for tp in dropped - kept or dropped:
            layout.set(tp, replan.original[tp])
        result = replan.plan(layout)
    while not _fits(result, limits):  # the last resort: drop the largest tenth of the moves until it fits
        data = [m for m in result.moves if m.kind == "data"]
        moved = sorted([m for m in data if m.tp not in kept] or data, key=lambda m: (m.copied_bytes, m.tp))
        if not moved:
            break
        for m in moved[-max(1, len(moved) // 10):]:
            layout.set(m.tp, replan.original[m.tp])
        result = replan.plan(layout)
    return result
