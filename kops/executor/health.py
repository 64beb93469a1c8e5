"""When to stop a batch for the cluster's sake: a broker the batch needs left, or a partition outside the
batch became under-replicated or offline since the batch started (the batch's own partitions are
under-replicated by design while new replicas catch up)."""

from __future__ import annotations

from dataclasses import dataclass

from kops.model.partitions import TopicPartition
from kops.model.plan import Move
from kops.model.snapshot import Snapshot


@dataclass(frozen=True)
class Baseline:
    under_replicated: frozenset[TopicPartition]
    offline: frozenset[TopicPartition]


def baseline(snapshot: Snapshot) -> Baseline:
    return Baseline(frozenset(snapshot.under_replicated()), frozenset(snapshot.offline()))


def problem(snapshot: Snapshot, moves: list[Move], before: Baseline) -> str | None:
    """One line naming why the batch must stop, or None while it is healthy."""
    needed = {b for m in moves for b in m.from_replicas + m.to_replicas}
    gone = sorted(needed - snapshot.live_broker_ids)
    if gone:
        return f"broker{'s' if len(gone) > 1 else ''} {', '.join(map(str, gone))} of the batch left the cluster"
    ours = {m.tp for m in moves}
    offline = sorted(set(snapshot.offline()) - ours - before.offline)
    if offline:
        names = ", ".join(str(tp) for tp in offline[:5]) + (" ..." if len(offline) > 5 else "")
        return f"{len(offline)} partition(s) outside the plan went offline: {names}"
    lagging = sorted(set(snapshot.under_replicated()) - ours - before.under_replicated)
    if lagging:
        return f"{len(lagging)} partition(s) outside the plan became under-replicated, first {lagging[0]}"
    return None
