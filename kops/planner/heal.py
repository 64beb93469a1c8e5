"""Healing: the replicas of brokers absent past `--heal-after` re-created on live brokers (docs/design/healing.md).

A decommission of brokers that are already gone: each replica on an absent broker is replaced, in its position,
by the least loaded live broker that keeps the partition's racks distinct and stays within its capacity limits
(`placement.replace`, as `brokers.decommission` places), so the replication factor comes back and is never
lowered. The partition's current leader, a live in-sync replica, is put first, so the preferred leader stays on
a copy that has the data. The plan is an ordinary one (`plan_targets`): throttles, batches, record, rollback;
Kafka drops the absent replica from the assignment only once the new one is in the ISR.

Healing goes before balancing in the same plan: the run's budget (`--max-moves`, `--max-bytes`, `--max-duration`
as bytes per broker port) is one `Budget` that healing spends first and the bounded rebalance's balancer
(`bounded.balance`) then spends what is left of, on partitions healing left alone; the time fit
(`bounded.fit`) gives up balancing moves before healing ones.

Worked example: brokers 1-4, broker 3 absent; `t-0` on [3, 1] led by 1 → broker 3's place goes to the least
loaded of 2 and 4 not sharing broker 1's rack, say 4 → [4, 1] → leader first: [1, 4]; one move [3,1] → [1,4].

`refusals` says why not to heal now: more absent brokers than allowed, a partition with no in-sync replica on a
live broker (kops never elects an unclean leader), a reassignment in flight, a snapshot not read whole, or
partitions under-replicated for another reason than an absent broker.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from kops.model.absence import absent_brokers
from kops.model.capacity import resolve
from kops.model.desired import Execution
from kops.model.partitions import TopicPartition
from kops.model.problems import Problem
from kops.model.snapshot import Snapshot
from kops.planner import placement
from kops.planner.bounded import Rebalance, Replan, Request, balance, fit, imbalance, loads
from kops.planner.budget import Budget, Limits
from kops.planner.goal_rebalance import Healed
from kops.planner.headroom import Headroom
from kops.planner.layout import Layout
from kops.planner.planner import PlanningError, Policy

HEAL_REASON = "heal absent broker(s) "  # each healing move's reason starts so: `heal absent broker(s) 4`


@dataclass(frozen=True)
class Healing(Rebalance):
    """A healing plan, as `kops rebalance` reports a run (the goal's imbalance before and after, over live
    brokers), and the absent brokers it re-homes replicas of (all of them, or as far as the budget went).
    Worth doing whenever it moves anything: the replication factor comes back whatever the balance."""

    brokers: tuple[int, ...] = ()  # absent brokers with at least one replica re-homed by the plan
    left: int = 0  # replicas of the brokers being healed that the budget left for the next run
    imbalance_healed: float | None = None  # the live brokers' after healing alone, before any balancing

    @property
    def worthwhile(self) -> bool:
        return self.plan.has_changes


def refusals(snapshot: Snapshot, absent: Collection[int], max_brokers: int) -> list[str]:
    """Reasons not to heal now (empty: heal)."""
    crowd = too_many(absent, max_brokers)
    reasons = [crowd] if crowd else []
    if not snapshot.complete:
        reasons.append(f"the cluster could not be read whole ({len(snapshot.problems)} problem(s))")
    in_flight = snapshot.in_flight()
    if in_flight:
        reasons.append(f"a reassignment of {len(in_flight)} partition(s) is in flight")
    offline = snapshot.offline()
    if offline:
        reasons.append(f"{len(offline)} partition(s) have no in-sync replica on a live broker "
                       f"({_named([str(tp) for tp in offline])}): kops never elects an unclean leader")
    other = [tp for tp in snapshot.under_replicated() if not _explained(snapshot, tp, absent)]
    if other:
        reasons.append(f"{len(other)} partition(s) under-replicated with every replica's broker live "
                       f"({_named([str(tp) for tp in other])})")
    return reasons


def too_many(absent: Collection[int], max_brokers: int) -> str | None:
    """Why nothing heals while more than `max_brokers` brokers are absent (None: not that many)."""
    if len(absent) <= max_brokers:
        return None
    return (f"{len(absent)} brokers absent ({', '.join(map(str, sorted(absent)))}), more than --heal-max-brokers "
            f"{max_brokers}: an outage for people, not a job for cron")


def _explained(snapshot: Snapshot, tp: TopicPartition, absent: Collection[int]) -> bool:
    """Under-replicated only because replicas on absent brokers are out of the ISR."""
    part = snapshot.partition(tp)
    return part is not None and all(b in absent for b in part.target_replicas if b not in part.isr)


def _named(items: list[str]) -> str:
    return ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")


def heal(snapshot: Snapshot, brokers: Collection[int], request: Request = Request(),
         sizes: dict[TopicPartition, int] | None = None, policy: Policy = Policy(), cluster: str = "cluster",
         execution: Execution | None = None, balancing: bool = True) -> Healing:
    """One plan that re-homes the replicas of `brokers` (absent past the duration) and then balances the live
    brokers for `request.goal` with what is left of `request.limits`, which apply to the whole: one Budget counts
    both (moves, bytes, bytes per broker port for time), and the time fit gives up balancing before healing.
    Balancing is kept only when what the balancer made buys `request.min_improvement` (judged before the time
    fit); it never moves a partition healing changed or one still on an absent broker. Raises PlanningError
    naming the partition when no live broker can take a replica. Without `balancing` (kops plan: a playbook
    balances within its own tolerance), the healing alone."""
    layout = Layout(snapshot, dict(sizes or {}), policy.write, policy.fanout)
    caps = resolve(policy.capacity, snapshot)
    if caps.known:
        layout.headroom = Headroom(caps, layout)
    live, goal, limits = sorted(snapshot.live_broker_ids), request.goal, request.limits
    rate = policy.port_rate(execution.throttle if execution else None)
    budget = Budget(limits, {tp: _serving(snapshot, tp, r) for tp, r in layout.replicas.items() if r}, rate)
    before = imbalance(loads(layout, goal), live)
    original = dict(layout.replicas)
    held = {b: len(layout.by_broker.get(b, {})) for b in brokers}
    healed = _rehome(snapshot, layout, sorted(brokers), live, budget)
    absent = frozenset(absent_brokers(snapshot))
    kept = frozenset(healed) | {tp for tp, r in layout.replicas.items() if not absent.isdisjoint(r)}
    named = HEAL_REASON + ", ".join(map(str, sorted(b for b in brokers if b in healed.values())))
    replan = Replan(snapshot, original, f"rebalance {goal}", policy, cluster, execution, dict.fromkeys(healed, named))
    healing_only = dict(layout.replicas)
    middle = imbalance(loads(layout, goal), live)
    if balancing:
        balance(snapshot, layout, live, goal, budget, kept)
        if middle - imbalance(loads(layout, goal), live) < max(request.min_improvement, 1e-9):
            for tp, replicas in healing_only.items():  # balancing not worth it: the healing alone
                if layout.replicas[tp] != replicas:
                    layout.set(tp, replicas)
    plan = fit(replan, layout, limits, rate, kept)
    left = {b: len(layout.by_broker.get(b, {})) for b in brokers}
    after = imbalance(loads(layout, goal), live)
    balanced = any(m.tp not in healed for m in plan.moves)  # the fit gives those up first: healing then whole
    return Healing(plan, goal, before, after, request.min_improvement,
                   tuple(sorted(b for b in brokers if left[b] < held[b])), sum(left.values()),
                   middle if balanced else after)


def _rehome(snapshot: Snapshot, layout: Layout, brokers: list[int], live: list[int],
            budget: Budget) -> dict[TopicPartition, int]:
    """Each replica on `brokers` put, in its place, on the least loaded live broker that keeps racks distinct,
    fits its capacity and, with --max-duration, whose port (and the serving leader's) the budget still allows;
    those the budget cannot pay for stay for the next run. The partitions re-homed, with the broker each left."""
    rack_aware = bool(snapshot.brokers) and all(b.rack for b in snapshot.brokers)
    timed = budget.port_bytes is not None  # then each replica's eligible brokers depend on the ports' room
    index = None if timed else placement.LeastLoaded(layout, live)
    healed: dict[TopicPartition, int] = {}
    for broker in brokers:
        for tp in sorted(layout.by_broker.get(broker, {})):
            size = layout.size(tp)
            eligible = [b for b in live if budget.allows(tp, size, b)] if timed else live
            if not eligible or not budget.allows(tp, size, eligible[0]):
                continue
            first = layout.replicas[tp][0]
            try:
                dest = placement.replace(layout, tp, broker, eligible, rack_aware, index)
            except ValueError as exc:
                if timed and len(eligible) < len(live):
                    continue  # perhaps a broker whose port is full could take it: the next run tries again
                raise PlanningError([Problem(None, f"cannot re-home {tp} off absent broker {broker}: {exc}",
                                             "start the broker again, or add a broker that can take it")]) from None
            budget.spend(tp, size, dest)
            if first == broker:  # the new copy took the preferred leader's place
                layout.set(tp, _leader_first(snapshot, tp, layout.replicas[tp]))
            healed[tp] = broker
    return healed


def _serving(snapshot: Snapshot, tp: TopicPartition, replicas: tuple[int, ...]) -> int:
    """The broker that serves the copy of a partition's data: its leader, as the plan's moves count it."""
    part = snapshot.partition(tp)
    return part.leader if part is not None and part.leader in replicas else replicas[0]


def _leader_first(snapshot: Snapshot, tp: TopicPartition, replicas: tuple[int, ...]) -> tuple[int, ...]:
    """The partition's current leader first, where it is one of `replicas`: the new copy is not in sync yet."""
    part = snapshot.partition(tp)
    leader = part.leader if part is not None else None
    if leader is None or leader not in replicas or replicas[0] == leader:
        return replicas
    return (leader, *(b for b in replicas if b != leader))


def healed_first(snapshot: Snapshot, brokers: Collection[int], limits: Limits,
                 sizes: dict[TopicPartition, int] | None = None, policy: Policy = Policy(), cluster: str = "cluster",
                 execution: Execution | None = None) -> Healed:
    """The healing of a goal-list rebalance (`--heal-after` with `--goals`): re-homed as `heal` does within
    `limits`, for `rebalance_goals` to walk the list from where it leaves the cluster with what is left."""
    healing = heal(snapshot, brokers, Request("replicas", limits, 0.0), sizes, policy, cluster, execution,
                   balancing=False)
    moves = healing.plan.moves
    return Healed({m.tp: m.to_replicas for m in moves}, {m.tp: m.reason for m in moves}, healing.brokers,
                  healing.left, healing.plan.summary.moves, healing.plan.summary.bytes)
