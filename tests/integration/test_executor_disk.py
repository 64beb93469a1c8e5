"""The executor's disk gate on the kops engine, through ZooKeeper (real broker processes): the brokers report their
log dirs on their KIP-179 endpoint, and `kops apply` stops before a batch whose destination lacks room, then a
resume goes on once room is made. The memory-cluster tests (tests/unit/test_executor_memory.py) cover the
arithmetic and rolling; this shows the figures come from the live brokers, end to end through the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kops.cli.main import main
from kops.kip179.client import Kip179Client
from kops.zk_layout import paths, tool_writes
from kops.zk_layout.client import ZkClient, ZkSettings
from tests.labtools import produced, replicas, running_lab, state, wait_until

pytestmark = pytest.mark.lab
MiB = 1024 * 1024
ORIGINAL = {"pay": {0: (1, 2), 1: (2, 3), 2: (3, 1)}}
PLAYBOOK = """- hosts: all
  topics:
    - {name: pay, replication_factor: 2}
  brokers: {decommission: [3]}
  execution: {batch: {max_partitions: 3}}
"""


def events(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_a_batch_broker_4_has_no_room_for_stops_then_resumes_once_room_is_made(
        tmp_path: Path, zk_connect: str, capsys: Any) -> None:
    """Broker 4 (16 MiB) holds 14 MiB of `filler`: 2 MiB usable, under its 3.2 MiB margin (limit 0.8), so the
    decommission's batch stops (exit 3, nothing submitted). Brokers 1-3 have no capacity: said once, unchecked.
    The plan is made through ZooKeeper without sizes, so the gate holds the margin alone here."""
    with running_lab(tmp_path / "lab", zk_connect, brokers=4, disk_capacity={4: 16 * MiB}, time_scale=20.0), \
            ZkClient(ZkSettings(zk_connect)) as zk, Kip179Client(zk) as api:
        for name, assignment in {**ORIGINAL, "filler": {0: (4,)}}.items():
            tool_writes.create_topic(zk, name, assignment)
            wait_until(lambda name=name, a=assignment: all(state(zk, name, p) for p in a), what=f"{name} created")
        wait_until(lambda: api.describe_log_dirs([4])[4][0].usable_bytes == 16 * MiB, what="broker 4's disk")
        wait_until(lambda: bool(produced(zk, "filler", 14 * MiB, 0)), what="filler produced")
        wait_until(lambda: api.describe_log_dirs([4])[4][0].usable_bytes == 2 * MiB, what="broker 4 filled")

        playbook, plan = tmp_path / "pb.yml", tmp_path / "plan.json"
        playbook.write_text(PLAYBOOK)
        assert main(["plan", str(playbook), "-z", zk_connect, "-o", str(plan), "--format", "json"]) == 0
        capsys.readouterr()
        apply = ["apply", str(plan), "-z", zk_connect, "--yes", "--format", "json", "--poll", "0.2"]
        assert main(apply) == 3
        said = events(capsys.readouterr().out)
        unknown = [e for e in said if e["event"] == "capacity_unknown"]
        assert len(unknown) <= 1 and all(set(e["brokers"]) <= {1, 2} for e in unknown), unknown
        assert all(e["reason"].startswith("usable bytes not reported") for e in unknown)
        assert said[-1]["event"] == "stopped" and re.match(
            r"batch 1: broker 4 has 2\.0 MiB usable, needs 0 B for its [12] new replicas? \+ 3\.2 MiB margin "
            r"\(limit 0\.8 of 16\.0 MiB\); free space on it", said[-1]["reason"]), said[-1]
        assert zk.exists(paths.REASSIGN_PARTITIONS) is None and replicas(zk, "pay") == ORIGINAL["pay"]

        tool_writes.delete_topic(zk, "filler")  # the operator makes room
        wait_until(lambda: api.describe_log_dirs([4])[4][0].usable_bytes == 16 * MiB, timeout=60,
                   what="broker 4 emptied")
        assert main([*apply[:1], "--resume", *apply[1:]]) == 0
        assert events(capsys.readouterr().out)[-1]["event"] == "done"
        assert 3 not in {b for r in replicas(zk, "pay").values() for b in r}
