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
