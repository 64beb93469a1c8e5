"""Disk balance inside brokers (issue 37, docs/design/jbod.md §10) on real Kafka 4: the goal `disk_within_broker`.

Three brokers with four log dirs each, every dir its own small tmpfs (so Kafka reports each dir's own total and
usable bytes, as separate disks would; sizes differ by 2 MiB so kops never takes two of them for one filesystem).
On each broker one dir is filled to 90%, one to 10% and two to 50%, with partitions of one replica placed in their
dir by AlterReplicaLogDirs while empty, then produced to. kops then plans `rebalance: {goals: [disk_within_broker]}`
live (`kops plan -b`) and applies it (`kops apply`).

One JSON line per run: the usage spread across each broker's dirs (percentage points between its fullest and its
emptiest dir, as DescribeLogDirs reports them; the largest over the brokers) before and after, its lower bound (the
best any placement of these equal partitions could do, every split of each broker's count over its dirs tried),
bytes moved within brokers (disk moves) and between brokers, plan and apply seconds. Kafka deletes a moved
replica's old copy `log.segment.delete.delay.ms` (60 s) after the swap: the filesystem spread after is read once
no old copy is left (`old_copies_deleted_after_seconds`), the replicas' spread (`replica_spread_*`: the bytes of
the replicas each dir holds, what the goal balances) right after kops apply. Baseline, measured in the same run
on the same cluster: the broker-level goal `disk` (Cruise Control's DiskUsageDistributionGoal), planned only:
what it would move, and that it leaves each broker's dirs as they are.

Needs root (tmpfs mounts). Usage: python bench/jbod.py [--dir-mib 64] [--partition-mib 2] [--throttle 32MiB/s]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from kops.cli.main import main as kops_main
from kops.cluster.admin.adapter import AdminCluster
from kops.cluster.admin.connection import AdminSettings
from kops.lab.kafka_client import create_topics, fill
from kops.lab.kafka_lab import KafkaLab
from kops.model import plan_format
from kops.model.partitions import TopicPartition
from kops.model.plan import Plan

BROKERS, DIRS = 3, 4
TOPIC = "jbod"
FILL = (0.90, 0.10, 0.50, 0.50)  # each broker's dirs, in order
MIB = 2**20


def kops(argv: list[str]) -> int:
    """The kops CLI in-process, its own output kept out of the benchmark's JSON lines."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return kops_main(argv)


def mount_dirs(lab: KafkaLab, dir_mib: int) -> list[Path]:
    """A tmpfs at each broker's log dir, dir k of `dir_mib` + 2k MiB (mounted before the lab formats them)."""
    mounted = []
    for broker in range(1, BROKERS + 1):
        for k in range(DIRS):
            path = lab.directory.resolve() / "nodes" / str(broker) / f"data-{k + 1}"
            path.mkdir(parents=True, exist_ok=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={dir_mib + 2 * k}m", "tmpfs", str(path)], check=True)
            mounted.append(path)
    return mounted


def layout(dir_mib: int, partition_mib: int) -> dict[int, tuple[int, int]]:
    """partition -> (broker, dir index): FILL of each dir in whole partitions."""
    out: dict[int, tuple[int, int]] = {}
    for broker in range(1, BROKERS + 1):
        for k, share in enumerate(FILL):
            for _ in range(round(share * (dir_mib + 2 * k) / partition_mib)):
                out[len(out)] = (broker, k)
    return out


def place_and_fill(bootstrap: str, lab: KafkaLab, where: dict[int, tuple[int, int]], partition_mib: int) -> None:
    """The topic's replicas into their dirs while empty (AlterReplicaLogDirs), then `partition_mib` each."""
    from kafka.admin import NewTopic

    create_topics(bootstrap, [NewTopic(TOPIC, replica_assignments={p: [b] for p, (b, _) in where.items()})])
    port = AdminCluster(AdminSettings(bootstrap))
    try:
        wanted = {(TopicPartition(TOPIC, p), b): str(lab.log_dirs(b)[k]) for p, (b, k) in where.items()}
        deadline = time.monotonic() + 120
        while True:
            answers = port.alter_replica_dirs(wanted)
            copies = port.dir_copies(list(wanted))
            if all(c.path == wanted[r] and not c.moving for r, c in copies.items()) and len(copies) == len(wanted):
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"replicas not in their dirs after 120 s: {answers}")
            time.sleep(0.5)
    finally:
        port.close()
    fill(bootstrap, {TOPIC: {p: partition_mib * MIB for p in where}})


def spread(bootstrap: str, replicas_only: bool = False) -> float:
    """The largest, over the brokers, of percentage points between its fullest and emptiest dir: the filesystem's
    use as DescribeLogDirs reports it, or (`replicas_only`) the bytes of the replicas each dir holds."""
    port = AdminCluster(AdminSettings(bootstrap))
    try:
        dirs = port.log_dirs()
        held: dict[tuple[int, str], int] = {}
        if replicas_only:
            sizes = port.sizes()
            for row in port.replica_dirs(dirs):
                if not row.future:
                    key = (row.broker, row.path)
                    held[key] = held.get(key, 0) + sizes.get(TopicPartition(row.topic, row.partition), 0)
    finally:
        port.close()
    used: dict[int, list[float]] = {}
    for d in dirs:
        assert d.total_bytes and d.usable_bytes is not None, d
        in_use = held.get((d.broker, d.path), 0) if replicas_only else d.total_bytes - d.usable_bytes
        used.setdefault(d.broker, []).append(100.0 * in_use / d.total_bytes)
    return round(max(max(u) - min(u) for u in used.values()), 2)


