"""Small clusters built in code for planner tests (pure data, no ZooKeeper)."""

from __future__ import annotations

import zlib

from bench.cc_cluster import Cluster, generate
from kops.model.brokers import Broker
from kops.model.desired import (
    BrokerChanges,
    DesiredState,
    Execution,
    Placement,
    Rebalance,
    SourceLocation,
    TopicDeclaration,
)
from kops.model.partitions import Partition, PartitionState, TopicPartition
from kops.model.snapshot import ControllerInfo, Snapshot
from kops.model.topics import Topic
from kops.planner.goal_values import GoalInputs

HERE = SourceLocation("playbook.yml", 3, 7)


def brokers(count: int, racks: int | None = 3) -> tuple[Broker, ...]:
    return tuple(
        Broker(id=b, host="h", port=9090 + b, endpoints=(f"PLAINTEXT://h:{9090 + b}",),
               rack=None if racks is None else f"r{(b - 1) % racks}")
        for b in range(1, count + 1)
    )


def topic(name: str, layout: list[tuple[int, ...]], config: dict[str, str] | None = None) -> Topic:
    return Topic(name, {p: Partition(r, state=PartitionState(r[0], 1, r, 1)) for p, r in enumerate(layout)},
                 config=config or {})


def snapshot(broker_list: tuple[Broker, ...], topics: list[Topic], **kwargs) -> Snapshot:
    return Snapshot("cluster-0000000000000A", ControllerInfo(1, 1), broker_list, {t.name: t for t in topics}, **kwargs)


def declare(*topics: TopicDeclaration, decommission=(), add=(), rebalance: Rebalance | None = None,
            execution: Execution = Execution(), allow_delete: bool = False) -> DesiredState:
    return DesiredState("test", "127.0.0.1:2181/test", {t.name: t for t in topics},
                        BrokerChanges(tuple(decommission), tuple(add), HERE), rebalance, execution, allow_delete)


def td(name: str, partitions: int | None = None, rf: int | None = None, config: dict[str, str] | None = None,
       placement: Placement = Placement(), state: str = "present", remove: tuple[str, ...] = ()) -> TopicDeclaration:
    return TopicDeclaration(name, HERE, state, partitions, rf, config or {}, {}, remove, placement)


def round_robin(name: str, partitions: int, rf: int, broker_ids: list[int], start: int = 0) -> Topic:
    n = len(broker_ids)
    return topic(name, [tuple(broker_ids[(start + p + k) % n] for k in range(rf)) for p in range(partitions)])


def sizes_of(snap: Snapshot, base: int = 1000) -> dict[TopicPartition, int]:
    return {TopicPartition(n, p): base * (1 + zlib.crc32(f"{n}-{p}".encode()) % 7)
            for n, t in sorted(snap.topics.items()) for p in t.partitions}


def crowded() -> Snapshot:
    """Six brokers in three racks: 24 partitions crowded on brokers 1-3, six spread over all; a rebalance's
    first case."""
    return snapshot(brokers(6), [round_robin("orders", 24, 3, [1, 2, 3]),
                                 round_robin("logs", 6, 3, [1, 2, 3, 4, 5, 6])])


def bench_goal_inputs(brokers: int, partitions: int) -> tuple[dict[TopicPartition, tuple[int, ...]], GoalInputs,
                                                             Cluster]:
    """The Cruise Control bench's seeded cluster (bench/cc_cluster.py) as the optimizer reads it: its assignment,
    its GoalInputs (racks, sizes, write rates, capacities) and the cluster itself."""
    cluster = generate(brokers, partitions)
    tps = {key: TopicPartition(*key) for key in cluster.assignment}
    inputs = GoalInputs(racks=dict(cluster.racks), sizes={tps[k]: v for k, v in cluster.size.items()},
                        write={tps[k]: float(v) for k, v in cluster.write.items()},
                        capacity={"disk": cluster.disk, "network_in": cluster.nw_in, "network_out": cluster.nw_out})
    return {tps[k]: r for k, r in cluster.assignment.items()}, inputs, cluster
