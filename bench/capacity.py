"""Capacity benchmark (issue 35, docs/design/capacity.md §9): plans held to broker capacities, beside the same plans
made without them, on random clusters with unequal disks and hot topics.

Clusters are bench/planner.py's (`build`, Zipf sizes, RF 3, 100 partitions per topic). Half the brokers (even ids)
have twice the disk and network-in capacity of the others; a broker whose start would already be over its limit
gets a disk (or a network port) just large enough to be at 78%, as an operator sizes what is already full. A tenth of
the topics are hot: they carry 90% of the writes. Limits are the default 0.8 of each capacity. Scenarios:

- `decommission-full-rack`: 3 racks, one of them nearly full (its small brokers at 75% of disk, the rest of the
  cluster at 50%), and one broker of that rack decommissioned: RF 3 over 3 racks, so its replicas must stay in it;
- `add`: 4% new brokers (disks at 60%);
- `rebalance-bytes`: a skewed cluster balanced by bytes (55% of the cluster's disk in use);
- `rebalance-hot`: a skewed cluster balanced by replicas, its network in at 60% of the cluster's.

Each scenario runs in a fresh process. One JSON line each: `brokers`, `partitions`, `scenario`, `refused` (kops
refused the plan, exit 1: its figures are then null and its violations 0), `max_disk_usage_after` and
`max_network_in_usage_after` (the largest load ÷ capacity after the plan), `hard_violations` (brokers × resources
over their limit at any batch boundary or batch peak, or above their start where they start over: target 0),
`moves` and `moves_ratio` (moves ÷ `baseline_moves`, where the baseline has no violation, else null: target ≤
1.10), `plan_seconds` and `peak_rss_mb` of the plan with capacities (measured before the baseline is made), and in
the same run the baseline, the same plan without capacities: `baseline_moves`, `baseline_hard_violations`,
`baseline_max_disk_usage_after`. Both plans' violations are counted by one function, kops.planner.headroom's
`violations` of the plan's capacity report (as the property test does: tests/unit/test_capacity_property.py).
Targets at 1,000 brokers and 1,000,000 partitions (--million): plan_seconds ≤ 60, peak_rss_mb ≤ 4096.

A scenario that runs past --timeout seconds (default 1800) is killed and its line says `timed_out`. A baseline
that runs past --baseline-timeout seconds (default: none) is stopped, and its fields are null with
`baseline_timed_out` set: the count and byte balancers without capacities are quadratic in places at a million
partitions, and the plan with capacities is measured before the baseline starts, so its figures stand.

Usage: python bench/capacity.py [--brokers 200] [--partitions 200000] [--million] [--scenario NAME] [--timeout S]
                                [--baseline-timeout S]
"""

from __future__ import annotations

import json
import resource
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.planner import at_size, build, child, cluster_options  # noqa: E402 - after the sys.path line above
from kops.model.capacity import CapacityDeclaration, Figure  # noqa: E402 - after the sys.path line above
from kops.model.desired import BrokerChanges, DesiredState, Rebalance, SourceLocation  # noqa: E402 - after the sys.path line above
from kops.model.partitions import TopicPartition  # noqa: E402 - after the sys.path line above
from kops.model.plan import Plan  # noqa: E402 - after the sys.path line above
from kops.model.snapshot import Snapshot  # noqa: E402 - after the sys.path line above
from kops.planner.headroom import capacity_report, violations  # noqa: E402 - after the sys.path line above
from kops.planner.planner import PlanningError, Policy, plan  # noqa: E402 - after the sys.path line above

SCENARIOS = ("decommission-full-rack", "add", "rebalance-bytes", "rebalance-hot")
SOURCE = "declared bench/capacity.py"
ALREADY_FULL = 0.78  # where a broker that would start over its limit is put instead
HOT_SHARE = 0.9  # of all writes, carried by a tenth of the topics
BASE_RATE = 125 * 2**20  # network in of a small broker (1 Gbit/s), before scaling to the scenario's use
Loads = dict[int, float]


