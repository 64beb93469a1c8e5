"""The controller's decisions: one pure function per event, from context to `Effects`.

Every change of leader or ISR bumps the leader epoch and is written with the state znode's current version
as the expected version (compare-and-set), so a racing writer is detected. Requests are batched per broker by
`Effects`; every decision that changes leaders or replicas also sends UpdateMetadata to every live broker.

Reassignment follows Kafka 2.4+ (seed 004 §F, with KIP-455 state in the topic znode):
1. start: RS = target ++ original (distinct, target first), adding = RS − original, removing = RS − target;
   write the assignment, bump the leader epoch, send LeaderAndIsr with RS so the new replicas start fetching;
2. when every target replica is in the ISR: leader from the target if the current one is not in it;
   ISR = ISR ∩ target; assignment = target; StopReplica(delete) to the removed replicas; the partition is done
   (the loop removes its entry from /admin/reassign_partitions).
Worked example: [1,2,3] → [4,5,6]: RS [4,5,6,1,2,3], adding [4,5,6], removing [1,2,3]; once ISR ⊇ {4,5,6}:
leader 4, ISR [4,5,6], StopReplica(delete) to 1, 2, 3.
"""

from __future__ import annotations

from dataclasses import replace

from kops.lab.controller import elections
from kops.lab.controller.context import Assignment, ControllerContext, LeaderState
from kops.lab.controller.effects import Effects, LeaderAndIsrEntry
from kops.model.partitions import TopicPartition


def set_state(ctx: ControllerContext, effects: Effects, tp: TopicPartition, leader: int, isr: tuple[int, ...],
               replicas: tuple[int, ...] | None = None, bump: bool = True, live: set[int] | None = None) -> LeaderState:
    """Record a new leader/ISR and tell the replicas that are live as this event sees it."""
    current = ctx.states[tp]
    epoch = current.leader_epoch + 1 if bump else current.leader_epoch
    new = replace(current, leader=leader, leader_epoch=epoch, isr=isr)
    effects.states[tp] = new
    replicas = replicas if replicas is not None else ctx.assignments[tp].replicas
    live = ctx.live_ids() if live is None else live
    effects.leader_and_isr([b for b in replicas if b in live],
                           LeaderAndIsrEntry(tp, leader, epoch, isr, replicas, current.zk_version + 1))
    return new


def _log(ctx: ControllerContext, effects: Effects, message: str) -> None:
    effects.log.append(f"[controller {ctx.controller_id} epoch {ctx.epoch}] {message}")


def on_broker_failure(ctx: ControllerContext, dead: set[int]) -> Effects:
    """Brokers left: new leaders for partitions they led, ISRs shrunk where they were followers."""
    effects = Effects()
    live = ctx.live_ids() - dead
    for tp in sorted(ctx.assignments):
        state = ctx.states.get(tp)
        assignment = ctx.assignments[tp]
        if state is None or not (set(assignment.replicas) & dead):
            continue
        if state.leader in dead or state.leader == elections.NO_LEADER:
            choice = elections.offline(assignment.replicas, state.isr, live, tp.topic in ctx.unclean_allowed)
            if choice.unclean:
                _log(ctx, effects, f"{tp}: unclean election of {choice.leader}, no ISR member alive (data loss risk)")
            elif choice.leader == elections.NO_LEADER:
                _log(ctx, effects, f"{tp}: offline, no live ISR member among {list(state.isr)} (unclean election "
                                   f"{'found no live replica' if tp.topic in ctx.unclean_allowed else 'not enabled'})")
            set_state(ctx, effects, tp, choice.leader, choice.isr, live=live)
            _log(ctx, effects, f"{tp}: leader {state.leader} -> {choice.leader}, isr {list(choice.isr)}")
        elif set(state.isr) & dead:
            isr = tuple(r for r in state.isr if r not in dead)
            set_state(ctx, effects, tp, state.leader, isr, live=live)
            _log(ctx, effects, f"{tp}: isr shrunk to {list(isr)}")
    effects.metadata_to(live)
    return effects


def on_failover(ctx: ControllerContext) -> Effects:
    """A new controller took over: elect leaders where the leader is gone, resend everyone's state.

    Kafka's onControllerFailover sends LeaderAndIsr for every partition to its live replicas and UpdateMetadata
    to every live broker, so brokers that missed the old controller's last requests converge.
    """
    effects = Effects()
    live = ctx.live_ids()
    for tp in sorted(ctx.assignments):
        state = ctx.states.get(tp)
        assignment = ctx.assignments[tp]
        if state is None or tp.topic in ctx.topics_to_delete:
            continue
        if state.leader not in live:
            choice = elections.offline(assignment.replicas, state.isr, live, tp.topic in ctx.unclean_allowed)
            if choice.leader != state.leader or choice.isr != state.isr:
                if choice.unclean:
                    _log(ctx, effects,
                         f"{tp}: unclean election of {choice.leader}, no ISR member alive (data loss risk)")
                set_state(ctx, effects, tp, choice.leader, choice.isr, live=live)
                _log(ctx, effects, f"{tp}: leader {state.leader} -> {choice.leader} at failover")
                continue
        effects.leader_and_isr([b for b in assignment.replicas if b in live], LeaderAndIsrEntry(
            tp, state.leader, state.leader_epoch, state.isr, assignment.replicas, state.zk_version))
    effects.metadata_to(live)
    return effects


