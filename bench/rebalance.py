"""Bounded rebalance benchmark (`kops rebalance`): how much balance a budget buys, and how fast it is planned.

The skewed cluster of bench/planner.py (500 brokers in 10 racks, 200,000 partitions at RF 3, Zipf sizes, every
7th broker three times as likely to hold a replica). For each goal and budget, one JSON line with plan_seconds,
moves, bytes, estimated_seconds, imbalance_before/after and `gain_per_tib` (imbalance removed per TiB copied).
Baseline in the same run: the unbounded rebalance's moves cut at the same budget in the plan's own order
(what trimming a full plan, or a kafka-reassign-partitions file, to a night's budget gives): its imbalance after
and gain per TiB. `gain_ratio` = kops's gain ÷ the baseline's for the same budget; `budget_fill` = the imbalance
kops's bounded run removes ÷ what the full plan cut to the budget removes (target, issue 18: ≥ 0.9 at 20,000 and
200,000 partitions).

Usage: python bench/rebalance.py [--partitions 200000] [--brokers 500]; --partitions 20000 for the smaller cluster
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.planner import build  # noqa: E402 - after the sys.path line above
from kops.model.partitions import TopicPartition  # noqa: E402 - after the sys.path line above
from kops.planner.bounded import Request, imbalance, rebalance  # noqa: E402 - after the sys.path line above
from kops.planner.budget import Limits  # noqa: E402 - after the sys.path line above
from kops.planner.planner import Policy  # noqa: E402 - after the sys.path line above

TIB = 2**40
RATE = 50 * 2**20  # the cron default throttle, bytes/s per broker
BUDGETS = {"max_moves=2000": Limits(max_moves=2000),
           "max_bytes=50GiB": Limits(max_bytes=50 * 2**30),
           "max_duration=60s": Limits(max_seconds=60)}


def truncated(full_moves, snapshot, sizes, goal: str, limits: Limits) -> tuple[int, int, float]:
    """The baseline: the unbounded plan's data moves in its order, kept while the budget allows."""
    counts: dict[int, int] = {}
    load: dict[int, int] = {}
    for name, topic in snapshot.topics.items():
        for p, part in topic.partitions.items():
            for b in part.replicas:
                counts[b] = counts.get(b, 0) + 1
                load[b] = load.get(b, 0) + sizes[TopicPartition(name, p)]
    moves = spent = 0
    port: dict[int, int] = {}
    port_bytes = None if limits.max_seconds is None else limits.max_seconds * Policy(throttle=RATE).port_rate()
    for m in full_moves:
        if m.kind != "data":
            continue
        copy = m.copied_bytes
        touched = set(m.adding) | {m.leader}
        if (limits.max_moves is not None and moves + len(m.adding) > limits.max_moves) \
                or (limits.max_bytes is not None and spent + copy > limits.max_bytes) \
                or (port_bytes is not None and any(port.get(b, 0) + m.bytes > port_bytes for b in touched)):
            continue
        moves += len(m.adding)
        spent += copy
        for b in touched:
            port[b] = port.get(b, 0) + m.bytes
        for b in m.removing:
            counts[b] -= 1
            load[b] -= m.bytes
        for b in m.adding:
            counts[b] = counts.get(b, 0) + 1
            load[b] = load.get(b, 0) + m.bytes
    brokers = sorted(snapshot.live_broker_ids)
    return moves, spent, imbalance(counts if goal == "replicas" else load, brokers)


def fill(before: float, after: float, baseline_after: float) -> float | None:
    """The bounded run's improvement over that of the full plan cut to the same budget (issue 18: >= 0.9)."""
    return round((before - after) / (before - baseline_after), 3) if before > baseline_after else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=200_000)
    parser.add_argument("--brokers", type=int, default=None, help="default: one per 400 partitions")
    args = parser.parse_args()
    snap, sizes = build(args.brokers or max(10, args.partitions // 400), 0, args.partitions, skew=True)
    policy = Policy(throttle=RATE)
    for goal in ("replicas", "bytes"):
        started = time.perf_counter()
        full = rebalance(snap, Request(goal, Limits(), 0.0), sizes, policy)
        full_seconds = time.perf_counter() - started
        for name, limits in BUDGETS.items():
            started = time.perf_counter()
            bounded = rebalance(snap, Request(goal, limits, 0.0), sizes, policy)
            seconds = time.perf_counter() - started
            s = bounded.plan.summary
            base_moves, base_bytes, base_after = truncated(full.plan.moves, snap, sizes, goal, limits)
            gain = (bounded.imbalance_before - bounded.imbalance_after) / max(s.bytes / TIB, 1e-9)
            base_gain = (bounded.imbalance_before - base_after) / max(base_bytes / TIB, 1e-9)
            print(json.dumps({
                "goal": goal, "budget": name, "partitions": snap.partition_count, "brokers": len(snap.brokers),
                "plan_seconds": round(seconds, 2), "moves": s.moves, "bytes": s.bytes,
                "estimated_seconds": round(s.estimated_seconds or 0.0, 1),
                "imbalance_before": bounded.imbalance_before, "imbalance_after": bounded.imbalance_after,
                "gain_per_tib": round(gain, 4),
                "baseline_moves": base_moves, "baseline_bytes": base_bytes, "baseline_imbalance_after": base_after,
                "baseline_gain_per_tib": round(base_gain, 4),
                "gain_ratio": round(gain / base_gain, 2) if base_gain > 0 else None,
                "budget_fill": fill(bounded.imbalance_before, bounded.imbalance_after, base_after),
                "unbounded_plan_seconds": round(full_seconds, 2), "unbounded_moves": full.plan.summary.moves,
                "unbounded_imbalance_after": full.imbalance_after, "nproc": os.cpu_count(),
            }), flush=True)


if __name__ == "__main__":
    main()