def write_rates(snap: Snapshot, total: float) -> dict[TopicPartition, float]:
    """Bytes/s appended per partition: a tenth of the topics (every tenth by name) share 90% of `total`."""
    names = sorted(snap.topics)
    hot = {name for i, name in enumerate(names) if i % 10 == 0}
    hot_parts = sum(len(snap.topics[n].partitions) for n in hot)
    cold_parts = max(1, snap.partition_count - hot_parts)
    return {TopicPartition(name, p): total * (HOT_SHARE / max(1, hot_parts) if name in hot
                                              else (1 - HOT_SHARE) / cold_parts)
            for name in names for p in snap.topics[name].partitions}


def per_broker(snap: Snapshot, per_partition: Mapping[TopicPartition, float]) -> Loads:
    """What every replica of each partition puts on its broker (disk: its size; network in: its write rate)."""
    out: Loads = {b.id: 0.0 for b in snap.brokers}
    for name, topic in snap.topics.items():
        for number, part in topic.partitions.items():
            amount = per_partition.get(TopicPartition(name, number), 0.0)
            for b in part.replicas:
                out[b] += amount
    return out


def sized(loads: Loads, brokers: list[int], use: float) -> dict[int, float]:
    """Capacities for `brokers`: small (odd ids) and twice that (even ids), scaled so the small brokers' median
    load is at `use`; a broker whose load would then be over 0.8 of its capacity gets one at ALREADY_FULL."""
    small = [loads[b] for b in brokers if b % 2] or [loads[b] / 2 for b in brokers]
    unit = max(1.0, statistics.median(small) / use)
    return {b: max(unit * (1 if b % 2 else 2), loads[b] / ALREADY_FULL) for b in brokers}


def declaration(snap: Snapshot, sizes: Mapping[TopicPartition, int], write: Mapping[TopicPartition, float],
                scenario: str) -> CapacityDeclaration:
    """Disk and network-in capacities for every broker, as the scenario sets them."""
    disk, rate = per_broker(snap, sizes), per_broker(snap, write)
    ids = sorted(b.id for b in snap.brokers)
    use = {"add": 0.6, "rebalance-bytes": 0.55}.get(scenario, 0.5)
    if scenario == "decommission-full-rack":
        full = [b.id for b in snap.brokers if b.rack == "rack-0"]
        disks = sized(disk, full, 0.75) | sized(disk, [b for b in ids if b not in full], use)
    else:
        disks = sized(disk, ids, use)
    rates = sized(rate, ids, 0.6 if scenario == "rebalance-hot" else 0.4)
    return CapacityDeclaration(brokers={b: {"disk": Figure(disks[b], SOURCE), "network_in": Figure(rates[b], SOURCE)}
                                        for b in ids})


