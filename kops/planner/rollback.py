"""The inverse of moves carried out: one function for a plan's `rollback` section (every batch done) and for
`kops rollback` (what an execution actually completed, read from the cluster).

1. every batch, last first;
2. a move whose partition is at its target gets the inverse move (target -> original replicas, original order,
   so the original preferred leader comes back) and a preferred-leader election;
3. a partition on its original replicas in another order (a cancel across a controller failover restores the set,
   not the order) gets its order back, no data moved;
4. a partition at its original replicas needs nothing; any other layout is drift.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter

from kops.bulk import in_key_order
from kops.model.partitions import TopicPartition
from kops.model.plan import Move

_by_partition = attrgetter("topic", "partition")


@dataclass(frozen=True)
class Inverse:
    batches: list[tuple[int, list[Move]]]  # (the forward batch's index, its inverse moves), last batch first
    election: list[TopicPartition]
    drift: list[str]


def invert(batches: Sequence[tuple[int, Sequence[Move]]], now: Callable[[TopicPartition], tuple[int, ...] | None],
           reason: str) -> Inverse:
    """`batches`: (index, moves) in forward order; `now`: a partition's replicas at the time of the rollback."""
    out: list[tuple[int, list[Move]]] = []
    election: set[TopicPartition] = set()
    drift: list[str] = []
    for index, moves in sorted(batches, key=lambda b: -b[0]):
        inverse: list[Move] = []
        for m in sorted(moves, key=_by_partition):
            replicas = now(m.tp)
            if replicas == tuple(m.to_replicas) and m.to_replicas != m.from_replicas:
                inverse.append(Move(m.topic, m.partition, m.to_replicas, m.from_replicas, m.bytes, m.to_replicas[0],
                                    reason, m.remote_bytes, write_rate=m.write_rate))
                election.add(m.tp)
            elif replicas is not None and replicas != tuple(m.from_replicas) and set(replicas) == set(m.from_replicas):
                inverse.append(Move(m.topic, m.partition, replicas, m.from_replicas, 0, replicas[0],
                                    f"{reason}: original order"))
                election.add(m.tp)
            elif replicas != tuple(m.from_replicas):
                drift.append(f"{m.tp} has replicas {list(replicas) if replicas else 'none'}, neither the original "
                             f"{list(m.from_replicas)} nor the target {list(m.to_replicas)}")
        if inverse:
            out.append((index, inverse))
    return Inverse(out, sorted(election), drift)


def completed(batches: Sequence[tuple[int, Sequence[Move]]], reason: str) -> list[tuple[int, list[Move]]]:
    """`invert`'s batches when every batch is done, as a plan's rollback section assumes: each move (its replicas
    changed) is at its target and gets its inverse, with no partition looked up (a million-partition plan has
    half a million moves); the plan names the elections itself."""
    out: list[tuple[int, list[Move]]] = []
    for index, moves in sorted(batches, key=lambda b: -b[0]):
        inverse = [Move(m.topic, m.partition, m.to_replicas, m.from_replicas, m.bytes, m.to_replicas[0], reason,
                        m.remote_bytes, write_rate=m.write_rate)
                   for m in in_key_order(list(moves), map(_by_partition, moves))
                   if m.to_replicas != m.from_replicas]
        if inverse:
            out.append((index, inverse))
    return out
