"""Goal-list benchmark (issue 36, "Measured"; docs/design/goals.md §9): `kops rebalance --goals` with kops's default
list, kops alone, on clusters with unequal brokers, Zipf sizes and write rates.

The clusters are bench/cc_cluster.py's (the Cruise Control bench's, seed 7: racks, half of each rack with twice the
disk and network of the other half, Zipf sizes, a tenth of the topics hot, the small brokers starting fullest).
Scenarios:
- `skewed`: that cluster as generated;
- `hot-topics`: its write rates redrawn as bench/capacity.py's `write_rates` draws them (a tenth of the topics carry
  90% of the writes; the total, and so the mean utilization, unchanged);
- `new-rack`: a rack of empty brokers added (as many as a rack holds, small and large alternating);
- `decommission`: the broker with the fullest disk drained by `kops plan` with the capacities and no goal list (a
  play's `goals:` would walk the list over the drain: goals.md §10, commit 9), applied, the broker stopped (goals.md
  §11, question 7), then the goal-list rebalance: a drain followed by the cron's rebalance. Its `before` is the
  state after the drain (the forced moves), `start` the cluster before it.

Each scenario runs in a fresh process, started through bench/vs_cruise_control.py's launcher, which reads the whole
process's peak RSS (`process_peak_rss_mb`); `peak_rss_mb` is the child's own peak right after the plan (building the
cluster + planning). Per goal: `before`, `after`, `lower_bound` (kops/planner/goal_values.py, the plan's own table
figures, recomputed here from the assignment applied on paper), `gap` (after − lower bound, percentage points) and
`room`, tried on the list's result where the gap exceeds GAP: `slack` (the figure is within its band's top,
`band_top`, which lies beyond GAP: kops/planner/bands.py's slack, by design); `held by goals above` (the goal
optimized alone gets within its band's top or GAP, `alone`, and the list up to it does not, `after_goals_above`:
the higher goals leave no room); `MISS: held by goals below` (the list up to the goal gets there: the goals after
it, whose starting peaks the optimizer keeps, hold it); `MISS` (even alone it stays beyond both).
Per scenario: `moves`, `bytes_moved`, `leader_moves`, `hard_violations` (rack and capacity, counted from the
assignment by bench/cc_figures.py, not by the planner), `worse_goals` (target empty), `idempotent` (a second run
with the same goals on the result plans no move and no leadership change; `after_plan_moves` and
`after_plan_leader_moves`, the decommission's: its drain planned by a play whose `rebalance:` names the same list
with tolerance 0, applied, then the same rebalance: target 0), `plan_seconds` and `plan_cpu_seconds`
(the planning's CPU time, steadier on a shared machine), and in the same run the baseline, `kops rebalance --goal
bytes` (the single-goal rebalance by disk utilization) on the same cluster: its goals' `after`, moves, bytes and
hard violations.

Usage: python bench/goals.py [--scale tiny|small|medium|million ...] [--scenario NAME] [--timeout S]
                             [--plan-only | --no-baseline]
  default: small (50 brokers / 5,000 partitions) and medium (200 / 50,000); --scale million: 1,000 / 1,000,000.
  --plan-only: no room checks and no baseline; --no-baseline: the room checks without the baseline (a million).
Run it under the shared lock: flock /tmp/kops-heavy.lock .venv/bin/python bench/goals.py
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.capacity import write_rates  # noqa: E402 - after the sys.path line above
from bench.cc_cluster import KIB, MIB, Assignment, Cluster, generate, snapshot_of  # noqa: E402 - after the sys.path line above
from bench.cc_figures import figures, invalid  # noqa: E402 - after the sys.path line above
from bench.vs_cruise_control import SCALES, measured  # noqa: E402 - after the sys.path line above
from kops.model.capacity import CapacityDeclaration, Figure, Resource, resolve  # noqa: E402 - after the sys.path line above
from kops.model.desired import BrokerChanges, DesiredState, Rebalance, SourceLocation  # noqa: E402 - after the sys.path line above
from kops.model.goals import DEFAULT_GOALS  # noqa: E402 - after the sys.path line above
from kops.model.partitions import TopicPartition  # noqa: E402 - after the sys.path line above
from kops.model.snapshot import Snapshot  # noqa: E402 - after the sys.path line above
from kops.planner.bands import COUNTS, Band, TopicBand, bands  # noqa: E402 - after the sys.path line above
from kops.planner.bounded import Request, rebalance  # noqa: E402 - after the sys.path line above
from kops.planner.budget import Limits  # noqa: E402 - after the sys.path line above
from kops.planner.goal_rebalance import GoalRequest, rebalance_goals  # noqa: E402 - after the sys.path line above
from kops.planner.goal_state import GoalState, state_of  # noqa: E402 - after the sys.path line above
from kops.planner.goal_values import GoalInputs, goal_figures  # noqa: E402 - after the sys.path line above
from kops.planner.optimizer import optimize  # noqa: E402 - after the sys.path line above
from kops.planner.planner import Policy, plan  # noqa: E402 - after the sys.path line above
from tests.simulate import apply_plan, layout_of  # noqa: E402 - after the sys.path line above

SCENARIOS = ("skewed", "hot-topics", "new-rack", "decommission")
GOALS = DEFAULT_GOALS
GAP = 5.0  # percentage points from the lower bound a distribution goal may end (the target)
SOURCE = "declared bench/goals.py"
TIMEOUT = 1800.0
Figures = dict[str, tuple[float, float]]  # goal -> (figure, lower bound)


def hot_topics(cluster: Cluster) -> Cluster:
    """The cluster with a tenth of its topics carrying 90% of the writes (bench/capacity.py's rule), the total kept."""
    rates = write_rates(snapshot_of(cluster), float(sum(cluster.write.values())))
    return replace(cluster, write={(tp.topic, tp.partition): max(1, round(r)) for tp, r in rates.items()})


def new_rack(cluster: Cluster) -> Cluster:
    """The cluster with one more rack of empty brokers, as many as a rack holds, small and large alternating."""
    racks = sorted(set(cluster.racks.values()))
    first = max(cluster.brokers) + 1
    added = range(first, first + len(cluster.brokers) // len(racks))
    rack = f"rack-{len(racks)}"

    def caps(known: dict[int, int]) -> dict[int, int]:
        return known | {b: max(known.values()) if i % 2 else min(known.values()) for i, b in enumerate(added)}

    return replace(cluster, racks=cluster.racks | dict.fromkeys(added, rack), disk=caps(cluster.disk),
                   nw_in=caps(cluster.nw_in), nw_out=caps(cluster.nw_out))


def fullest(cluster: Cluster) -> int:
    """The broker whose disk is fullest at the start (ties: the lowest id): the one the decommission drains."""
    held = dict.fromkeys(cluster.brokers, 0)
    for tp, replicas in cluster.assignment.items():
        for b in replicas:
            held[b] += cluster.size[tp]
    return min(cluster.brokers, key=lambda b: (-held[b] / cluster.disk[b], b))


def scenario_cluster(scenario: str, brokers: int, partitions: int) -> tuple[Cluster, int | None]:
    """The cluster of `scenario` and the broker it drains (None: none)."""
    cluster = generate(brokers, partitions)
    if scenario == "hot-topics":
        return hot_topics(cluster), None
    if scenario == "new-rack":
        return new_rack(cluster), None
    return cluster, fullest(cluster) if scenario == "decommission" else None


def kops_inputs(cluster: Cluster) -> tuple[Snapshot, dict[TopicPartition, int], dict[TopicPartition, float],
                                           CapacityDeclaration, GoalInputs]:
    """The cluster as kops reads it (snapshot, sizes in bytes, write rates in bytes/s, the declared capacities with
    the default 0.8 limits), and the goal figures' inputs."""
    sizes = {TopicPartition(*tp): mib * MIB for tp, mib in cluster.size.items()}
    write = {TopicPartition(*tp): float(kib * KIB) for tp, kib in cluster.write.items()}
    per_broker: dict[Resource, tuple[dict[int, int], int]] = {
        "disk": (cluster.disk, MIB), "network_in": (cluster.nw_in, KIB), "network_out": (cluster.nw_out, KIB)}
    declared = CapacityDeclaration(brokers={b: {r: Figure(float(c[b] * unit), SOURCE) for r, (c, unit)
                                                in per_broker.items()} for b in cluster.brokers})
    capacity: dict[str, dict[int, float]] = {r: {b: float(c[b] * unit) for b in cluster.brokers}
                                            for r, (c, unit) in per_broker.items()}
    inputs = GoalInputs(racks=dict(cluster.racks), sizes=sizes, write=write, capacity=capacity)
    return snapshot_of(cluster), sizes, write, declared, inputs


def measure(assignment: Assignment, inputs: GoalInputs, goals: tuple[str, ...] = GOALS) -> Figures:
    """Each goal's figure and lower bound for `assignment` (leaders: first replicas), skipped goals left out."""
    tps = {TopicPartition(*tp): r for tp, r in assignment.items()}
    return {f.name: (f.value, f.lower_bound) for f in goal_figures(tps, inputs, goals) if f.skipped is None}


def drained(snapshot: Snapshot, victim: int, sizes: dict[TopicPartition, int], policy: Policy,
            goals: tuple[str, ...] = ()) -> tuple[Snapshot, int]:
    """`kops plan`'s decommission of `victim` applied on paper, the broker then stopped; and its moves. With
    `goals`: the play's `rebalance: {goals: ..., tolerance: 0}`, which places every replica by the list."""
    loc = SourceLocation("bench/goals.py", 1, 1)
    listed = Rebalance(tolerance=0.0, location=loc, goals=goals) if goals else None
    drain = plan(DesiredState("bench", None, {}, BrokerChanges(decommission=(victim,), location=loc), listed),
                 snapshot, sizes, policy)
    after = apply_plan(snapshot, drain)
    return replace(after, brokers=tuple(b for b in after.brokers if b.id != victim)), drain.summary.moves


@dataclass(frozen=True)
class Check:
    """What keeps a goal beyond GAP from its lower bound, tried on the list's result: `band_top`, the figure with
    every broker at most at its band's top (how far the slack alone reaches); `alone`, the figure after the goal is
    optimized alone (free of every other goal); `prefix`, after the list up to it (free of the goals below it, whose
    starting peaks the optimizer keeps: optimizer.py's rule 4)."""

    band_top: float
    alone: float
    prefix: float


def verdict(after: float, bound: float, found: Check | None) -> str:
    """Why a goal ends where it does against its lower bound (see the module's docstring)."""
    if after - bound <= GAP:
        return "ok"
    if found is None:
        return "not checked"
    reach = max(bound + GAP, found.band_top) + 0.01
    if after <= reach:
        return "slack"
    if found.prefix <= reach:
        return "MISS: held by goals below"
    return "held by goals above" if found.alone <= reach else "MISS"


def _top(state: GoalState, band: Band | TopicBand) -> float:
    """The goal's figure (goal_values.py's unit) were every broker at most at its band's top."""
    if isinstance(band, TopicBand):
        kept = sum(max(0, min(n, band.ceiling[t]) - band.base[t]) for t, c in state.topic.items() for n in c.values())
        return round(100.0 * kept / sum(len(r) for r in state.replicas.values()), 2)
    if band.name in COUNTS:
        mean = sum(state.load[band.name][b] for b in state.brokers) / len(state.brokers)
        return round(100.0 * max(band.hi.values()) / mean, 2)
    return round(100.0 * max(band.hi[b] * band.scale[b] for b in state.brokers), 2)


def _reached(result: Snapshot, inputs: tuple[dict[TopicPartition, int], Mapping[TopicPartition, float], Policy],
             goals: tuple[str, ...]) -> tuple[float, float]:
    """The last of `goals`: its band's top on `result`, and its figure once `goals` are optimized on it."""
    sizes, write, policy = inputs
    state = state_of(result, sizes, write, resolve(policy.capacity, result))
    top = _top(state, bands(state, goals[-1:])[0][0])
    optimize(state, goals)
    return top, goal_figures(state.replicas, state.inputs, goals[-1:])[0].value


def check(result: Snapshot, inputs: tuple[dict[TopicPartition, int], Mapping[TopicPartition, float], Policy],
          goal: str) -> Check:
    """`goal` tried alone and after the goals above it on the list's result (see Check)."""
    top, alone = _reached(result, inputs, (goal,))
    above = GOALS[:GOALS.index(goal) + 1]
    prefix = alone if len(above) == 1 else _reached(result, inputs, above)[1]
    return Check(top, alone, prefix)


def goal_rows(before: Figures, after: Figures, baseline: Figures | None, room: Mapping[str, Check]) -> dict:
    """Per goal: before, after, lower bound, gap, room (and what the checks reached) and the baseline's after
    (None without a baseline)."""
    rows = {}
    for goal, (value, bound) in after.items():
        found = room.get(goal)
        rows[goal] = {"before": before[goal][0], "after": value, "lower_bound": bound,
                      "gap": round(value - bound, 2), "room": verdict(value, bound, found),
                      "band_top": found and found.band_top, "alone": found and found.alone,
                      "after_goals_above": found and found.prefix, "baseline_after": baseline and baseline[goal][0]}
    return rows


def judged(cluster: Cluster, after: Assignment, victim: int | None) -> dict[str, int | list[str]]:
    """What bench/cc_figures.py counts from an assignment alone: hard violations (racks, capacities at 0.8), moves,
    bytes and leadership changes from the start; and replicas left on the drained broker."""
    problems = invalid(cluster, after)
    found = figures(cluster, after)
    out: dict[str, int | list[str]] = {k: int(found[k]) for k in ("hard_violations", "rack_violations",
                                                                  "capacity_violations", "replica_moves",
                                                                  "bytes_moved", "leader_moves")}
    out["invalid"] = problems[:5]
    if victim is not None:
        out["left_on_drained"] = sum(1 for r in after.values() if victim in r)
    return out


def run(scenario: str, brokers: int, partitions: int, checks: bool = True, baseline: bool = True) -> dict:
    """One scenario: the goal-list plan, its figures, and where asked the room checks (`checks`) and the baseline
    on the same cluster (`baseline`). Without both: the plan, its hard violations, worse goals and idempotence
    only (--plan-only)."""
    cluster, victim = scenario_cluster(scenario, brokers, partitions)
    snapshot, sizes, write, declared, inputs = kops_inputs(cluster)
    policy = Policy(capacity=declared, write=write)
    request = GoalRequest(GOALS, Limits(), 0.0)
    started, cpu = time.perf_counter(), time.process_time()
    drain_moves = 0
    start = snapshot
    if victim is not None:
        snapshot, drain_moves = drained(snapshot, victim, sizes, policy)
    result = rebalance_goals(snapshot, request, sizes, policy, cluster="bench")
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    live = replace(inputs, racks={b.id: b.rack for b in snapshot.brokers})
    done = apply_plan(snapshot, result.plan)
    second = rebalance_goals(done, request, sizes, policy, cluster="bench").plan.summary
    base = apply_plan(snapshot, rebalance(snapshot, Request("bytes", Limits(), 0.0), sizes, policy, "bench").plan) \
        if baseline else None
    before, after = measure(layout_of(snapshot), live), measure(layout_of(done), live)
    far = [g for g, (v, bound) in after.items() if v - bound > GAP and g != "preferred_leaders"]
    room = {g: check(done, (sizes, write, policy), g) for g in far} if checks else {}
    rows = goal_rows(before, after, None if base is None else measure(layout_of(base), live), room)
    if victim is not None:
        for goal, (value, _) in measure(cluster.assignment, inputs).items():
            rows[goal]["start"] = value
    kops = judged(cluster, layout_of(done), victim)
    after_plan = None  # the drain placed by the same list (a play's goals), then the cron's rebalance: moves nothing
    if victim is not None:
        placed = drained(start, victim, sizes, policy, GOALS)[0]
        after_plan = rebalance_goals(placed, request, sizes, policy, cluster="bench").plan.summary
    other = dict.fromkeys(kops) if base is None else judged(cluster, layout_of(base), victim)
    return {"scenario": scenario, "cluster": cluster.name, "brokers": len(cluster.brokers),
            "partitions": len(cluster.assignment), "drained": victim, "goal_list": ",".join(GOALS),
            "goals": rows, "moves": kops["replica_moves"], "bytes_moved": kops["bytes_moved"],
            "leader_moves": kops["leader_moves"], "hard_violations": kops["hard_violations"],
            "hard_violations_start": judged(cluster, cluster.assignment, None)["hard_violations"],
            "violations": {k: kops[k] for k in ("rack_violations", "capacity_violations", "invalid")}
            | ({"left_on_drained": kops["left_on_drained"]} if victim is not None else {}),
            "drain_moves": drain_moves, "converged": result.converged,
            "worse_goals": [g for g, r in rows.items() if r["after"] > r["before"]],
            "idempotent": second.moves == 0 and second.leader_moves == 0,
            "second_run_moves": second.moves, "second_run_leader_moves": second.leader_moves,
            "after_plan_moves": None if after_plan is None else after_plan.moves,
            "after_plan_leader_moves": None if after_plan is None else after_plan.leader_moves,
            "misses": sorted(g for g, r in rows.items() if r["room"].startswith("MISS")),
            "plan_seconds": round(seconds, 2), "plan_cpu_seconds": round(cpu, 2), "peak_rss_mb": round(peak, 1),
            "room_checks": checks, "baseline": "none" if base is None else "kops rebalance --goal bytes",
            "baseline_moves": other["replica_moves"], "baseline_bytes_moved": other["bytes_moved"],
            "baseline_hard_violations": other["hard_violations"]}


def in_child(scenario: str, scale: str, folder: Path, timeout: float, flags: tuple[str, ...] = ()) -> dict:
    """`scenario` at `scale` in a fresh process; its line, with the whole process's wall time and peak RSS."""
    brokers, partitions = SCALES[scale]
    log = folder / f"{scale}-{scenario}.log"
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--scenario", scenario, "--scale", scale,
               *flags]
    code, seconds, rss = measured(command, log, timeout)
    if code != 0:
        status = f"timed out after {timeout:.0f} s" if code is None else f"failed: {log.read_text()[-400:]}"
        return {"scenario": scenario, "brokers": brokers, "partitions": partitions, "status": status}
    line = json.loads(log.read_text(encoding="utf-8").strip().splitlines()[-1])
    return line | {"process_seconds": round(seconds, 2), "process_peak_rss_mb": rss and round(rss, 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", action="append", choices=sorted(SCALES), help="default: small and medium")
    parser.add_argument("--scenario", choices=SCENARIOS, help="only this one")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds a scenario may take")
    parser.add_argument("--plan-only", action="store_true",
                        help="the plan and its hard checks (violations, worse goals, idempotence) without the room "
                             "checks and the baseline: at a million partitions the single-goal baseline takes more "
                             "than 15 minutes (RESULTS, Capacity) and each room check walks the list again")
    parser.add_argument("--no-baseline", action="store_true",
                        help="the room checks without the baseline: where each goal far from its bound is held, at "
                             "a million partitions too")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # run it here, in_child's process
    args = parser.parse_args()
    scales = args.scale or ["small", "medium"]
    if args.child:
        print(json.dumps(run(args.scenario, *SCALES[scales[0]], checks=not args.plan_only,
                             baseline=not (args.plan_only or args.no_baseline))))
        return
    flags = tuple(f for f, on in (("--plan-only", args.plan_only), ("--no-baseline", args.no_baseline)) if on)
    with tempfile.TemporaryDirectory(prefix="kops-bench-goals-") as temp:
        for scale in scales:
            for scenario in [args.scenario] if args.scenario else SCENARIOS:
                print(json.dumps(in_child(scenario, scale, Path(temp), args.timeout, flags)), flush=True)


if __name__ == "__main__":
    main()