def scenario_cluster(scenario: str, brokers: int, partitions: int, racks: int):
    """The cluster, its sizes and what to plan for `scenario`."""
    loc = SourceLocation("bench.yml", 1, 1)
    if scenario == "decommission-full-rack":
        snap, sizes = build(brokers, 0, partitions, skew=False, racks=3)
        victim = min(b.id for b in snap.brokers if b.rack == "rack-0")
        return snap, sizes, DesiredState("bench", None, {}, BrokerChanges(decommission=(victim,), location=loc))
    if scenario == "add":
        extra = max(1, brokers // 25)
        snap, sizes = build(brokers, extra, partitions, skew=False, racks=racks)
        added = tuple(range(brokers + 1, brokers + extra + 1))
        return snap, sizes, DesiredState("bench", None, {}, BrokerChanges(add=added, location=loc))
    snap, sizes = build(brokers, 0, partitions, skew=True, racks=racks)
    goal = "bytes" if scenario == "rebalance-bytes" else "replicas"
    return snap, sizes, DesiredState("bench", None, {}, BrokerChanges(location=loc), Rebalance(goal, 0.05, loc))


def judged(result: Plan, snap: Snapshot, sizes: Mapping[TopicPartition, int], declared: CapacityDeclaration,
           write: Mapping[TopicPartition, float]) -> dict[str, float | int | None]:
    """A plan held to `declared` (one walk of it): its hard violations, the brokers × resources over their cap
    at a batch's peak or after it (kops.planner.headroom's `violations`, which refuses a plan), and the largest
    load ÷ capacity after it of disk and network in."""
    report = capacity_report(result, snap, sizes, declared, write)
    out: dict[str, float | int | None] = {"hard_violations": len(violations(report)) if report is not None else 0}
    brokers = report.brokers.values() if report is not None else []
    for resource_name in ("disk", "network_in"):
        ratios = [u[resource_name].after / u[resource_name].capacity for u in brokers
                  if resource_name in u and u[resource_name].capacity > 0]
        out[f"max_{resource_name}_usage_after"] = round(max(ratios), 4) if ratios else None
    return out


class _Late(Exception):
    """The baseline ran past --baseline-timeout."""


def _within(seconds: float | None, make: Callable[[], Plan]) -> Plan | None:
    """`make()`, or None once it has run `seconds` (SIGALRM: the planner is pure Python, so it stops promptly)."""
    if seconds is None:
        return make()

    def late(_signum: int, _frame: object) -> None:
        raise _Late

    previous = signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return make()
    except _Late:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run(scenario: str, brokers: int, partitions: int, racks: int, baseline_timeout: float | None = None) -> dict:
    snap, sizes, desired = scenario_cluster(scenario, brokers, partitions, racks)
    total_rate = sum(BASE_RATE * (1 if b.id % 2 else 2) for b in snap.brokers) / 3 * 0.3
    write = write_rates(snap, total_rate)
    declared = declaration(snap, sizes, write, scenario)
    started = time.perf_counter()
    try:
        kept: Plan | None = plan(desired, snap, sizes, Policy(capacity=declared, write=write))
    except PlanningError as refused:
        kept, reason = None, refused.one_line()
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    baseline = _within(baseline_timeout, lambda: plan(desired, snap, sizes, Policy(write=write)))
    base = judged(baseline, snap, sizes, declared, write) if baseline is not None else dict.fromkeys(
        ("hard_violations", "max_disk_usage_after", "max_network_in_usage_after"))
    out: dict = {"scenario": scenario, "brokers": len(snap.brokers), "partitions": snap.partition_count,
                 "refused": kept is None, "baseline_timed_out": baseline_timeout if baseline is None else None}
    if kept is None:
        out |= {"refusal": reason, "max_disk_usage_after": None, "max_network_in_usage_after": None,
                "hard_violations": 0, "moves": None, "moves_ratio": None}
    else:
        out |= judged(kept, snap, sizes, declared, write) | {
            "moves": kept.summary.moves,
            "moves_ratio": (round(kept.summary.moves / max(1, baseline.summary.moves), 4)
                            if baseline is not None and base["hard_violations"] == 0 else None),
            "batches": len(kept.batches)}
    return out | {
        "plan_seconds": round(seconds, 2),
        "peak_rss_mb": round(peak, 1),
        "baseline_moves": baseline.summary.moves if baseline is not None else None,
        "baseline_hard_violations": base["hard_violations"],
        "baseline_max_disk_usage_after": base["max_disk_usage_after"],
        "baseline_max_network_in_usage_after": base["max_network_in_usage_after"],
        "baseline_batches": len(baseline.batches) if baseline is not None else None,
    }


def main() -> None:
    parser = cluster_options(SCENARIOS, 200)
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds a scenario may take (default 1800)")
    parser.add_argument("--baseline-timeout", type=float, default=None, help="seconds the baseline may take")
    args = at_size(parser.parse_args())
    if args.scenario:
        print(json.dumps(run(args.scenario, args.brokers, args.partitions, args.racks, args.baseline_timeout)))
        return
    extra = [] if args.baseline_timeout is None else ["--baseline-timeout", str(args.baseline_timeout)]
    for scenario in SCENARIOS:
        try:
            out = subprocess.run(child(__file__, scenario, args) + extra, check=True, capture_output=True, text=True,
                                 timeout=args.timeout).stdout
        except subprocess.TimeoutExpired:  # a scenario that does not finish is a finding too: said, not hidden
            print(json.dumps({"scenario": scenario, "brokers": args.brokers, "partitions": args.partitions,
                              "timed_out": True, "timeout_seconds": args.timeout}), flush=True)
            continue
        print(out.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
