"""KIP-253 in the controller (seed 003): partition counts that keep keyed messages in order.

The topic znode carries `initial_partition_count` (N, written by the controller when missing) and
`undeleted_partition_count` (U, what producers hash over, see `kops.model.partitioner`). Decisions, pure:

* creation: N = U = the partition count;
* expansion (new partitions in the topic znode): every existing partition's leader epoch is bumped and
  LeaderAndIsr carries the new U; each new partition's state znode records `leaderEpochAfterCreation` = the
  existing partitions' epochs before the bump. Refused (the znode is rewritten without the new partitions)
  while any partition is still marked for deletion, as the KIP says;
* shrink (U lowered, N <= U < partitions): each partition >= U not yet marked gets `leaderEpochBeforeDeletion`
  = the undeleted partitions' current epochs, and those partitions' epochs are bumped. Any other change of the
  counts is refused and the previous counts are written back;
* drain: a marked partition whose log start == log end (retention emptied it) is deleted: StopReplica(delete),
  dropped from the topic znode, its znodes removed. Only from the top, so partition ids stay 0..n−1.

Every step is idempotent, so a new controller finishes what its predecessor started (`settle`).
Worked example: created with 2 partitions (N = U = 2), expanded to 4 (U = 4; partitions 2 and 3 record the
epochs of 0 and 1 after creation). U lowered to 3: partition 3 gets before_deletion {0: e0, 1: e1, 2: e2},
partitions 0–2 go to epoch e+1; once partition 3 has drained it is removed and the topic has 3 partitions.
"""

from __future__ import annotations

from dataclasses import replace

from kops.lab.controller import decisions
from kops.lab.controller.context import ControllerContext
from kops.lab.controller.effects import Effects
from kops.model.partitions import TopicPartition
from kops.model.topics import TopicAssignment

Counts = tuple[int | None, int | None]


def _log(ctx: ControllerContext, effects: Effects, message: str) -> None:
    effects.log.append(f"[controller {ctx.controller_id} epoch {ctx.epoch}] {message}")


def on_topic_znode(ctx: ControllerContext, topic: str, znode: TopicAssignment, previous: Counts | None) -> Effects:
    """The topic znode was (re)read. `previous`: the counts the controller knew before, None when it knew none
    (a new topic, or a failover), in which case the znode's own counts are the baseline."""
    if topic in ctx.topics_to_delete:
        return Effects()
    known = ctx.partitions_of(topic)
    new = {TopicPartition(topic, p): r for p, r in znode.replicas.items()
           if TopicPartition(topic, p) not in ctx.assignments}
    if not known:
        return _creation(ctx, topic, znode, new)
    base = previous if previous is not None else (znode.initial_partition_count, znode.undeleted_partition_count)
    initial = base[0] if base[0] is not None else len(known)
    undeleted = base[1] if base[1] is not None else len(known)
    if new and previous is not None:
        return _expansion(ctx, topic, known, new, initial, undeleted)
    effects = Effects()
    if new:  # a failover found partitions without state znodes: create them as the old controller would have
        effects.merge(decisions.on_topic_creation(ctx, new))
    requested = znode.undeleted_partition_count if znode.undeleted_partition_count is not None else undeleted
    if requested != undeleted:
        if initial <= requested < undeleted:
            _log(ctx, effects, f"topic {topic}: undeleted_partition_count {undeleted} -> {requested}")
            undeleted = requested
        else:
            _log(ctx, effects, f"topic {topic}: undeleted_partition_count {requested} refused (must be lowered, "
                               f"and stay >= initial_partition_count {initial}); kept {undeleted}")
    if (initial, undeleted) != (znode.initial_partition_count, znode.undeleted_partition_count):
        effects.topic_counts[topic] = (initial, undeleted)
    _mark(ctx, effects, topic, known, undeleted)
    effects.metadata_to(ctx.live_ids())
    return effects


