"""Apply a plan to a snapshot purely: what the cluster's layout will be after `apply`, or after `rollback`.

Used by the planner's tests (plan then rollback returns the original layout, replica order included) and by
bench/planner.py; test code, not the planner's. Leaders land on the preferred replica, ISRs are full, as after
a clean run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from kops.model.partitions import Partition, PartitionState
from kops.model.plan import ConfigChange, Move, Plan
from kops.model.snapshot import Snapshot
from kops.model.topics import Topic


def _settled(replicas: tuple[int, ...], previous: Partition | None) -> Partition:
    epoch = (previous.state.leader_epoch + 1) if previous and previous.state else 0
    ctl = previous.state.controller_epoch if previous and previous.state else 0
    return Partition(replicas, (), (), PartitionState(replicas[0], epoch, replicas, ctl))


def apply_moves(snapshot: Snapshot, moves: Iterable[Move]) -> Snapshot:
    topics = dict(snapshot.topics)
    for m in moves:
        topic = topics[m.topic]
        parts = dict(topic.partitions)
        parts[m.partition] = _settled(m.to_replicas, parts.get(m.partition))
        topics[m.topic] = replace(topic, partitions=parts)
    return replace(snapshot, topics=topics, requested_moves=())


def _apply_configs(snapshot: Snapshot, changes: Iterable[ConfigChange]) -> Snapshot:
    topics = dict(snapshot.topics)
    brokers = {k: dict(v) for k, v in snapshot.broker_configs.items()}
    for c in changes:
        if c.entity_type == "topics" and c.entity in topics:
            topics[c.entity] = replace(topics[c.entity], config=c.after)
        elif c.entity_type == "brokers":
            brokers[c.entity] = c.after
    return replace(snapshot, topics=topics, broker_configs=brokers)


def apply_plan(snapshot: Snapshot, plan: Plan) -> Snapshot:
    topics = dict(snapshot.topics)
    for d in plan.deletions:
        topics.pop(d.topic, None)
    for c in plan.creations:
        partitions = {p: _settled(r, None) for p, r in sorted(c.assignment.items())}
        topics[c.topic] = Topic(c.topic, partitions, config=dict(c.config))
    for a in plan.partition_additions:
        t = topics[a.topic]
        parts = dict(t.partitions)
        parts.update({p: _settled(r, None) for p, r in a.assignment.items()})
        topics[a.topic] = replace(t, partitions=dict(sorted(parts.items())))
    result = _apply_configs(replace(snapshot, topics=topics), plan.configs)
    return apply_moves(result, plan.moves)


def apply_rollback(snapshot: Snapshot, plan: Plan) -> Snapshot:
    result = apply_moves(snapshot, [m for b in plan.rollback.batches for m in b.moves])
    return _apply_configs(result, plan.rollback.configs)


def layout_of(snapshot: Snapshot) -> dict[tuple[str, int], tuple[int, ...]]:
    return {(n, p): part.replicas for n, t in snapshot.topics.items() for p, part in t.partitions.items()}
