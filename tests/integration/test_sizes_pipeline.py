"""The sizes pipeline on the lab: brokers write log-dir snapshots, Spark summarises them, the planner balances
batches by bytes and estimates them, and `kops apply` carries the plan out. How long batches take against their
estimates is measured by bench/estimates.py, not asserted here (a test never asserts a wall-clock time)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kops.cli.main import main
from kops.cluster.zookeeper import ZkRecords
from kops.executor.journal import Journal
from kops.model import plan_format
from kops.model.partitions import TopicPartition
from kops.sizes.reader import read_sizes
from kops.zk_layout import tool_writes
from kops.zk_layout.client import ZkClient, ZkSettings
from tests.engines import EngineLab
from tests.labtools import running_lab, state, wait_until

pytestmark = pytest.mark.lab
MB = 1024 * 1024
SCALE = 5.0
SIZES = {("big", 0): 60, ("big", 1): 50, ("big", 2): 40, ("small", 0): 30, ("small", 1): 25, ("small", 2): 20}


def test_snapshots_summarized_then_planned_with_sizes_and_applied(tmp_path: Path, zk_connect: str, capsys) -> None:
    lab_dir = tmp_path / "lab"
    with running_lab(lab_dir, zk_connect, brokers=4, time_scale=SCALE, logdirs_every=5.0) as _lab, \
            ZkClient(ZkSettings(zk_connect)) as zk:
        tool_writes.create_topic(zk, "big", {0: (1, 2), 1: (2, 3), 2: (3, 1)})
        tool_writes.create_topic(zk, "small", {0: (1, 2), 1: (2, 3), 2: (3, 1)})
        lab = EngineLab("kops", _lab, zk_connect)
        for (topic, p), megabytes in SIZES.items():
            wait_until(lambda topic=topic, p=p: state(zk, topic, p), what="created")
            wait_until(lambda topic=topic, p=p, n=megabytes: lab.produce(zk, topic, p, n * MB), what="produce")

        def snapshotted() -> bool:  # a snapshot newer than the data on every broker holding it
            latest: dict[int, dict] = {}
            for file in sorted((lab_dir / "logdirs").glob("broker-*.json")):
                broker = int(file.name.split("-")[1])
                latest[broker] = json.loads(file.read_text())
            seen = {}
            for doc in latest.values():
                for b in doc["brokers"]:
                    for d in b["logDirs"]:
                        for part in d["partitions"]:
                            seen[part["partition"]] = max(seen.get(part["partition"], 0), part["size"])
            return all(seen.get(f"{t}-{p}", 0) >= n * MB for (t, p), n in SIZES.items())

        for old in (lab_dir / "logdirs").glob("*.json"):  # snapshots taken while producing would read as growth
            old.unlink()
        wait_until(snapshotted, timeout=30, what="log-dir snapshots with the data")
        out = tmp_path / "sizes"
        assert main(["sizes", "summarize", str(lab_dir / "logdirs"), "--out", str(out), "--master", "local[1]"]) == 0
        summary = read_sizes(out)
        assert {(tp.topic, tp.partition): b // MB for tp, b in summary.bytes.items()} == SIZES

        playbook = tmp_path / "pb.yml"
        playbook.write_text("- hosts: all\n  topics:\n    - {name: big, replication_factor: 3}\n"
                            "    - {name: small, replication_factor: 3}\n"
                            "  execution: {throttle: 1MiB/s, batch: {max_partitions: 3}}\n")
        plan_file = tmp_path / "plan.json"
        assert main(["plan", str(playbook), "-z", zk_connect, "--sizes", str(out), "-o", str(plan_file)]) == 0
        plan = plan_format.loads(plan_file.read_bytes(), str(plan_file))
        assert all(b.estimate.seconds for b in plan.batches) and len(plan.batches) >= 2
        assert {m.tp: m.bytes for m in plan.moves}[TopicPartition("big", 0)] == summary.bytes[TopicPartition("big", 0)]
        capsys.readouterr()
        assert main(["apply", str(plan_file), "-z", zk_connect, "--yes", "--format", "json", "--poll", "0.1"]) == 0
        events = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
        assert events[0]["bytes"] == sum(m.copied_bytes for m in plan.moves)  # progress in the plan's bytes
        record = Journal(ZkRecords(zk)).latest()
        assert record.status == "done" and all(b.started_at and b.finished_at for b in record.batches)
