"""Capacity limits in placement and decommission (issue 35, docs/design/capacity.md §6.2, §6.4, §6.5): among the
brokers that fit, the one with the lowest share of its capacity in use gets the replica; a plan that cannot stay
inside is refused with the broker, the resource, the numbers and what would help; without a capacity, today's plans."""

from __future__ import annotations

from pathlib import Path

import pytest

from kops.errors import ExitCode
from kops.model.capacity import CapacityDeclaration, Figure
from kops.model.desired import Placement
from kops.model.partitions import TopicPartition
from kops.model.plan import Plan
from kops.planner.planner import PlanningError, Policy, plan, plan_targets
from tests.builders import brokers, declare, round_robin, sizes_of, snapshot, td, topic

INV = "declared inv.yml:3"


def disks(default: float | None = None, **per_broker: float) -> CapacityDeclaration:
    """Declared disk capacities: a default for every broker and overrides as b1=..., b2=..."""
    return CapacityDeclaration(default={} if default is None else {"disk": Figure(default, INV)},
                               brokers={int(b[1:]): {"disk": Figure(v, INV)} for b, v in per_broker.items()})


def held(planned: Plan, broker: int) -> int:
    return planned.summary.bytes_after.get(broker, 0)


def test_unequal_brokers_fill_by_their_share_of_capacity_not_by_count() -> None:
    # broker 1's 12 equal partitions go to 2 (capacity 100,000) and 3 (300,000): a count-balanced plan gives 6 each
    snap = snapshot(brokers(3, racks=None), [topic("t", [(1,)] * 12)])
    sizes = {TopicPartition("t", p): 10_000 for p in range(12)}
    by_count = plan(declare(decommission=[1]), snap, sizes, Policy())
    assert (held(by_count, 2), held(by_count, 3)) == (60_000, 60_000)
    by_share = plan(declare(decommission=[1]), snap, sizes, Policy(capacity=disks(b1=1e6, b2=100_000, b3=300_000)))
    assert (held(by_share, 2), held(by_share, 3)) == (30_000, 90_000)
    assert by_share.summary.capacity is not None and by_share.summary.capacity.brokers[3]["disk"].after == 90_000


def test_new_topics_and_partitions_spread_by_count_per_share_of_capacity() -> None:
    """A new partition weighs nothing yet, so it changes no broker's utilization: ranked by it, every new replica of
    a play went to the same broker (found on Kafka 4.3.1, whose reported disks make every broker's capacity known).
    Equal brokers take equal counts; broker 3, with twice the disk, about twice as many (each topic is spread by
    share: a broker takes no more than its share of a topic while another has room)."""
    from collections import Counter

    snap = snapshot(brokers(3, racks=None), [topic("orders", [(1, 2), (2, 3), (3, 1)] * 2), topic("events", [(1,)])])
    sizes = sizes_of(snap, 3_500_000)
    desired = declare(td("orders"), td("events", partitions=13), td("fresh", partitions=9, rf=2))

    def replicas(planned: Plan) -> Counter[int]:
        """Every broker's replicas after the plan: the 13 it holds (broker 1 one more) and the 30 it creates."""
        return Counter([b for c in planned.creations for rs in c.assignment.values() for b in rs]
                       + [b for a in planned.partition_additions for rs in a.assignment.values() for b in rs]
                       + [b for t in snap.topics.values() for part in t.partitions.values() for b in part.replicas])

    equal = plan(desired, snap, sizes, Policy(capacity=disks(2 * 1024**3)))
    assert replicas(equal) == replicas(plan(desired, snap, sizes, Policy())) == Counter({1: 14, 2: 14, 3: 15})
    unequal = replicas(plan(desired, snap, sizes, Policy(capacity=disks(1024**3, b3=2 * 1024**3))))
    assert unequal == Counter({1: 11, 2: 12, 3: 20}), unequal


def test_a_broker_that_does_not_fit_is_passed_over_even_on_the_right_rack() -> None:
    # brokers 1 and 4 share rack r0: rack-aware placement sends 1's replicas to 4 first, unless 4 is full
    snap = snapshot(brokers(6), [round_robin("t", 6, 3, [1, 2, 3, 4, 5, 6]), topic("big", [(4,)])])
    sizes = sizes_of(snap) | {TopicPartition("big", 0): 80_000}
    assert held(plan(declare(decommission=[1]), snap, sizes, Policy()), 4) > 100_000
    planned = plan(declare(decommission=[1]), snap, sizes, Policy(capacity=disks(1e6, b4=125_000)))
    assert held(planned, 4) <= 100_000


