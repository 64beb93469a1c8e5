"""The plan's capacity report (issue 35, report only): before, after and the peak of each batch per broker and
known resource, with sources; absent when nothing is known, so plans without capacities keep their bytes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kops.model import plan_format
from kops.model.capacity import REPORTED, CapacityDeclaration, Figure, LogDirUsage
from kops.model.desired import Placement
from kops.model.partitions import TopicPartition
from kops.planner.headroom import capacity_markdown, capacity_report
from kops.planner.markdown import render_markdown
from kops.planner.planner import Policy, plan
from tests.builders import brokers, declare, round_robin, sizes_of, snapshot, td, topic

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
DISK = CapacityDeclaration(default={"disk": Figure(100_000.0, "declared inv.yml:3")})


def test_a_swap_peaks_inside_its_batch_where_both_copies_exist() -> None:
    snap = snapshot(brokers(2, racks=None), [topic("t", [(1,), (2,)])])
    sizes = {TopicPartition("t", 0): 30_000, TopicPartition("t", 1): 20_000}
    swap = td("t", 2, 1, placement=Placement("static", {0: (2,), 1: (1,)}))
    planned = plan(declare(swap), snap, sizes, Policy())
    assert len(planned.batches) == 1
    report = capacity_report(planned, snap, sizes, DISK)
    assert report is not None and report.unknown == ("network_in", "network_out", "replicas")
    one, two = report.brokers[1]["disk"], report.brokers[2]["disk"]
    assert (one.before, one.after, one.peak, one.peak_batch) == (30_000, 20_000, 50_000, 1)
    assert (two.before, two.after, two.peak, two.peak_batch) == (20_000, 30_000, 50_000, 1)
    assert (one.limit, one.headroom, one.source) == (80_000, 30_000, "declared inv.yml:3")
    assert report.over_before == ()


def test_network_loads_follow_leaders_and_fanout_and_reported_disks_count_other_files() -> None:
    snap = snapshot(brokers(3, racks=None), [topic("t", [(1, 2, 3)])],
                    log_dirs=tuple(LogDirUsage(b, "/d", 10_000, 10_000 - 1_000 - 50) for b in (1, 2, 3)))
    tp = TopicPartition("t", 0)
    declared = CapacityDeclaration(default={"network_out": Figure(100.0, "declared inv.yml:4")})
    planned = plan(declare(), snap, {tp: 1_000}, Policy())
    report = capacity_report(planned, snap, {tp: 1_000}, declared, write={tp: 10.0}, fanout={"t": 4})
    assert report is not None
    assert report.brokers[1]["network_out"].before == 10 * (2 + 4)  # the leader sends to 2 followers and 4 groups
    assert report.brokers[2]["network_out"].before == 0
    disk = report.brokers[2]["disk"]
    assert (disk.capacity, disk.source, disk.before) == (10_000, REPORTED, 1_050)  # the replica + other files
    assert report.unknown == ("network_in", "replicas")


def test_no_capacity_no_report_and_the_golden_plans_say_nothing_of_it() -> None:
    snap = snapshot(brokers(6), [round_robin("t", 6, 3, [1, 2, 3, 4, 5, 6])])
    sizes = sizes_of(snap)
    planned = plan(declare(decommission=[3]), snap, sizes, Policy())
    assert capacity_report(planned, snap, sizes, None) is None and capacity_markdown(None) == []
    for folder in sorted(p for p in GOLDEN.iterdir() if (p / "expected-plan.json").exists()):
        golden = plan_format.loads((folder / "expected-plan.json").read_bytes(), folder.name)
        inventory = folder / "inventory.yml"
        declared = inventory.exists() and "capacity:" in inventory.read_text()
        reported = '"total_bytes"' in (folder / "snapshot.json").read_text()  # log dirs' sizes (DescribeLogDirs v4)
        assert (golden.summary.capacity is not None) == (declared or reported), folder.name


def test_the_golden_report_agrees_with_the_plans_own_tables() -> None:
    folder = GOLDEN / "capacity-report"
    golden = plan_format.loads((folder / "expected-plan.json").read_bytes(), folder.name)
    report = golden.summary.capacity
    assert report is not None and report.over_before == (1,)  # declared 6 GiB at 0.75: already over
    s = golden.summary
    for broker, usages in report.brokers.items():
        other = usages["disk"].before - s.bytes_before.get(broker, 0)
        assert usages["disk"].after - other == s.bytes_after.get(broker, 0), broker
        assert (usages["replicas"].before, usages["replicas"].after) == (s.replicas_before.get(broker, 0),
                                                                         s.replicas_after.get(broker, 0))
        for u in usages.values():
            assert u.peak >= max(u.before, u.after)
            assert u.peak_batch is None or u.peak > max(u.before, u.after)
    assert report.brokers[1]["disk"].source == "declared inventory.yml:10"
    assert report.brokers[2]["disk"].source == REPORTED
    assert "<summary>Capacity</summary>" in render_markdown(golden)
    assert "<summary>Capacity</summary>" not in render_markdown(replace(golden, summary=replace(s, capacity=None)))
