"""The controller's decisions without ZooKeeper: one test per transition, invalid ones included."""

from __future__ import annotations

from kops.lab.controller import elections
from kops.lab.controller.context import Assignment, ControllerContext, LeaderState
from kops.lab.controller.decisions import (
    maybe_complete_reassignments,
    on_broker_failure,
    on_broker_startup,
    on_controlled_shutdown,
    on_failover,
    on_preferred_election,
    on_replicas_deleted,
    on_topic_creation,
    on_topic_deletion,
    start_reassignment,
)
from kops.lab.controller.effects import apply_to_memory, restrict
from kops.model.partitions import TopicPartition

T0, T1, T2 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)


def context(*parts: tuple[TopicPartition, tuple[int, ...], int, tuple[int, ...]],
            live=(1, 2, 3, 4, 5, 6)) -> ControllerContext:
    ctx = ControllerContext(controller_id=1, epoch=7, live={b: 100 + b for b in live})
    for tp, replicas, leader, isr in parts:
        ctx.assignments[tp] = Assignment(replicas)
        ctx.states[tp] = LeaderState(leader, 3, isr, zk_version=5)
    return ctx


def test_elections() -> None:
    assert elections.offline((1, 2, 3), (2, 3), {2, 3}) == elections.Election(2, (2, 3))
    assert elections.offline((1, 2, 3), (1,), {3}) == elections.Election(-1, (1,))  # Kafka's default: offline
    assert elections.offline((1, 2, 3), (1,), {3}, allow_unclean=True) == elections.Election(3, (3,), unclean=True)
    assert elections.offline((1, 2), (1, 2), set()).leader == elections.NO_LEADER
    assert elections.reassignment((4, 5), (1, 5, 4), {4, 5}).leader == 4
    assert elections.reassignment((4, 5), (1,), {4, 5}) is None
    assert elections.preferred((2, 1), (1, 2), {1, 2}).leader == 2
    assert elections.preferred((2, 1), (1,), {1, 2}) is None
    assert elections.controlled_shutdown((1, 2, 3), (1, 2, 3), {2, 3}, 1) == elections.Election(2, (2, 3))


def test_broker_failure_moves_leaders_to_isr_members_in_one_batch() -> None:
    ctx = context((T0, (1, 2, 3), 1, (1, 2, 3)), (T1, (2, 1, 3), 2, (2, 1, 3)), (T2, (4, 5, 6), 4, (4, 5, 6)))
    effects = on_broker_failure(ctx, {1})
    assert effects.states[T0] == LeaderState(2, 4, (2, 3), 5)  # new epoch, expected zk version 5
    assert effects.states[T1] == LeaderState(2, 4, (2, 3), 5)  # follower dropped from the ISR
    assert T2 not in effects.states
    assert {e.tp for e in effects.requests[2].leader_and_isr} == {T0, T1}
    assert 1 not in effects.requests
    assert all(effects.requests[b].update_metadata for b in (2, 3, 4, 5, 6))
    apply_to_memory(ctx, effects)
    assert ctx.states[T0].zk_version == 6 and ctx.states[T0].leader == 2


def test_no_unclean_election_unless_the_topic_allows_it() -> None:
    ctx = context((T0, (1, 2), 1, (1,)))
    effects = on_broker_failure(ctx, {1})
    assert effects.states[T0].leader == -1 and effects.states[T0].isr == (1,)  # ISR kept for a clean return
    assert any("unclean election not enabled" in line for line in effects.log)


def test_broker_failure_unclean_and_offline_are_logged() -> None:
    ctx = context((T0, (1, 2), 1, (1,)), (T1, (1,), 1, (1,)))
    ctx.unclean_allowed.add(T0.topic)
    effects = on_broker_failure(ctx, {1})
    assert effects.states[T0].leader == 2 and effects.states[T0].isr == (2,)
    assert effects.states[T1].leader == -1 and effects.states[T1].isr == (1,)
    assert any("data loss risk" in line and "controller 1 epoch 7" in line for line in effects.log)
    assert any("offline" in line for line in effects.log)


def test_broker_startup_brings_offline_partitions_back() -> None:
    ctx = context((T0, (1,), -1, (1,)), (T1, (1, 2), 2, (2,)), live=(2, 3))
    effects = on_broker_startup(ctx, 1)
    assert effects.states[T0].leader == 1
    assert T1 not in effects.states and [e.tp for e in effects.requests[1].leader_and_isr] == [T0, T1]


def test_topic_creation_initial_state() -> None:
    ctx = context(live=(1, 2))
    effects = on_topic_creation(ctx, {T0: (3, 1, 2), T1: (3,)})
    assert effects.states[T0] == LeaderState(1, 0, (1, 2), 0) and T0 in effects.created_states
    assert effects.states[T1].leader == -1
    assert effects.requests[1].leader_and_isr[0].is_new


