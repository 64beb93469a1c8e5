"""Fitting a bounded rebalance into its time budget by giving up the fewest bytes of balance.

The balancers budget time as bytes per broker port; batching adds to that, since each batch lasts as long as its
own busiest port and batches run one after the other. When the plan's estimate overshoots `--max-duration`, only
the moves on the ports that set the batches' durations matter: taking from such a port the smallest move that
brings it down to the next-busiest port (or by the overshoot) gives up about as many bytes of balance as the
overshoot is worth. Dropping the largest moves anywhere instead cost two thirds of the balance bought at 200,000
partitions for an 8% overshoot (issue 18).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from kops.model.partitions import TopicPartition
from kops.model.plan import Batch, Move

Port = tuple[str, int]  # ("in", destination) or ("out", leader)


class _Ports:
    """One batch's bytes per port and the moves that load each port."""

    def __init__(self, moves: Sequence[Move]) -> None:
        self.load: dict[Port, int] = defaultdict(int)
        self.moves: dict[Port, list[Move]] = defaultdict(list)
        for m in moves:
            for port, size in _loads(m):
                self.load[port] += size
                self.moves[port].append(m)

    def critical(self) -> tuple[Port | None, int, int]:
        """The busiest port, its bytes and the next-busiest port's bytes."""
        top: Port | None = None
        first = second = 0
        for port, size in self.load.items():
            if size > first:
                top, first, second = port, size, first
            elif size > second:
                second = size
        return top, first, second

    def remove(self, move: Move) -> None:
        for port, size in _loads(move):
            self.load[port] -= size
            self.moves[port].remove(move)


def _loads(m: Move) -> list[tuple[Port, int]]:
    if not m.adding:
        return []
    return [(("in", b), m.bytes) for b in m.adding] + [(("out", m.leader), m.bytes * len(m.adding))]


def moves_to_drop(batches: Sequence[Batch], seconds: float, rate: float) -> set[TopicPartition]:
    """Partitions whose moves to leave out so the batches' summed durations (at `rate` bytes/s per port) fit
    within `seconds`; empty when they already do."""
    ports = [_Ports(b.moves) for b in batches]
    over = sum(p.critical()[1] for p in ports) - math.floor(seconds * rate)  # in bytes of the busiest ports
    dropped: set[TopicPartition] = set()
    while over > 0:
        batch = max(ports, key=lambda p: p.critical()[1])
        port, first, second = batch.critical()
        if port is None:
            break
        move = _smallest_enough(batch.moves[port], port, min(first - second, over) or 1)
        batch.remove(move)
        dropped.add(move.tp)
        over -= first - batch.critical()[1]
    return dropped


def _smallest_enough(moves: list[Move], port: Port, wanted: int) -> Move:
    """The smallest move loading `port` by at least `wanted` bytes, else the largest one."""
    def on_port(m: Move) -> int:
        return m.bytes * (len(m.adding) if port[0] == "out" else 1)

    enough = [m for m in moves if on_port(m) >= wanted]
    if enough:
        return min(enough, key=lambda m: (on_port(m), m.tp))
    return max(moves, key=lambda m: (on_port(m), m.tp))