def _creation(ctx: ControllerContext, topic: str, znode: TopicAssignment,
              new: dict[TopicPartition, tuple[int, ...]]) -> Effects:
    effects = decisions.on_topic_creation(ctx, new)
    count = len(znode.replicas)
    counts = (znode.initial_partition_count, znode.undeleted_partition_count)
    if counts != (count, count):
        effects.topic_counts[topic] = (count, count)
    return effects


def _expansion(ctx: ControllerContext, topic: str, known: list[TopicPartition],
               new: dict[TopicPartition, tuple[int, ...]], initial: int, undeleted: int) -> Effects:
    effects = Effects()
    marked = [tp.partition for tp in known if tp in ctx.marked]
    if marked or undeleted < len(known):
        effects.topic_counts[topic] = (initial, undeleted)  # rewritten from what the controller knows: no new ones
        _log(ctx, effects, f"topic {topic}: expansion to {len(known) + len(new)} partitions refused: partitions "
                           f"{marked or list(range(undeleted, len(known)))} are marked for deletion and not drained "
                           f"yet")
        return effects
    before = {tp.partition: ctx.states[tp].leader_epoch for tp in known if tp in ctx.states}
    for tp in known:
        state = ctx.states.get(tp)
        if state is not None:
            decisions.set_state(ctx, effects, tp, state.leader, state.isr)
    created = decisions.on_topic_creation(ctx, new)
    for tp in created.created_states:
        created.states[tp] = replace(created.states[tp], after_creation=dict(before))
    effects.merge(created)
    total = len(known) + len(new)
    effects.topic_counts[topic] = (initial, total)
    _log(ctx, effects, f"topic {topic}: expanded {len(known)} -> {total} partitions, undeleted_partition_count "
                       f"{total}, leader epochs after creation {before}")
    return effects


def _mark(ctx: ControllerContext, effects: Effects, topic: str, known: list[TopicPartition], undeleted: int) -> None:
    """Mark partitions >= `undeleted` not marked yet; bump the undeleted partitions' epochs once for them."""
    to_mark = [tp for tp in known if tp.partition >= undeleted and tp not in ctx.marked and tp in ctx.states]
    if not to_mark:
        return
    staying = [tp for tp in known if tp.partition < undeleted and tp in ctx.states]
    before = {tp.partition: ctx.states[tp].leader_epoch for tp in staying}
    for tp in to_mark:
        state = ctx.states[tp]
        effects.states[tp] = replace(state, before_deletion=dict(before))
    for tp in staying:
        state = ctx.states[tp]
        decisions.set_state(ctx, effects, tp, state.leader, state.isr)
    _log(ctx, effects, f"topic {topic}: partitions {[tp.partition for tp in to_mark]} marked for deletion, "
                       f"leader epochs before deletion {before}")


def settle(ctx: ControllerContext) -> Effects:
    """At failover: write missing counts and finish markings a previous controller did not complete."""
    effects = Effects()
    for topic, meta in sorted(ctx.topic_meta.items()):
        effects.merge(on_topic_znode(ctx, topic, meta, None))
    return effects


def delete_drained(ctx: ControllerContext, drained: set[TopicPartition]) -> Effects:
    """Delete marked partitions that have drained, highest first (ids stay contiguous); all replicas must be live
    to delete their logs, as for topic deletion."""
    effects = Effects()
    live = ctx.live_ids()
    for topic in sorted({tp.topic for tp in ctx.marked}):
        if topic in ctx.topics_to_delete:
            continue
        gone = []
        for tp in reversed(ctx.partitions_of(topic)):
            assignment = ctx.assignments[tp]
            if tp not in ctx.marked or tp not in drained or assignment.reassigning \
                    or not set(assignment.replicas) <= live:
                break
            effects.deleted_partitions.add(tp)
            for r in assignment.replicas:
                effects.to(r).stop_replica.append((tp, True))
            gone.append(tp.partition)
        if gone:
            _log(ctx, effects, f"topic {topic}: drained partitions {sorted(gone)} deleted")
    if effects.deleted_partitions:
        effects.metadata_to(live)
    return effects
