"""What a controller decision asks for, in the order the event loop applies it.

1. ZooKeeper writes (state znodes with their expected version, topic assignments), as few multi-ops as
   possible, each fenced by the controller epoch;
2. the same changes in memory (`ControllerContext`), only after ZooKeeper accepted them;
3. one batched request per broker: LeaderAndIsr entries, StopReplica (with or without delete), and
   UpdateMetadata to every live broker.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kops.controller.context import Assignment, ControllerContext, LeaderState
from kops.model.partitions import TopicPartition


@dataclass(frozen=True)
class LeaderAndIsrEntry:
    tp: TopicPartition
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    zk_version: int
    is_new: bool = False


@dataclass
class BrokerRequests:
    leader_and_isr: list[LeaderAndIsrEntry] = field(default_factory=list)
    stop_replica: list[tuple[TopicPartition, bool]] = field(default_factory=list)  # (partition, delete)
    update_metadata: bool = False


@dataclass
class Effects:
    states: dict[TopicPartition, LeaderState] = field(default_factory=dict)  # new state (zk_version = expected)
    created_states: set[TopicPartition] = field(default_factory=set)  # written with create, not set
    assignments: dict[TopicPartition, Assignment] = field(default_factory=dict)
    reassignments_done: list[TopicPartition] = field(default_factory=list)
    requests: dict[int, BrokerRequests] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)

    def to(self, broker: int) -> BrokerRequests:
        return self.requests.setdefault(broker, BrokerRequests())

    def leader_and_isr(self, brokers: tuple[int, ...] | list[int], entry: LeaderAndIsrEntry) -> None:
        for b in brokers:
            self.to(b).leader_and_isr.append(entry)

    def metadata_to(self, brokers: set[int]) -> None:
        for b in sorted(brokers):
            self.to(b).update_metadata = True

    @property
    def empty(self) -> bool:
        return not (self.states or self.assignments or self.requests or self.reassignments_done)


def apply_to_memory(ctx: ControllerContext, effects: Effects) -> None:
    """After ZooKeeper accepted the writes: every written state znode is one version further."""
    for tp, state in effects.states.items():
        version = 0 if tp in effects.created_states else state.zk_version + 1
        ctx.states[tp] = LeaderState(state.leader, state.leader_epoch, state.isr, version)
    ctx.assignments.update(effects.assignments)
