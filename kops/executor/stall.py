"""Stall detection: a batch whose partitions show no sign of progress for `--stall-timeout` stops, saying why.

Progress is anything that moves a batch towards its end: a move done, bytes copied (KIP-179 lag where the
cluster reports it), a change of a partition's ISR, replicas, adding or removing. Nothing of that for the
timeout (default 5 minutes) is a stall: the executor stops at the checkpoint (exit 3) with one line per stuck
partition naming what it waits for.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kops.model.partitions import TopicPartition
from kops.model.plan import Move
from kops.model.snapshot import Snapshot

DEFAULT_STALL_SECONDS = 300.0


def signature(snapshot: Snapshot, moves: list[Move], bytes_done: int) -> tuple[object, ...]:
    """Everything whose change counts as progress."""
    parts: list[tuple[object, ...]] = []
    for m in moves:
        part = snapshot.partition(m.tp)
        if part is None:
            parts.append((m.tp, None))
            continue
        isr = tuple(sorted(part.state.isr)) if part.state else ()
        parts.append((m.tp, part.replicas, part.adding, part.removing, isr))
    return bytes_done, tuple(parts)


@dataclass
class StallWatch:
    """Remembers when the batch last moved."""

    timeout: float
    last_change: float
    last: tuple[object, ...] | None = field(default=None)

    def observe(self, now: float, sig: tuple[object, ...]) -> bool:
        """True when this poll saw progress."""
        if sig != self.last:
            self.last, self.last_change = sig, now
            return True
        return False

    def stalled_for(self, now: float) -> float:
        return now - self.last_change

    def stalled(self, now: float) -> bool:
        return self.stalled_for(now) >= self.timeout


def explain(snapshot: Snapshot, moves: list[Move], done: set[TopicPartition]) -> list[str]:
    """One line per stuck partition: which target replica is not in sync and whether its broker is alive, or
    that the controller has not acted on the request."""
    live = snapshot.live_broker_ids
    requested = {(r.topic, r.partition) for r in snapshot.requested_moves}
    lines = []
    for m in moves:
        if m.tp in done:
            continue
        part = snapshot.partition(m.tp)
        if part is None:
            lines.append(f"{m.tp}: the partition is gone")
            continue
        isr = set(part.state.isr) if part.state else set()
        waiting = [b for b in m.to_replicas if b not in isr]
        if not part.reassigning and part.replicas != tuple(m.to_replicas) and (m.topic, m.partition) in requested:
            lines.append(f"{m.tp}: the controller has not acted on the request (replicas still {list(part.replicas)})")
        elif waiting:
            lines.append(f"{m.tp}: waits for " + ", ".join(
                f"broker {b} to join the ISR (broker {b} {'is alive' if b in live else 'is NOT registered'})"
                for b in waiting))
        else:
            lines.append(f"{m.tp}: every target replica is in sync; the controller has not completed the move")
    return lines
