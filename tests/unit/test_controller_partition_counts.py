"""KIP-253 decisions without ZooKeeper: creation counts, expansion, shrink, refusal, drain and deletion."""

from __future__ import annotations

from kops.lab.controller.context import Assignment, ControllerContext, LeaderState
from kops.lab.controller.effects import apply_to_memory
from kops.lab.controller.partition_counts import delete_drained, on_topic_znode, settle
from kops.model.partitions import TopicPartition
from kops.model.topics import TopicAssignment


def tp(p: int) -> TopicPartition:
    return TopicPartition("k", p)


def topic_context(partitions: int, initial: int | None, undeleted: int | None, epoch: int = 3) -> ControllerContext:
    ctx = ControllerContext(controller_id=1, epoch=7, live={1: 101, 2: 102, 3: 103})
    replicas = {}
    for p in range(partitions):
        replicas[p] = (1 + p % 3, 1 + (p + 1) % 3)
        ctx.assignments[tp(p)] = Assignment(replicas[p])
        ctx.states[tp(p)] = LeaderState(replicas[p][0], epoch + p, replicas[p], zk_version=2)
    ctx.topic_meta["k"] = TopicAssignment(replicas, initial_partition_count=initial,
                                          undeleted_partition_count=undeleted)
    return ctx


def znode(ctx: ControllerContext, partitions: int | None = None, undeleted: int | None = None,
          initial: int | None = None) -> TopicAssignment:
    meta = ctx.topic_meta["k"]
    replicas = dict(meta.replicas)
    for p in range(len(replicas), partitions or len(replicas)):
        replicas[p] = (1, 2)
    return TopicAssignment(replicas,
                           initial_partition_count=initial if initial is not None else meta.initial_partition_count,
                           undeleted_partition_count=(undeleted if undeleted is not None
                                                      else meta.undeleted_partition_count))


def test_a_new_topic_gets_both_counts_written() -> None:
    ctx = ControllerContext(controller_id=1, epoch=7, live={1: 101, 2: 102})
    effects = on_topic_znode(ctx, "k", TopicAssignment({0: (1, 2), 1: (2, 1), 2: (1, 2)}), None)
    assert effects.topic_counts == {"k": (3, 3)}
    assert effects.created_states == {tp(0), tp(1), tp(2)}
    assert all(not s.after_creation for s in effects.states.values())


def test_an_existing_topic_without_counts_gets_them_at_failover() -> None:
    ctx = topic_context(4, None, None)
    effects = settle(ctx)
    assert effects.topic_counts == {"k": (4, 4)} and not effects.states


def test_expansion_bumps_existing_epochs_and_records_them_in_the_new_partitions() -> None:
    ctx = topic_context(2, 2, 2)
    effects = on_topic_znode(ctx, "k", znode(ctx, partitions=4), (2, 2))
    assert effects.topic_counts == {"k": (2, 4)}
    assert effects.states[tp(0)].leader_epoch == 4 and effects.states[tp(1)].leader_epoch == 5  # bumped
    for p in (2, 3):
        assert effects.states[tp(p)].after_creation == {0: 3, 1: 4}  # epochs before the bump
        assert tp(p) in effects.created_states
    # LeaderAndIsr goes to the existing partitions' replicas with the new epoch
    entries = {e.tp: e for reqs in effects.requests.values() for e in reqs.leader_and_isr}
    assert entries[tp(0)].leader_epoch == 4 and entries[tp(2)].is_new


def test_shrink_marks_partitions_records_epochs_and_bumps_the_undeleted_ones() -> None:
    ctx = topic_context(4, 2, 4)
    effects = on_topic_znode(ctx, "k", znode(ctx, undeleted=3), (2, 4))
    assert effects.topic_counts == {}  # the znode already says (2, 3)
    assert effects.states[tp(3)].before_deletion == {0: 3, 1: 4, 2: 5}
    assert effects.states[tp(3)].leader_epoch == 6  # the marked partition's own epoch is unchanged
    assert [effects.states[tp(p)].leader_epoch for p in range(3)] == [4, 5, 6]
    apply_to_memory(ctx, effects)
    assert ctx.marked == {tp(3)} and ctx.states[tp(3)].zk_version == 3
    # idempotent: reading the same znode again marks nothing more
    assert not on_topic_znode(ctx, "k", znode(ctx, undeleted=3), (2, 3)).states


def test_counts_that_break_the_rules_are_refused_and_written_back() -> None:
    ctx = topic_context(4, 2, 4)
    below_initial = on_topic_znode(ctx, "k", znode(ctx, undeleted=1), (2, 4))
    assert below_initial.topic_counts == {"k": (2, 4)} and not below_initial.states
    raised = on_topic_znode(ctx, "k", znode(ctx, undeleted=5), (2, 4))
    assert raised.topic_counts == {"k": (2, 4)}
    # Kafka's own tools rewrite the znode without the counts: the controller puts them back
    dropped = on_topic_znode(ctx, "k", TopicAssignment(dict(ctx.topic_meta["k"].replicas)), (2, 4))
    assert dropped.topic_counts == {"k": (2, 4)} and not dropped.states


def test_expansion_is_refused_while_a_partition_is_marked() -> None:
    ctx = topic_context(4, 2, 4)
    apply_to_memory(ctx, on_topic_znode(ctx, "k", znode(ctx, undeleted=3), (2, 4)))
    effects = on_topic_znode(ctx, "k", znode(ctx, partitions=5, undeleted=3), (2, 3))
    assert effects.topic_counts == {"k": (2, 3)}  # rewritten from memory: without partition 4
    assert not effects.created_states and not effects.states
    assert "refused" in effects.log[0]


def test_failover_finishes_a_marking_the_previous_controller_did_not() -> None:
    ctx = topic_context(4, 2, 2)  # the znode says 2, but no partition is marked yet
    effects = settle(ctx)
    assert set(p.partition for p in effects.states if effects.states[p].before_deletion) == {2, 3}
    assert effects.states[tp(2)].before_deletion == {0: 3, 1: 4}


def test_drained_partitions_are_deleted_from_the_top_only() -> None:
    ctx = topic_context(5, 2, 5)
    apply_to_memory(ctx, on_topic_znode(ctx, "k", znode(ctx, undeleted=2), (2, 5)))
    assert ctx.marked == {tp(2), tp(3), tp(4)}
    # 3 drained but 4 has not: nothing can go yet (ids must stay contiguous)
    assert not delete_drained(ctx, {tp(3)}).deleted_partitions
    effects = delete_drained(ctx, {tp(3), tp(4)})
    assert effects.deleted_partitions == {tp(3), tp(4)}
    stops = {(b, t) for b, reqs in effects.requests.items() for t, delete in reqs.stop_replica if delete}
    assert stops == {(b, t) for t in (tp(3), tp(4)) for b in ctx.assignments[t].replicas}
    apply_to_memory(ctx, effects)
    assert sorted(ctx.partitions_of("k")) == [tp(0), tp(1), tp(2)] and ctx.marked == {tp(2)}


def test_a_drained_partition_waits_for_its_replicas_to_be_live() -> None:
    ctx = topic_context(3, 2, 3)
    apply_to_memory(ctx, on_topic_znode(ctx, "k", znode(ctx, undeleted=2), (2, 3)))
    down = ctx.assignments[tp(2)].replicas[1]
    del ctx.live[down]
    assert not delete_drained(ctx, {tp(2)}).deleted_partitions
