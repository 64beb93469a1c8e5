"""A cancellation that keeps replica order: each cancelled partition back on its original replicas, in their
original order, led by its preferred leader, before the stop is reported.

Kafka's KIP-455 cancellation returns a partition to its original replica set but not to its order: KRaft and
the ZooKeeper-mode controller both revert to the replicas the reassignment had (the target's order, the
replicas being removed after it) minus the ones being added (seen on Kafka 4.1: [3, 4, 1] came back as
[1, 3, 4]; in tests/integration/test_admin_executor.py on 4.3 and 3.9: [3, 2] as [2, 3]). Its preferred leader
changes, and a later plan or rollback would take the new order for the original. kops promises the original order (the
journal's `from_replicas`), as the
seeds' KIP-236 cancellation and kops's rollback keep it. So, after every cancellation kops makes:
1. the cancelled partitions are read; each on its original replica set in another order, every replica in sync,
   gets a leader-only reassignment to its original order (same replicas: nothing is copied, the controller
   completes it at once). One with a replica out of sync would wait for it with the controller, so it is left
   as Kafka put it and named;
2. kops waits until Kafka shows every reorder complete (at most REORDER_SECONDS);
3. a preferred-leader election for the partitions on their original replicas whose first replica is in the ISR
   and not leading: an election Kafka itself would make (its auto leader rebalance would, later), no other.
Where the cancellation already kept the order (KIP-236 through ZooKeeper), steps 1-3 find nothing to do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kops.cluster.port import Cluster, Refused
from kops.executor import progress
from kops.executor.events import OrderRestored, Reporter
from kops.model.partitions import TopicPartition
from kops.model.plan import Move
from kops.model.snapshot import Snapshot

CANCEL_SECONDS = 60.0  # how long Kafka may take to drop the cancelled partitions from its reassignments
REORDER_SECONDS = 30.0  # how long a leader-only reassignment may take to complete
ELECTION_SECONDS = 30.0


class Clock(Protocol):
    def monotonic(self) -> float: ...
    def sleep(self, seconds: float) -> None: ...


@dataclass(frozen=True)
class Restored:
    """What the cancellation left, for the operator: how many partitions went back to their original replicas,
    which of them kops put back in order, which it had a preferred leader elected for, and which it left."""

    partitions: list[TopicPartition]  # back on their original replica set
    reordered: list[TopicPartition]
    elected: list[TopicPartition]
    left: list[str]  # one line each: a partition left in the order Kafka gave it, and why

    def event(self) -> OrderRestored:
        return OrderRestored(len(self.partitions), tuple(map(str, self.reordered)), tuple(map(str, self.elected)),
                             tuple(self.left))


def cancel_in_order(cluster: Cluster, moves: Sequence[Move], clock: Clock, emit: Reporter) -> Restored:
    """Cancel `moves` in flight, then put each cancelled partition back in its original order and elect its
    preferred leader; the outcome is emitted (an `order_restored` event) and returned."""
    cluster.cancel([m.tp for m in moves], CANCEL_SECONDS)
    restored = restore_order(cluster, moves, clock)
    emit(restored.event())
    return restored


def restore_order(cluster: Cluster, moves: Sequence[Move], clock: Clock) -> Restored:
    """Steps 1-3 of the module for `moves` (their cancellation done)."""
    tps = [m.tp for m in moves]
    snapshot = _read_until(cluster, tps, clock, lambda s: not any(_reassigning(s, tp) for tp in tps))
    back = [m for m in moves if on_original_set(snapshot, m)]
    todo, left = reorders(snapshot, back)
    if todo:
        try:
            cluster.submit([(m.tp, tuple(m.to_replicas)) for m in todo], snapshot)
        except Refused as exc:
            return Restored(sorted(m.tp for m in back), [], [], [*left, f"the reorder was refused: {exc.what}"])
        snapshot = _read_until(cluster, tps, clock, lambda s: all(progress.is_done(s, m) for m in todo))
        left += [f"{m.tp}: the controller has not completed its reorder to {list(m.to_replicas)} yet"
                 for m in todo if not progress.is_done(snapshot, m)]
    elect = to_elect(snapshot, back)
    if elect and not cluster.elect_preferred(elect, ELECTION_SECONDS):
        left.append(f"the preferred-leader election of {len(elect)} partition(s) has not finished yet")
    done = [m.tp for m in todo if progress.is_done(snapshot, m)]
    return Restored(sorted(m.tp for m in back), sorted(done), sorted(elect), left)


def _read_until(cluster: Cluster, tps: list[TopicPartition], clock: Clock,
                done: Callable[[Snapshot], bool]) -> Snapshot:
    """`tps` read until `done` holds (a broker's metadata may lag the controller's), for REORDER_SECONDS at most."""
    snapshot = cluster.snapshot(only_partitions=tps)
    deadline = clock.monotonic() + REORDER_SECONDS
    while not done(snapshot) and clock.monotonic() < deadline:
        clock.sleep(0.2)
        snapshot = cluster.snapshot(only_partitions=tps)
    return snapshot


def _reassigning(snapshot: Snapshot, tp: TopicPartition) -> bool:
    part = snapshot.partition(tp)
    return (part is not None and part.reassigning) or any(
        (r.topic, r.partition) == (tp.topic, tp.partition) for r in snapshot.requested_moves)


def on_original_set(snapshot: Snapshot, move: Move) -> bool:
    """Back on its original replica set, in any order; not a completed move (a leader-only move that completed
    is on that set too, in its target order: it stays)."""
    part = snapshot.partition(move.tp)
    return (part is not None and not part.reassigning and set(part.replicas) == set(move.from_replicas)
            and part.replicas != tuple(move.to_replicas))


def reorders(snapshot: Snapshot, moves: Sequence[Move]) -> tuple[list[Move], list[str]]:
    """The leader-only moves that put `moves`' partitions (on their original replica set) back in their original
    order, and a line for each that needs one but has a replica out of sync (its reorder would wait for it)."""
    todo: list[Move] = []
    left: list[str] = []
    for m in moves:
        part = snapshot.partition(m.tp)
        if part is None or part.replicas == tuple(m.from_replicas):
            continue
        lagging = [b for b in part.replicas if part.state is not None and b not in part.state.isr]
        if lagging:
            left.append(f"{m.tp} stays {list(part.replicas)} (original order {list(m.from_replicas)}): broker"
                        f"{'s' if len(lagging) > 1 else ''} {', '.join(map(str, lagging))} not in sync")
        else:
            todo.append(Move(m.topic, m.partition, part.replicas, tuple(m.from_replicas), 0, part.leader,
                             "original order after a cancellation"))
    return todo, left


def to_elect(snapshot: Snapshot, moves: Sequence[Move]) -> list[TopicPartition]:
    """`moves`' partitions in their original order whose preferred leader is in sync and not leading."""
    out = []
    for m in moves:
        part = snapshot.partition(m.tp)
        if part is None or part.state is None or part.replicas != tuple(m.from_replicas):
            continue
        if part.leader != part.replicas[0] and part.replicas[0] in part.state.isr:
            out.append(m.tp)
    return sorted(out)
