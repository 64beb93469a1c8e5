"""Capacity read from the cluster (issue 35). On real Kafka, what `kops state -b` records of each log dir is what
the log dir's filesystem says (DescribeLogDirs v4, KIP-827: Java's getTotalSpace and getUsableSpace, statvfs's
f_blocks and f_bavail times f_frsize); the lab's brokers run on this machine, so their dirs are readable here.
Through ZooKeeper, the kops engine's brokers report their --disk-capacity on their KIP-179 endpoint."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from kops.cli.main import main
from tests.labtools import running_lab

SLACK = 64 * 2**20  # usable bytes move while other processes write on the shared machine


def test_reported_capacity_is_the_log_dirs_filesystem(admin_engine: Any, tmp_path: Path, capsys: Any) -> None:
    snapshot_file = tmp_path / "snap.json"
    assert main(["state", "-b", admin_engine.bootstrap, "--out", str(snapshot_file)]) == 0
    capsys.readouterr()
    doc = json.loads(snapshot_file.read_text())
    dirs = doc["log_dirs"]
    assert sorted({d["broker"] for d in dirs}) == sorted(b["id"] for b in doc["brokers"])
    for d in dirs:
        fs = os.statvfs(d["path"])
        assert d["error"] is None, d
        assert d["total_bytes"] == fs.f_blocks * fs.f_frsize, d
        assert abs(d["usable_bytes"] - fs.f_bavail * fs.f_frsize) <= SLACK, d
    assert main(["state", "-b", admin_engine.bootstrap]) == 0
    shown = capsys.readouterr().out
    assert "Log dirs" in shown


def test_through_zookeeper_the_kops_engine_reports_its_disks(tmp_path: Path, zk_connect: str, capsys: Any) -> None:
    snapshot_file = tmp_path / "snap.json"
    with running_lab(tmp_path / "lab", zk_connect, brokers=2, disk_capacity={1: 64 * 2**20, 2: 32 * 2**20}):
        assert main(["state", "-z", zk_connect, "--out", str(snapshot_file)]) == 0
    capsys.readouterr()
    dirs = json.loads(snapshot_file.read_text())["log_dirs"]
    assert [(d["broker"], d["total_bytes"], d["usable_bytes"], d["error"]) for d in dirs] == [
        (1, 64 * 2**20, 64 * 2**20, None), (2, 32 * 2**20, 32 * 2**20, None)]


def test_declared_capacity_wins_over_what_real_kafka_reports(admin_cluster: Any, tmp_path: Path, capsys: Any) -> None:
    """The same snapshot of a real cluster planned twice: without a declaration each broker's disk is the reported
    one; an inventory's `capacity` (one broker overridden) wins over it, and the plan names where it was declared."""
    snapshot_file, playbook = tmp_path / "snap.json", tmp_path / "pb.yml"
    assert main(["state", "-b", admin_cluster.bootstrap, "--out", str(snapshot_file)]) == 0
    playbook.write_text("- hosts: all\n  topics: [{name: cap, partitions: 4, replication_factor: 2}]\n")
    inventory = tmp_path / "inv.yml"
    inventory.write_text(f"all:\n  hosts:\n    real:\n      bootstrap_servers: {admin_cluster.bootstrap}\n"
                         "      capacity:\n        disk: 1TiB\n        brokers:\n          2: {disk: 2TiB}\n")

    def disk_sources(*inventory_args: str) -> dict[int, tuple[str, int]]:
        out = tmp_path / "plan.json"
        assert main(["plan", str(playbook), *inventory_args, "--snapshot", str(snapshot_file), "-o", str(out)]) == 0
        report = json.loads(out.read_text())["summary"]["capacity"]
        return {int(b): (u["disk"]["source"], u["disk"]["capacity"]) for b, u in report["brokers"].items()}

    reported = disk_sources()
    assert {source for source, _ in reported.values()} == {"reported (DescribeLogDirs)"}
    declared = disk_sources("-i", str(inventory))
    assert declared.keys() == reported.keys()
    assert declared[2] == ("declared inv.yml:8", 2 * 2**40)
    assert all(found == ("declared inv.yml:6", 2**40) for b, found in declared.items() if b != 2)
    capsys.readouterr()
