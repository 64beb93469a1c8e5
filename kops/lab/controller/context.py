"""What the active controller holds in memory: live brokers, every assignment and leader/ISR, and the
controller's own identity. Loaded at failover from ZooKeeper; changed only by applying `Effects`."""

from __future__ import annotations

from dataclasses import dataclass, field

from kops.model.partitions import Partition as Assignment  # replicas + adding/removing (RS = target ++ original)
from kops.model.partitions import TopicPartition
from kops.model.topics import TopicAssignment


@dataclass(frozen=True)
class LeaderState:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int = 0  # the state znode's version: the partition epoch, for compare-and-set
    # KIP-253 (seed 003): lower partitions' leader epochs when this partition was created / marked for deletion.
    # Carried through every rewrite of the state znode (use `dataclasses.replace`, never rebuild by hand).
    after_creation: dict[int, int] = field(default_factory=dict)
    before_deletion: dict[int, int] = field(default_factory=dict)


@dataclass
class ControllerContext:
    controller_id: int
    epoch: int
    live: dict[int, int] = field(default_factory=dict)  # broker id -> broker epoch (czxid)
    assignments: dict[TopicPartition, Assignment] = field(default_factory=dict)  # state kept in `states`
    states: dict[TopicPartition, LeaderState] = field(default_factory=dict)
    shutting_down: set[int] = field(default_factory=set)
    topics_to_delete: set[str] = field(default_factory=set)
    topic_meta: dict[str, TopicAssignment] = field(default_factory=dict)  # last topic znode: id, version, counts
    # The order of a moving partition's original replicas, for cancellation. The topic znode keeps only the set
    # (RS = target ++ original, distinct); after a failover the order falls back to RS order.
    original_order: dict[TopicPartition, tuple[int, ...]] = field(default_factory=dict)
    marked: set[TopicPartition] = field(default_factory=set)  # KIP-253: marked for deletion, not yet drained
    # Topics whose unclean.leader.election.enable is true (topic override, else the cluster default), as read
    # by the controller just before the decisions that may need an offline election.
    unclean_allowed: set[str] = field(default_factory=set)

    def originals(self, tp: TopicPartition) -> tuple[int, ...]:
        recorded = self.original_order.get(tp)
        fallback = self.assignments[tp].original_replicas
        return recorded if recorded is not None and set(recorded) == set(fallback) else fallback

    def partitions_of(self, topic: str) -> list[TopicPartition]:
        return sorted(tp for tp in self.assignments if tp.topic == topic)

    def partitions_on(self, broker: int) -> list[TopicPartition]:
        return sorted(tp for tp, a in self.assignments.items() if broker in a.replicas)

    def live_ids(self) -> set[int]:
        return set(self.live) - self.shutting_down