def on_broker_startup(ctx: ControllerContext, broker: int) -> Effects:
    """A broker (re)joined: it learns its replicas; partitions without a live leader elect one."""
    effects = Effects()
    live = ctx.live_ids() | {broker}
    for tp in ctx.partitions_on(broker):
        state = ctx.states.get(tp)
        assignment = ctx.assignments[tp]
        if state is None:
            continue
        if state.leader == elections.NO_LEADER or state.leader not in live:
            choice = elections.offline(assignment.replicas, state.isr, live, tp.topic in ctx.unclean_allowed)
            if choice.leader != elections.NO_LEADER:
                set_state(ctx, effects, tp, choice.leader, choice.isr, live=live)
                _log(ctx, effects, f"{tp}: back online with leader {choice.leader}")
                continue
        effects.to(broker).leader_and_isr.append(LeaderAndIsrEntry(
            tp, state.leader, state.leader_epoch, state.isr, assignment.replicas, state.zk_version))
    effects.metadata_to(live)
    return effects


def on_topic_creation(ctx: ControllerContext, partitions: dict[TopicPartition, tuple[int, ...]]) -> Effects:
    """New partitions: leader = first live replica, ISR = live replicas, epoch 0 (state znodes created)."""
    effects = Effects()
    live = ctx.live_ids()
    for tp, replicas in sorted(partitions.items()):
        if tp in ctx.states:
            continue
        alive = tuple(r for r in replicas if r in live)
        leader = alive[0] if alive else elections.NO_LEADER
        effects.states[tp] = LeaderState(leader, 0, alive, 0)
        effects.created_states.add(tp)
        effects.assignments[tp] = Assignment(tuple(replicas))
        effects.leader_and_isr(alive, LeaderAndIsrEntry(tp, leader, 0, alive, tuple(replicas), 0, is_new=True))
        _log(ctx, effects, f"{tp}: created, leader {leader}, isr {list(alive)}")
    effects.metadata_to(live)
    return effects


def start_reassignment(ctx: ControllerContext, targets: dict[TopicPartition, tuple[int, ...]]) -> Effects:
    """Requested targets (a later request supplants an earlier one for the same partition)."""
    effects = Effects()
    resumed: list[TopicPartition] = []
    reorders: dict[TopicPartition, tuple[int, ...]] = {}
    for tp, target in sorted(targets.items()):
        current = ctx.assignments.get(tp)
        if current is None or tp.topic in ctx.topics_to_delete:
            _log(ctx, effects, f"{tp}: reassignment dropped, no such partition (or its topic is being deleted)")
            effects.reassignments_done.append(tp)
            continue
        if not current.reassigning and set(target) == set(current.replicas):
            reorders[tp] = tuple(target)  # same replicas (in another order, or not): nothing to copy
            continue
        if current.reassigning and tuple(target) == current.target_replicas:
            # already moving there (failover, or a retried event): make sure every replica knows, then check
            state = ctx.states[tp]
            effects.leader_and_isr([b for b in current.replicas if b in ctx.live_ids()], LeaderAndIsrEntry(
                tp, state.leader, state.leader_epoch, state.isr, current.replicas, state.zk_version))
            resumed.append(tp)
            continue
        original = ctx.originals(tp) if current.reassigning else current.replicas
        replicas = tuple(dict.fromkeys(tuple(target) + original))
        effects.original_order[tp] = original
        assignment = Assignment(replicas, tuple(r for r in replicas if r not in original),
                                tuple(r for r in replicas if r not in target))
        effects.assignments[tp] = assignment
        state = ctx.states[tp]
        set_state(ctx, effects, tp, state.leader, state.isr, replicas)
        _log(ctx, effects, f"{tp}: reassigning {list(original)} -> {list(target)} (RS {list(replicas)})")
    complete = maybe_complete_reassignments(ctx, sorted(set(effects.assignments) | set(resumed)), pending=effects)
    effects.merge(complete)
    effects.merge(complete_reorders(ctx, reorders))
    effects.metadata_to(ctx.live_ids())
    return effects