def deletions_done(lab: KafkaLab, timeout: float) -> float:
    """Seconds until no moved replica's old copy is left (Kafka renames it `*-delete` and removes it after
    `log.segment.delete.delay.ms`, 60 s by default): only then does the filesystem show the move."""
    started = time.monotonic()
    while any(p.name.endswith("-delete") for b in range(1, BROKERS + 1) for d in lab.log_dirs(b) for p in d.iterdir()):
        if time.monotonic() - started > timeout:
            raise SystemExit(f"old copies still there after {timeout} s")
        time.sleep(1.0)
    return time.monotonic() - started


def lower_bound(where: dict[int, tuple[int, int]], dir_mib: int, partition_mib: int) -> float:
    """The smallest spread any placement of each broker's equal partitions over its dirs reaches (every split of
    its count over its dirs tried; the dirs' own files left out), the largest over the brokers."""
    sizes = [dir_mib + 2 * k for k in range(DIRS)]
    worst = 0.0
    for broker in range(1, BROKERS + 1):
        n = sum(1 for b, _ in where.values() if b == broker)
        best = 100.0
        for a in range(n + 1):
            for b in range(n - a + 1):
                for c in range(n - a - b + 1):
                    used = [100.0 * k * partition_mib / size for k, size in zip((a, b, c, n - a - b - c), sizes,
                                                                                strict=True)]
                    best = min(best, max(used) - min(used))
        worst = max(worst, best)
    return round(worst, 2)


def plan(work: Path, bootstrap: str, goal: str, throttle: str) -> tuple[Plan, float, Path]:
    playbook, inventory, out = work / f"{goal}.yml", work / "inv.yml", work / f"{goal}.plan.json"
    playbook.write_text(f"- hosts: all\n  rebalance: {{goals: [{goal}]}}\n  execution: {{throttle: {throttle}}}\n")
    inventory.write_text(f"all:\n  hosts:\n    jbod:\n      bootstrap_servers: '{bootstrap}'\n"
                         "      capacity: {limits: {disk: 0.95}}\n")
    started = time.monotonic()
    code = kops(["plan", str(playbook), "-i", str(inventory), "-o", str(out), "--format", "json"])
    seconds = time.monotonic() - started
    if code != 0:
        raise SystemExit(f"kops plan of {goal} exited {code}")
    return plan_format.loads(out.read_bytes(), str(out)), seconds, out


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kops-bench-jbod-") as tmp:
        work = Path(tmp)
        lab = KafkaLab(work / "lab", detached=False)
        mounted = mount_dirs(lab, args.dir_mib)
        try:
            state = lab.up("kafka-4", brokers=BROKERS, racks=3, log_dirs_per_broker=DIRS)
            bootstrap = state.bootstrap
            where = layout(args.dir_mib, args.partition_mib)
            place_and_fill(bootstrap, lab, where, args.partition_mib)
            before, replicas_before = spread(bootstrap), spread(bootstrap, replicas_only=True)
            baseline, _, _ = plan(work, bootstrap, "disk", args.throttle)
            planned, plan_seconds, plan_file = plan(work, bootstrap, "disk_within_broker", args.throttle)
            started = time.monotonic()
            code = kops(["apply", str(plan_file), "-b", bootstrap, "--yes", "--poll", "0.2"])
            apply_seconds = time.monotonic() - started
            if code != 0:
                raise SystemExit(f"kops apply exited {code}")
            replicas_after = spread(bootstrap, replicas_only=True)
            waited = deletions_done(lab, 180.0)
            after = spread(bootstrap)
            s = planned.summary
            return {"bench": "jbod", "brokers": BROKERS, "dirs_per_broker": DIRS,
                    "dir_mib": [args.dir_mib + 2 * k for k in range(DIRS)], "fill": list(FILL),
                    "partitions": len(where), "partition_mib": args.partition_mib, "throttle": args.throttle,
                    "spread_before_pp": before, "spread_after_pp": after, "replica_spread_before_pp": replicas_before,
                    "replica_spread_after_pp": replicas_after, "old_copies_deleted_after_seconds": round(waited, 1),
                    "lower_bound_pp": lower_bound(where, args.dir_mib, args.partition_mib),
                    "disk_moves": s.disk_moves, "bytes_within_brokers": s.disk_bytes, "bytes_between_brokers": s.bytes,
                    "within_per_between": None if not s.bytes else round(s.disk_bytes / s.bytes, 2),
                    "plan_seconds": round(plan_seconds, 2), "apply_seconds": round(apply_seconds, 2),
                    "baseline_disk_goal": {"moves": baseline.summary.moves, "disk_moves": baseline.summary.disk_moves,
                                           "bytes_between_brokers": baseline.summary.bytes,
                                           "spread_after_pp": before if not baseline.summary.disk_moves else None}}
        finally:
            lab.down()
            for path in reversed(mounted):
                subprocess.run(["umount", str(path)], check=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir-mib", type=int, default=64)
    parser.add_argument("--partition-mib", type=int, default=2)
    parser.add_argument("--throttle", default="32MiB/s")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    for _ in range(args.runs):
        print(json.dumps(run(args), sort_keys=True), flush=True)


if __name__ == "__main__":
    main()
