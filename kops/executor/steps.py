"""The batches an execution runs: the plan's (apply), or the inverse of what an execution completed (rollback).

Rollback, step by step (docs/design/architecture.md §2: rollback state lives with kops):
1. every batch the execution started, last first;
2. in each, every move whose partition is now at its target gets the inverse move (target -> original
   replicas, original order, so the original preferred leader comes back); a partition still at its original
   replicas needs nothing; any other layout is drift and refuses the rollback;
3. every config the execution changed goes back to the map it found, where the current map is still the one
   the execution wrote (otherwise drift);
4. a preferred-leader election for the partitions moved back.
Worked example: batch 1 moved p0 [1,2,3] -> [4,2,3] and p1 [2,3,1] -> [2,3,4] and batch 2 was stopped with
p2 [3,1,2] -> [3,1,4] done: rollback batch 1 = {p2 [3,1,4] -> [3,1,2]}, batch 2 = {p0 [4,2,3] -> [1,2,3],
p1 [2,3,4] -> [2,3,1]}, then election for p0, p1, p2.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from kops.executor.record import PENDING, BatchRecord, ConfigRecord, ExecutionRecord
from kops.model.partitions import TopicPartition
from kops.model.plan import Batch, Move, Plan
from kops.model.snapshot import Snapshot
from kops.planner.batches import port_times
from kops.planner.rollback import invert
from kops.planner.rolling import leader_of, rolling_order


@dataclass(frozen=True)
class RollbackSteps:
    batches: list[BatchRecord]
    configs: list[ConfigRecord]  # before = what the forward execution wrote, after = what it found
    election: list[TopicPartition]
    drift: list[str]
    irreversible: list[str]


def from_plan(plan: Plan) -> list[BatchRecord]:
    """The plan's batches, each with its caps and those of the rollback batch that undoes it (kept in the record,
    which is all `kops rollback` builds the rollback from)."""
    undo = _undo_caps(plan)
    return [BatchRecord(b.index, list(b.moves), estimate_seconds=b.estimate.seconds, disk_moves=list(b.disk_moves),
                        caps=dict(b.throttle.caps), undo_caps=undo.get(frozenset(m.tp for m in b.moves), {}))
            for b in plan.batches]


def rolling_from_plan(plan: Plan, snapshot: Snapshot) -> list[BatchRecord]:
    """One per move; each keeps its plan batch's caps on the brokers it copies to, and its rollback batch's on the
    brokers it leaves."""
    return one_per_move(plan.moves, snapshot, _per_move(plan.batches), _per_move(plan.rollback.batches))


def _per_move(batches: Iterable[Batch]) -> dict[TopicPartition, dict[int, int]]:
    """Each move's share of its batch's caps: those of the brokers it copies to."""
    return {m.tp: _receiving(batch.throttle.caps, [m]) for batch in batches for m in batch.moves}


def _undo_caps(plan: Plan) -> dict[frozenset[TopicPartition], dict[int, int]]:
    """The caps of each rollback batch, by the partitions it moves back (the forward batch's own)."""
    return {frozenset(m.tp for m in b.moves): dict(b.throttle.caps) for b in plan.rollback.batches if b.throttle.caps}


def one_per_move(moves: list[Move], snapshot: Snapshot, caps: Mapping[TopicPartition, dict[int, int]] | None = None,
                 undo_caps: Mapping[TopicPartition, dict[int, int]] | None = None) -> list[BatchRecord]:
    """A rolling execution's batches: one per move, in rolling order (busiest port first, largest first)."""
    caps, undo_caps = caps or {}, undo_caps or {}
    return [BatchRecord(n, [m], caps=dict(caps.get(m.tp, {})), undo_caps=dict(undo_caps.get(m.tp, {})))
            for n, m in enumerate(rolling_order(moves, leader_of(snapshot)), 1)]


def _replicas(snapshot: Snapshot, tp: TopicPartition) -> tuple[int, ...] | None:
    part = snapshot.partition(tp)
    return None if part is None else part.replicas


def _config_difference(written: dict[str, str], now: dict[str, str]) -> str:
    """The first few keys where the cluster's config differs from what the execution wrote, for the drift line."""
    keys = sorted(k for k in written.keys() | now.keys() if written.get(k) != now.get(k))
    shown = [f"{k} is {now[k]!r}" if k in now else f"{k} is unset" for k in keys[:3]]
    return ", ".join(shown) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "") + \
        ", where the execution set " + (", ".join(f"{k}={written[k]!r}" for k in keys[:3] if k in written) or "nothing")


