"""Why capacity matters, on real broker processes (kops engine, issue 35, docs/design/capacity.md §8): brokers of
unequal disks, one of them small. A decommission balanced by counts, submitted as Kafka's tool submits it, fills the
small broker's disk and the broker halts (KIP-112); kops's plan of the same decommission, made from the capacities
the brokers report and the sizes they hold, leaves every broker running with the small one within its limit."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from kops.cli.main import main
from kops.errors import KopsError
from kops.kip179.client import Kip179Client
from kops.lab import traffic
from kops.lab.processes import pid_alive
from kops.model import plan_format
from kops.zk_layout import tool_writes
from kops.zk_layout.client import ZkClient, ZkSettings
from kops.zk_layout.codecs.admin_requests import ReassignmentTarget
from tests.labtools import replicas, running_lab, state, wait_until

pytestmark = pytest.mark.lab
MiB = 1024 * 1024
SMALL = 3  # 16 MiB; the others 64 MiB
DISKS = {1: 64 * MiB, 2: 64 * MiB, SMALL: 16 * MiB, 4: 64 * MiB}
ORIGINAL = {0: (1, 2), 1: (2, 4), 2: (4, 1), 3: (1, 4), 4: (2, 1), 5: (4, 2)}  # 5 MiB each: 20 MiB on 1, 2, 4
PLAYBOOK = """- hosts: all
  topics:
    - {name: t, replication_factor: 2}
  brokers: {decommission: [1]}
"""


def filled_lab(tmp_path: Path, zk_connect: str, name: str) -> Any:
    """A lab of four brokers on one rack, topic t at ORIGINAL with 5 MiB in every partition."""
    return running_lab(tmp_path / name, zk_connect, brokers=4, racks=1, disk_capacity=DISKS, time_scale=20.0)


def fill(zk: ZkClient, api: Kip179Client) -> None:
    """t at ORIGINAL, 5 MiB in every partition, every replica caught up (12 replicas of 5 MiB)."""
    tool_writes.create_topic(zk, "t", ORIGINAL)
    wait_until(lambda: all(state(zk, "t", p) for p in ORIGINAL), what="t created")
    for p in ORIGINAL:
        wait_until(functools.partial(_produced, zk, p), what=f"t-{p} produced")
    wait_until(lambda: sorted(r.size for ds in api.describe_log_dirs().values() for d in ds for r in d.replicas)
               == [5 * MiB] * 12, timeout=60, what="every replica caught up")


def _produced(zk: ZkClient, partition: int) -> bool:
    try:
        return bool(traffic.produce(zk, "t", 5 * MiB, partition))
    except KopsError:  # no leader yet
        return False


def sizes_file(api: Kip179Client, path: Path) -> Path:
    """What the brokers hold, per partition (the largest copy), as a sizes summary: the figures `kops sizes` would
    summarise from the same DescribeLogDirs answers, without a Spark job in a lab test."""
    largest: dict[tuple[str, int], int] = {}
    for dirs in api.describe_log_dirs().values():
        for d in dirs:
            for r in d.replicas:
                key = (r.tp.topic, r.tp.partition)
                largest[key] = max(largest.get(key, 0), r.size)
    path.write_text("".join(json.dumps({"topic": t, "partition": p, "bytes": b, "growth_bytes_per_s": 0.0}) + "\n"
                            for (t, p), b in sorted(largest.items())))
    return path


def count_plan(zk_connect: str, tmp_path: Path) -> dict[int, tuple[int, ...]]:
    """The decommission as a count-balancing tool makes it: kops's plan with no sizes (limits unchecked)."""
    playbook, out = tmp_path / "count.yml", tmp_path / "count.json"
    playbook.write_text(PLAYBOOK)
    assert main(["plan", str(playbook), "-z", zk_connect, "-o", str(out), "--format", "json"]) == 0
    planned = plan_format.loads(out.read_text(), str(out))
    return {m.partition: m.to_replicas for b in planned.batches for m in b.moves if m.topic == "t"}


def test_a_count_balanced_decommission_halts_the_small_broker(tmp_path: Path, zk_connect: str) -> None:
    with filled_lab(tmp_path, zk_connect, "count") as lab, ZkClient(ZkSettings(zk_connect)) as zk, \
            Kip179Client(zk) as api:
        fill(zk, api)
        targets = count_plan(zk_connect, tmp_path)
        on_small = sum(SMALL in r for r in {**ORIGINAL, **targets}.values())
        assert on_small * 5 * MiB > DISKS[SMALL], f"a count plan puts {on_small} replicas on broker {SMALL}"
        pid = lab.state().pids[SMALL]
        tool_writes.start_reassignment(zk, [ReassignmentTarget("t", p, r) for p, r in sorted(targets.items())])
        log_file = lab.directory / "logs" / f"broker-{SMALL}.log"
        try:
            wait_until(lambda: not pid_alive(pid), timeout=120, what=f"broker {SMALL} halting on a full disk")
        except AssertionError as exc:  # say what the broker was doing instead
            raise AssertionError(f"{exc}; its log ends: {log_file.read_text()[-2000:]}") from None
        log = log_file.read_text()
        assert "No space left on device" in log


def test_kops_plans_the_same_decommission_within_the_small_brokers_limit(
        tmp_path: Path, zk_connect: str, capsys: Any) -> None:
    with filled_lab(tmp_path, zk_connect, "kops") as lab, ZkClient(ZkSettings(zk_connect)) as zk, \
            Kip179Client(zk) as api:
        fill(zk, api)
        playbook, out = tmp_path / "pb.yml", tmp_path / "plan.json"
        playbook.write_text(PLAYBOOK)
        sizes = sizes_file(api, tmp_path / "sizes.json")
        assert main(["plan", str(playbook), "-z", zk_connect, "--sizes", str(sizes), "-o", str(out),
                     "--format", "json"]) == 0
        report = plan_format.loads(out.read_text(), str(out)).summary.capacity
        assert report is not None
        small = report.brokers[SMALL]["disk"]
        assert small.source.startswith("reported") and small.peak <= small.limit, small
        capsys.readouterr()
        assert main(["apply", str(out), "-z", zk_connect, "--yes", "--format", "json", "--poll", "0.2"]) == 0
        assert 1 not in {b for r in replicas(zk, "t").values() for b in r}
        assert all(pid_alive(pid) for pid in lab.state().pids.values())
        held = sum(r.size for d in api.describe_log_dirs([SMALL])[SMALL] for r in d.replicas)
        assert held <= 0.8 * DISKS[SMALL]