def test_reassignment_start_then_complete() -> None:
    ctx = context((T0, (1, 2, 3), 1, (1, 2, 3)))
    start = start_reassignment(ctx, {T0: (4, 5, 6)})
    assert start.assignments[T0] == Assignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))
    assert start.states[T0].leader_epoch == 4 and start.reassignments_done == []
    assert {b for b, r in start.requests.items() if r.leader_and_isr} == {1, 2, 3, 4, 5, 6}
    apply_to_memory(ctx, start)
    ctx.states[T0] = LeaderState(1, 4, (1, 2, 3, 4, 5), ctx.states[T0].zk_version)
    assert maybe_complete_reassignments(ctx,
                                        [T0]).empty or not maybe_complete_reassignments(ctx, [T0]).reassignments_done
    ctx.states[T0] = LeaderState(1, 4, (1, 2, 3, 4, 5, 6), ctx.states[T0].zk_version)
    done = maybe_complete_reassignments(ctx, [T0])
    assert done.assignments[T0] == Assignment((4, 5, 6))
    assert done.states[T0].leader == 4 and done.states[T0].isr == (4, 5, 6) and done.states[T0].leader_epoch == 5
    assert sorted(b for b, r in done.requests.items() if (T0, True) in r.stop_replica) == [1, 2, 3]
    assert done.reassignments_done == [T0]


def test_reassignment_supplants_and_handles_no_ops_and_unknowns() -> None:
    ctx = context((T0, (1, 2), 1, (1, 2)), (T1, (3, 4), 3, (3, 4)))
    ctx.assignments[T0] = Assignment((5, 1, 2), (5,), (2,))  # in flight: [1,2] -> [5,1]
    effects = start_reassignment(ctx, {T0: (6, 1), T1: (3, 4), TopicPartition("ghost", 0): (1,)})
    assert effects.assignments[T0] == Assignment((6, 1, 2), (6,), (2,))  # original kept: [1, 2]
    assert set(effects.reassignments_done) == {T1, TopicPartition("ghost", 0)}
    assert any("dropped" in line for line in effects.log)


def test_reassignment_whose_target_is_already_in_sync_completes_at_once() -> None:
    ctx = context((T0, (1, 2, 3), 1, (1, 2, 3)))
    effects = start_reassignment(ctx, {T0: (3, 2)})
    assert effects.assignments[T0] == Assignment((3, 2)) and effects.reassignments_done == [T0]
    assert effects.states[T0].leader == 3 and effects.states[T0].isr == (2, 3)
    assert (T0, True) in effects.requests[1].stop_replica


def test_preferred_election_skips_what_it_should() -> None:
    ctx = context((T0, (2, 1), 1, (1, 2)), (T1, (3, 1), 1, (1,)), (T2, (1, 2), 1, (1, 2)))
    effects = on_preferred_election(ctx, [T0, T1, T2, TopicPartition("ghost", 0)])
    assert effects.states[T0].leader == 2
    assert T1 not in effects.states and T2 not in effects.states


def test_controlled_shutdown_moves_leadership_first() -> None:
    ctx = context((T0, (1, 2, 3), 1, (1, 2, 3)), (T1, (2, 1), 2, (2, 1)), (T2, (1,), 1, (1,)))
    effects = on_controlled_shutdown(ctx, 1)
    assert effects.states[T0].leader == 2 and 1 not in effects.states[T0].isr
    assert effects.states[T1].isr == (2,) and (T1, False) in effects.requests[1].stop_replica
    assert T2 not in effects.states  # nobody else can lead it


def test_failover_resends_state_and_elects_where_the_leader_is_gone() -> None:
    ctx = context((T0, (1, 2, 3), 1, (1, 2, 3)), (T1, (4, 2), 4, (4, 2)), live=(1, 2, 3))
    effects = on_failover(ctx)
    assert set(effects.states) == {T1}  # only the partition whose leader is not live is written
    assert effects.states[T1] == LeaderState(2, 4, (2,), 5)
    resent = {b: [e.tp for e in r.leader_and_isr] for b, r in effects.requests.items()}
    assert resent[1] == [T0] and resent[3] == [T0] and sorted(resent[2]) == [T0, T1]
    t0 = effects.requests[1].leader_and_isr[0]
    assert (t0.leader, t0.leader_epoch, t0.zk_version) == (1, 3, 5)  # as it is: no epoch bump, no write
    assert 4 not in effects.requests and all(effects.requests[b].update_metadata for b in (1, 2, 3))


