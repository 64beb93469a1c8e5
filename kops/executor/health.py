"""When to stop a batch for the cluster's sake: a broker the batch needs left, or a partition outside the
batch became under-replicated or offline since the batch started (the batch's own partitions are
under-replicated by design while new replicas catch up)."""

from __future__ import annotations

from dataclasses import dataclass

from kops.model.partitions import TopicPartition
from kops.model.plan import Move
from kops.model.snapshot import Snapshot

SHOWN = 5  # partitions named in a line


@dataclass(frozen=True)
class Baseline:
    under_replicated: frozenset[TopicPartition]
    offline: frozenset[TopicPartition]
    absent: frozenset[int] = frozenset()  # brokers a move leaves that were gone before the batch (a healing's)


def baseline(snapshot: Snapshot, moves: list[Move] | None = None) -> Baseline:
    leaving = {b for m in moves or [] for b in m.from_replicas if b not in m.to_replicas}
    return Baseline(frozenset(snapshot.under_replicated()), frozenset(snapshot.offline()),
                    frozenset(leaving - snapshot.live_broker_ids))


def needed(move: Move, snapshot: Snapshot) -> tuple[int, ...]:
    """The brokers a move needs registered: its targets and its current replicas but one that leaves the
    partition out of sync (a healing's absent broker, docs/design/healing.md: Kafka drops it once the new
    replica is in sync)."""
    part = snapshot.partition(move.tp)
    isr = part.isr if part is not None else move.from_replicas
    return tuple(move.to_replicas) + tuple(b for b in move.from_replicas if b in isr or b in move.to_replicas)


def problem(snapshot: Snapshot, moves: list[Move], before: Baseline) -> str | None:
    """One line naming why the batch must stop, or None while it is healthy."""
    wanted = {b for m in moves for b in m.from_replicas + m.to_replicas} - before.absent
    gone = sorted(wanted - snapshot.live_broker_ids)
    if gone:
        return _left(snapshot, moves, gone)
    ours = {m.tp for m in moves}
    offline = sorted(set(snapshot.offline()) - ours - before.offline)
    if offline:
        names = ", ".join(str(tp) for tp in offline[:SHOWN]) + (" ..." if len(offline) > SHOWN else "")
        return f"{len(offline)} partition(s) outside the plan went offline: {names}"
    lagging = sorted(set(snapshot.under_replicated()) - ours - before.under_replicated)
    if lagging:
        return f"{len(lagging)} partition(s) outside the plan became under-replicated, first {lagging[0]}"
    return None


def _left(snapshot: Snapshot, moves: list[Move], gone: list[int]) -> str:
    """Which brokers left, and the partitions of the batch that wait on them, as a stall names them: moves not
    yet complete with a departed broker among their target replicas (a departed source's partition copies from
    its new leader)."""
    one = len(gone) == 1
    said = f"broker{'' if one else 's'} {', '.join(map(str, gone))} of the batch left the cluster"
    requested = {(r.topic, r.partition) for r in snapshot.requested_moves}
    waiting = sorted(m.tp for m in moves if set(m.to_replicas) & set(gone) and not _at_target(snapshot, m, requested))
    if not waiting:
        return said
    names = ", ".join(map(str, waiting[:SHOWN])) + (f", ... (first {SHOWN})" if len(waiting) > SHOWN else "")
    return f"{said}; {len(waiting)} partition(s) of the batch wait on {'it' if one else 'them'}: {names}"


def _at_target(snapshot: Snapshot, move: Move, requested: set[tuple[str, int]]) -> bool:
    """The controller completed the move (its ISR may have shrunk since: that is not waiting)."""
    part = snapshot.partition(move.tp)
    return (part is not None and not part.reassigning and part.replicas == tuple(move.to_replicas)
            and (move.topic, move.partition) not in requested)
