"""`kops rehearse` end to end: a snapshot and a plan made from a cluster, rehearsed on lab clones.

The production cluster here only gives the snapshot (and is gone before the rehearsals start, as production is
out of reach of a rehearsal): a kops-engine cluster of 6 brokers in 3 racks (test_rehearse_real.py takes one
from real Kafka 4, in a module of its own so the two run on both test workers). Each
rehearsal starts its own clone (real processes), applies, rolls back and reports; the report is the judge of
what it measured, the clone's layout after the rollback is checked by the command itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kops.lab import traffic
from kops.lab.kops_engine import Lab
from kops.model import plan_format
from kops.zk_layout.client import ZkClient, ZkSettings
from tests.labtools import produced, wait_until

pytestmark = pytest.mark.lab
MB = 1_000_000
ORDERS_BYTES = 250 * MB  # per partition, simulated on the kops engine
DECOMMISSION = """- hosts: all
  topics: [{name: orders}, {name: clicks}]
  brokers: {decommission: [%d]}
  execution:
    throttle: %s
    batch: {max_partitions: 4}
"""


@dataclass
class Production:
    snapshot: Path
    sizes: Path
    plan: Path
    folder: Path

    def sizes_with_growth(self, per_second: float) -> Path:
        """The same sizes, `orders` growing by `per_second` bytes/s per partition: background traffic."""
        rows = [json.loads(line) for line in self.sizes.read_text().splitlines()]
        for row in rows:
            if row["topic"] == "orders":
                row["growth_bytes_per_s"] = per_second
        out = self.folder / f"sizes-growth-{per_second:g}.jsonl"
        out.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return out


def kops(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kops.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout)


def write_sizes(path: Path, sizes: dict[tuple[str, int], int]) -> Path:
    path.write_text("".join(json.dumps({"topic": t, "partition": p, "bytes": b, "growth_bytes_per_s": 0.0}) + "\n"
                            for (t, p), b in sorted(sizes.items())))
    return path


def snapshot_and_plan(folder: Path, connection: list[str], sizes: dict[tuple[str, int], int], leaving: int,
                      throttle: str) -> Production:
    snapshot = folder / "snapshot.json"
    saved = kops("state", *connection, "--out", str(snapshot))
    assert saved.returncode == 0, saved.stderr
    sizes_file = write_sizes(folder / "sizes.jsonl", sizes)
    book = folder / "decommission.yml"
    book.write_text(DECOMMISSION % (leaving, throttle))
    plan = folder / "plan.json"
    made = kops("plan", str(book), "--snapshot", str(snapshot), "--sizes", str(sizes_file), "-o", str(plan))
    assert made.returncode == 0, made.stderr
    return Production(snapshot, sizes_file, plan, folder)


@pytest.fixture(scope="module")
def kops_production(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Production]:
    """6 brokers in 3 racks: orders (24 partitions, RF 3, 250 MB each) and clicks (12, RF 2); broker 6 leaves."""
    folder = tmp_path_factory.mktemp("kops-production")
    lab = Lab(folder / "lab", detached=False)
    state = lab.up(brokers=6, racks=3, time_scale=10.0)
    try:
        book = folder / "topics.yml"
        book.write_text("- hosts: all\n  topics:\n    - {name: orders, partitions: 24, replication_factor: 3}\n"
                        "    - {name: clicks, partitions: 12, replication_factor: 2}\n")
        assert kops("plan", str(book), "-z", state.connect, "-o", str(folder / "create.json")).returncode == 0
        assert kops("apply", str(folder / "create.json"), "-z", state.connect, "--yes").returncode == 0
        with ZkClient(ZkSettings(state.connect)) as zk:
            wait_until(lambda: produced(zk, "orders", 24 * ORDERS_BYTES) is not None, timeout=30,
                       what="orders filled")
            traffic.produce(zk, "clicks", 12 * ORDERS_BYTES // 3)
        sizes = {**{("orders", p): ORDERS_BYTES for p in range(24)},
                 **{("clicks", p): ORDERS_BYTES // 3 for p in range(12)}}
        yield snapshot_and_plan(folder, ["-z", state.connect], sizes, 6, "10MiB/s")
    finally:
        lab.down()


def rehearse(production: Production, *extra: str) -> tuple[int, dict, str]:
    report = production.folder / "report.md"
    done = kops("rehearse", str(production.plan), "--snapshot", str(production.snapshot), "--format", "json",
                "--report", str(report), *extra)
    assert done.stdout.strip(), done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


def test_a_decommission_rehearses_within_its_estimates_and_rolls_back(kops_production: Production) -> None:
    code, report, err = rehearse(kops_production, "--scale", "20")
    assert code == 0, (report["verdict"], err[-2000:])
    moving = [b for b in report["batches"] if b["bytes"]]
    assert moving and all(abs(b["error"]) <= 0.25 for b in moving), [(b["index"], b["error"]) for b in moving]
    assert all(b["slowest"] and b["slowest_why"] for b in moving)
    assert report["layout_restored"] and report["rollback_seconds"] > 0
    assert report["verdict"].startswith("OK: the plan's estimate")
    assert report["sample"].startswith("36 of 36 partitions")
    assert report["scaling"]["factor"] == 20.0
    plan = plan_format.loads(kops_production.plan.read_bytes(), "plan")
    estimates = [b.estimate.seconds for b in plan.batches]
    assert [b["estimate_seconds"] for b in report["batches"]] == pytest.approx(estimates)


def test_a_throttle_too_low_for_the_background_traffic_is_named(kops_production: Production) -> None:
    growth = kops_production.sizes_with_growth(500_000.0)
    code, report, err = rehearse(kops_production, "--scale", "40", "--sizes", str(growth))
    assert code == 2, (report["verdict"], err[-2000:])
    last = max(b["index"] for b in report["batches"] if b["bytes"])  # the logs have grown most by then
    assert report["verdict"].startswith("OFF:") and f"batch {last} +" in report["verdict"]
    assert report["traffic"] == {"orders": pytest.approx(24 * 500_000.0)}
    assert report["layout_restored"]


def test_a_stopped_target_broker_stops_the_rehearsal_naming_its_partitions(kops_production: Production) -> None:
    plan = plan_format.loads(kops_production.plan.read_bytes(), "plan")
    first = plan.batches[0]
    target = next(b for m in first.moves for b in m.adding)
    code, report, err = rehearse(kops_production, "--scale", "20", "--stop-broker", str(target))
    assert code == 3, (report["verdict"], err[-2000:])
    assert report["verdict"].startswith("STOPPED:")
    assert all(str(m.tp) in report["verdict"] for m in first.moves if target in m.adding)
    assert report["batches"][0]["measured_seconds"] is None


def test_rolling_execution_rehearses_as_one_stream_of_moves(kops_production: Production) -> None:
    code, report, err = rehearse(kops_production, "--scale", "20", "--rolling")
    assert code in (0, 2), (report["verdict"], err[-2000:])
    assert report["mode"] == "rolling" and len(report["batches"]) == 1 and report["batches"][0]["measured_seconds"]
    plan = plan_format.loads(kops_production.plan.read_bytes(), "plan")
    assert report["estimate_seconds"] == pytest.approx(plan.summary.lower_bound_seconds)  # rolling aims at the bound
    assert report["layout_restored"]