def test_a_decommission_that_fits_nowhere_is_refused_with_the_numbers_and_what_would_help() -> None:
    snap = snapshot(brokers(3, racks=None), [topic("t", [(1,), (2,), (3,)])])
    sizes = {TopicPartition("t", p): 50_000 for p in range(3)}
    with pytest.raises(PlanningError) as refused:
        plan(declare(decommission=[1]), snap, sizes, Policy(capacity=disks(100_000)))
    line = refused.value.one_line()
    assert "playbook.yml:3:7" in line and "cannot move t-0 off broker 1" in line
    assert "no eligible broker fits 48.8 KiB of disk" in line
    assert "limit 0.8 of 97.7 KiB declared inv.yml:3" in line and "raise capacity.limits.disk" in line
    assert refused.value.exit_code == ExitCode.ERROR


def test_a_broker_already_over_takes_nothing_more_of_that_resource() -> None:
    snap = snapshot(brokers(3, racks=None), [topic("t", [(1,), (2,), (2,), (2,)])])
    sizes = {TopicPartition("t", p): 10_000 for p in range(4)}
    # broker 2 holds 30,000 of a 30,000 capacity (limit 24,000): over, so 1's replica goes to 3 though 3 is smaller
    planned = plan(declare(decommission=[1]), snap, sizes, Policy(capacity=disks(b1=1e6, b2=30_000, b3=15_000)))
    assert [m.to_replicas for b in planned.batches for m in b.moves] == [(3,)]


def test_replication_factor_increases_and_new_partitions_keep_the_limits() -> None:
    snap = snapshot(brokers(4, racks=None), [topic("t", [(1,), (2,)]), topic("fill", [(3,)])])
    sizes = {TopicPartition("t", 0): 10_000, TopicPartition("t", 1): 10_000, TopicPartition("fill", 0): 75_000}
    planned = plan(declare(td("t", rf=2)), snap, sizes, Policy(capacity=disks(100_000)))
    assert all(3 not in m.to_replicas for b in planned.batches for m in b.moves)  # 3 has 5,000 of room, not 10,000
    capped = CapacityDeclaration(default={"replicas": Figure(2.0, INV)})
    created = plan(declare(td("new", 4, 1)), snap, sizes, Policy(capacity=capped))
    per_broker: dict[int, int] = {}
    for replicas in created.creations[0].assignment.values():
        per_broker[replicas[0]] = per_broker.get(replicas[0], 0) + 1
    assert all(n + (1 if b in (1, 2, 3) else 0) <= 2 for b, n in per_broker.items())
    with pytest.raises(PlanningError, match="no eligible broker fits 1 of replicas"):
        plan(declare(td("new", 6, 1)), snap, sizes, Policy(capacity=capped))


def test_a_static_assignment_that_overfills_a_broker_is_refused_at_the_end() -> None:
    snap = snapshot(brokers(2, racks=None), [topic("t", [(1,), (1,)])])
    sizes = {TopicPartition("t", 0): 50_000, TopicPartition("t", 1): 50_000}
    static = td("t", 2, 1, placement=Placement("static", {0: (2,), 1: (2,)}))
    with pytest.raises(PlanningError, match="broker 2 would hold 97.7 KiB of disk after the plan, over its limit"):
        plan(declare(static), snap, sizes, Policy(capacity=disks(100_000)))


def test_without_a_known_capacity_the_plan_is_todays() -> None:
    snap = snapshot(brokers(6), [round_robin("t", 12, 3, [1, 2, 3, 4, 5, 6])])
    sizes = sizes_of(snap)
    today = plan(declare(td("t", rf=3), decommission=[2]), snap, sizes, Policy())
    unknown = CapacityDeclaration(limits={"disk": 0.5})  # limits alone: no capacity known
    assert plan(declare(td("t", rf=3), decommission=[2]), snap, sizes, Policy(capacity=unknown)) == today
    assert today.summary.capacity is None


def test_imported_targets_that_overfill_a_broker_are_refused_naming_the_file() -> None:
    """`kops plan --import-kafka` and `kops rebalance` plan given targets (plan_targets): held to the limits as
    every other plan (§6.5), and a move off a broker that is already over is still allowed."""
    snap = snapshot(brokers(3, racks=None), [topic("t", [(1,), (1,), (2,)])])
    sizes = {TopicPartition("t", p): 50_000 for p in range(3)}
    with pytest.raises(PlanningError) as refused:
        plan_targets(snap, {TopicPartition("t", 0): (2,)}, "c", policy=Policy(capacity=disks(100_000)),
                     sizes=sizes, where="moves.json")
    assert refused.value.one_line().startswith("moves.json:1:1: this plan would overfill a broker: broker 2 would")
    over = Policy(capacity=disks(b1=60_000, b2=1e6, b3=1e6))  # broker 1 holds 100,000 of a 48,000 limit
    assert plan_targets(snap, {TopicPartition("t", 0): (3,)}, "c", policy=over, sizes=sizes).moves


