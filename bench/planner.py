"""Planner benchmark: 500 brokers in 10 racks, 200,000 partitions at RF 3, Zipf-distributed sizes (and, with
--million, 1,000 brokers in 20 racks and 1,000,000 partitions: 3 million replicas).

Scenarios: decommission 2% of the brokers (10 of 500, 20 of 1,000); add 4% (20, 40); rebalance a skewed cluster
(5%). For each, one JSON line with plan_seconds, peak_rss_mb (each scenario runs in a fresh process: snapshot
building + planning), moves_ratio and bytes_ratio (moves and bytes over the lower bound),
max_leaders_per_broker against ceil(P/B) + 1 (`max_leaders_over_ideal` = the excess over ceil(P/B)), the
spread of replicas per broker, the time to save and load the snapshot and the plan as files (kops-snapshot/1,
kops-plan/2, through the format declarations, as `kops plan --snapshot` and `kops apply` do) and the plan file's
sha256 (`plan_sha256`, its first 16 hex digits: a faster planner must write the same bytes), and in the same run
`baseline_moves_ratio`: what kafka-reassign-partitions.sh --generate would do (every topic placed from scratch,
round-robin from a random start index, as AdminUtils.assignReplicasToBrokers) measured against the same lower
bound.
Targets (issue 6, 200,000 partitions): plan_seconds <= 20, peak_rss_mb <= 2048, moves_ratio <= 1.02, replicas
per broker within ±1 of the mean after add/decommission, max_leaders_per_broker <= ceil(P/B) + 1.
Targets (issue 18, a million): plan_seconds <= 60, peak_rss_mb <= 4096, moves_ratio <= 1.02,
max_leaders_over_ideal <= 1; files load and save in seconds.

Usage: python bench/planner.py [--partitions 200000] [--brokers 500] [--racks 10] [--million] [--scenario NAME]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kops.model import plan_format, snapshot_format  # noqa: E402 - after the sys.path line above
from kops.model.brokers import Broker  # noqa: E402 - after the sys.path line above
from kops.model.desired import BrokerChanges, DesiredState, Rebalance, SourceLocation  # noqa: E402 - after the sys.path line above
from kops.model.partitions import Partition, PartitionState, TopicPartition  # noqa: E402 - after the sys.path line above
from kops.model.plan import Plan  # noqa: E402 - after the sys.path line above
from kops.model.snapshot import ControllerInfo, Snapshot  # noqa: E402 - after the sys.path line above
from kops.model.topics import Topic  # noqa: E402 - after the sys.path line above
from kops.planner.planner import plan  # noqa: E402 - after the sys.path line above
from tests.simulate import apply_plan  # noqa: E402 - after the sys.path line above

PARTITIONS_PER_TOPIC = 100
SCENARIOS = ("decommission", "add", "rebalance")


def zipf_sizes(count: int, rng: random.Random) -> list[int]:
    """Sizes following Zipf's law (s = 1.1): a few huge partitions, a long tail; 50 GiB at the top."""
    ranks = list(range(1, count + 1))
    rng.shuffle(ranks)
    return [max(1 << 20, int(50 * 2**30 / r**1.1)) for r in ranks]


