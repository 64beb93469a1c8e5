"""What the goal walk does and what it may spend: the actions a plan is replayed from, and the run's budgets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from kops.model.partitions import TopicPartition
from kops.planner.budget import Limits

EPS = 1e-9


@dataclass
class Spend:
    """What the walk may spend (None: unbounded) and what it has spent: replica moves, leadership changes, bytes."""

    max_moves: int | None = None
    max_leader_moves: int | None = None
    max_bytes: float | None = None
    moves: int = 0
    leader_moves: int = 0
    bytes: float = 0.0

    @classmethod
    def left(cls, limits: Limits, moves: int, spent: float, max_leader_moves: int | None = None) -> Spend:
        """What a run's `limits` leave once `moves` replica moves and `spent` bytes are spent (healing, or a
        balancer before the walk); --max-duration is kept afterwards, by trimming the plan."""
        return cls(None if limits.max_moves is None else max(0, limits.max_moves - moves), max_leader_moves,
                   None if limits.max_bytes is None else max(0.0, limits.max_bytes - spent))

    def move_allowed(self, size: float) -> bool:
        return ((self.max_moves is None or self.moves < self.max_moves)
                and (self.max_bytes is None or self.bytes + size <= self.max_bytes))

    def lead_allowed(self) -> bool:
        return self.max_leader_moves is None or self.leader_moves < self.max_leader_moves


class Action(NamedTuple):
    """One step of the walk (a million-partition walk takes hundreds of thousands: a tuple, built in C)."""

    goal: str
    tp: TopicPartition
    source: int  # the broker losing the replica (a leadership change: the old leader)
    dest: int
    leadership: bool = False
    joined: bool = False  # the second half of a two-action step (a swap, a relay, a move handing on leadership)