def test_topic_deletion_stops_and_deletes_every_replica_then_removes_the_znodes() -> None:
    ctx = context((T0, (1, 2), 1, (1, 2)), (T1, (2, 3), 2, (2, 3)))
    effects = on_topic_deletion(ctx, {"t"})
    assert effects.deleting_topics == {"t"} and not effects.deleted_topics
    assert effects.requests[2].stop_replica == [(T0, True), (T1, True)]
    assert effects.requests[1].stop_replica == [(T0, True)] and effects.requests[3].stop_replica == [(T1, True)]
    apply_to_memory(ctx, effects)
    assert ctx.topics_to_delete == {"t"}
    assert start_reassignment(ctx, {T0: (3, 4)}).reassignments_done == [T0]  # no moves of a dying topic
    done = on_replicas_deleted(ctx, "t")
    assert done.deleted_topics == {"t"}
    apply_to_memory(ctx, done)
    assert not ctx.assignments and not ctx.states and not ctx.topics_to_delete


def test_topic_deletion_waits_for_dead_replicas_and_ignores_unknown_topics() -> None:
    ctx = context((T0, (1, 2), 1, (1, 2)), live=(1,))
    effects = on_topic_deletion(ctx, {"t", "ghost"})
    assert effects.deleting_topics == {"t"} and not effects.requests  # broker 2 is down: ineligible
    assert effects.deleted_topics == {"ghost"}  # a marker for a topic that does not exist is just removed
    assert any("waits for brokers [2]" in line for line in effects.log)
    assert not on_replicas_deleted(context(), "t").deleted_topics  # not marked: nothing to delete


def test_reassignment_already_in_flight_is_resumed_not_restarted() -> None:
    ctx = context((T0, (1, 2, 3), 1, (1, 2, 3)))
    apply_to_memory(ctx, start_reassignment(ctx, {T0: (4, 5, 6)}))
    again = start_reassignment(ctx, {T0: (4, 5, 6)})
    assert not again.states and not again.assignments  # nothing written a second time
    assert {b for b, r in again.requests.items() if r.leader_and_isr} == {1, 2, 3, 4, 5, 6}
    assert again.requests[4].leader_and_isr[0].leader_epoch == ctx.states[T0].leader_epoch


def test_restrict_keeps_only_the_committed_partitions() -> None:
    ctx = context((T0, (1, 2), 1, (1, 2)), (T1, (1, 3), 1, (1, 3)))
    effects = on_broker_failure(ctx, {1})
    part = restrict(effects, {T0})
    assert set(part.states) == {T0}
    assert [e.tp for r in part.requests.values() for e in r.leader_and_isr] == [T0]


def test_cancel_rolls_back_to_the_original_replicas_in_order() -> None:
    ctx = context((T0, (1, 2, 3), 1, (1, 2, 3)))
    apply_to_memory(ctx, start_reassignment(ctx, {T0: (4, 5, 6)}))
    ctx.states[T0] = LeaderState(1, ctx.states[T0].leader_epoch, (1, 2, 3, 4), 9)  # 4 caught up, 5 and 6 not yet
    from kops.lab.controller.decisions import cancel_reassignments
    effects = cancel_reassignments(ctx, [T0])
    assert effects.assignments[T0] == Assignment((1, 2, 3))
    assert effects.states[T0] == LeaderState(1, 5, (1, 2, 3), 9)  # epoch bumped although the leader stays
    assert {b for b in (4, 5, 6) if (T0, True) in effects.requests[b].stop_replica} == {4, 5, 6}
    assert effects.requests[1].leader_and_isr[0].replicas == (1, 2, 3)
    assert effects.reassignments_done == [T0]


def test_cancel_elects_from_the_originals_and_honours_the_skip_rule() -> None:
    from kops.lab.controller.decisions import cancel_reassignments
    ctx = context((T0, (1, 2), 1, (1, 2)), (T1, (1, 2), 1, (1, 2)))
    apply_to_memory(ctx, start_reassignment(ctx, {T0: (3, 2), T1: (3, 4)}))
    ctx.states[T0] = LeaderState(3, 9, (3, 2), 9)  # leader moved to a new replica; 2 (original) still in sync
    ctx.states[T1] = LeaderState(3, 9, (3, 4), 9)  # no original in sync, new ones live: skip
    effects = cancel_reassignments(ctx, [T0, T1])
    assert effects.states[T0].leader == 2 and effects.states[T0].isr == (2,)
    assert effects.assignments[T0] == Assignment((1, 2))
    assert T1 not in effects.assignments and T1 not in effects.reassignments_done
    assert any("cancellation skipped" in line for line in effects.log)
    ctx.live = {}  # everything offline: rolled back anyway
    assert cancel_reassignments(ctx, [T1]).assignments[T1] == Assignment((1, 2))
