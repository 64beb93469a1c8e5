"""Topics: the assignment znode's content and the snapshot's per-topic view."""

from __future__ import annotations

from dataclasses import dataclass, field

from kops.model.partitions import Partition


@dataclass(frozen=True)
class TopicAssignment:
    """Content of `/brokers/topics/<t>` (v1–v3, plus the KIP-253 counts of the lab).

    `replicas` maps partition -> full replica set RS; during a reassignment RS = target ++ original (distinct),
    `adding` = RS - original and `removing` = RS - target hold only partitions with non-empty lists.
    """

    replicas: dict[int, tuple[int, ...]]
    adding: dict[int, tuple[int, ...]] = field(default_factory=dict)
    removing: dict[int, tuple[int, ...]] = field(default_factory=dict)
    topic_id: str | None = None
    version: int = 3
    initial_partition_count: int | None = None
    undeleted_partition_count: int | None = None


@dataclass(frozen=True)
class Topic:
    name: str
    partitions: dict[int, Partition]
    topic_id: str | None = None
    config: dict[str, str] = field(default_factory=dict)
    initial_partition_count: int | None = None
    undeleted_partition_count: int | None = None

    @property
    def replication_factor(self) -> int:
        """RF as Kafka reports it: the target size of partition 0 (or the largest if 0 is missing)."""
        if not self.partitions:
            return 0
        first = self.partitions.get(0) or next(iter(self.partitions.values()))
        return len(first.target_replicas)
