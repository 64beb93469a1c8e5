"""How far a batch has got: partitions done (from the topic znodes), bytes copied (where the cluster can say).

A move is done when its topic znode lists exactly the target replicas, in order, with nothing adding or
removing (spec §8: that holds whatever started it). Bytes: a done move counts its planned bytes per new
replica; a move in flight counts, per new replica, its planned bytes minus that replica's lag as the leader
reports it through KIP-179 ReplicaStatus, where the cluster advertises it. Without sizes, partitions only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kops.executor.events import BatchProgressed
from kops.model.partitions import TopicPartition
from kops.model.plan import Move
from kops.model.snapshot import Snapshot


@dataclass(frozen=True)
class BatchProgress:
    index: int
    batches: int
    partitions: int
    done: int
    bytes_total: int
    bytes_done: int
    elapsed: float
    rate: float | None  # bytes per second over the batch so far
    eta: float | None  # seconds left in this batch

    def event(self, overall_total: int, overall_done: int, overall_eta: float | None) -> BatchProgressed:
        """This measure as the executor reports it, with the whole execution's bytes and ETA."""
        return BatchProgressed(self.index, self.batches, self.partitions, self.done, self.bytes_total,
                               self.bytes_done, round(self.elapsed, 3), _rounded(self.rate), _rounded(self.eta),
                               overall_total, overall_done, _rounded(overall_eta))


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def is_done(snapshot: Snapshot, move: Move, requested: set[tuple[str, int]] | None = None) -> bool:
    """At its target, nothing adding or removing, no longer requested, and every replica in sync: a move whose
    entry is still in the reassignment (a reorder waiting for the ISR, say) is not done, whatever the topic znode
    says; nor is one whose ISR this view does not show complete yet (a KRaft broker's metadata can show the
    target replicas before the ISR that completed them)."""
    part = snapshot.partition(move.tp)
    if requested is None:
        requested = {(m.topic, m.partition) for m in snapshot.requested_moves}
    return (part is not None and not part.reassigning and part.replicas == tuple(move.to_replicas)
            and (move.topic, move.partition) not in requested
            and (part.state is None or set(part.replicas) <= set(part.state.isr)))


def done_moves(snapshot: Snapshot, moves: list[Move]) -> set[TopicPartition]:
    requested = {(m.topic, m.partition) for m in snapshot.requested_moves}
    return {m.tp for m in moves if is_done(snapshot, m, requested)}


Lags = Callable[[Sequence[tuple[TopicPartition, int]]], dict[tuple[TopicPartition, int], int]]


def lags(moves: list[Move], done: set[TopicPartition], ask: Lags | None) -> dict[tuple[TopicPartition, int], int]:
    """Bytes each new replica of a move in flight is behind its leader, where the cluster says (the port's
    `lags`: KIP-179 through ZooKeeper, DescribeLogDirs through the Admin API)."""
    asked = [(m.tp, b) for m in moves if m.tp not in done for b in m.adding]
    if ask is None or not asked:
        return {}
    return ask(asked)


def per_move(moves: list[Move], snapshot: Snapshot, ask: Lags | None, observed: dict[TopicPartition, int],
             done: set[TopicPartition] | None = None) -> dict[TopicPartition, tuple[int, int]]:
    """(bytes copied, bytes to copy) of each move. `observed`: partition sizes learnt from lags (a new replica
    starts a whole log behind), kept by the caller across polls and used where the plan knew no size or the log
    has grown past it (otherwise a copy of a grown log would show no progress until its lag fell below the
    plan's size, and read as a stall)."""
    done = done_moves(snapshot, moves) if done is None else done
    behind = lags(moves, done, ask)
    for (tp, _b), lag in behind.items():
        observed[tp] = max(observed.get(tp, 0), lag)
    result = {}
    for m in moves:
        size = max(m.bytes, observed.get(m.tp, 0))  # a log grown since the plan: its lag counts down from more
        total = size * len(m.adding)
        copied = total if m.tp in done else sum(max(0, size - behind[(m.tp, b)]) for b in m.adding
                                                if (m.tp, b) in behind)
        result[m.tp] = (min(copied, total), total)
    return result


def measure(index: int, batches: int, moves: list[Move], snapshot: Snapshot, elapsed: float,
            ask: Lags | None, observed: dict[TopicPartition, int]) -> BatchProgress:
    """A batch's progress (`observed` as in `per_move`)."""
    done = done_moves(snapshot, moves)
    each = per_move(moves, snapshot, ask, observed, done)
    total = sum(t for _c, t in each.values())
    copied = sum(c for c, _t in each.values())
    rate = copied / elapsed if elapsed > 0 and copied else None
    return BatchProgress(index, batches, len(moves), len(done), total, copied, elapsed, rate,
                         seconds_left(total, copied, rate))


def seconds_left(total: float, done: float, rate: float | None) -> float | None:
    """The ETA, computed here only (apply's progress, its overall ETA, kops status): what is left of `total`
    at the rate seen so far; None until there is a rate."""
    return max(0.0, total - done) / rate if rate else None
