"""What a controller decision asks for, in the order the event loop applies it.

1. ZooKeeper writes (state znodes with their expected version, topic assignments), as few multi-ops as
   possible, each fenced by the controller epoch;
2. the same changes in memory (`ControllerContext`), only after ZooKeeper accepted them;
3. one batched request per broker: LeaderAndIsr entries, StopReplica (with or without delete), and
   UpdateMetadata to every live broker.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from kops.lab.controller.context import Assignment, ControllerContext, LeaderState
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
    original_order: dict[TopicPartition, tuple[int, ...]] = field(default_factory=dict)  # moves started
    deleting_topics: set[str] = field(default_factory=set)  # marked: replicas told to stop and delete
    deleted_topics: set[str] = field(default_factory=set)  # znodes removed (topic, partitions, config, marker)
    # KIP-253: topic znodes rewritten with these (initial, undeleted) counts, and drained partitions removed
    topic_counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    deleted_partitions: set[TopicPartition] = field(default_factory=set)
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

    def merge(self, other: Effects) -> None:
        """Add a later decision of the same event: it wins for the same partition; requests accumulate."""
        self.states.update(other.states)
        self.created_states |= other.created_states
        self.assignments.update(other.assignments)
        self.reassignments_done.extend(tp for tp in other.reassignments_done if tp not in self.reassignments_done)
        self.original_order.update(other.original_order)
        self.deleting_topics |= other.deleting_topics
        self.deleted_topics |= other.deleted_topics
        self.topic_counts.update(other.topic_counts)
        self.deleted_partitions |= other.deleted_partitions
        for broker, reqs in other.requests.items():
            mine = self.to(broker)
            mine.leader_and_isr.extend(reqs.leader_and_isr)
            mine.stop_replica.extend(reqs.stop_replica)
            mine.update_metadata |= reqs.update_metadata
        self.log.extend(other.log)

    @property
    def empty(self) -> bool:
        return not (self.states or self.assignments or self.requests or self.reassignments_done
                    or self.deleting_topics or self.deleted_topics or self.topic_counts or self.deleted_partitions)


def restrict(effects: Effects, partitions: set[TopicPartition]) -> Effects:
    """The part of `effects` about `partitions` (what a partially committed write did apply)."""
    out = Effects(
        states={tp: s for tp, s in effects.states.items() if tp in partitions},
        created_states=effects.created_states & partitions,
        assignments={tp: a for tp, a in effects.assignments.items() if tp in partitions},
        reassignments_done=[tp for tp in effects.reassignments_done if tp in partitions],
        original_order={tp: o for tp, o in effects.original_order.items() if tp in partitions},
        topic_counts=dict(effects.topic_counts),  # topic znode writes are not compare-and-set: always committed
        deleted_partitions=effects.deleted_partitions & partitions,
    )
    for broker, reqs in effects.requests.items():
        mine = out.to(broker)
        mine.leader_and_isr = [e for e in reqs.leader_and_isr if e.tp in partitions]
        mine.stop_replica = [(tp, d) for tp, d in reqs.stop_replica if tp in partitions]
        mine.update_metadata = reqs.update_metadata
    return out


def apply_to_memory(ctx: ControllerContext, effects: Effects) -> None:
    """After ZooKeeper accepted the writes: every written state znode is one version further."""
    for tp, state in effects.states.items():
        version = 0 if tp in effects.created_states else state.zk_version + 1
        ctx.states[tp] = replace(state, zk_version=version)
        if state.before_deletion:
            ctx.marked.add(tp)
        else:
            ctx.marked.discard(tp)
    ctx.assignments.update(effects.assignments)
    for topic, (initial, undeleted) in effects.topic_counts.items():
        meta = ctx.topic_meta.get(topic)
        if meta is not None:
            ctx.topic_meta[topic] = replace(meta, initial_partition_count=initial, undeleted_partition_count=undeleted)
    for tp in effects.deleted_partitions:
        ctx.assignments.pop(tp, None)
        ctx.states.pop(tp, None)
        ctx.original_order.pop(tp, None)
        ctx.marked.discard(tp)
    ctx.original_order.update(effects.original_order)
    for tp in effects.reassignments_done:
        if not ctx.assignments.get(tp, Assignment(())).reassigning:
            ctx.original_order.pop(tp, None)
    ctx.topics_to_delete |= effects.deleting_topics
    for topic in effects.deleted_topics:
        for tp in ctx.partitions_of(topic):
            del ctx.assignments[tp]
            ctx.states.pop(tp, None)
            ctx.marked.discard(tp)
        ctx.topic_meta.pop(topic, None)
        ctx.topics_to_delete.discard(topic)
