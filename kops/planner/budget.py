"""What a bounded rebalance (`kops rebalance`, made for cron) may still spend.

Three limits, any of them optional: replica moves, bytes copied, and seconds — the last as bytes per broker
port, since a batch takes as long as its busiest port (bytes into the destination, bytes out of the leader that
serves the copy) at the throttle rate. The balancers ask `allows` before each move and call `spend` after it,
so a move that would break a limit is skipped and a cheaper one is tried instead.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from kops.model.partitions import TopicPartition


@dataclass(frozen=True)
class Limits:
    max_moves: int | None = None
    max_bytes: int | None = None
    max_seconds: float | None = None


class Budget:
    def __init__(self, limits: Limits, leaders: dict[TopicPartition, int], port_rate: float) -> None:
        self.limits = limits
        # bytes one broker port may carry within max_seconds (port_rate: the planner's Policy.port_rate)
        self.port_bytes = None if limits.max_seconds is None else limits.max_seconds * port_rate
        self.leaders = leaders  # who serves each partition's copy: its leader when the plan was made
        self.moves = 0
        self.bytes = 0
        self.port: dict[int, float] = defaultdict(float)

    def exhausted(self) -> bool:
        return self.limits.max_moves is not None and self.moves >= self.limits.max_moves

    def room(self, broker: int) -> float:
        """Bytes this broker's port may still carry (infinite without --max-duration)."""
        port = self.port_bytes
        return float("inf") if port is None else port - self.port[broker]

    def allows(self, tp: TopicPartition, size: int, dest: int) -> bool:
        lim = self.limits
        if lim.max_moves is not None and self.moves + 1 > lim.max_moves:
            return False
        if lim.max_bytes is not None and self.bytes + size > lim.max_bytes:
            return False
        port = self.port_bytes
        if port is not None:
            leader = self.leaders.get(tp, -1)
            if self.port[dest] + size > port or (leader != dest and self.port[leader] + size > port):
                return False
        return True

    def spend(self, tp: TopicPartition, size: int, dest: int) -> None:
        self.moves += 1
        self.bytes += size
        self.port[dest] += size
        leader = self.leaders.get(tp, -1)
        if leader != dest:
            self.port[leader] += size
