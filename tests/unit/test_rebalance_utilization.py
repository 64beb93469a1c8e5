"""Rebalance by utilization and within every limit (issue 35, docs/design/capacity.md §6.3, commit 7): where every
broker's disk is known, `goal: bytes` fills unequal brokers by their share of capacity, not equally; network in is
evened second where write rates and network-in capacities are known; a broker already over a limit sheds and takes
nothing; `capacity.max_replicas` holds in every balancer as in placement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kops.cli.main import main
from kops.model import plan_format
from kops.model.capacity import CapacityDeclaration, Figure, Resource
from kops.model.desired import Rebalance
from kops.model.partitions import TopicPartition
from kops.model.plan import Plan
from kops.planner.bounded import Request, imbalance, rebalance
from kops.planner.budget import Limits
from kops.planner.planner import Policy, plan
from tests.builders import HERE, brokers, declare, round_robin, sizes_of, snapshot, topic
from tests.golden.scenarios import HERE as GOLDEN
from tests.simulate import apply_plan

INV = "declared inv.yml:3"


def declared(default: dict[Resource, float] | None = None, **per_broker: dict[Resource, float]) -> CapacityDeclaration:
    """A declaration: figures for every broker, and overrides as b1={...}, b2={...}."""
    return CapacityDeclaration(default={r: Figure(v, INV) for r, v in (default or {}).items()},
                               brokers={int(b[1:]): {r: Figure(v, INV) for r, v in figures.items()}
                                        for b, figures in per_broker.items()})


def bytes_goal(tolerance: float = 0.0):
    return declare(rebalance=Rebalance("bytes", tolerance, HERE))


def held(planned: Plan) -> dict[int, int]:
    return dict(planned.summary.bytes_after)


def test_bytes_are_evened_by_share_of_disk_capacity_not_equally() -> None:
    # 24,000 bytes on broker 1; brokers 3 and 4 have twice the disk of 1 and 2
    snap = snapshot(brokers(4, racks=None), [topic("t", [(1,)] * 24)])
    sizes = {TopicPartition("t", p): 1_000 for p in range(24)}
    equal = plan(bytes_goal(), snap, sizes, Policy())
    assert held(equal) == {1: 6_000, 2: 6_000, 3: 6_000, 4: 6_000}
    capacity = declared({"disk": 40_000}, b1={"disk": 20_000}, b2={"disk": 20_000})
    by_share = plan(bytes_goal(), snap, sizes, Policy(capacity=capacity))
    assert held(by_share) == {1: 4_000, 2: 4_000, 3: 8_000, 4: 8_000}
    report = by_share.summary.capacity
    assert report is not None and report.over_before == (1,)  # 24,000 over 0.8 of 20,000: it sheds, nothing comes
    assert all(m.from_replicas == (1,) for m in by_share.moves)


def test_kops_rebalance_evens_utilization_and_reports_its_imbalance() -> None:
    snap = snapshot(brokers(4, racks=None), [topic("t", [(1,)] * 24)])
    sizes = {TopicPartition("t", p): 1_000 for p in range(24)}
    capacity = declared({"disk": 40_000}, b1={"disk": 20_000}, b2={"disk": 20_000})
    result = rebalance(snap, Request("bytes", Limits(), 0.0), sizes, Policy(capacity=capacity))
    assert held(result.plan) == {1: 4_000, 2: 4_000, 3: 8_000, 4: 8_000}
    assert result.imbalance_after == 0.0 and result.imbalance_before == pytest.approx(20_000 / 24_000, abs=1e-6)
    scale = {1: 16_000.0, 2: 16_000.0, 3: 32_000.0, 4: 32_000.0}
    assert imbalance({1: 6_000, 2: 6_000, 3: 6_000, 4: 6_000}, [1, 2, 3, 4], scale) == pytest.approx(1 / 6, abs=1e-6)
    assert imbalance({1: 6_000, 2: 6_000, 3: 6_000, 4: 6_000}, [1, 2, 3, 4]) == 0.0


def test_a_cluster_already_over_moves_only_what_lowers_it() -> None:
    # broker 1 holds the fewest bytes but is over its limit (5,000 on a 5,000 disk at 0.8): by bytes it would take
    # more; by utilization it sheds, and brokers 2-4 (within 10% of their share) move nothing among themselves
    snap = snapshot(brokers(4, racks=None), [topic("t", [(1,)] * 5 + [(2,)] * 9 + [(3,)] * 8 + [(4,)] * 9)])
    sizes = {TopicPartition("t", p): 1_000 for p in range(31)}
    capacity = declared({"disk": 20_000}, b1={"disk": 5_000})
    planned = plan(bytes_goal(0.1), snap, sizes, Policy(capacity=capacity))
    assert planned.moves and all(m.from_replicas == (1,) for m in planned.moves)
    after = held(planned)
    assert after[1] <= 4_000 and all(after[b] <= 16_000 for b in (2, 3, 4))
    report = planned.summary.capacity
    assert report is not None and report.over_before == (1,) and report.brokers[1]["disk"].after <= 4_000


def test_network_in_is_evened_second_without_raising_the_disk_peak() -> None:
    # disks even (2,000 bytes each); broker 1 carries all four hot partitions' writes, and brokers 2-4 each hold a
    # quiet partition the size of a hot one: swapping them evens the writes and leaves every disk where it was
    hot = [TopicPartition("hot", p) for p in range(4)]
    snap = snapshot(brokers(4, racks=None), [topic("hot", [(1,)] * 4), topic("big", [(1,), (2,), (3,), (4,)]),
                                             topic("quiet", [(2,), (3,), (4,)])])
    sizes = {tp: 50 for tp in hot} | {TopicPartition("big", 0): 1_800} | {
        TopicPartition("big", p): 1_950 for p in (1, 2, 3)} | {TopicPartition("quiet", p): 50 for p in range(3)}
    write = {tp: 500.0 for tp in hot}
    capacity = declared({"disk": 100_000, "network_in": 10_000})
    before = plan(bytes_goal(), snap, sizes, Policy(capacity=capacity))
    assert not before.moves  # without write rates, disks are even: nothing to do
    planned = plan(bytes_goal(), snap, sizes, Policy(capacity=capacity, write=write))
    after = apply_plan(snap, planned)
    nw_in = {b: sum(write.get(tp, 0.0) for tp in hot if b in after.partition(tp).replicas) for b in (1, 2, 3, 4)}
    # within the walk's band: the fair share (500) plus one median partition's writes (docs/design/goals.md §5)
    assert max(nw_in.values()) <= 1_000 and sum(nw_in.values()) == 2_000
    assert max(held(planned).values()) == 2_000


def test_max_replicas_holds_in_the_replica_balancer() -> None:
    # 24 replicas over 4 brokers: 6 each by count, but broker 4 may hold 3
    snap = snapshot(brokers(4, racks=None), [topic("t", [(1,)] * 12 + [(2,)] * 12)])
    sizes = sizes_of(snap)
    capacity = declared(b4={"replicas": 3})
    planned = plan(declare(rebalance=Rebalance("replicas", 0.0, HERE)), snap, sizes, Policy(capacity=capacity))
    after = planned.summary.replicas_after
    assert after[4] == 3 and sorted(after[b] for b in (1, 2, 3)) == [7, 7, 7]
    result = rebalance(snap, Request("replicas", Limits(), 0.0), sizes, Policy(capacity=capacity))
    assert result.plan.summary.replicas_after[4] == 3


def test_max_replicas_holds_when_new_brokers_take_their_share_and_in_a_decommission() -> None:
    snap = snapshot(brokers(4, racks=None), [round_robin("t", 12, 2, [1, 2, 3])])
    sizes = sizes_of(snap)
    capacity = declared({"replicas": 12}, b4={"replicas": 2})
    added = plan(declare(add=[4]), snap, sizes, Policy(capacity=capacity))
    assert added.summary.replicas_after[4] == 2
    retired = plan(declare(decommission=[1]), snap, sizes, Policy(capacity=capacity))
    assert retired.summary.replicas_after[4] == 2 and 1 not in retired.summary.replicas_after


def test_max_replicas_holds_in_the_bytes_balancer() -> None:
    snap = snapshot(brokers(3, racks=None), [topic("t", [(1,)] * 12)])
    sizes = {TopicPartition("t", p): 1_000 for p in range(12)}
    planned = plan(bytes_goal(), snap, sizes, Policy(capacity=declared(b3={"replicas": 2})))
    assert planned.summary.replicas_after[3] == 2 and held(planned)[1] < 12_000


def test_the_capacity_over_golden_plan_moves_only_what_lowers_the_broker_over_its_limit_or_fills_one_below() -> None:
    """The play asks for bytes evened by share with a tolerance of 0.1: each copy leaves broker 1 (over its limit) or
    goes to a broker that started more than 10% below the mean utilization (broker 6: 41.8% against 47.6%)."""
    folder = GOLDEN / "capacity-over"
    planned = plan_format.loads((folder / "expected-plan.json").read_bytes(), "capacity-over")
    report = planned.summary.capacity
    assert report is not None and report.over_before == (1,)
    disk = {b: usages["disk"] for b, usages in report.brokers.items()}
    mean = sum(u.before for u in disk.values()) / sum(u.capacity for u in disk.values())
    below = {b for b, u in disk.items() if u.before / u.capacity < 0.9 * mean}
    data = [m for m in planned.moves if m.kind == "data"]
    assert data and any(1 in m.from_replicas for m in data)
    assert all(1 in m.from_replicas and 1 not in m.to_replicas or set(m.to_replicas) - set(m.from_replicas) <= below
               for m in data)
    assert disk[1].before > disk[1].limit >= disk[1].after  # over before, within after
    assert all(u.after <= u.limit for u in disk.values())
    # by share of capacity: the brokers that took its replicas end no fuller than it
    assert max(disk, key=lambda b: disk[b].after / disk[b].limit) == 1


def test_kops_rebalance_with_a_cruise_control_capacity_file_evens_utilization(tmp_path: Path, capsys) -> None:
    # the capacity-over cluster, its disks given as Cruise Control's file (MiB): broker 1 over, the others uneven
    folder = GOLDEN / "capacity-over"
    mib = {-1: 9 * 1024, 1: 5 * 1024, 3: 11 * 1024, 4: 10 * 1024, 5: 7 * 1024, 6: 4 * 1024}
    cc = tmp_path / "capacity.json"
    cc.write_text(json.dumps({"brokerCapacities": [
        {"brokerId": str(b), "capacity": {"DISK": str(v), "CPU": "100", "NW_IN": "100000", "NW_OUT": "100000"}}
        for b, v in mib.items()]}))
    out = tmp_path / "plan.json"
    code = main(["rebalance", "--snapshot", str(folder / "snapshot.json"), "--sizes", str(folder / "sizes.json"),
                 "--capacity", str(cc), "--goal", "bytes", "--format", "json", "-o", str(out)])
    assert code == 0
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert doc["status"] == "planned" and doc["imbalance_after"] < doc["imbalance_before"]
    report = plan_format.loads(out.read_bytes(), str(out)).summary.capacity
    assert report is not None and report.over_before == (1,)
    use = {b: usages["disk"].after / usages["disk"].limit for b, usages in report.brokers.items()}
    assert use[1] <= 1.0 and max(use.values()) - min(use.values()) < 0.2  # by share: 0.32 to 1.21 before


def test_under_max_moves_each_replica_goes_where_it_raises_utilization_least() -> None:
    # brokers 3 and 4 have three times broker 2's disk: by share they take three replicas for each of 2's
    snap = snapshot(brokers(4, racks=None), [topic("t", [(1,)] * 24)])
    sizes = {TopicPartition("t", p): 1_000 for p in range(24)}
    capacity = declared({"disk": 60_000}, b1={"disk": 20_000}, b2={"disk": 20_000})
    result = rebalance(snap, Request("bytes", Limits(max_moves=6), 0.0), sizes, Policy(capacity=capacity))
    assert result.plan.summary.moves == 6
    after = held(result.plan)
    assert (after[2], after[3], after[4]) == (1_000, 3_000, 2_000)  # equal bytes would be 2,000 each
    assert result.imbalance_after < result.imbalance_before


def test_a_follower_on_an_unregistered_broker_never_takes_the_lead() -> None:
    # broker 4 holds followers but is not registered: the walk's leaders goal hands broker 1's leaderships to
    # followers it may use only (this raised KeyError where a partition's only other follower sat on broker 4)
    snap = snapshot(brokers(3, racks=None), [topic("t", [(1, 4)] * 6 + [(1, 2)] * 6 + [(2, 3)] * 3)])
    planned = plan(declare(rebalance=Rebalance("replicas", 0.0, HERE)), snap, sizes_of(snap),
                   Policy(capacity=declared({"disk": 10**12})))
    after = apply_plan(snap, planned)
    leaders = [after.partition(TopicPartition("t", p)).replicas[0] for p in range(15)]
    assert 4 not in leaders and leaders.count(1) < 12  # partitions 0-4 can only stay with broker 1


def test_a_lone_brokers_rack_pinned_replicas_do_not_keep_it_from_shedding_the_others() -> None:
    """Racks of two, two and one broker (Kafka 4 lab, capacities reported): broker 3, alone in its rack, holds a
    replica of every partition spread over three racks, and those, the lightest by position, were all the count
    goal tried; its replicas of a two-rack topic, free to go to the rack that lacks them, never moved (18 against a
    share of 12, broker 5 left at 3)."""
    snap = snapshot(brokers(5), [topic("orders", [(1, 2, 3)] * 12), topic("pay", [(3, 1)] * 6)])  # r2: broker 3
    planned = plan(declare(rebalance=Rebalance("replicas", 0.0, HERE)), snap, None,
                   Policy(capacity=declared({"disk": 10**12})))
    after = apply_plan(snap, planned)
    counts = {b: sum(b in after.partition(TopicPartition(t, p)).replicas for t, n in (("orders", 12), ("pay", 6))
                     for p in range(n)) for b in range(1, 6)}
    assert counts[3] <= 13 and counts[5] >= 8  # shares 9, 9, 12, 9, 9; the walk's band is 9% wide
    racks = {b.id: b.rack for b in snap.brokers}
    assert all(len({racks[b] for b in after.partition(TopicPartition("orders", p)).replicas}) == 3 for p in range(12))
