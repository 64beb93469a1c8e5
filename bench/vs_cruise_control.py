"""kops's rebalance beside Cruise Control's optimizer, on the same cluster (issue 36's measuring stick).

One seeded, skewed cluster per scale (bench/cc_cluster.py: racks, unequal disks and networks, Zipf sizes, hot
topics), written once as kops's files (kops-snapshot/1, a sizes summary with write rates, the capacity file
`--capacity` reads) and once as the Cruise Control anchor's CSV files (../shared/anchors/cruise-control). Each tool
runs as its own process: kops's planner in a fresh Python child that reads those files with kops's own readers
and calls `kops rebalance`'s planning function; Cruise Control through the anchor's run.sh with its default goals
less the two CPU goals (kops has no CPU model). Each tool's wall time and peak RSS are taken from outside (the
whole process: start-up, model, optimization, writing the result). Every other figure comes from the two
resulting assignments through one function, bench/cc_figures.py `figures`: neither tool's statistics decide.

Rows (JSON lines), per cluster: `before` (the starting assignment: the baseline of the same run), then kops today
(`kops-replicas`, `kops-bytes`: `kops rebalance --goal X` unbounded; `kops-sequence`: bytes, then replicas, then
leaders, each planned on the last one's result, what alternating cron runs give), then `cruise-control`.
Keys: cluster, tool, brokers, partitions, status, seconds, optimizer_seconds (the tool's own optimizer call),
peak_rss_mb, and figures(): disk_/network_in_/network_out_/network_out_potential_/leader_bytes_in_ max, min and
std (% of capacity), replicas_ and leaders_ max/min/std, replica_spread, leader_spread, topic_replica_spread
(mean over topics of max − min per broker), rack_violations, capacity_violations, hard_violations, replica_moves,
bytes_moved, leader_moves.

Usage: python bench/vs_cruise_control.py [--scale tiny|small|medium|million ...] [--no-cc] [--cc-runs N] [--keep DIR]
  tiny 6 brokers / 120 partitions (the test's), small 50 / 5,000, medium 200 / 50,000 (the issue's scales; the
  default runs small and medium), million 1,000 / 1,000,000 (kops alone unless --with-cc-at-million).
Run it under the shared lock: flock /tmp/kops-heavy.lock .venv/bin/python bench/vs_cruise_control.py
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.cc_cluster import Cluster, generate, read_assignment, write_cruise_control, write_kops  # noqa: E402 - after the sys.path line above
from bench.cc_figures import bounds, figures, invalid  # noqa: E402 - after the sys.path line above
from kops.model.goals import DEFAULT_GOALS  # noqa: E402 - after the sys.path line above
from kops.model.partitions import TopicPartition  # noqa: E402 - after the sys.path line above

SCALES = {"tiny": (6, 120), "small": (50, 5_000), "medium": (200, 50_000), "million": (1_000, 1_000_000)}
VARIANTS = {"kops-replicas": ("replicas",), "kops-bytes": ("bytes",),
            "kops-sequence": ("bytes", "replicas", "leaders"),
            # the goal-list optimizer (kops/planner/optimizer.py): Cruise Control's order of the same goals, and
            # kops's default list (resources first)
            "kops-goals": ("replicas", "disk", "network_in", "network_out", "topic_replicas", "leaders",
                           "leader_bytes_in"),
            "kops-default": DEFAULT_GOALS}
GOAL_LISTS = ("kops-goals", "kops-default")
# Cruise Control's default.goals (AnalyzerConfig.DEFAULT_DEFAULT_GOALS) without CpuCapacityGoal and
# CpuUsageDistributionGoal, in its order.
CC_GOALS = ("RackAwareGoal,MinTopicLeadersPerBrokerGoal,ReplicaCapacityGoal,DiskCapacityGoal,"
            "NetworkInboundCapacityGoal,NetworkOutboundCapacityGoal,ReplicaDistributionGoal,PotentialNwOutGoal,"
            "DiskUsageDistributionGoal,NetworkInboundUsageDistributionGoal,NetworkOutboundUsageDistributionGoal,"
            "TopicReplicaDistributionGoal,LeaderReplicaDistributionGoal,LeaderBytesInDistributionGoal")
CC_RUN = Path(os.environ.get("KOPS_CC_ANCHOR", ROOT.parent / "shared" / "anchors" / "cruise-control")) / "run.sh"
CC_HOME = Path(os.environ.get("CC_HOME", Path.home() / ".cache" / "kops-anchors" / "cruise-control"))
CC_TIMEOUT = 600.0


def cc_built() -> bool:
    """The anchor is built (run.sh would otherwise build it first: minutes and a Maven download)."""
    return CC_RUN.is_file() and (CC_HOME / "out" / ".built").is_file() \
        and (CC_HOME / "out" / "bench" / "CCBench.class").is_file()


# Runs a tool and writes its peak RSS (KiB) to argv[1]. A fresh, small process between this one and the tool:
# Linux carries a process's RSS high-water mark over fork and exec, so a tool forked from this process (which holds
# the whole cluster) would report this process's peak as its own.
LAUNCHER = ("import os, subprocess, sys\n"
            "p = subprocess.Popen(sys.argv[2:])\n"
            "_, status, usage = os.wait4(p.pid, 0)\n"
            "open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n"
            "sys.exit(os.waitstatus_to_exitcode(status))\n")


def measured(command: list[str], log: Path, timeout: float) -> tuple[int | None, float, float | None]:
    """Runs `command` (its output to `log`) through LAUNCHER: exit status (None on timeout), wall seconds, and
    the peak RSS in MiB of the tool and its waited-for children (None when it did not end by itself)."""
    rss_file = log.with_suffix(".rss")
    started = time.perf_counter()
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(rss_file), *command], stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    timed_out = threading.Event()

    def stop() -> None:
        timed_out.set()
        os.killpg(process.pid, signal.SIGKILL)

    timer = threading.Timer(timeout, stop)
    timer.start()
    code = process.wait()
    timer.cancel()
    seconds = time.perf_counter() - started
    rss = int(rss_file.read_text()) / 1024 if rss_file.is_file() else None
    return (None if timed_out.is_set() else code), seconds, rss


def _row(cluster: Cluster, tool: str, after_file: Path | None, status: str, timing: dict[str, float | None]) -> dict:
    row: dict = {"cluster": cluster.name, "tool": tool, "brokers": len(cluster.brokers),
                 "partitions": len(cluster.assignment), "status": status} | timing
    if after_file is None:
        return row
    after = read_assignment(after_file)
    problems = invalid(cluster, after)
    if problems:
        return row | {"status": "invalid", "problems": problems[:5]}
    return row | figures(cluster, after)


def run_kops(cluster: Cluster, folder: Path, variant: str, timeout: float) -> dict:
    """One kops variant in a fresh child (this file with --child): its assignment, timings and figures."""
    out, log = folder / f"{variant}.csv", folder / f"{variant}.log"
    command = [sys.executable, str(Path(__file__).resolve()), "--child", variant, "--dir", str(folder / "kops"),
               "--out", str(out)]
    code, seconds, rss = measured(command, log, timeout)
    if code != 0:
        status = "timeout" if code is None else f"failed ({log})"
        return _row(cluster, variant, None, status, {"seconds": round(seconds, 2)})
    inner = json.loads(log.read_text(encoding="utf-8").strip().splitlines()[-1])
    return _row(cluster, variant, out, "ok", {"seconds": round(seconds, 2),
                                              "optimizer_seconds": inner["plan_seconds"],
                                              "peak_rss_mb": rss and round(rss, 1)})


def run_cruise_control(cluster: Cluster, folder: Path, timeout: float, run: int = 1) -> dict:
    """Cruise Control's optimizer through the anchor's run.sh on the CSV files; its wall time from outside."""
    if not cc_built():
        return _row(cluster, "cruise-control", None, f"skipped: not built ({CC_HOME})", {})
    dump, log = folder / f"cc-out-{run}", folder / f"cruise-control-{run}.log"
    command = [str(CC_RUN), "--load", str(folder / "cc"), "--dump", str(dump), "--goals", CC_GOALS]
    code, seconds, rss = measured(command, log, timeout)
    if code != 0:
        status = f"timeout after {timeout:.0f} s" if code is None else f"failed ({log})"
        return _row(cluster, "cruise-control", None, status, {"seconds": round(seconds, 2)})
    text = log.read_text(encoding="utf-8", errors="replace")
    optimizer = re.search(r"GoalOptimizer.optimizations: ([\d.]+) s wall", text)
    violated = re.search(r"Violated goals after : \[(.*)\]", text)
    row = _row(cluster, "cruise-control", dump / "replicas_after.csv", "ok",
               {"seconds": round(seconds, 2), "optimizer_seconds": float(optimizer.group(1)) if optimizer else None,
                "peak_rss_mb": rss and round(rss, 1)})
    goals = [g.strip() for g in violated.group(1).split(",") if g.strip()] if violated else None
    return row | {"run": run, "cc_violated_goals_after": goals}


def compare(brokers: int, partitions: int, work: Path, cc_runs: int, timeout: float = CC_TIMEOUT,
            seed: int = 7) -> Iterator[dict]:
    """Every row for one cluster, as each is measured: the baseline, each kops variant, then Cruise Control
    `cc_runs` times (it varies run to run on the same input: each run is its own row)."""
    cluster = generate(brokers, partitions, seed=seed)
    folder = work / cluster.name
    write_kops(cluster, folder / "kops")
    write_cruise_control(cluster, folder / "cc")
    yield _row(cluster, "before", folder / "cc" / "replicas.csv", "ok", {"seconds": 0.0})
    yield {"cluster": cluster.name, "tool": "lower-bound", "brokers": len(cluster.brokers),
           "partitions": len(cluster.assignment), "status": "ok"} | bounds(cluster)
    for variant in VARIANTS:
        yield run_kops(cluster, folder, variant, timeout)
    for run in range(1, cc_runs + 1):
        yield run_cruise_control(cluster, folder, timeout, run)


def child(variant: str, folder: Path, out: Path) -> None:
    """The kops side, in its own process: kops's readers and `kops rebalance`'s planning function, each goal of
    the variant planned on the previous one's result (tests/simulate.py applies a plan on paper); the resulting
    assignment in the anchor's replicas.csv columns, and one JSON line of timings."""
    from kops.declare.capacity import load_cruise_control
    from kops.model import snapshot_format
    from kops.planner.bounded import Request, rebalance
    from kops.planner.budget import Limits
    from kops.planner.planner import Policy
    from kops.sizes.reader import read_sizes
    from tests.simulate import apply_plan

    started = time.perf_counter()
    snapshot = snapshot_format.loads((folder / "snapshot.json").read_bytes(), str(folder / "snapshot.json"))
    sizes = read_sizes(folder / "sizes.json")
    if variant in GOAL_LISTS:
        replicas, planning = optimized(snapshot, sizes, folder / "capacity.json", VARIANTS[variant])
        out.write_text(replicas_csv(replicas), encoding="utf-8")
        _timings(planning, started)
        return
    policy = Policy(growth=sizes.growth, remote=sizes.remote, capacity=load_cruise_control(folder / "capacity.json"),
                    write=sizes.write)
    planning = 0.0
    for goal in VARIANTS[variant]:
        begun = time.perf_counter()
        result = rebalance(snapshot, Request(goal, Limits(), 0.0), sizes.bytes, policy, cluster="bench")
        planning += time.perf_counter() - begun
        snapshot = apply_plan(snapshot, result.plan)
    out.write_text(replicas_csv({TopicPartition(name, p): part.replicas for name, topic in snapshot.topics.items()
                                 for p, part in topic.partitions.items()}), encoding="utf-8")
    _timings(planning, started)


