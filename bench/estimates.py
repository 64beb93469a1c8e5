"""Plan estimates against measured batch durations on the lab (simulated time), the sizes pipeline end to end.

A lab of 4 broker processes (time ×5, log-dir snapshots every 5 simulated seconds) on a real ZooKeeper; topics
`big` (60, 50, 40 MB) and `small` (30, 25, 20 MB), replication factor 2 → 3 under a 1 MiB/s throttle in batches
of 3. The brokers' snapshots are summarised with `kops sizes summarize` (Spark local mode), planned with
`kops plan --sizes`, applied with `kops apply`. Per batch: the plan's `estimate_seconds` and the measured
`seconds` (submission to completion, from the execution record, × the time scale); `error` = measured ÷
estimate − 1. Baseline, same run: the lower bound the plan reports for the whole plan against the sum measured.
Target (issue 8): every batch within ±25%.

Usage: python bench/estimates.py [--runs 3]      Prints one JSON line per run and a summary line.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kops.cluster.zookeeper import ZkRecords
from kops.errors import KopsError
from kops.executor.journal import Journal
from kops.lab import traffic
from kops.lab.kops_engine import Lab
from kops.lab.zookeeper import ZooKeeperServer
from kops.model import plan_format
from kops.zk_layout import tool_writes

MB = 1024 * 1024
SCALE = 5.0
SIZES = {("big", 0): 60, ("big", 1): 50, ("big", 2): 40, ("small", 0): 30, ("small", 1): 25, ("small", 2): 20}
PLAYBOOK = """- hosts: all
  topics:
    - {name: big, replication_factor: 3}
    - {name: small, replication_factor: 3}
  execution: {throttle: 1MiB/s, batch: {max_partitions: 3}}
"""


def kops(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "kops.cli.main", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"kops {args[0]} failed: {done.stderr.strip().splitlines()[-1:]}")


def retry(action, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]  # a helper over callables of any shape
    deadline = time.monotonic() + timeout
    while True:
        try:
            if action():
                return
        except KopsError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit("timed out")
        time.sleep(0.1)


def one_run(folder: Path, server: ZooKeeperServer, run: int) -> dict:
    lab_dir = folder / f"lab{run}"
    connect = f"{server.connect}/estimates{run}"
    lab = Lab(lab_dir, detached=False)
    lab.up(brokers=4, zookeeper=connect, session_timeout=6.0, time_scale=SCALE, logdirs_every=5.0)
    try:
        with lab.client() as zk:
            tool_writes.create_topic(zk, "big", {0: (1, 2), 1: (2, 3), 2: (3, 1)})
            tool_writes.create_topic(zk, "small", {0: (1, 2), 1: (2, 3), 2: (3, 1)})
            for (topic, p), megabytes in SIZES.items():
                retry(lambda topic=topic, p=p, n=megabytes: traffic.produce(zk, topic, n * MB, p))
            time.sleep(0.5)
            for old in (lab_dir / "logdirs").glob("*.json"):  # only snapshots taken after the data was produced
                old.unlink()
            time.sleep(3 * 5.0 / SCALE)
            kops("sizes", "summarize", str(lab_dir / "logdirs"), "--out", str(folder / f"sizes{run}"), "--master",
                 "local[1]")
            (folder / "pb.yml").write_text(PLAYBOOK)
            plan_file = folder / f"plan{run}.json"
            kops("plan", str(folder / "pb.yml"), "-z", connect, "--sizes", str(folder / f"sizes{run}"), "-o",
                 str(plan_file))
            kops("apply", str(plan_file), "-z", connect, "--yes", "--format", "json", "--poll", "0.1")
            plan = plan_format.loads(plan_file.read_bytes(), str(plan_file))
            record = Journal(ZkRecords(zk)).latest()
            batches = []
            for batch, planned in zip(record.batches, plan.batches):
                measured = (batch.finished_at - batch.started_at) * SCALE
                batches.append({"batch": batch.index, "estimate_seconds": round(planned.estimate.seconds, 1),
                                "seconds": round(measured, 1),
                                "error": round(measured / planned.estimate.seconds - 1, 3)})
            return {"run": run, "batches": batches, "lower_bound_seconds": plan.summary.lower_bound_seconds,
                    "measured_total_seconds": round(sum(b["seconds"] for b in batches), 1)}
    finally:
        lab.down()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        server = ZooKeeperServer(Path(tmp) / "zk").start()
        try:
            results = []
            for run in range(1, args.runs + 1):
                results.append(one_run(Path(tmp), server, run))
                print(json.dumps(results[-1]), flush=True)
            errors = [b["error"] for r in results for b in r["batches"]]
            print(json.dumps({"runs": len(results), "batches": len(errors),
                              "within_25_percent": sum(abs(e) <= 0.25 for e in errors),
                              "max_abs_error": max(abs(e) for e in errors), "nproc": os.cpu_count()}), flush=True)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
