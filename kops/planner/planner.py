"""`plan(desired, snapshot, sizes, policy)`: the difference between what is declared and what is, as a Plan.

Steps, in order, all on one working `Layout`:
1. topics declared absent are deleted (only with allow_delete, validated upstream);
2. declared topics: creations placed per strategy against the existing load; partition additions; KIP-253
   partition decreases where the cluster advertises them; replication factor up (keep every replica, add the
   fewest, rack-aware) or down (keep the leader, drop the fewest); replicas on brokers a placement excludes
   move; static assignments are taken as written; config overrides diffed;
3. `brokers.decommission`: exactly the replicas on those brokers move, each to the least loaded broker that
   keeps the partition's racks distinct;
4. `brokers.add`: replicas move from the most loaded brokers onto the new ones until counts are within ±1;
5. `rebalance`: replicas, bytes or only leaders, within the declared tolerance;
6. leaders: the replica order of every changed partition (and of all partitions when the play reshapes the
   cluster) is chosen so preferred leaders spread evenly (`leaders.balance_leaders`);
7. the moves are the partitions whose replica list differs from the snapshot's; they are batched with
   throttles and estimates; the rollback is their inverse in reverse order.
With a goal list (`rebalance: {goals: [...]}`), steps 4-6 are one walk of the list over what steps 1-3 left
(kops/planner/goal_plan.py): new brokers' share, the rebalance and leadership alike, created partitions placed by
it too, so `kops rebalance` with the same goals finds nothing left to do; the plan carries the goal table.

Worked example: brokers 1–3 in racks a, b, c; topic `t` partition 0 on [1, 2] is declared with
replication_factor 3 → grow keeps [1, 2] and adds broker 3 (the only rack unused) → one move [1,2] → [1,2,3]
with 1 × size bytes, leader list `0:1,0:2`, follower list `0:3`, rollback [1,2,3] → [1,2].
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from kops import __version__
from kops.bulk import ascending, collector_paused, in_key_order
from kops.model import topic_configs
from kops.model.capacity import Capacities, CapacityDeclaration, disk_warnings, resolve, stray_warnings
from kops.model.desired import DesiredState, Execution, SourceLocation, TopicDeclaration
from kops.model.features import KIP253_PARTITION_DELETION
from kops.model.goals import DISK_WITHIN_BROKER
from kops.model.partitions import TopicPartition
from kops.model.plan import (
    Batch,
    ConfigChange,
    Estimate,
    Move,
    PartitionAddition,
    PartitionDeletion,
    Plan,
    Rollback,
    Summary,
    TopicCreation,
    TopicDeletion,
    counted,
)
from kops.model.problems import Problem, ProblemsError
from kops.model.snapshot import Snapshot
from kops.model.topics import Topic
from kops.planner import batches as batching
from kops.planner import placement, tiered
from kops.planner.bands import COUNT_SLACK
from kops.planner.fingerprint import fingerprint
from kops.planner.goal_plan import ONE_GOAL, GoalPlacement, Loads, place_by_goals, walk_one
from kops.planner.headroom import (
    Changes,
    Headroom,
    PeaksRefused,
    PerResource,
    catch_up_caps,
    current_loads,
    peak_room,
    plan_walk,
    rollback_caps,
    unknown_loads,
    violations,
    with_report,
)
from kops.planner.intra_broker import band
from kops.planner.layout import Layout
from kops.planner.leaders import balance_leaders
from kops.planner.log_dirs import disk_limit, drained, place_dirs, removals
from kops.planner.rebalance import (
    Bounds,
    balance_bytes,
    balance_replicas,
    bounds,
    outside,
    replica_lower_bound,
    share_bounds,
    smallest_on,
)
from kops.planner.rollback import completed
from kops.planner.throttles import batch_throttle

KIP253_FEATURE = KIP253_PARTITION_DELETION
DEFAULT_BANDWIDTH = 125_000_000  # bytes/s per broker port assumed when unthrottled (1 Gbit/s)
DESTRUCTIVE_CONFIGS = ("retention.ms", "retention.bytes")


@dataclass(frozen=True)
class Policy:
    throttle: int | None = None  # overrides execution.throttle (bytes/s)
    allow_in_flight: bool = False
    broker_bandwidth: int = DEFAULT_BANDWIDTH
    playbook_digest: str = ""
    # bytes/s each partition grows (kops sizes summarize): a move is sized for when its batch is expected to start
    growth: Mapping[TopicPartition, float] = field(default_factory=dict)
    # tiered storage (KIP-405): bytes each partition keeps in remote storage (moves copy only the local log)
    remote: Mapping[TopicPartition, int] = field(default_factory=dict)
    # capacity (issue 35): the declaration (None: only what the cluster reports), write rates (bytes/s per
    # partition, from the sizes summary) and each topic's consumer fan-out (plan() fills it from the playbook)
    capacity: CapacityDeclaration | None = None
    write: Mapping[TopicPartition, float] = field(default_factory=dict)
    fanout: Mapping[str, int] = field(default_factory=dict)

    def port_rate(self, declared: int | None = None) -> float:
        """Bytes/s one broker port moves: the throttle (this policy's, else the declared one), at most the
        bandwidth. Estimates and `kops rebalance`'s time budget both count with it."""
        rate = self.throttle if self.throttle is not None else declared
        return float(min(rate, self.broker_bandwidth) if rate else self.broker_bandwidth)


class PlanningError(ProblemsError):
    """Declarations that cannot be planned against this cluster; names the declaration's FILE:LINE."""


@dataclass
class _Work:
    snapshot: Snapshot
    desired: DesiredState
    layout: Layout
    problems: list[Problem] = field(default_factory=list)
    creations: list[TopicCreation] = field(default_factory=list)
    deletions: list[TopicDeletion] = field(default_factory=list)
    additions: list[PartitionAddition] = field(default_factory=list)
    shrinks: list[PartitionDeletion] = field(default_factory=list)
    configs: list[ConfigChange] = field(default_factory=list)
    created: set[TopicPartition] = field(default_factory=set)
    forced_moves: int = 0
    forced_bytes: int = 0
    balance_moves: int = 0
    balance_bytes: int = 0
    warnings: list[str] = field(default_factory=list)
    reason: dict[TopicPartition, str] = field(default_factory=dict)
    peaks_refused: PeaksRefused | None = None  # no batching keeps every batch's peak within the limits
    elect: tuple[TopicPartition, ...] = ()  # elections of partitions that do not move (kops/planner/preferred.py)
    loads_before: tuple[dict[int, int], dict[int, int], dict[int, int]] = field(init=False)

    def __post_init__(self) -> None:
        self.loads_before = self.layout.loads()  # the layout as loaded from the snapshot, before any change

    def error(self, location: SourceLocation | None, message: str, hint: str | None = None) -> None:
        self.problems.append(Problem(location, message, hint))


@collector_paused()
def plan(desired: DesiredState, snapshot: Snapshot, sizes: dict[TopicPartition, int] | None = None,
         policy: Policy = Policy()) -> Plan:
    """The plan, in order: brokers checked, every declared topic, decommissions, new brokers' share, the
    rebalance, leaders; then moves, batches, rollback and summary from the planned layout."""
    policy = replace(policy, fanout={name: t.fanout for name, t in desired.topics.items()})
    layout = Layout(snapshot, dict(sizes or {}), policy.write, policy.fanout)
    caps = resolve(policy.capacity, snapshot)
    if caps.known:
        layout.headroom = Headroom(caps, layout)
    original = dict(layout.replicas)
    work = _Work(snapshot, desired, layout)
    eligible = _eligible_brokers(work)
    rack_aware = bool(snapshot.brokers) and all(b.rack for b in snapshot.brokers)
    for _name, decl in sorted(desired.topics.items()):
        _topic(work, decl, eligible, rack_aware, policy)
    _decommission(work, eligible, rack_aware)
    _remove_log_dirs(work, eligible, rack_aware, caps)
    placed = None
    if desired.rebalance and desired.rebalance.goals and eligible and not work.problems:
        placed = _by_goals(work, eligible, policy, caps)  # new brokers' share, the rebalance and leaders alike
    else:
        _balance(work, original, eligible, rack_aware)
    if work.problems:
        raise PlanningError(work.problems)
    planned = _assemble_within(work, original, policy, eligible,
                               desired.brokers.location if desired.brokers.decommission or desired.brokers.add
                               else None, "raise the capacity's limit, add brokers, or change less at once")
    planned = planned if placed is None else replace(planned, summary=replace(planned.summary, goals=placed.outcomes))
    return _in_log_dirs(work, planned, policy, caps)


def _remove_log_dirs(work: _Work, eligible: list[int], rack_aware: bool, caps: Capacities) -> None:
    """`brokers.remove_log_dirs`: checked against the cluster, and the replicas the broker's other dirs have no
    room for leave the broker now, as a decommission's do (kops/planner/log_dirs.py places the rest at the end)."""
    brokers = work.desired.brokers
    if not brokers.remove_log_dirs:
        return
    found, problems = removals(work.snapshot, brokers.remove_log_dirs, brokers.decommission, work.layout.sizes,
                               disk_limit(caps.limits))
    for line in problems:
        work.error(brokers.location, line)
    for removal in found:
        for tp in drained(removal, work.layout.sizes)[1]:
            path = removal.dirs.where[tp]
            try:
                placement.replace(work.layout, tp, removal.broker, _topic_eligible(work, tp.topic, eligible),
                                  rack_aware)
            except ValueError as exc:
                work.error(brokers.location, f"cannot move {tp} out of log dir {path} of broker {removal.broker}: "
                                             f"its other dirs are full and {exc}")
                continue
            work.forced_moves += 1
            work.forced_bytes += work.layout.size(tp)
            work.reason.setdefault(tp, f"remove log dir {path} of broker {removal.broker} (its other dirs are full)")


def _in_log_dirs(work: _Work, planned: Plan, policy: Policy, caps: Capacities) -> Plan:
    """The plan's replicas placed in log dirs where the play asks for it (`remove_log_dirs`, the goal
    `disk_within_broker`): disk moves in a last batch, new replicas' dirs (kops/planner/log_dirs.py)."""
    desired = work.desired
    goals = desired.rebalance.goals if desired.rebalance else ()
    within = band(desired.rebalance.tolerance) if desired.rebalance and DISK_WITHIN_BROKER in goals else None
    if not desired.brokers.remove_log_dirs and within is None:
        return planned
    throttle = policy.throttle if policy.throttle is not None else desired.execution.throttle
    placed, problems = place_dirs(planned, work.snapshot, work.layout.sizes, desired.brokers.remove_log_dirs,
                                  caps.limits, within, (throttle, policy.port_rate(desired.execution.throttle)))
    if problems:
        raise PlanningError([Problem(desired.brokers.location, line) for line in problems])
    topics = set(desired.topics) | {m.topic for m in placed.moves + placed.disk_moves}
    return replace(placed, fingerprint=fingerprint(work.snapshot, topics))


def _balance(work: _Work, original: dict[TopicPartition, tuple[int, ...]], eligible: list[int],
             rack_aware: bool) -> None:
    """Without a goal list: new brokers take their replica share, the single `rebalance.goal` evens its load, and
    preferred leaders spread over the changed partitions (all of them when the play reshapes the cluster)."""
    desired, layout = work.desired, work.layout
    if desired.brokers.add and eligible:
        _new_brokers_share(work, eligible, rack_aware)
    if desired.rebalance and eligible and _rebalance(work, eligible, rack_aware):
        return  # walked with capacities: leaders were the walk's last goal
    reshaped = bool(desired.brokers.decommission or desired.brokers.add or desired.rebalance)
    scope = None if reshaped else {tp for tp, r in layout.replicas.items()
                                   if tp in original and r != original[tp] and set(r) != set(original[tp])}
    if scope is None or scope:
        balance_leaders(layout, eligible, scope)


def _by_goals(work: _Work, eligible: list[int], policy: Policy, caps: Capacities) -> GoalPlacement:
    """The play's goal list walked over the layout its forced changes left (kops/planner/goal_plan.py): replicas,
    created partitions included, end where the goals want them, and leadership is the list's (no separate leader
    step), so `kops rebalance` with the same goals right after this plan finds nothing to do."""
    layout, rebalance = work.layout, work.desired.rebalance
    assert rebalance is not None
    loads = Loads(layout.sizes, policy.write, policy.fanout, caps)
    placed = place_by_goals(layout.replicas, {b: layout.rack(b) for b in eligible}, loads, rebalance.goals,
                            rebalance.tolerance, _pinned(work, policy), work.snapshot)
    work.elect = placed.elected
    for action in placed.actions:
        work.reason.setdefault(action.tp, f"rebalance {action.goal}")
    layout.set_changed({a.tp for a in placed.actions}, placed.after)
    work.creations = [replace(c, assignment=_now(layout, c.topic, c.assignment)) for c in work.creations]
    work.additions = [replace(a, assignment=_now(layout, a.topic, a.assignment)) for a in work.additions]
    return placed


def _now(layout: Layout, topic: str, assignment: Mapping[int, tuple[int, ...]]) -> dict[int, tuple[int, ...]]:
    return {p: layout.replicas[TopicPartition(topic, p)] for p in assignment}


def _pinned(work: _Work, policy: Policy) -> set[TopicPartition]:
    """Partitions a goal list may not move: of declared topics whose placement names brokers, excludes some or
    assigns statically; of topics being deleted; reassignments in flight (unless --allow-in-flight)."""
    fixed = {name for name, decl in work.desired.topics.items()
             if decl.placement.brokers is not None or decl.placement.exclude_brokers
             or decl.placement.assignments is not None}
    fixed |= set(work.snapshot.pending_deletions)
    pinned = {tp for tp in work.layout.replicas if tp.topic in fixed}
    if not policy.allow_in_flight:
        pinned |= {TopicPartition(m.topic, m.partition) for m in work.snapshot.in_flight()}
    return pinned


def _assemble_within(work: _Work, original: dict[TopicPartition, tuple[int, ...]], policy: Policy,
                     eligible: list[int], where: SourceLocation | None, hint: str) -> Plan:
    """Every plan ends here (capacity.md §6.5, §6.6): batches whose peaks no order keeps within the limits, and a
    plan that leaves a broker over a limit it was within (or fuller than it was when already over) after the plan
    or at a batch's peak, are refused at `where`, whatever made its targets."""
    planned = _assemble(work, original, policy, eligible)
    report, refused = planned.summary.capacity, work.peaks_refused
    over = violations(report, peaks=refused is None) if report is not None else []
    if over:  # what the targets themselves overfill comes first: no batching helps there
        raise PlanningError([Problem(where, f"this plan would overfill a broker: {line}", hint) for line in over])
    if refused is not None:
        raise PlanningError([Problem(where, f"no batching keeps this plan within the limits: {refused}",
                                     refused.hint)])
    return planned


def _eligible_brokers(work: _Work) -> list[int]:
    """Live brokers not being decommissioned; the brokers section's ids checked against the registered ones."""
    live, brokers = work.snapshot.live_broker_ids, work.desired.brokers
    for b in brokers.add:
        if b not in live:
            work.error(brokers.location, f"brokers.add names broker {b}, which is not registered",
                       f"registered brokers: {', '.join(map(str, sorted(live)))}")
    for b in sorted(set(brokers.decommission) - live):
        if work.layout.replica_count.get(b, 0) == 0:
            work.error(brokers.location,
                       f"brokers.decommission names broker {b}, which is not registered and holds no replicas")
    eligible = sorted(live - set(brokers.decommission))
    if not eligible:
        work.error(brokers.location, "no broker would be left to hold replicas")
    return eligible


def _decommission(work: _Work, eligible: list[int], rack_aware: bool) -> None:
    """Exactly the replicas of the decommissioned brokers move, each to an eligible broker."""
    layout = work.layout
    # Loads only grow on eligible brokers here (replicas leave decommissioned ones), as LeastLoaded needs.
    indexes: dict[str | None, tuple[list[int], placement.LeastLoaded]] = {}
    for broker in sorted(set(work.desired.brokers.decommission)):
        for tp in sorted(layout.by_broker.get(broker, {})):
            key = tp.topic if tp.topic in work.desired.topics else None
            if key not in indexes:
                allowed = _topic_eligible(work, tp.topic, eligible)
                indexes[key] = (allowed, placement.LeastLoaded(layout, allowed))
            allowed, index = indexes[key]
            try:
                placement.replace(layout, tp, broker, allowed, rack_aware, index)
            except ValueError as exc:
                work.error(work.desired.brokers.location, f"cannot move {tp} off broker {broker}: {exc}")
                continue
            work.forced_moves += 1
            work.forced_bytes += layout.size(tp)
            work.reason.setdefault(tp, f"decommission broker {broker}")


def _new_brokers_share(work: _Work, eligible: list[int], rack_aware: bool) -> None:
    layout, added = work.layout, list(work.desired.brokers.add)
    counts = dict(layout.replica_count)
    limits = bounds(sum(counts.get(b, 0) for b in eligible), len(eligible), 0.0)
    work.balance_moves += sum(max(0, limits.lower - counts.get(b, 0)) for b in added)
    work.balance_bytes += sum(smallest_on(layout, b, max(0, counts.get(b, 0) - limits.upper)) for b in eligible)
    before = dict(layout.replicas)
    balance_replicas(layout, eligible, 0.0, destinations=added, movable=_movable(work), rack_aware=rack_aware)
    _note_changes(work, before, "new brokers take their share")


def _rebalance(work: _Work, eligible: list[int], rack_aware: bool) -> bool:
    """The single `rebalance.goal`; True when it was walked (capacities known), leaders included."""
    layout, rebalance = work.layout, work.desired.rebalance
    assert rebalance is not None
    goal, tolerance = rebalance.goal, rebalance.tolerance
    walked = layout.headroom is not None and goal in ONE_GOAL  # capacities known: limits first, then the goal
    # the walk names every partition it changes (its actions); a balancer's changes are found by comparing
    before = None if walked else dict(layout.replicas)
    if goal == "replicas":
        counts = dict(layout.replica_count)
        limits = _replica_bounds(layout, eligible, tolerance, walked, rack_aware)
        work.balance_moves += replica_lower_bound(counts, eligible, limits)
        work.balance_bytes += sum(smallest_on(layout, b, max(0, counts.get(b, 0) - limits[b].upper))
                                  for b in eligible)
    if walked:
        actions = walk_one(layout, eligible, goal, tolerance, _movable(work), leaders=True)
        for a in sorted(actions, key=lambda a: a.leadership):  # a partition that moved: its move's reason
            work.reason.setdefault(a.tp, "leader balance" if a.leadership else f"rebalance {goal}")
    elif goal == "replicas":  # racks: each broker toward the share they leave it, as the bounds above say
        balance_replicas(layout, eligible, tolerance, movable=_movable(work), rack_aware=rack_aware,
                         shares=limits if rack_aware else None)
    elif goal == "bytes":
        balance_bytes(layout, eligible, tolerance, movable=_movable(work), rack_aware=rack_aware)
    if before is not None:
        _note_changes(work, before, f"rebalance {goal}")
    if goal == "replicas" and (short := outside(layout.replica_count, limits)):
        work.warnings.append(_short_of(short, layout.replica_count, limits, tolerance))
    return walked


def _replica_bounds(layout: Layout, eligible: list[int], tolerance: float, walked: bool,
                    rack_aware: bool) -> dict[int, Bounds]:
    """Each broker's replica bounds a rebalance aims at: around the share racks leave it where racks bind (the
    walk's band reads the same shares, bands.py, and is never narrower than its slack), else the mean."""
    if walked:
        return share_bounds(layout, eligible, max(tolerance, COUNT_SLACK))
    if rack_aware:
        return share_bounds(layout, eligible, tolerance)
    counts = layout.replica_count
    return dict.fromkeys(eligible, bounds(sum(counts.get(b, 0) for b in eligible), len(eligible), tolerance))


def _short_of(brokers: list[int], counts: Mapping[int, int], limits: Mapping[int, Bounds], tolerance: float) -> str:
    """The rebalance left brokers outside their bounds (the balancer's own aim, limits, racks or what may move),
    and the plan's lower bound counts the moves to get there."""
    named = ", ".join(f"{b} ({counts.get(b, 0)}, bounds {limits[b].lower}-{limits[b].upper})" for b in brokers[:5])
    more = f" and {len(brokers) - 5} more" if len(brokers) > 5 else ""
    return (f"rebalance replicas: broker(s) {named}{more} stay outside their bounds around the share racks leave "
            f"them (tolerance {tolerance:.0%}) after this plan; the lower bound counts the moves to bring them in")


def _movable(work: _Work) -> set[TopicPartition] | None:
    """Partitions a rebalance may move: existing ones, not being deleted or created by this plan (None: all of
    the layout's, when the plan creates and deletes none: no set of a million to build and intersect with)."""
    if not work.deletions and not work.created:
        return None
    deleted = {d.topic for d in work.deletions}
    return {tp for tp in work.layout.replicas if tp.topic not in deleted and tp not in work.created}


def _note_changes(work: _Work, before: dict[TopicPartition, tuple[int, ...]], reason: str) -> None:
    for tp, replicas in work.layout.replicas.items():
        if before.get(tp) != replicas:
            work.reason.setdefault(tp, reason)


def _topic_eligible(work: _Work, topic: str, eligible: list[int]) -> list[int]:
    decl = work.desired.topics.get(topic)
    if decl is None:
        return eligible
    allowed = [b for b in eligible if b not in decl.placement.exclude_brokers]
    if decl.placement.brokers is not None:
        allowed = [b for b in allowed if b in decl.placement.brokers]
    return allowed


def _topic(work: _Work, decl: TopicDeclaration, eligible: list[int], rack_aware: bool, policy: Policy) -> None:
    """One declared topic: deleted, created, or reshaped (partition count, placement, replication factor)."""
    existing = work.snapshot.topics.get(decl.name)
    if not _brokers_known(work, decl):
        return
    if decl.state == "absent":
        _delete(work, decl, existing)
        return
    if decl.name in work.snapshot.pending_deletions:
        work.error(decl.location, f"topic {decl.name} is being deleted",
                   "wait until the deletion completes, then plan again")
        return
    topic_eligible = _topic_eligible(work, decl.name, eligible)
    if not _shape_possible(work, decl, existing, topic_eligible, rack_aware):
        return
    use_racks = rack_aware and decl.placement.strategy != "balanced"
    if existing is None:
        _create(work, decl, topic_eligible, use_racks)
        return
    target_rf = decl.replication_factor or existing.replication_factor
    if not _partition_count(work, decl, len(existing.partitions), target_rf, topic_eligible, use_racks):
        return
    for number in sorted(existing.partitions):
        tp = TopicPartition(decl.name, number)
        if number < len(existing.partitions) and tp in work.layout.replicas:
            _reshape(work, decl, tp, target_rf, topic_eligible, use_racks)
    _configs(work, decl, existing.config)


def _brokers_known(work: _Work, decl: TopicDeclaration) -> bool:
    known = work.snapshot.live_broker_ids
    for ids in (decl.placement.brokers or (), decl.placement.exclude_brokers):
        unknown = sorted(set(ids) - known)
        if unknown:
            work.error(decl.where("placement"), f"topic {decl.name}: unknown broker(s) {unknown}",
                       f"registered brokers: {', '.join(map(str, sorted(known)))}")
            return False
    static = decl.placement.assignments
    unknown = sorted({b for r in (static or {}).values() for b in r} - known)
    if unknown:
        work.error(decl.where("placement"), f"topic {decl.name}: assignments name unknown broker(s) {unknown}")
        return False
    return True


def _delete(work: _Work, decl: TopicDeclaration, existing: Topic | None) -> None:
    if existing is None:
        return
    size = sum(work.layout.size(TopicPartition(decl.name, p)) for p in existing.partitions)
    work.deletions.append(TopicDeletion(decl.name, len(existing.partitions), size))
    for tp in work.layout.partitions_of_topic(decl.name):
        work.layout.remove(tp)


def _shape_possible(work: _Work, decl: TopicDeclaration, existing: Topic | None, topic_eligible: list[int],
                    rack_aware: bool) -> bool:
    """The declared replication factor fits the eligible brokers, their racks and min.insync.replicas."""
    strategy, rf = decl.placement.strategy, decl.replication_factor
    if strategy == "rack-aware" and not rack_aware:
        work.error(decl.where("placement"), f"topic {decl.name}: strategy rack-aware, but not every broker has a rack")
        return False
    if rf is not None and rf > len(topic_eligible):
        work.error(decl.where("replication_factor"),
                   f"topic {decl.name}: replication_factor {rf} needs {rf} brokers, only {len(topic_eligible)} are "
                   f"eligible")
        return False
    if strategy == "rack-aware" and rf is not None:
        racks = {work.layout.rack(b) for b in topic_eligible}
        if rf > len(racks):
            work.error(decl.where("replication_factor"),
                       f"topic {decl.name}: replication_factor {rf} is more than the {len(racks)} racks of its brokers",
                       "strategy rack-aware puts every replica on its own rack")
            return False
    misr = decl.config.get("min.insync.replicas") or (existing.config.get("min.insync.replicas") if existing else None)
    if rf is not None and misr is not None and int(misr) > rf:
        work.error(decl.where("replication_factor"),
                   f"topic {decl.name}: replication_factor {rf} is below min.insync.replicas {misr}")
        return False
    declared = decl.config.get("min.insync.replicas")
    if rf is None and existing is not None and existing.partitions and declared is not None \
            and int(declared) > existing.replication_factor:
        # the RF the topic has: acks=all producers could write nothing to it (NotEnoughReplicas)
        work.error(decl.where("config.min.insync.replicas"),
                   f"topic {decl.name}: min.insync.replicas {declared} is above its replication_factor "
                   f"{existing.replication_factor}", "declare a replication_factor of at least that, or lower it")
        return False
    return True


def _create(work: _Work, decl: TopicDeclaration, topic_eligible: list[int], use_racks: bool) -> None:
    static = decl.placement.assignments
    partitions = decl.partitions or (len(static) if static else None)
    rf = decl.replication_factor or (len(next(iter(static.values()))) if static else None)
    if partitions is None or rf is None:
        work.error(decl.location, f"topic {decl.name} does not exist yet: declare partitions and replication_factor")
        return
    if static is not None:
        assignment = dict(static)
        for p, r in assignment.items():
            work.layout.set(TopicPartition(decl.name, p), r)
    else:
        try:
            assignment = placement.place_partitions(work.layout, decl.name, range(partitions), rf, topic_eligible,
                                                    use_racks)
        except ValueError as exc:
            work.error(decl.location, f"topic {decl.name}: {exc}")
            return
    work.created.update(TopicPartition(decl.name, p) for p in assignment)
    work.creations.append(TopicCreation(decl.name, assignment, dict(sorted(decl.all_config.items()))))


def _partition_count(work: _Work, decl: TopicDeclaration, current_count: int, target_rf: int,
                     topic_eligible: list[int], use_racks: bool) -> bool:
    """Partitions added (placed, or as statically assigned) or, where KIP-253 is offered, marked for deletion;
    False when the declaration cannot be met."""
    static = decl.placement.assignments
    if decl.partitions is not None and decl.partitions > current_count:
        new_numbers = range(current_count, decl.partitions)
        if static is not None:
            added = {p: static[p] for p in new_numbers}
            for p, r in added.items():
                work.layout.set(TopicPartition(decl.name, p), r)
        else:
            try:
                added = placement.place_partitions(work.layout, decl.name, new_numbers, target_rf, topic_eligible,
                                                   use_racks)
            except ValueError as exc:
                work.error(decl.where("partitions"), f"topic {decl.name}: {exc}")
                return False
        work.created.update(TopicPartition(decl.name, p) for p in added)
        work.additions.append(PartitionAddition(decl.name, added))
    elif decl.partitions is not None and decl.partitions < current_count:
        if KIP253_FEATURE not in work.snapshot.cluster_features():
            work.error(decl.where("partitions"),
                       f"topic {decl.name} has {current_count} partitions; Kafka cannot decrease the partition count",
                       f"declare partitions: {current_count} (or more), or create a new topic and migrate")
            return False
        work.shrinks.append(PartitionDeletion(decl.name, current_count, decl.partitions))
    return True


def _reshape(work: _Work, decl: TopicDeclaration, tp: TopicPartition, target_rf: int, topic_eligible: list[int],
             use_racks: bool) -> None:
    """One existing partition: its static assignment, or off brokers the placement no longer allows, onto distinct
    racks (rack-aware), and grown or shrunk to the replication factor."""
    layout, static = work.layout, decl.placement.assignments
    if static is not None and tp.partition in static:
        wanted = static[tp.partition]
        if layout.replicas[tp] != wanted:
            work.forced_moves += len(set(wanted) - set(layout.replicas[tp]))
            work.forced_bytes += layout.size(tp) * len(set(wanted) - set(layout.replicas[tp]))
            layout.set(tp, wanted)
            work.reason[tp] = "static assignment"
        return
    for broker in [b for b in layout.replicas[tp] if b not in topic_eligible and b in work.snapshot.live_broker_ids]:
        try:
            placement.replace(layout, tp, broker, topic_eligible, use_racks)
            work.forced_moves += 1
            work.forced_bytes += layout.size(tp)
            work.reason.setdefault(tp, f"placement excludes broker {broker}")
        except ValueError as exc:
            work.error(decl.where("placement"), f"{tp}: {exc}")
    if decl.placement.strategy == "rack-aware":
        _fix_racks(work, tp, topic_eligible)
    replicas = layout.replicas[tp]
    if len(replicas) < target_rf:
        try:
            placement.grow(layout, tp, target_rf, topic_eligible, use_racks)
        except ValueError as exc:
            work.error(decl.where("replication_factor"), f"{tp}: {exc}")
            return
        work.forced_moves += target_rf - len(replicas)
        work.forced_bytes += layout.size(tp) * (target_rf - len(replicas))
        work.reason.setdefault(tp, f"replication factor {len(replicas)} -> {target_rf}")
    elif len(replicas) > target_rf:
        placement.shrink(layout, tp, target_rf)
        work.reason.setdefault(tp, f"replication factor {len(replicas)} -> {target_rf}")


def _fix_racks(work: _Work, tp: TopicPartition, eligible: list[int]) -> None:
    layout = work.layout
    replicas = layout.replicas[tp]
    racks_available = {layout.rack(b) for b in eligible}
    seen: set[str | None] = set()
    for broker in replicas:
        rack = layout.rack(broker)
        if rack in seen and len(racks_available) > len(seen):
            try:
                placement.replace(layout, tp, broker, eligible, True)
            except ValueError as exc:
                work.error(work.desired.topics[tp.topic].where("placement"), f"{tp}: {exc}")
                return None
            work.forced_moves += 1
            work.forced_bytes += layout.size(tp)
            work.reason.setdefault(tp, "rack rule")
            return _fix_racks(work, tp, eligible)
        seen.add(rack)


def _configs(work: _Work, decl: TopicDeclaration, current: dict[str, str]) -> None:
    to_set: dict[str, str] = {}
    destructive = []
    for key, value in sorted(decl.all_config.items()):
        existing = current.get(key)
        if existing is not None:
            same = existing == value
            if key in topic_configs.TOPIC_CONFIGS:
                try:
                    same = topic_configs.normalize(key, existing) == value
                except ValueError:
                    same = False
            if not same:
                to_set[key] = value
                if key in DESTRUCTIVE_CONFIGS and _shrinks_retention(existing, value):
                    destructive.append(f"{key} {existing} -> {value} deletes data sooner")
        elif not topic_configs.is_default(key, value):
            to_set[key] = value
    to_remove = tuple(k for k in decl.config_remove if k in current)
    if to_set or to_remove:
        work.configs.append(ConfigChange("topics", decl.name, to_set, to_remove, dict(sorted(current.items())),
                                         bool(destructive), "; ".join(destructive)))


def _shrinks_retention(before: str, after: str) -> bool:
    try:
        old, new = int(before), int(after)
    except ValueError:
        return False
    if old < 0:
        return new >= 0
    return 0 <= new < old


def _assemble(work: _Work, original: dict[TopicPartition, tuple[int, ...]], policy: Policy,
              eligible: list[int]) -> Plan:
    """The plan from the planned layout: the moves, their batches with throttles and estimates, the election,
    the rollback, the reviewer's warnings and the summary."""
    snapshot, desired = work.snapshot, work.desired
    moves = tiered.annotate(_moves(work, original, policy), snapshot, policy.remote)
    election = _election(work, moves)
    rate = policy.throttle if policy.throttle is not None else desired.execution.throttle
    port_rate = policy.port_rate(desired.execution.throttle)
    sized = any(m.bytes for m in moves)
    # the snapshot's loads, read once for batching and the report, where a capacity is known
    current_at = (current_loads(snapshot, work.layout.sizes, policy.write, policy.fanout)
                  if work.layout.headroom is not None else None)
    grouped = _groups(work, moves, policy, port_rate, sized, current_at)
    batch_list = _batches(work, grouped, policy, rate, port_rate, sized)
    moves = [m for b in batch_list for m in b.moves]
    work.warnings += _reviewer_warnings(snapshot, desired, moves, work.layout)
    work.warnings += _cron_list_unused(desired, moves)
    copying = sum(1 for m in moves if m.adding)
    if rate is None and copying:  # Kafka's own tool does the same, but a reviewer should see it
        work.warnings.append(f"no throttle: {copying} move(s) copy at full speed, beside producers and consumers "
                             "(set execution.throttle in the playbook, or pass --throttle to kops plan or kops apply)")
    work.warnings += unknown_loads(work.layout.headroom, work.layout.sizes, policy.write)
    work.warnings += stray_warnings(policy.capacity, {b.id for b in snapshot.brokers} | set(work.layout.replica_count))
    work.warnings += disk_warnings(work.layout.headroom.caps if work.layout.headroom is not None
                                   else resolve(policy.capacity, snapshot), snapshot.log_dirs)
    planned = Plan(
        cluster=desired.cluster,
        cluster_id=snapshot.cluster_id,
        connect=str(desired.connect) if desired.connect else snapshot.connect,
        playbook_digest=policy.playbook_digest,
        fingerprint=fingerprint(snapshot, set(desired.topics) | {m.topic for m in moves}
                                | {tp.topic for tp in work.elect}),
        creations=tuple(sorted(work.creations, key=lambda c: c.topic)),
        deletions=tuple(sorted(work.deletions, key=lambda d: d.topic)),
        partition_additions=tuple(sorted(work.additions, key=lambda a: a.topic)),
        partition_deletions=tuple(sorted(work.shrinks, key=lambda s: s.topic)),
        configs=tuple(sorted(work.configs, key=lambda c: (c.entity_type, c.entity))),
        batches=tuple(batch_list),
        election=election,
        rollback=_rollback(work, batch_list, election, rate, port_rate, sized),
        summary=_summary(work, batch_list, port_rate, sized),
        warnings=tuple(work.warnings),
        kops_version=__version__,
        stall_timeout=desired.execution.stall_timeout,
        rolling=desired.execution.rolling,
    )
    walked = plan_walk(planned, snapshot, work.layout.sizes, policy.capacity, policy.write, policy.fanout, current_at)
    if walked is None:
        return planned
    caps = catch_up_caps(planned, *walked, policy.write)
    if any(caps):  # the throttled fetches kept within each receiving broker's network-in room (capacity.md §6.6)
        batch_list = _batches(work, grouped, policy, rate, port_rate, sized, caps)
        planned = replace(planned, batches=tuple(batch_list),
                          rollback=_rollback(work, batch_list, election, rate, port_rate, sized),
                          summary=_summary(work, batch_list, port_rate, sized))
    undo_caps = rollback_caps(planned, *walked, work.layout.sizes, policy.write)
    if any(undo_caps):  # the rollback copies back onto the plan's sources, held to their room as well
        planned = replace(planned, rollback=_rollback(work, batch_list, election, rate, port_rate, sized, undo_caps))
    return with_report(planned, *walked)


def _election(work: _Work, moves: list[Move]) -> tuple[TopicPartition, ...]:
    """The partitions the plan elects, in partition order: those whose moves change the leader or leave it off its
    first replica, and those elected without moving (`work.elect`). Read off the moves in their order where that
    is sorted (`_moves` lists them so), no sort of a quarter of a million partitions."""
    snapshot = work.snapshot
    elected = [m.tp for m in moves
               if m.to_replicas[0] != m.from_replicas[0] or _leader(snapshot, m.tp) != m.to_replicas[0]]
    if work.elect or not ascending(elected):
        return tuple(sorted(set(elected) | set(work.elect)))
    return tuple(elected)


def _leader(snapshot: Snapshot, tp: TopicPartition) -> int | None:
    part = snapshot.partition(tp)
    return None if part is None else part.leader


def _moves(work: _Work, original: dict[TopicPartition, tuple[int, ...]], policy: Policy) -> list[Move]:
    """A move for every existing partition whose planned replicas differ from its current (or in-flight target)
    ones; partitions being reassigned refuse the plan unless --allow-in-flight."""
    snapshot, layout, desired = work.snapshot, work.layout, work.desired
    write = policy.write  # a move carries its write rate where known: rolling holds network in per wave
    moves: list[Move] = []
    in_flight_problems = []
    # A partition whose layout is its original (the snapshot's current or in-flight target replicas) has no move.
    # In partition order: the original's own where that is sorted (a snapshot lists partitions so), no sort by name.
    for tp in in_key_order(_changed(original, layout.replicas), original):
        target = layout.replicas.get(tp)
        part = snapshot.partition(tp)
        if target is None or tp in work.created or part is None:
            continue
        current = part.target_replicas if part.reassigning else part.replicas
        if target == current:
            continue
        if part.reassigning and not policy.allow_in_flight:
            decl = desired.topics.get(tp.topic)
            in_flight_problems.append(Problem(
                decl.location if decl
                else desired.brokers.location or (desired.rebalance.location if desired.rebalance else None),
                f"{tp} is being reassigned right now and this plan must move it",
                "wait for the reassignment to finish (kops status), or plan with --allow-in-flight"))
            continue
        leader = part.leader if part.leader in current else current[0]
        rate = write.get(tp)
        moves.append(Move(tp.topic, tp.partition, current, target, layout.size(tp), leader,
                          work.reason.get(tp, "leader balance"), write_rate=None if rate is None else float(rate)))
    if in_flight_problems:
        raise PlanningError(in_flight_problems)
    return moves


def _groups(work: _Work, moves: list[Move], policy: Policy, port_rate: float, sized: bool,
            current_at: PerResource | None = None) -> list[list[Move]]:
    """The moves in batches within the execution's limits and, where capacities are known, every batch's peak
    within each broker's limits (refused at the end where the targets themselves overfill a broker)."""
    desired = work.desired
    limits = batching.Limits(desired.execution.max_partitions, desired.execution.max_bytes,
                             desired.execution.max_moves_per_broker)
    room = peak_room(Changes(work.deletions, work.creations, work.additions), work.snapshot, work.layout.sizes,
                     policy.capacity, policy.write, current_at)
    try:
        return batching.make_batches(moves, limits, port_rate, sized, desired.execution.order,
                                     tuple(desired.topics), room)
    except PeaksRefused as refused:  # refused at the end, unless the targets themselves overfill a broker
        work.peaks_refused = refused
        return batching.make_batches(moves, limits, port_rate, sized, desired.execution.order,
                                     tuple(desired.topics))


def _changed(original: Mapping[TopicPartition, tuple[int, ...]],
             now: Mapping[TopicPartition, tuple[int, ...]]) -> list[TopicPartition]:
    """The partitions of `original` whose replicas differ `now` (or are gone), in `original`'s order. Where `now`
    has the same partitions in the same order (a plan that creates and deletes none), read alongside instead of
    looked up, and only the replicas that are not the very same tuple compared: a million lookups were a second."""
    if len(now) == len(original) and all(map(operator.is_, original, now)):
        differ = itertools.compress(zip(original, original.values(), now.values()),
                                    map(operator.is_not, original.values(), now.values()))
        return [tp for tp, was, planned in differ if planned != was]
    return [tp for tp, replicas in original.items() if now.get(tp) != replicas]


def _batches(work: _Work, grouped: list[list[Move]], policy: Policy, rate: int | None, port_rate: float,
             sized: bool, caps: Sequence[Mapping[int, int]] = ()) -> list[Batch]:
    """Each group a batch with its throttle and estimate; `caps`: per batch, the brokers whose follower rate is
    held below the rate (their network-in room at the batch's peak), which receive at that rate in the estimate."""
    batch_list = []
    starts = 0.0
    for index, group in enumerate(grouped):
        group = _grown(group, policy.growth, starts) if sized else group
        capped = caps[index] if index < len(caps) else {}
        bytes_in, bytes_out, seconds = batching.port_times(group, port_rate, port_rate, capped)
        batch_list.append(Batch(index + 1, tuple(group), batch_throttle(group, work.snapshot, rate, caps=capped),
                                Estimate(seconds if sized else None, None, bytes_in, bytes_out)))
        starts += seconds
    return batch_list


def _rollback(work: _Work, batch_list: list[Batch], election: tuple[TopicPartition, ...], rate: int | None,
              port_rate: float, sized: bool, caps: list[dict[int, int]] | None = None) -> Rollback:
    """The plan's inverse; `caps`: per rollback batch, the receiving brokers' follower rates (`rollback_caps`).
    Each batch's estimate is its own: the bytes go back the other way (into the forward batch's sources), at the
    brokers' caps."""
    undo = completed([(b.index, b.moves) for b in batch_list], "rollback")
    caps = caps or [{} for _ in undo]
    batches = []
    for n, (_index, inverse) in enumerate(undo, 1):
        bytes_in, bytes_out, seconds = batching.port_times(inverse, port_rate, port_rate, caps[n - 1])
        batches.append(Batch(n, tuple(inverse), batch_throttle(inverse, work.snapshot, rate, caps=caps[n - 1]),
                             Estimate(seconds if sized else None, None, bytes_in, bytes_out)))
    configs = tuple(
        ConfigChange(c.entity_type, c.entity, {k: v for k, v in c.before.items() if c.after.get(k) != v},
                     tuple(k for k in c.after if k not in c.before), c.after, False, "rollback")
        for c in work.configs
    )
    irreversible = tuple(
        [f"topic {c.topic} was created: rollback does not delete it" for c in work.creations]
        + [f"{len(a.assignment)} partition(s) added to {a.topic}: Kafka cannot remove "
           f"partitions" for a in work.additions]
        + [f"topic {d.topic} was deleted with its data" for d in work.deletions]
        + [f"partitions of {s.topic} above {s.undeleted_partition_count} were marked for "
           f"deletion" for s in work.shrinks]
        + ([f"{len(work.elect)} partition(s) that do not move get their preferred leader (goal preferred_leaders): "
            f"Kafka has no election back to the leader they had"] if work.elect else [])
    )
    return Rollback(tuple(batches), configs, election, irreversible)


def _summary(work: _Work, batch_list: list[Batch], port_rate: float, sized: bool) -> Summary:
    moves = [m for b in batch_list for m in b.moves]
    lower_seconds = _all_at_once(batch_list, port_rate)
    destructive = tuple(
        [f"delete topic {d.topic} ({d.partitions} partitions)" for d in work.deletions]
        + [f"mark partitions {s.undeleted_partition_count}..{s.current_count - 1} of {s.topic} for "
           f"deletion" for s in work.shrinks]
        + [f"topic {c.entity}: {c.reason}" for c in work.configs if c.destructive]
    )
    data_moves = [m for m in moves if m.kind == "data"]
    before_counts, after_counts = work.loads_before, work.layout.loads()
    replicas_added, leader_moves, copied = counted(moves)
    return Summary(
        moves=replicas_added,
        leader_moves=leader_moves,
        bytes=copied,
        lower_bound_moves=work.forced_moves + work.balance_moves,
        lower_bound_bytes=work.forced_bytes + work.balance_bytes,
        estimated_seconds=sum(b.estimate.seconds or 0.0 for b in batch_list) if sized else None,
        lower_bound_seconds=lower_seconds if sized else None,
        destructive=destructive,
        replicas_before=before_counts[0], replicas_after=after_counts[0],
        leaders_before=before_counts[1], leaders_after=after_counts[1],
        bytes_before=before_counts[2], bytes_after=after_counts[2],
        remote_bytes=tiered.not_copied(data_moves),
    )


def _all_at_once(batch_list: list[Batch], port_rate: float) -> float:
    """Seconds every move would take run at once (the busiest port's bytes over its rate): the batches' bytes per
    port added up, as port_times over all the moves would count them, without another pass over the moves. A
    receiving broker never fetches faster than its fastest batch lets it (its cap where every batch that copies to
    it caps it), so its bytes in count at that rate: still a bound no execution of the plan beats."""
    bytes_in: dict[int, int] = {}
    bytes_out: dict[int, int] = {}
    fastest: dict[int, float] = {}
    for batch in batch_list:
        caps = batch.throttle.caps
        for broker, amount in batch.estimate.bytes_in.items():
            bytes_in[broker] = bytes_in.get(broker, 0) + amount
            fastest[broker] = max(fastest.get(broker, 0.0), min(port_rate, caps.get(broker, port_rate)))
        for broker, amount in batch.estimate.bytes_out.items():
            bytes_out[broker] = bytes_out.get(broker, 0) + amount
    return max([v / fastest[b] for b, v in bytes_in.items()] + [v / port_rate for v in bytes_out.values()] + [0.0])


def _cron_list_unused(desired: DesiredState, moves: list[Move]) -> list[str]:
    """A play that places replicas by the balancers on a cluster whose inventory gives `kops rebalance` a goal list
    (`rebalance_goals`): the next rebalance may move what this plan places, so the reviewer is told how to place
    by the same list (issue 36: plan and rebalance never pull apart where the play names the list)."""
    listed = desired.host_vars.get("rebalance_goals")
    if not listed or (desired.rebalance is not None and desired.rebalance.goals) or not any(m.adding for m in moves):
        return []
    shown = ", ".join(map(str, listed)) if isinstance(listed, list) else str(listed)
    return [f"the inventory gives this cluster rebalance_goals ({shown}) for kops rebalance, and this play names no "
            "goal list: its replicas are placed by the balancers, and the next rebalance may move some of them "
            "(add `rebalance: {goals: [...], tolerance: 0}` to the play to place them by the same list)"]


def _reviewer_warnings(snapshot: Snapshot, desired: DesiredState, moves: list[Move], layout: Layout) -> list[str]:
    """What a reviewer must see before applying: moves of partitions already below min.insync.replicas (acks=all
    producers fail there now, and the move waits for in-sync replicas), and leaders left above one more than the
    fair share after the plan (topics outside its scope, or placement constraints, keep them there)."""
    warnings = []
    for m in moves:
        topic = snapshot.topics.get(m.topic)
        misr = (topic.config.get("min.insync.replicas") if topic else None) or \
            (desired.topics[m.topic].config.get("min.insync.replicas") if m.topic in desired.topics else None)
        if not misr or not str(misr).isdigit():
            continue
        part = snapshot.partition(m.tp)
        if part is None or part.state is None:
            continue
        if len(part.state.isr) < int(misr):
            warnings.append(f"{m.tp} is below min.insync.replicas {misr} (ISR {list(part.state.isr)}) before its "
                            f"move: acks=all producers fail there now, and the move waits for in-sync replicas")
    live = sorted(snapshot.live_broker_ids)
    if moves and live:
        leaders = layout.loads()[1]  # preferred leaders per broker, off the layout's counters
        fair = -(-sum(leaders.values()) // len(live))
        heavy = sorted((b, n) for b, n in leaders.items() if n > fair + 1)
        if heavy:
            broker, count = max(heavy, key=lambda bn: bn[1])
            warnings.append(f"leaders stay unbalanced after this plan: broker {broker} leads {count} partitions "
                            f"(fair share {fair}); partitions outside the plan's scope, or placement constraints, "
                            f"keep them there")
    return warnings


def _grown(group: list[Move], growth: Mapping[TopicPartition, float], start_seconds: float) -> list[Move]:
    """The batch's moves sized for when the batch is expected to start: bytes + growth × start (never less)."""
    if not growth or start_seconds <= 0:
        return group
    out = []
    for m in group:
        rate = growth.get(m.tp, 0.0)
        out.append(replace(m, bytes=m.bytes + int(rate * start_seconds)) if rate > 0 and m.bytes else m)
    return out


def plan_targets(snapshot: Snapshot, targets: dict[TopicPartition, tuple[int, ...]], cluster: str,
                 execution: Execution | None = None, policy: Policy = Policy(),
                 sizes: dict[TopicPartition, int] | None = None, where: str | None = None,
                 reason: str = "imported from kafka-reassign-partitions JSON",
                 reasons: Mapping[TopicPartition, str] | None = None, elect: tuple[TopicPartition, ...] = ()) -> Plan:
    """A plan that moves partitions to given targets (`kops plan --import-kafka`, `kops rebalance`): throttles,
    batches and rollback computed as for any plan, each move for `reasons`' reason or `reason`. Checks what
    kafka-reassign-partitions.sh checks."""
    location = SourceLocation(where, 1, 1) if where else None
    missing = sorted(str(tp) for tp in targets if snapshot.partition(tp) is None)
    if missing:
        raise PlanningError([Problem(location,
                                     f"the proposed assignment contains non-existent partitions: "
                                     f"{', '.join(missing[:10])}")])
    unknown = sorted({b for r in targets.values() for b in r} - snapshot.live_broker_ids)
    if unknown:
        raise PlanningError([Problem(location, f"the proposed assignment contains non-existent broker ids: {unknown}")])
    layout = Layout(snapshot, dict(sizes or {}))
    original = dict(layout.replicas)
    desired = DesiredState(cluster, snapshot.connect, {}, execution=execution or Execution())
    work = _Work(snapshot, desired, layout)
    work.elect = elect
    for tp, replicas in sorted(targets.items()):
        layout.set(tp, tuple(replicas))
        work.reason[tp] = reasons.get(tp, reason) if reasons else reason
        work.forced_moves += len(set(replicas) - set(original[tp]))
        work.forced_bytes += layout.size(tp) * len(set(replicas) - set(original[tp]))
    return _assemble_within(work, original, policy, sorted(snapshot.live_broker_ids), location,
                            "change less at once or add brokers, or raise the capacity's limit (--capacity, or "
                            "the inventory's capacity) if the broker really has the room")
