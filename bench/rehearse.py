"""`kops rehearse` at three sizes: clones of 6, 24 and 50 brokers with 2,000, 10,000 and 20,000 partitions.

Each size is a snapshot built as bench/planner.py builds them (RF 3 across racks, Zipf sizes), a plan that
decommissions one broker at 50 MiB/s in batches of at most partitions/50 moves (at least 50: 50, 200, 400; a batch's
fixed
cost on a clone of Python brokers sharing two cores is tens of seconds, so the batch count is held near 30 or
below) (`kops plan --snapshot --sizes`, as an operator makes it), then
`kops rehearse` on the kops engine in a child process, scaled so the apply takes about `--seconds`. One JSON
line per size: `brokers`, `partitions`, `moves`,
`factor` (the scaling), `clone_seconds` (starting the clone's ZooKeeper and brokers, creating its topics, filling
them), `apply_seconds` and `rollback_seconds` (wall time of each execution on the clone), `peak_rss_mb` (the
kops process), `estimate_error` (the largest relative error of a batch's measured duration against its
estimate, over the batches long enough on the clone to be judged: `judged_batches` of `batches`),
`total_error`, `exit_code`, `wall_seconds`, `time_scale` (the clone's clock: below 1 in slow motion),
`latency_seconds` / `latency_batch_seconds` (the clone's own latency, one move and the largest batch's count),
`batch_seconds` ([estimated, measured] per batch, production seconds), `verdict` (the report's first line, cut
to 400 characters). The
baseline in the same run: `plan_seconds`, the time `kops plan` takes for the same snapshot (a rehearsal's cost
against the planning it checks).

Usage: python bench/rehearse.py [--sizes 6:2000,24:10000,50:20000] [--seconds 60]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.planner import build  # noqa: E402 - after the sys.path line above
from kops.model import plan_format, snapshot_format  # noqa: E402 - after the sys.path line above

THROTTLE = "50MiB/s"
RACKS = {6: 3, 24: 6, 50: 10}


def kops(*args: str) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """Run the CLI; (result, wall seconds, the child's peak RSS in MiB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "kops.cli.main", *args], capture_output=True, text=True)
    peak = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    return done, time.monotonic() - started, peak


def scenario(work: Path, brokers: int, partitions: int) -> tuple[Path, Path, float]:
    """The snapshot and the plan (decommission the last broker); the plan's seconds."""
    snap, sizes = build(brokers, 0, partitions, skew=False, racks=RACKS.get(brokers, 3), seed=5)
    snap_file = work / "snapshot.json"
    snap_file.write_bytes(snapshot_format.dumps(snap))
    sizes_file = work / "sizes.jsonl"
    sizes_file.write_text("".join(json.dumps({"topic": tp.topic, "partition": tp.partition, "bytes": b,
                                              "growth_bytes_per_s": 0.0}) + "\n" for tp, b in sorted(sizes.items())))
    book = work / "decommission.yml"
    book.write_text(f"- hosts: all\n  brokers: {{decommission: [{brokers}]}}\n"
                    f"  execution: {{throttle: {THROTTLE}, batch: {{max_partitions: {max(50, partitions // 50)}}}}}\n")
    plan_file = work / "plan.json"
    done, seconds, _ = kops("plan", str(book), "--snapshot", str(snap_file), "--sizes", str(sizes_file),
                            "-o", str(plan_file), "--format", "json")
    if done.returncode != 0:
        raise SystemExit(f"kops plan failed: {done.stderr.strip().splitlines()[-1:]}")
    return snap_file, plan_file, seconds


def one(brokers: int, partitions: int, seconds: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="kops-bench-rehearse-") as tmp:
        work = Path(tmp)
        snap_file, plan_file, plan_seconds = scenario(work, brokers, partitions)
        plan = plan_format.loads(plan_file.read_bytes(), str(plan_file))
        factor = max(1.0, (plan.summary.estimated_seconds or 0) / seconds)
        done, wall, peak = kops("rehearse", str(plan_file), "--snapshot", str(snap_file), "--scale", f"{factor:.3f}",
                                "--max-partitions", str(partitions), "--format", "json", "--dir", str(work / "clone"))
        if not done.stdout.strip():
            raise SystemExit(f"kops rehearse failed: {done.stderr.strip().splitlines()[-3:]}")
        report = json.loads(done.stdout)
    errors = [abs(b["error"]) for b in report["batches"] if b["error"] is not None and b["judged"]]
    return {"brokers": brokers, "partitions": partitions, "moves": len(plan.moves), "factor": round(factor, 2),
            "clone_seconds": report["clone_seconds"], "apply_seconds": report["apply_wall_seconds"],
            "rollback_seconds": report["rollback_wall_seconds"], "peak_rss_mb": round(peak, 1),
            "estimate_error": round(max(errors), 3) if errors else None, "judged_batches": len(errors),
            "batches": len(report["batches"]), "total_error": report["total_error"], "exit_code": done.returncode,
            "wall_seconds": round(wall, 1), "plan_seconds": round(plan_seconds, 1),
            "time_scale": report["scaling"]["time_scale"], "latency_seconds": report["latency_seconds"],
            "latency_batch_seconds": report["latency_batch_seconds"],
            "batch_seconds": [[b["estimate_seconds"], b["measured_seconds"]] for b in report["batches"]],
            "verdict": report["verdict"][:400]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="6:2000,24:10000,50:20000", help="BROKERS:PARTITIONS,...")
    parser.add_argument("--seconds", type=float, default=60.0, help="the apply's length on the clone, about")
    args = parser.parse_args()
    for item in args.sizes.split(","):
        brokers, partitions = (int(x) for x in item.split(":"))
        print(json.dumps(one(brokers, partitions, args.seconds)), flush=True)


if __name__ == "__main__":
    main()