GOLDEN_CAPACITY = Path(__file__).parents[1] / "golden" / "capacity-decommission"


def _import_onto_broker_7(tmp_path: Path, *capacity: str) -> tuple[int, Path]:
    """`kops plan --import-kafka`, offline on the golden capacity snapshot and sizes, of a proposal that puts every
    partition of clicks (about 2.3 GB) on broker 7, with `capacity`'s options: the exit code and the proposal."""
    import json

    from kops.cli.main import main

    proposal = tmp_path / "moves.json"
    proposal.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "clicks", "partition": p, "replicas": [7, 2, 3]} for p in range(8)]}))
    return main(["plan", "--import-kafka", str(proposal), "--snapshot", str(GOLDEN_CAPACITY / "snapshot.json"),
                 "--sizes", str(GOLDEN_CAPACITY / "sizes.json"), *capacity,
                 "-o", str(tmp_path / "plan.json")]), proposal


def test_kops_plan_import_kafka_refuses_a_proposal_that_fills_a_small_broker(tmp_path: Path, capsys) -> None:
    """The CLI path, offline: a Cruise Control capacity file that gives broker 7 2 GiB: exit 1, one line."""
    import json

    def capacity(broker7_mb: int) -> list[str]:
        path = tmp_path / f"capacity-{broker7_mb}.json"
        path.write_text(json.dumps({"brokerCapacities": [
            {"brokerId": "-1", "capacity": {"DISK": "8192", "CPU": "100", "NW_IN": "100000", "NW_OUT": "100000"}},
            {"brokerId": "7", "capacity": {"DISK": str(broker7_mb), "CPU": "100", "NW_IN": "100000",
                                           "NW_OUT": "100000"}}]}))
        return ["--capacity", str(path)]

    capsys.readouterr()
    code, proposal = _import_onto_broker_7(tmp_path, *capacity(2048))
    assert code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{proposal}:1:1: this plan would overfill a broker: broker 7 would hold" in err
    assert _import_onto_broker_7(tmp_path, *capacity(8192))[0] == 0


def test_kops_plan_import_kafka_holds_a_proposal_to_the_inventorys_capacity(tmp_path: Path, capsys) -> None:
    """`-i INVENTORY -l CLUSTER` with --import-kafka: the cluster's `capacity` variable holds the proposal as
    --capacity does (it had been dropped, and the import held to the disks the cluster reported)."""
    def inventory(broker7: str) -> list[str]:
        path = tmp_path / f"hosts-{broker7}.yml"
        path.write_text("all:\n  hosts:\n    c1:\n      bootstrap_servers: localhost:1\n"
                        f"      capacity: {{disk: 8GiB, brokers: {{7: {{disk: {broker7}}}}}}}\n")
        return ["-i", str(path), "-l", "c1"]

    capsys.readouterr()
    code, proposal = _import_onto_broker_7(tmp_path, *inventory("2GiB"))
    assert code == 1
    err = capsys.readouterr().err
    assert f"{proposal}:1:1: this plan would overfill a broker: broker 7 would hold" in err, err
    assert _import_onto_broker_7(tmp_path, *inventory("8GiB"))[0] == 0


def test_a_capacity_with_nothing_to_weigh_against_it_is_said() -> None:
    """Through ZooKeeper (no sizes reported) a declared disk held nothing back: every replica weighed 0 B."""
    snap = snapshot(brokers(3, racks=None), [topic("t", [(1, 2)] * 3)])
    unsized = plan(declare(td("t", rf=3)), snap, {}, Policy(capacity=disks(60 * 2**20)))
    assert any(w.startswith("disk capacity is known but no partition's size is") and "--sizes" in w
               for w in unsized.warnings), unsized.warnings
    sized = plan(declare(td("t", rf=3)), snap, sizes_of(snap), Policy(capacity=disks(60 * 2**20)))
    assert not any("capacity is known" in w for w in sized.warnings)
    assert not any("capacity is known" in w for w in plan(declare(td("t", rf=3)), snap, {}, Policy()).warnings)


def test_a_capacity_declared_for_a_broker_the_cluster_does_not_have_is_said() -> None:
    snap = snapshot(brokers(3, racks=None), [topic("t", [(1, 2)] * 3)])
    planned = plan(declare(td("t", rf=3)), snap, sizes_of(snap), Policy(capacity=disks(1e6, b9=1e6)))
    assert any(w.startswith("capacity declared for broker(s) 9") and "does not have: ignored" in w
               for w in planned.warnings), planned.warnings