def _with_disk_moves_back(started: list[BatchRecord], undone: list[tuple[int, list[Move]]],
                          estimates: dict[int, float | None]) -> list[BatchRecord]:
    """The rollback's batches, last forward batch first: each with the inverse of its moves and of its disk moves
    (every disk move of a started batch goes back to its `from_dir`; one that never left it is done at once)."""
    moves = dict(undone)
    back = {b.index: [m.inverse() for m in b.disk_moves] for b in started if b.disk_moves}
    caps = {b.index: b.undo_caps for b in started}
    order = sorted(set(moves) | set(back), reverse=True)
    return [BatchRecord(n, moves.get(index, []), estimate_seconds=estimates.get(index),
                        disk_moves=back.get(index, []), caps=_receiving(caps[index], moves.get(index, [])))
            for n, index in enumerate(order, 1)]


def expected_seconds(batch: BatchRecord, rate: int | None) -> float | None:
    """How long the batch should take at the execution's `rate` (each capped broker at its cap): the plan's
    estimate was made at the plan's rate, so a batch run at a lower `--throttle` would be timed out (at four times
    its estimate and ten minutes) before it could finish. Never below the batch's own estimate (the plan's counts
    the broker's bandwidth and what is written meanwhile); the estimate alone where the moves carry no sizes."""
    own = _at_rate(_led(batch.moves), rate, batch.caps)
    return batch.estimate_seconds if own is None else max(own, batch.estimate_seconds or 0.0)


def _at_rate(moves: list[Move], rate: int | None, caps: Mapping[int, int]) -> float | None:
    """The moves' makespan at `rate` (capped brokers at their caps); None without a rate or sizes to count."""
    if not rate or not any(m.bytes for m in moves):
        return None
    return port_times(moves, rate, rate, caps)[2]


def _led(moves: list[Move]) -> list[Move]:
    """The moves with the broker their copies leave: a record keeps no leader (its rows are topic, partition, from,
    to, bytes), and counted on no broker every move's bytes out added up on one port (twice the estimate after a
    resume, found by an outside check); the first of `from`, the preferred leader, stands for it."""
    return [m if m.leader >= 0 or not m.from_replicas else replace(m, leader=m.from_replicas[0]) for m in moves]


def _receiving(caps: Mapping[int, int], moves: list[Move]) -> dict[int, int]:
    """`caps` on the brokers `moves` copy to (a partly run batch's rollback copies to fewer)."""
    adding = {b for m in moves for b in m.adding}
    return {b: c for b, c in caps.items() if b in adding}


def _undo_estimates(undone: list[tuple[int, list[Move]]], started: list[BatchRecord],
                    rate: int | None) -> dict[int, float | None]:
    """Each rollback batch's own estimate, by the forward batch it undoes: its bytes going back into the forward
    sources at the execution's rate (as the plan file's rollback estimates are made). Where the rate is unknown
    (an unthrottled execution) or the moves carry no sizes, the forward batch's, as records before this kept."""
    forward = {b.index: b for b in started}
    out: dict[int, float | None] = {b.index: b.estimate_seconds for b in started}
    for index, moves in undone:
        own = _at_rate(moves, rate, _receiving(forward[index].undo_caps, moves))
        if own is not None:
            out[index] = own
    return out


def rollback_of(forward: ExecutionRecord, snapshot: Snapshot,
                current_configs: dict[str, dict[str, str]]) -> RollbackSteps:
    """What undoes `forward` on a cluster in the state `snapshot` (nothing may be in flight on its partitions)."""
    started = [b for b in forward.batches if b.status != PENDING]
    undo = invert([(b.index, b.moves) for b in started], lambda tp: _replicas(snapshot, tp),
                  f"rollback of execution {forward.id}")
    batches = _with_disk_moves_back(started, undo.batches, _undo_estimates(undo.batches, started, forward.rate))
    if forward.rolling is not None:  # undone rolling too, each move at its batch's caps
        batches = one_per_move([m for b in batches for m in b.moves], snapshot,
                               {m.tp: _receiving(b.caps, [m]) for b in batches for m in b.moves})
    drift = list(undo.drift)
    configs = []
    for c in reversed(forward.configs):
        key = f"{c.entity_type}/{c.entity}"
        throttled = forward.throttles_written.get(key, {})  # an interrupted batch's throttles: restored anyway
        now_config = {k: v for k, v in current_configs.get(key, {}).items() if k not in throttled}
        if now_config == c.after:
            configs.append(ConfigRecord(c.entity_type, c.entity, before=c.after, after=c.before))
        elif now_config != c.before:
            drift.append(f"config of {c.entity_type}/{c.entity} changed since the execution set it "
                         f"({_config_difference(c.after, now_config)})")
    irreversible = []  # what the execution did, not what its plan could have done (no note twice)
    for step in forward.steps_done:
        kind, _, name = step.partition(":")
        if kind == "create":
            irreversible.append(f"topic {name} was created; delete it by hand if it should go")
        elif kind == "add":
            irreversible.append(f"partitions were added to {name}; Kafka cannot remove them")
        elif kind == "delete":
            irreversible.append(f"topic {name} was deleted; its data is gone")
        elif kind == "shrink":
            irreversible.append(f"partitions of {name} were marked for deletion; drained ones are gone")
    return RollbackSteps(batches, configs, undo.election, drift, irreversible)