def complete_reorders(ctx: ControllerContext, targets: dict[TopicPartition, tuple[int, ...]]) -> Effects:
    """Moves that keep the replica set (a new order, or none): nothing to copy, so Kafka (ZooKeeper mode 2.4+ and
    KRaft alike) completes them as soon as every target replica is in the ISR, which is at once when the
    partition is healthy. The assignment takes the target's order; the leader stays unless it is not live (the
    preferred leader changes only by an election). One not in the ISR keeps the request until it catches up
    (an ISR change re-checks it)."""
    effects = Effects()
    live = ctx.live_ids()
    for tp, target in sorted(targets.items()):
        state = ctx.states.get(tp)
        if state is None or not set(target) <= set(state.isr):
            continue
        leader = state.leader
        if leader not in live:
            choice = elections.reassignment(target, state.isr, live)
            if choice is None:
                continue
            leader = choice.leader
        effects.assignments[tp] = Assignment(tuple(target))
        epoch = state.leader_epoch + 1
        new = replace(state, leader=leader, leader_epoch=epoch)
        effects.states[tp] = new
        effects.leader_and_isr([b for b in target if b in live],
                               LeaderAndIsrEntry(tp, leader, epoch, state.isr, tuple(target), new.zk_version + 1))
        effects.reassignments_done.append(tp)
        _log(ctx, effects, f"{tp}: reassignment complete (replica order only), replicas {list(target)}, "
                           f"leader {leader}")
    effects.metadata_to(live)
    return effects


def maybe_complete_reassignments(ctx: ControllerContext, tps: list[TopicPartition],
                                 pending: Effects | None = None) -> Effects:
    """Finish every listed reassignment whose target replicas are all in the ISR."""
    effects = Effects()
    live = ctx.live_ids()
    for tp in tps:
        assignment = (pending.assignments.get(tp) if pending else None) or ctx.assignments.get(tp)
        state = (pending.states.get(tp) if pending else None) or ctx.states.get(tp)
        if assignment is None or state is None or not assignment.reassigning:
            continue
        target = assignment.target_replicas
        if not set(target) <= set(state.isr):
            continue
        leader = state.leader
        if leader not in target or leader not in live:
            choice = elections.reassignment(target, state.isr, live)
            if choice is None:
                continue  # wait until a target replica is live and in sync
            leader = choice.leader
        isr = tuple(r for r in state.isr if r in target)
        effects.assignments[tp] = Assignment(target)
        epoch = state.leader_epoch + 1
        new = replace(state, leader=leader, leader_epoch=epoch, isr=isr)  # one write per partition per event
        effects.states[tp] = new
        effects.leader_and_isr([b for b in target if b in live],
                               LeaderAndIsrEntry(tp, leader, epoch, isr, target, new.zk_version + 1))
        _drop_replicas(effects, tp, assignment.removing, live)
        _log(ctx, effects, f"{tp}: reassignment complete, replicas {list(target)}, leader {leader}")
    effects.metadata_to(live)
    return effects


def _drop_replicas(effects: Effects, tp: TopicPartition, dropped: tuple[int, ...], live: set[int]) -> None:
    """A move ended (completed or cancelled): replicas leaving the partition stop and delete; the entry is done."""
    for r in dropped:
        if r in live:
            effects.to(r).stop_replica.append((tp, True))
    effects.reassignments_done.append(tp)


def on_preferred_election(ctx: ControllerContext, tps: list[TopicPartition]) -> Effects:
    """Move leadership to the first replica where it is live, in sync and not already leader."""
    effects = Effects()
    live = ctx.live_ids()
    for tp in sorted(set(tps)):
        assignment, state = ctx.assignments.get(tp), ctx.states.get(tp)
        if assignment is None or state is None or tp.topic in ctx.topics_to_delete:
            continue
        if state.leader == assignment.replicas[0]:
            continue
        choice = elections.preferred(assignment.replicas, state.isr, live)
        if choice is None:
            _log(ctx, effects, f"{tp}: preferred replica {assignment.replicas[0]} not in sync, election skipped")
            continue
        set_state(ctx, effects, tp, choice.leader, state.isr)
        _log(ctx, effects, f"{tp}: preferred leader {choice.leader} elected")
    effects.metadata_to(live)
    return effects


def on_controlled_shutdown(ctx: ControllerContext, broker: int) -> Effects:
    """Before a broker stops: leadership moves off it, it leaves ISRs, its replicas stop (not deleted)."""
    effects = Effects()
    live = ctx.live_ids() - {broker}
    for tp in ctx.partitions_on(broker):
        state, assignment = ctx.states.get(tp), ctx.assignments[tp]
        if state is None:
            continue
        if state.leader == broker:
            choice = elections.controlled_shutdown(assignment.replicas, state.isr, live, broker)
            if choice is None:
                _log(ctx, effects, f"{tp}: no other in-sync replica, stays led by {broker} until it stops")
                continue
            set_state(ctx, effects, tp, choice.leader, choice.isr, live=live | {broker})
            _log(ctx, effects, f"{tp}: leadership moved {broker} -> {choice.leader} for controlled shutdown")
        elif broker in state.isr:
            set_state(ctx, effects, tp, state.leader, tuple(r for r in state.isr if r != broker), live=live)
            effects.to(broker).stop_replica.append((tp, False))
        else:
            effects.to(broker).stop_replica.append((tp, False))
    effects.metadata_to(live)
    return effects


