"""Partitions: the replica assignment and the leader/ISR state Kafka keeps for each one."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

NO_LEADER = -1
KOPS_TOPIC = "__kops"  # kops's own records and lease through the Admin API: a rebalance never moves it


class TopicPartition(NamedTuple):
    """A partition's identity. A tuple, so hashing and ordering run in C: the planner keys maps of 200,000."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


_made = partial(tuple.__new__, TopicPartition)  # the named tuple's own __new__ is a Python function


def keys_of(topic: str, numbers: Iterable[int]) -> Iterator[TopicPartition]:
    """Each of `numbers` as a TopicPartition of `topic`, made in C: a planner pass over a million partitions makes
    them all (1.15 s to 0.22 s a million, the `TopicPartition(topic, number)` calls against these)."""
    return map(_made, zip(itertools.repeat(topic), numbers))


@dataclass(frozen=True)
class PartitionState:
    """Leader and ISR of one partition (`/brokers/topics/<t>/partitions/<p>/state`).

    `leader_recovery_state` is 1 (RECOVERING) only after an unclean election on 3.2+; the two epoch maps are
    the KIP-253 extension (seed 003) and are empty on a real Kafka.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    leader_recovery_state: int = 0
    version: int = 1
    leader_epoch_after_creation: dict[int, int] = field(default_factory=dict)
    leader_epoch_before_deletion: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Partition:
    """What the snapshot knows of one partition: assignment plus state (None when the state znode is missing)."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    state: PartitionState | None = None

    @property
    def reassigning(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def original_replicas(self) -> tuple[int, ...]:
        """Replicas before the in-flight reassignment: replicas minus adding, in order (KIP-455 semantics)."""
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def leader(self) -> int:
        return self.state.leader if self.state else NO_LEADER

    @property
    def isr(self) -> tuple[int, ...]:
        return self.state.isr if self.state else ()

    def is_offline(self, live_brokers: frozenset[int] | set[int]) -> bool:
        return self.leader == NO_LEADER or self.leader not in live_brokers

    def is_under_replicated(self) -> bool:
        return len(self.isr) < len(self.target_replicas)