def build(brokers: int, extra: int, partitions: int, skew: bool, racks: int = 10, seed: int = 7):
    rng = random.Random(seed)
    broker_list = tuple(Broker(b, "h", 9000 + b, (f"PLAINTEXT://h:{9000 + b}",), f"rack-{b % racks}")
                        for b in range(1, brokers + extra + 1))
    by_rack: dict[str, list[int]] = {}
    for b in broker_list[:brokers]:
        by_rack.setdefault(b.rack, []).append(b.id)
    rack_names = sorted(by_rack)
    weights = {b: (3.0 if skew and b % 7 == 0 else 1.0) for b in range(1, brokers + 1)}
    sizes_list = zipf_sizes(partitions, rng)
    topics = {}
    sizes = {}
    cursor = {r: rng.randrange(len(by_rack[r])) for r in rack_names}
    index = 0
    for t in range(partitions // PARTITIONS_PER_TOPIC):
        name = f"topic-{t:05d}"
        parts = {}
        for p in range(PARTITIONS_PER_TOPIC):
            chosen_racks = rng.sample(rack_names, 3)
            replicas = []
            for rack in chosen_racks:
                members = by_rack[rack]
                if skew:
                    replicas.append(rng.choices(members, [weights[m] for m in members])[0])
                else:
                    cursor[rack] = (cursor[rack] + 1) % len(members)
                    replicas.append(members[cursor[rack]])
            replicas_t = tuple(replicas)
            parts[p] = Partition(replicas_t, state=PartitionState(replicas_t[0], 1, replicas_t, 1))
            sizes[TopicPartition(name, p)] = sizes_list[index]
            index += 1
        topics[name] = Topic(name, parts)
    snap = Snapshot("bench", ControllerInfo(1, 1), broker_list, topics)
    return snap, sizes


def generate_baseline(snap: Snapshot, eligible: list[int], seed: int = 11) -> int:
    """Replica moves kafka-reassign-partitions.sh --generate makes: each topic placed from scratch."""
    rng = random.Random(seed)
    rack = {b.id: b.rack for b in snap.brokers}
    # AdminUtils.getRackAlternatedBrokerList: brokers taken one rack at a time, round-robin over racks.
    by_rack: dict[str, list[int]] = {}
    for b in sorted(eligible):
        by_rack.setdefault(rack[b], []).append(b)
    alternated, depth = [], 0
    while len(alternated) < len(eligible):
        for r in sorted(by_rack):
            if depth < len(by_rack[r]):
                alternated.append(by_rack[r][depth])
        depth += 1
    n = len(alternated)
    moves = 0
    for topic in snap.topics.values():
        start, shift = rng.randrange(n), rng.randrange(n)
        for number, part in sorted(topic.partitions.items()):
            if number > 0 and number % n == 0:
                shift += 1
            first = (number + start) % n
            replicas = [alternated[first]]
            j = 0
            while len(replicas) < len(part.replicas):
                candidate = alternated[(first + 1 + (shift + j) % (n - 1)) % n]
                j += 1
                if candidate not in replicas and rack[candidate] not in {rack[r] for r in replicas}:
                    replicas.append(candidate)
                if j > 4 * n:
                    break
            moves += len(set(replicas) - set(part.replicas))
    return moves


def file_seconds(snap: Snapshot, result: Plan) -> dict[str, float | str]:
    """Saving and loading the snapshot and the plan as kops's files (validated through their declarations), and
    the plan file's sha256 (its first 16 hex digits): a faster planner must give the same bytes."""
    timed: dict[str, float | str] = {}
    for name, module, value in (("snapshot", snapshot_format, snap), ("plan", plan_format, result)):
        started = time.perf_counter()
        data = module.dumps(value)  # type: ignore[attr-defined]  # both modules have dumps/loads
        timed[f"{name}_save_seconds"] = round(time.perf_counter() - started, 2)
        started = time.perf_counter()
        module.loads(data, f"{name}.json")  # type: ignore[attr-defined]  # both modules have dumps/loads
        timed[f"{name}_load_seconds"] = round(time.perf_counter() - started, 2)
        timed[f"{name}_mb"] = round(len(data) / 2**20, 1)
    timed["plan_sha256"] = hashlib.sha256(data).hexdigest()[:16]
    return timed


def run(scenario: str, brokers: int, partitions: int, racks: int) -> dict:
    extra = brokers // 25 if scenario == "add" else 0
    snap, sizes = build(brokers, extra, partitions, skew=scenario == "rebalance", racks=racks)
    loc = SourceLocation("bench.yml", 1, 1)
    if scenario == "decommission":
        changes = BrokerChanges(decommission=tuple(range(1, brokers // 50 + 1)), location=loc)
        desired = DesiredState("bench", None, {}, changes)
    elif scenario == "add":
        changes = BrokerChanges(add=tuple(range(brokers + 1, brokers + extra + 1)), location=loc)
        desired = DesiredState("bench", None, {}, changes)
    else:
        desired = DesiredState("bench", None, {}, BrokerChanges(location=loc), Rebalance("replicas", 0.05, loc))
    started = time.perf_counter()
    result = plan(desired, snap, sizes)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    after = apply_plan(snap, result)
    eligible = sorted(set(b.id for b in snap.brokers) - set(desired.brokers.decommission))
    counts = {b: 0 for b in eligible}
    leaders = {b: 0 for b in eligible}
    for t in after.topics.values():
        for p in t.partitions.values():
            for r in p.replicas:
                counts[r] += 1
            leaders[p.replicas[0]] += 1
    mean = sum(counts.values()) / len(counts)
    s = result.summary
    baseline = generate_baseline(snap, eligible)
    lb = max(1, s.lower_bound_moves)
    ideal = math.ceil(snap.partition_count / len(eligible))
    return {
        "scenario": scenario,
        "brokers": len(snap.brokers),
        "partitions": snap.partition_count,
        "plan_seconds": round(seconds, 2),
        "peak_rss_mb": round(peak, 1),
        "moves": s.moves,
        "lower_bound_moves": s.lower_bound_moves,
        "moves_ratio": round(s.moves / lb, 4),
        "bytes": s.bytes,
        "lower_bound_bytes": s.lower_bound_bytes,
        "bytes_ratio": round(s.bytes / max(1, s.lower_bound_bytes), 4),
        "batches": len(result.batches),
        "max_leaders_per_broker": max(leaders.values()),
        "leader_cap": ideal + 1,
        "max_leaders_over_ideal": max(leaders.values()) - ideal,
        "replicas_per_broker_min": min(counts.values()),
        "replicas_per_broker_max": max(counts.values()),
        "replicas_mean": round(mean, 2),
        "baseline_moves": baseline,
        "baseline_moves_ratio": round(baseline / lb, 2),
        **file_seconds(snap, result),
    }


def cluster_options(scenarios: tuple[str, ...], brokers: int) -> argparse.ArgumentParser:
    """The options every cluster benchmark shares: the cluster's size, --million, and --scenario (one scenario,
    the way each runs in a fresh child process)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=200_000)
    parser.add_argument("--brokers", type=int, default=brokers)
    parser.add_argument("--racks", type=int, default=10)
    parser.add_argument("--million", action="store_true", help="1,000 brokers in 20 racks, 1,000,000 partitions")
    parser.add_argument("--scenario", choices=scenarios)
    return parser


def at_size(args: argparse.Namespace) -> argparse.Namespace:
    """`args` with --million's size in place of the given one."""
    if args.million:
        args.brokers, args.racks, args.partitions = 1000, 20, 1_000_000
    return args


def child(script: str, scenario: str, args: argparse.Namespace) -> list[str]:
    """The command that runs one scenario of `script` in a fresh process, at the same size."""
    return [sys.executable, script, "--scenario", scenario, "--partitions", str(args.partitions),
            "--brokers", str(args.brokers), "--racks", str(args.racks)]


def main() -> None:
    args = at_size(cluster_options(SCENARIOS, 500).parse_args())
    if args.scenario:
        print(json.dumps(run(args.scenario, args.brokers, args.partitions, args.racks)))
        return
    for scenario in SCENARIOS:
        out = subprocess.run(child(__file__, scenario, args), check=True, capture_output=True, text=True).stdout
        print(out.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