def _timings(planning: float, started: float) -> None:
    """The child's last line, which the parent reads: its planning seconds and its whole run's."""
    print(json.dumps({"plan_seconds": round(planning, 2), "total_seconds": round(time.perf_counter() - started, 2)}))


def optimized(snapshot: Any, sizes: Any, capacity: Path, goals: tuple[str, ...]) -> tuple[dict, float]:
    """The goal-list optimizer on kops's own inputs: each partition's replicas after it, and its seconds."""
    from kops.declare.capacity import load_cruise_control
    from kops.model.capacity import resolve
    from kops.planner.goal_state import state_of
    from kops.planner.optimizer import optimize

    begun = time.perf_counter()
    state = state_of(snapshot, sizes.bytes, sizes.write, resolve(load_cruise_control(capacity), snapshot))
    optimize(state, goals)
    return state.replicas, time.perf_counter() - begun


def replicas_csv(replicas: dict) -> str:
    """The anchor's replicas.csv columns, leader (first replica) marked."""
    lines = ["topic,partition,broker,position,is_leader"]
    for tp, assigned in sorted(replicas.items()):
        lines += [f"{tp.topic},{tp.partition},{b},{i},{int(i == 0)}" for i, b in enumerate(assigned)]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", action="append", choices=sorted(SCALES), help="default: small and medium")
    parser.add_argument("--no-cc", action="store_true", help="kops alone")
    parser.add_argument("--cc-runs", type=int, default=1, help="Cruise Control runs per cluster, each a row")
    parser.add_argument("--with-cc-at-million", action="store_true")
    parser.add_argument("--timeout", type=float, default=CC_TIMEOUT, help="seconds per tool run")
    parser.add_argument("--keep", type=Path, help="write the clusters and results here (default: a temporary dir)")
    parser.add_argument("--child", choices=sorted(VARIANTS), help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.dir, args.out)
        return
    with tempfile.TemporaryDirectory(prefix="kops-vs-cc-") as temp:
        work = args.keep or Path(temp)
        for scale in args.scale or ["small", "medium"]:
            with_cc = not args.no_cc and (scale != "million" or args.with_cc_at_million)
            for row in compare(*SCALES[scale], work, args.cc_runs if with_cc else 0, args.timeout):
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
