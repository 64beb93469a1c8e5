"""A rebalance bounded by moves, bytes and time, and worth doing only above a threshold (`kops rebalance`).

Made for cron: each run spends at most its budget on the moves that buy the most balance per byte (the
replica balancer moves the smallest partition that fits, the bytes balancer the one that best fills a gap),
then says how far the chosen goal's imbalance fell. The imbalance is the share of the load that sits above
the brokers' fair share — Σ max(0, load − mean) / Σ load over live brokers: 0 is even, 0.25 means a quarter of
the replicas (leaders, bytes) would have to move to even it out. Every move from a broker above the mean to
one below it lowers it, so small bounded runs show their progress. Below `min_improvement` a run does nothing.

`readiness` is why a run must not start now: a reassignment in flight, partitions offline or
under-replicated, replicas on brokers that are gone, a snapshot that could not be read whole.
"""

from __future__ import annotations

from dataclasses import dataclass

from kops.model.desired import Execution
from kops.model.partitions import TopicPartition
from kops.model.plan import Plan
from kops.model.snapshot import Snapshot
from kops.planner.budget import Budget, Limits
from kops.planner.layout import Layout
from kops.planner.leaders import balance_leaders
from kops.planner.planner import Policy, plan_targets
from kops.planner.rebalance import balance_bytes, balance_replicas
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


def imbalance(load: dict[int, int], brokers: list[int]) -> float:
    """Σ max(0, load − mean) / Σ load over `brokers` (0 when there is nothing to balance)."""
    total = sum(load.get(b, 0) for b in brokers)
    if not brokers or total == 0:
        return 0.0
    mean = total / len(brokers)
    return round(sum(max(0.0, load.get(b, 0) - mean) for b in brokers) / total, 6)


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
    """The bounded rebalance of `snapshot` for `request.goal`, as a plan (possibly empty).

    The balancer budgets time as bytes per broker port; batching adds to that, so a plan can estimate longer
    than `max_seconds`: then the moves on the ports that set the batches' durations are trimmed
    (kops/planner/time_fit.py), re-planned, and checked again."""
    if request.goal not in GOALS:
        raise ValueError(f"unknown goal {request.goal!r}: one of {', '.join(GOALS)}")
    limits = request.limits
    brokers = sorted(snapshot.live_broker_ids)
    rate = policy.port_rate(execution.throttle if execution else None)
    layout = Layout(snapshot, dict(sizes or {}))
    before = imbalance(loads(layout, request.goal), brokers)
    original = _balanced(snapshot, layout, brokers, request.goal, limits, rate)
    result = _plan(snapshot, layout, original, request.goal, policy, cluster, execution)
    for _ in range(FIT_ATTEMPTS):
        if limits.max_seconds is None or _fits(result, limits):
            break
        for tp in moves_to_drop(result.batches, limits.max_seconds, rate):
            layout.set(tp, original[tp])
        result = _plan(snapshot, layout, original, request.goal, policy, cluster, execution)
    if not _fits(result, limits):
        result = _drop_until_it_fits(result, snapshot, layout, original, request.goal, limits, policy, cluster,
                                     execution)
    after = imbalance(loads(layout, request.goal), brokers)
    return Rebalance(result, request.goal, before, after, request.min_improvement)


def _fits(plan: Plan, limits: Limits) -> bool:
    return limits.max_seconds is None or (plan.summary.estimated_seconds or 0.0) <= limits.max_seconds


def _balanced(snapshot: Snapshot, layout: Layout, brokers: list[int], goal: str, limits: Limits,
              port_rate: float) -> dict[TopicPartition, tuple[int, ...]]:
    """Spend `limits` on the goal's balancer, in `layout`; the replicas it started from."""
    original = dict(layout.replicas)
    rack_aware = bool(snapshot.brokers) and all(b.rack for b in snapshot.brokers)
    deleting = set(snapshot.pending_deletions)
    movable = {tp for tp in layout.replicas if tp.topic not in deleting}
    if goal == "leaders":
        balance_leaders(layout, brokers, movable, max_changes=limits.max_moves)
        return original
    leaders = {tp: r[0] for tp, r in original.items() if r}
    budget = Budget(limits, leaders, port_rate)
    balancer = balance_replicas if goal == "replicas" else balance_bytes
    balancer(layout, brokers, 0.0, movable=movable, rack_aware=rack_aware, budget=budget)
    changed = {tp for tp, r in layout.replicas.items() if set(r) != set(original[tp])}
    if changed:
        balance_leaders(layout, brokers, changed)  # order only: moves nothing more
    return original


def _plan(snapshot: Snapshot, layout: Layout, original: dict[TopicPartition, tuple[int, ...]], goal: str,
          policy: Policy, cluster: str, execution: Execution | None) -> Plan:
    targets = {tp: r for tp, r in layout.replicas.items() if r != original[tp]}
    return plan_targets(snapshot, targets, cluster, execution=execution, policy=policy, sizes=layout.sizes,
                        reason=f"rebalance {goal}")


def _drop_until_it_fits(result: Plan, snapshot: Snapshot, layout: Layout,
                        original: dict[TopicPartition, tuple[int, ...]], goal: str, limits: Limits, policy: Policy,
                        cluster: str, execution: Execution | None) -> Plan:
    """The last resort: drop the largest tenth of the moves until the estimate fits."""
    while not _fits(result, limits):
        moved = sorted((m for m in result.moves if m.kind == "data"), key=lambda m: (m.copied_bytes, m.tp))
        if not moved:
            break
        for m in moved[-max(1, len(moved) // 10):]:
            layout.set(m.tp, original[m.tp])
        result = _plan(snapshot, layout, original, goal, policy, cluster, execution)
    return result
