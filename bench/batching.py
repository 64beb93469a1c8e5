"""Batching benchmark: kops' batches against fixed-size chunks of the same moves, in a fluid simulation.

For each scenario (expansion, decommission, rebalance) × size distribution (exponential, Zipf) the planner
produces moves; they run in batches, a batch starting when the previous one has finished. Inside a batch every
new replica is a flow from the partition's leader to the new broker; flows share each broker's outbound
(leader) and inbound (follower) throttle max-min fairly (progressive filling), as replication fetches do.
Reported: makespan ÷ lower bound, where the lower bound is max over brokers of (all bytes in or out ÷ rate),
for kops (`kops_ratio`) and for the same moves in plan order cut into chunks of the same size
(`fixed_chunk_ratio`, what a script around kafka-reassign-partitions.sh does), and for rolling execution
(`rolling_ratio`: moves start as others finish, at most 5 in flight touching any broker, busiest port first;
kops.planner.rolling). Targets: kops_ratio <= 1.15; rolling_ratio <= 1.05 (issue 18, in simulation here;
bench/rolling.py is to measure it on clusters).

Usage: python bench/batching.py [--brokers 60] [--partitions 6000]     One JSON line per scenario.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.planner import build  # noqa: E402 - after the sys.path line above
from kops.model.desired import BrokerChanges, DesiredState, Execution, Rebalance, SourceLocation  # noqa: E402 - after the sys.path line above
from kops.model.partitions import TopicPartition  # noqa: E402 - after the sys.path line above
from kops.model.plan import Move, Rolling  # noqa: E402 - after the sys.path line above
from kops.planner.batches import port_times  # noqa: E402 - after the sys.path line above
from kops.planner.planner import plan  # noqa: E402 - after the sys.path line above
from kops.planner.rolling import admissible, rolling_order  # noqa: E402 - after the sys.path line above

RATE = 50 * 2**20  # bytes/s per broker port, in and out
CHUNK = 40  # partitions per batch, for both kops and the fixed chunks
PER_BROKER = 5  # rolling: moves in flight touching any broker (kops apply --rolling's default)


def fair_rates(flows: list[list], rate: float) -> list[float]:
    """Max-min fair rates of `flows` ([source, destination, bytes left]) over broker ports of `rate` each:
    progressive filling, raising every unfrozen flow together until a port saturates."""
    rates = [0.0] * len(flows)
    frozen = [False] * len(flows)
    capacity: dict[tuple[str, int], float] = {}
    for src, dst, _ in flows:
        capacity[("out", src)] = rate
        capacity[("in", dst)] = rate
    while not all(frozen):
        users: dict[tuple[str, int], int] = {}
        for i, (src, dst, _) in enumerate(flows):
            if not frozen[i]:
                users[("out", src)] = users.get(("out", src), 0) + 1
                users[("in", dst)] = users.get(("in", dst), 0) + 1
        _port, share = min(((p, capacity[p] / n) for p, n in users.items()), key=lambda x: x[1])
        for i, (src, dst, _) in enumerate(flows):
            if frozen[i]:
                continue
            rates[i] += share
            capacity[("out", src)] -= share
            capacity[("in", dst)] -= share
        for i, (src, dst, _) in enumerate(flows):
            if not frozen[i] and (capacity[("out", src)] <= 1e-9 or capacity[("in", dst)] <= 1e-9):
                frozen[i] = True
    return rates


def simulate_batch(moves: list[Move], rate: float) -> float:
    """Seconds until every flow of the batch completes under max-min fair sharing of broker ports."""
    flows = [[m.leader, dest, float(m.bytes)] for m in moves for dest in m.adding if m.bytes > 0]
    elapsed = 0.0
    while flows:
        rates = fair_rates(flows, rate)
        step = min(remaining / r for (_, _, remaining), r in zip(flows, rates))
        elapsed += step
        for flow, r in zip(flows, rates):
            flow[2] -= r * step
        flows = [f for f in flows if f[2] > 1e-6]
    return elapsed


def simulate_rolling(moves: list[Move], rate: float, limits: Rolling) -> float:
    """Seconds until every move completes when moves start as others finish (kops.planner.rolling's order
    and caps), flows sharing ports as in a batch."""
    def source(m: Move) -> int:
        return m.leader
    pending = rolling_order([m for m in moves if m.bytes > 0], source)
    running: dict[Move, list[list]] = {}
    elapsed = 0.0
    while pending or running:
        started = admissible(pending, list(running), limits, source)
        for m in started:
            running[m] = [[m.leader, dest, float(m.bytes)] for dest in m.adding]
        chosen = set(started)
        pending = [m for m in pending if m not in chosen]
        flows = [f for fs in running.values() for f in fs]
        rates = fair_rates(flows, rate)
        step = min(remaining / r for (_, _, remaining), r in zip(flows, rates))
        elapsed += step
        for flow, r in zip(flows, rates):
            flow[2] -= r * step
        running = {m: [f for f in fs if f[2] > 1e-6] for m, fs in running.items()}
        running = {m: fs for m, fs in running.items() if fs}
    return elapsed


def sizes_exponential(sizes: dict[TopicPartition, int], seed: int = 5) -> dict[TopicPartition, int]:
    rng = random.Random(seed)
    return {tp: int(rng.expovariate(1 / (2 * 2**30))) + (1 << 20) for tp in sorted(sizes)}


def scenario(name: str, distribution: str, brokers: int, partitions: int) -> dict:
    extra = brokers // 10 if name == "expansion" else 0
    snap, sizes = build(brokers, extra, partitions, skew=name == "rebalance", seed=3)
    if distribution == "exponential":
        sizes = sizes_exponential(sizes)
    loc = SourceLocation("bench.yml", 1, 1)
    execution = Execution(throttle=RATE, max_partitions=CHUNK)
    if name == "expansion":
        changes = BrokerChanges(add=tuple(range(brokers + 1, brokers + extra + 1)), location=loc)
        desired = DesiredState("bench", None, {}, changes, execution=execution)
    elif name == "decommission":
        changes = BrokerChanges(decommission=tuple(range(1, 1 + max(1, brokers // 20))), location=loc)
        desired = DesiredState("bench", None, {}, changes, execution=execution)
    else:
        desired = DesiredState("bench", None, {}, BrokerChanges(location=loc), Rebalance("replicas", 0.05, loc),
                               execution)
    result = plan(desired, snap, sizes)
    moves = [m for m in result.moves if m.adding]
    _, _, lower_bound = port_times(moves, RATE, RATE)
    kops_batches = [[m for m in b.moves if m.adding] for b in result.batches]
    kops_time = sum(simulate_batch(b, RATE) for b in kops_batches)
    in_plan_order = sorted(moves, key=lambda m: (m.topic, m.partition))
    chunks = [in_plan_order[i:i + CHUNK] for i in range(0, len(in_plan_order), CHUNK)]
    fixed_time = sum(simulate_batch(c, RATE) for c in chunks)
    rolling_time = simulate_rolling(moves, RATE, Rolling(PER_BROKER))
    return {
        "scenario": f"{name}-{distribution}",
        "moves": len(moves),
        "kops_batches": len(kops_batches),
        "fixed_batches": len(chunks),
        "lower_bound_seconds": round(lower_bound, 1),
        "kops_seconds": round(kops_time, 1),
        "fixed_chunk_seconds": round(fixed_time, 1),
        "kops_ratio": round(kops_time / lower_bound, 3),
        "fixed_chunk_ratio": round(fixed_time / lower_bound, 3),
        "rolling_seconds": round(rolling_time, 1),
        "rolling_ratio": round(rolling_time / lower_bound, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--brokers", type=int, default=60)
    parser.add_argument("--partitions", type=int, default=6000)
    args = parser.parse_args()
    for name in ("expansion", "decommission", "rebalance"):
        for distribution in ("exponential", "zipf"):
            print(json.dumps(scenario(name, distribution, args.brokers, args.partitions)), flush=True)


if __name__ == "__main__":
    main()