def on_topic_deletion(ctx: ControllerContext, topics: set[str]) -> Effects:
    """Topics marked in /admin/delete_topics: every replica stops and deletes its log (seed 004 §E).

    A topic with a replica on a dead broker stays marked (ineligible) until that broker returns; a marker for
    a topic that does not exist is just removed. The znodes go once the replicas confirm (`on_replicas_deleted`).
    """
    effects = Effects()
    live = ctx.live_ids() | ctx.shutting_down
    for topic in sorted(topics):
        tps = ctx.partitions_of(topic)
        if not tps:
            effects.deleted_topics.add(topic)
            _log(ctx, effects, f"topic {topic}: deletion requested for a topic that does not exist, marker removed")
            continue
        effects.deleting_topics.add(topic)
        offline = sorted({r for tp in tps for r in ctx.assignments[tp].replicas if r not in live})
        if offline:
            _log(ctx, effects, f"topic {topic}: deletion waits for brokers {offline} to come back")
            continue
        for tp in tps:
            for r in ctx.assignments[tp].replicas:
                effects.to(r).stop_replica.append((tp, True))
        _log(ctx, effects, f"topic {topic}: deleting {len(tps)} partitions, replicas told to stop and delete")
    return effects


def on_replicas_deleted(ctx: ControllerContext, topic: str) -> Effects:
    """Every replica of a topic being deleted confirmed: remove its znodes and tell every broker."""
    effects = Effects()
    if topic in ctx.topics_to_delete:
        effects.deleted_topics.add(topic)
        _log(ctx, effects, f"topic {topic}: deleted")
        effects.metadata_to(ctx.live_ids())
    return effects


def cancel_reassignments(ctx: ControllerContext, tps: list[TopicPartition]) -> Effects:
    """KIP-236 (seed 000): roll pending reassignments back to their original replicas, in original order.

    Original = replicas minus adding, as the topic znode records them (OAR); new = adding (RAR − OAR).
    Steps, per partition:
    1. AR = OAR (in memory, then in ZooKeeper with the state, step 5);
    2. leader: kept if it is in OAR and live, else elected from OAR's live in-sync replicas; the leader epoch
       is bumped either way and LeaderAndIsr carries AR = OAR, so the leader cannot re-add a dropped replica;
    3–4. the new replicas leave the ISR and get StopReplica(delete);
    6. the entry leaves /admin/reassign_partitions (done by the loop, as for a completed move);
    7. UpdateMetadata to every live broker.
    Skip rule: when no original replica is live and in sync while a new one is live, rolling back would take
    the partition offline; it is left moving and reported. When everything is offline it is rolled back.
    Worked example: [1,2,3] → [4,5,6] in flight, RS [4,5,6,1,2,3], ISR [1,2,3,4], leader 1: AR [1,2,3],
    leader 1 (epoch +1), ISR [1,2,3], StopReplica(delete) to 4, 5, 6.
    """
    effects = Effects()
    live = ctx.live_ids()
    for tp in sorted(set(tps)):
        assignment, state = ctx.assignments.get(tp), ctx.states.get(tp)
        if assignment is None or state is None or not assignment.reassigning:
            continue
        original, new = ctx.originals(tp), assignment.adding
        in_sync_originals = [r for r in original if r in state.isr and r in live]
        if not in_sync_originals and any(r in live for r in new):
            _log(ctx, effects, f"{tp}: cancellation skipped: no original replica of {list(original)} is in sync "
                               f"and a new one is live; rolling back would take it offline")
            continue
        if state.leader in original and state.leader in live:
            leader, isr = state.leader, tuple(r for r in state.isr if r in original)
        else:
            choice = elections.offline(original, tuple(r for r in state.isr if r in original), live,
                                       tp.topic in ctx.unclean_allowed)
            leader, isr = choice.leader, choice.isr
        effects.assignments[tp] = Assignment(original)
        set_state(ctx, effects, tp, leader, isr, replicas=original, live=live)
        _drop_replicas(effects, tp, new, live)
        _log(ctx, effects, f"{tp}: reassignment cancelled, back to {list(original)}, leader {leader}, isr {list(isr)}")
    effects.metadata_to(live)
    return effects
