"""Leader balance counts network out (issue 35, docs/design/capacity.md §4, §6.3, commit 7): leading a partition
sends its write rate to each follower and each consumer group, so where rates are known no leadership change takes a
broker over its network-out limit, and leaders of hot partitions spread by network out, not only by count."""

from __future__ import annotations

from kops.model.capacity import CapacityDeclaration, Figure
from kops.model.desired import Rebalance
from kops.model.partitions import TopicPartition
from kops.model.snapshot import Snapshot
from kops.planner.bounded import Request, rebalance
from kops.planner.budget import Limits
from kops.planner.layout import Layout
from kops.planner.planner import Policy, plan
from tests.builders import HERE, brokers, declare, sizes_of, snapshot, topic
from tests.simulate import apply_plan

INV = "declared inv.yml:3"


def leaders_goal():
    return declare(rebalance=Rebalance("leaders", 0.0, HERE))


def network_out(snap: Snapshot, write: dict[TopicPartition, float]) -> dict[int, float]:
    """Per broker, what the partitions it leads (first replica) send: write × (followers + fan-out 1)."""
    out = {b.id: 0.0 for b in snap.brokers}
    for name, t in snap.topics.items():
        for p, part in t.partitions.items():
            out[part.replicas[0]] += write.get(TopicPartition(name, p), 0.0) * len(part.replicas)
    return out


def test_the_layout_keeps_network_out_on_the_preferred_leader_with_fanout() -> None:
    snap = snapshot(brokers(3, racks=None), [topic("hot", [(1, 2), (2, 3)]), topic("cold", [(3, 1)])])
    write = {TopicPartition("hot", 0): 100.0, TopicPartition("hot", 1): 10.0}
    layout = Layout(snap, sizes_of(snap), write, {"hot": 3})
    assert dict(layout.nw_out) == {1: 400.0, 2: 40.0, 3: 0.0}  # 100 × (1 follower + 3 groups); cold writes nothing
    layout.set(TopicPartition("hot", 0), (2, 1))  # a leadership change moves it whole
    assert (layout.nw_out[1], layout.nw_out[2]) == (0.0, 440.0)
    layout.replace(TopicPartition("hot", 0), 2, 3)  # the leader's replica moves: its network out goes along
    assert (layout.nw_out[2], layout.nw_out[3]) == (40.0, 400.0)
    layout.set(TopicPartition("hot", 1), (2, 3, 1))  # one more follower: one more copy sent
    assert layout.nw_out[2] == 50.0


def test_no_leadership_change_takes_a_broker_over_its_network_out_limit() -> None:
    # broker 1 leads all four; counts alone hand the hot one to broker 2, whose network out is small
    snap = snapshot(brokers(3, racks=None), [topic("t", [(1, 2), (1, 2), (1, 3), (1, 3)])])
    write = {TopicPartition("t", 0): 1_000.0} | {TopicPartition("t", p): 10.0 for p in (1, 2, 3)}
    capacity = CapacityDeclaration(default={"network_out": Figure(100_000, INV)},
                                   brokers={2: {"network_out": Figure(1_000, INV)}})
    planned = plan(leaders_goal(), snap, sizes_of(snap), Policy(capacity=capacity, write=write))
    after = network_out(apply_plan(snap, planned), write)
    assert after[2] <= 800 and planned.summary.leader_moves >= 2
    assert max(planned.summary.leaders_after.values()) == 2  # counts still within the cap


def test_leaders_of_hot_partitions_spread_by_network_out() -> None:
    # counts are even (two each), but brokers 1 and 2 lead the four hot partitions
    snap = snapshot(brokers(4, racks=None), [topic("hot", [(1, 3), (1, 4), (2, 3), (2, 4)]),
                                             topic("cold", [(3, 1), (4, 1), (3, 2), (4, 2)])])
    write = {TopicPartition("hot", p): 1_000.0 for p in range(4)}
    assert network_out(snap, write) == {1: 4_000.0, 2: 4_000.0, 3: 0.0, 4: 0.0}
    planned = plan(leaders_goal(), snap, sizes_of(snap), Policy(write=write))
    after = apply_plan(snap, planned)
    assert network_out(after, write) == {1: 2_000.0, 2: 2_000.0, 3: 2_000.0, 4: 2_000.0}
    assert set(planned.summary.leaders_after.values()) == {2} and planned.summary.moves == 0
    by_cron = rebalance(snap, Request("leaders", Limits(), 0.0), sizes_of(snap), Policy(write=write))
    assert network_out(apply_plan(snap, by_cron.plan), write) == {1: 2_000.0, 2: 2_000.0, 3: 2_000.0, 4: 2_000.0}


def test_without_write_rates_leaders_are_balanced_by_count_as_before() -> None:
    snap = snapshot(brokers(4, racks=None), [topic("hot", [(1, 3), (1, 4), (2, 3), (2, 4)]),
                                             topic("cold", [(3, 1), (4, 1), (3, 2), (4, 2)])])
    planned = plan(leaders_goal(), snap, sizes_of(snap), Policy())
    assert planned.summary.leader_moves == 0
