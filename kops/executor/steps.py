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

from dataclasses import dataclass

from kops.executor.record import PENDING, BatchRecord, ConfigRecord, ExecutionRecord
from kops.model.partitions import TopicPartition
from kops.model.plan import Move, Plan
from kops.model.snapshot import Snapshot


@dataclass(frozen=True)
class RollbackSteps:
    batches: list[BatchRecord]
    configs: list[ConfigRecord]  # before = what the forward execution wrote, after = what it found
    election: list[TopicPartition]
    drift: list[str]
    irreversible: list[str]


def from_plan(plan: Plan) -> list[BatchRecord]:
    return [BatchRecord(b.index, list(b.moves), estimate_seconds=b.estimate.seconds) for b in plan.batches]


def _replicas(snapshot: Snapshot, tp: TopicPartition) -> tuple[int, ...] | None:
    part = snapshot.partition(tp)
    return None if part is None else part.replicas


def rollback_of(forward: ExecutionRecord, snapshot: Snapshot, current_configs: dict[str, dict[str, str]]) -> RollbackSteps:
    """What undoes `forward` on a cluster in the state `snapshot` (nothing may be in flight on its partitions)."""
    batches: list[BatchRecord] = []
    drift: list[str] = []
    election: list[TopicPartition] = []
    for b in sorted((b for b in forward.batches if b.status != PENDING), key=lambda b: -b.index):
        inverse: list[Move] = []
        for m in b.moves:
            now = _replicas(snapshot, m.tp)
            if now == tuple(m.to_replicas) and m.to_replicas != m.from_replicas:
                inverse.append(Move(m.topic, m.partition, m.to_replicas, m.from_replicas, m.bytes,
                                    m.to_replicas[0], f"rollback of execution {forward.id}"))
                election.append(m.tp)
            elif now is not None and now != tuple(m.from_replicas) and set(now) == set(m.from_replicas):
                # back on its original replicas but not in their order (a KIP-236 cancel after a controller
                # failover restores the set: the topic znode keeps no order): restore the order, no data moves
                inverse.append(Move(m.topic, m.partition, now, m.from_replicas, 0, now[0],
                                    f"rollback of execution {forward.id}: original order"))
                election.append(m.tp)
            elif now != tuple(m.from_replicas):
                drift.append(f"{m.tp} has replicas {list(now) if now else 'none'}, neither the original "
                             f"{list(m.from_replicas)} nor the target {list(m.to_replicas)}")
        if inverse:
            batches.append(BatchRecord(len(batches) + 1, inverse, estimate_seconds=b.estimate_seconds))
    configs = []
    for c in reversed(forward.configs):
        now_config = current_configs.get(f"{c.entity_type}/{c.entity}", {})
        if now_config == c.after:
            configs.append(ConfigRecord(c.entity_type, c.entity, before=c.after, after=c.before))
        elif now_config != c.before:
            drift.append(f"config of {c.entity_type}/{c.entity} changed since the execution set it")
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
    return RollbackSteps(batches, configs, sorted(set(election)), drift, irreversible)
