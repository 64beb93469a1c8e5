"""The planner on small clusters: one test per kind of change, with exact expectations."""

from __future__ import annotations

import math

import pytest

from kops.model import plan_format
from kops.model.brokers import FeatureRange
from kops.model.desired import Execution, Placement, Rebalance
from kops.model.partitions import Partition, PartitionState, TopicPartition
from kops.planner.planner import KIP253_FEATURE, PlanningError, Policy, plan
from tests.builders import brokers, declare, round_robin, sizes_of, snapshot, td, topic
from tests.simulate import apply_plan, apply_rollback, layout_of

B6 = brokers(6)  # racks r0: 1,4  r1: 2,5  r2: 3,6


def racks_of(replicas, broker_list=B6):
    rack = {b.id: b.rack for b in broker_list}
    return [rack[r] for r in replicas]


def test_no_changes_when_desired_equals_current() -> None:
    snap = snapshot(B6, [round_robin("t", 6, 3, [1, 2, 3, 4, 5, 6])])
    result = plan(declare(td("t", 6, 3)), snap)
    assert not result.has_changes and result.summary.moves == 0


def test_create_rack_aware_with_even_leaders() -> None:
    snap = snapshot(B6, [])
    result = plan(declare(td("new", 12, 3)), snap)
    [creation] = result.creations
    assert len(creation.assignment) == 12
    for replicas in creation.assignment.values():
        assert len(set(racks_of(replicas))) == 3
    leaders = [r[0] for r in creation.assignment.values()]
    assert max(leaders.count(b) for b in range(1, 7)) == 2 and min(leaders.count(b) for b in range(1, 7)) == 2
    counts = [sum(b in r for r in creation.assignment.values()) for b in range(1, 7)]
    assert max(counts) - min(counts) <= 1


def test_a_new_topic_is_spread_over_the_brokers_even_with_an_empty_one() -> None:
    """Found on Kafka 4.3.1 (racks a,a,b,b, broker 4 just back and empty): all four partitions of a new topic had a
    replica on broker 4 and all four were led by it, so the topic's whole produce traffic went to one broker. The
    empty broker still fills first, but with no more than its share of the topic; each broker leads one."""
    snap = snapshot(brokers(4, racks=2), [round_robin("old", 8, 2, [1, 2, 3])])
    [creation] = plan(declare(td("events", 4, 2)), snap).creations
    held = [sum(b in r for r in creation.assignment.values()) for b in range(1, 5)]
    leaders = sorted(r[0] for r in creation.assignment.values())
    assert held == [2, 2, 2, 2] and leaders == [1, 2, 3, 4], creation.assignment
    assert all(len({(b - 1) % 2 for b in r}) == 2 for r in creation.assignment.values())  # racks kept


def test_balanced_strategy_ignores_racks_and_static_is_verbatim() -> None:
    snap = snapshot(B6, [])
    static = {0: (1, 4), 1: (4, 1)}
    result = plan(declare(td("s", 2, 2, placement=Placement("static", static)),
                          td("b", 6, 2, placement=Placement("balanced"))), snap)
    by_topic = {c.topic: c.assignment for c in result.creations}
    assert by_topic["s"] == static
    counts = [sum(b in r for r in by_topic["b"].values()) for b in range(1, 7)]
    assert counts == [2] * 6


def test_partition_addition_placed_against_existing_load() -> None:
    snap = snapshot(B6, [topic("t", [(1, 2), (1, 2), (1, 2)])])
    result = plan(declare(td("t", 6, 2)), snap)
    [addition] = result.partition_additions
    used = [b for r in addition.assignment.values() for b in r]
    assert 1 not in used and 2 not in used  # the loaded brokers get nothing new
    assert sorted(addition.assignment) == [3, 4, 5]


def test_rf_up_keeps_replicas_and_adds_on_new_rack() -> None:
    snap = snapshot(B6, [topic("t", [(1, 2), (2, 3)])])
    result = plan(declare(td("t", rf=3)), snap)
    for move in result.moves:
        assert move.to_replicas[:2] == move.from_replicas or set(move.from_replicas) <= set(move.to_replicas)
        assert len(set(racks_of(move.to_replicas))) == 3
    assert result.summary.moves == 2 == result.summary.lower_bound_moves


def test_rf_down_keeps_the_leader_and_drops_rack_duplicates() -> None:
    snap = snapshot(B6, [topic("t", [(1, 4, 2)])])  # 1 and 4 share rack r0
    result = plan(declare(td("t", rf=2)), snap)
    [move] = result.moves
    assert move.to_replicas == (1, 2)


def test_decommission_moves_exactly_that_brokers_replicas() -> None:
    snap = snapshot(B6, [round_robin("a", 12, 3, [1, 2, 3, 4, 5, 6]), round_robin("b", 6, 2, [1, 2, 3, 4, 5, 6])])
    on6 = sum(6 in p.replicas for t in snap.topics.values() for p in t.partitions.values())
    result = plan(declare(decommission=[6]), snap)
    assert result.summary.moves == on6 == result.summary.lower_bound_moves
    after = apply_plan(snap, result)
    for (name, number), replicas in layout_of(after).items():
        assert 6 not in replicas
        before = snap.topics[name].partitions[number].replicas
        assert len(set(before) - set(replicas)) == (1 if 6 in before else 0)
        assert len(set(racks_of(replicas))) == len(replicas)


def test_add_brokers_evens_replicas_within_one() -> None:
    b8 = brokers(8, racks=None)
    snap = snapshot(b8, [round_robin("a", 30, 3, [1, 2, 3, 4, 5, 6])])
    result = plan(declare(add=[7, 8]), snap)
    counts = layout_counts(apply_plan(snap, result))
    mean = 90 / 8
    assert all(math.floor(mean) <= counts.get(b, 0) <= math.ceil(mean) for b in range(1, 9)), counts
    assert result.summary.moves == result.summary.lower_bound_moves


def test_add_brokers_keeps_racks_distinct() -> None:
    b9 = brokers(9)  # the new brokers 7, 8, 9 are one per rack
    snap = snapshot(b9, [round_robin("a", 30, 3, [1, 2, 3, 4, 5, 6])])
    after = apply_plan(snap, plan(declare(add=[7, 8, 9]), snap))
    counts = layout_counts(after)
    assert all(9 <= counts[b] <= 11 for b in range(1, 10)), counts
    for replicas in layout_of(after).values():
        assert len(set(racks_of(replicas, b9))) == 3


def layout_counts(snap):
    counts: dict[int, int] = {}
    for replicas in layout_of(snap).values():
        for b in replicas:
            counts[b] = counts.get(b, 0) + 1
    return counts


def test_rebalance_replicas_within_tolerance_with_lower_bound_moves() -> None:
    skewed = topic("t", [(1, 2, 3)] * 12 + [(4, 5, 6)] * 2)
    snap = snapshot(B6, [skewed])
    result = plan(declare(rebalance=Rebalance("replicas", 0.0)), snap)
    counts = layout_counts(apply_plan(snap, result))
    assert max(counts.values()) - min(counts.values()) <= 1
    assert result.summary.moves == result.summary.lower_bound_moves


def test_a_count_rebalance_brings_a_small_racks_brokers_to_the_share_racks_leave_them() -> None:
    """Racks of three, three and two brokers, RF 3: the rack of two holds a third of the replicas, 12 on each of
    its brokers against a mean of 9. Aimed at the mean, broker 3 shed to its rack-mate 6 only until 6 reached the
    mean, and both stayed apart (15 and 9, the golden `rebalance` said so in a warning)."""
    snap = snapshot(brokers(8), [topic("t", [(1, 2, 3)] * 18 + [(4, 5, 6)] * 6)])  # racks r0 1,4,7; r1 2,5,8; r2 3,6
    result = plan(declare(rebalance=Rebalance("replicas", 0.0)), snap)
    counts = layout_counts(apply_plan(snap, result))
    assert counts[3] == counts[6] == 12
    assert {counts[b] for b in (1, 2, 4, 5, 7, 8)} == {8}
    assert result.summary.moves == result.summary.lower_bound_moves
    assert not [w for w in result.warnings if "outside their bounds" in w]


def test_a_count_rebalance_without_sizes_takes_the_topics_in_turn() -> None:
    """Equal sizes (none known): the replicas moved come from each topic in turn, so no topic piles onto the broker
    that takes them (on Kafka 4.3.1, `kops rebalance` without sizes moved four partitions of one topic to broker 3,
    which then held all six)."""
    from collections import Counter

    snap = snapshot(brokers(3, racks=None), [topic("events", [(1,), (2,), (1,), (2,), (1,), (2,)]),
                                             topic("skew", [(1, 2)] * 4), topic("orders", [(1, 2), (2, 1)])])
    moves = [m for m in plan(declare(rebalance=Rebalance("replicas", 0.0)), snap).moves if 3 in m.to_replicas]
    assert Counter(m.topic for m in moves) == {"events": 2, "orders": 2, "skew": 2}  # before: events 3, skew 3


def test_rebalance_moves_nothing_unless_asked() -> None:
    skewed = topic("t", [(1, 2, 3)] * 12 + [(4, 5, 6)] * 2)
    snap = snapshot(B6, [skewed])
    assert not plan(declare(td("t", rf=3)), snap).has_changes


def test_leader_balance_is_exact_and_leader_only() -> None:
    snap = snapshot(B6, [topic("t", [(1, 2, 3), (1, 3, 2), (1, 4, 5), (1, 5, 6), (1, 6, 2), (1, 2, 4)])])
    result = plan(declare(rebalance=Rebalance("leaders", 0.1)), snap)
    assert result.summary.moves == 0 and result.summary.leader_moves >= 4
    after = apply_plan(snap, result)
    leaders = [p.replicas[0] for p in after.topics["t"].partitions.values()]
    assert max(leaders.count(b) for b in set(leaders)) == 1
    assert {m.tp for m in result.moves} <= set(result.election)


def test_configs_diff_only_what_differs_and_no_perpetual_default_diff() -> None:
    snap = snapshot(B6,
                    [topic("t", [(1, 2)], {"retention.ms": "1000", "segment.ms": "5000", "cleanup.policy": "delete"})])
    desired = declare(td("t",
                         config={"retention.ms": "1000", "cleanup.policy": "delete", "compression.type": "producer",
                                      "max.message.bytes": "2000000"}, remove=("segment.ms",)))
    [change] = plan(desired, snap).configs
    assert change.set == {"max.message.bytes": "2000000"} and change.remove == ("segment.ms",)
    assert change.after == {"retention.ms": "1000", "cleanup.policy": "delete", "max.message.bytes": "2000000"}
    undeclared = plan(declare(td("t", config={"retention.ms": "1000"})), snap)
    assert not undeclared.configs  # segment.ms stays: an override is removed only when declared


def test_retention_decrease_is_destructive() -> None:
    snap = snapshot(B6, [topic("t", [(1, 2)], {"retention.ms": "604800000"})])
    result = plan(declare(td("t", config={"retention.ms": "3600000"})), snap)
    assert result.configs[0].destructive and "retention.ms" in result.summary.destructive[0]


def test_deletion_is_destructive_and_irreversible() -> None:
    snap = snapshot(B6, [topic("old", [(1, 2), (2, 3)])])
    result = plan(declare(td("old", state="absent"), allow_delete=True), snap)
    assert [d.topic for d in result.deletions] == ["old"]
    assert result.summary.destructive == ("delete topic old (2 partitions)",)
    assert any("deleted with its data" in x for x in result.rollback.irreversible)


def test_partition_decrease_refused_on_kafka_and_marked_on_kip253() -> None:
    snap = snapshot(B6, [topic("t", [(1, 2)] * 4)])
    with pytest.raises(PlanningError, match="Kafka cannot decrease the partition count") as info:
        plan(declare(td("t", 2)), snap)
    assert info.value.where == "playbook.yml:3:7"
    lab = snapshot(tuple(b.__class__(**{**b.__dict__, "features": {KIP253_FEATURE: FeatureRange(1, 1)}}) for b in B6),
                   [topic("t", [(1, 2)] * 4)])
    [shrink] = plan(declare(td("t", 2)), lab).partition_deletions
    assert (shrink.current_count, shrink.undeleted_partition_count) == (4, 2)


@pytest.mark.parametrize(
    "desired, message",
    [
        (declare(td("t", 3, 7)), "replication_factor 7 needs 7 brokers, only 6 are eligible"),
        (declare(td("t", 3, 3, placement=Placement(brokers=(1, 2, 99)))), "unknown broker(s) [99]"),
        (declare(td("t", placement=Placement("static", {0: (1, 42)}))), "assignments name unknown broker(s) [42]"),
        (declare(td("t", 3, 4, placement=Placement("rack-aware"))), "more than the 3 racks"),
        (declare(td("fresh")), "does not exist yet: declare partitions and replication_factor"),
        (declare(add=[9]), "brokers.add names broker 9, which is not registered"),
        (declare(td("t", 2, 1, config={"min.insync.replicas": "2"})), "below min.insync.replicas 2"),
        # no replication_factor declared: the topic's own (2) holds it (acks=all could write nothing)
        (declare(td("t", config={"min.insync.replicas": "3"})),
         "min.insync.replicas 3 is above its replication_factor 2"),
    ],
)
def test_bad_declarations_name_their_location(desired, message: str) -> None:
    snap = snapshot(B6, [topic("t", [(1, 2)] * 2)])
    with pytest.raises(PlanningError) as info:
        plan(desired, snap)
    assert message in info.value.one_line() and info.value.where == "playbook.yml:3:7"


def test_in_flight_partition_needs_allow_in_flight() -> None:
    moving = Partition((4, 1, 2), adding=(4,), removing=(2,), state=PartitionState(1, 2, (1, 2), 1))
    t = topic("t", [(1, 2), (2, 3)])
    t = t.__class__(t.name, {0: moving, 1: t.partitions[1]}, config={})
    snap = snapshot(B6, [t])
    with pytest.raises(PlanningError, match="being reassigned right now"):
        plan(declare(td("t", rf=3)), snap)
    result = plan(declare(td("t", rf=3)), snap, policy=Policy(allow_in_flight=True))
    moved = {m.partition: m for m in result.moves}
    assert moved[0].from_replicas == (4, 1)  # planned from where the running reassignment lands


def test_throttles_exact_lists_merged_with_operator_star() -> None:
    snap = snapshot(B6, [topic("a", [(1, 2), (2, 3)], {"leader.replication.throttled.replicas": "*"}),
                         topic("b", [(3, 1)], {"follower.replication.throttled.replicas": "9:9"})],
                    broker_configs={"4": {"follower.replication.throttled.rate": "1000"}})
    result = plan(declare(decommission=[1], execution=Execution(throttle=5000)), snap)
    [batch] = result.batches
    t = batch.throttle
    assert t.topics["a"]["leader.replication.throttled.replicas"] == "*"
    moves = {m.topic: m for m in batch.moves}
    new_a = moves["a"].adding[0]
    assert t.topics["a"]["follower.replication.throttled.replicas"] == f"0:{new_a}"
    assert t.topics["b"]["leader.replication.throttled.replicas"] == "0:1,0:3"
    expected = ",".join(sorted([f"0:{moves['b'].adding[0]}", "9:9"]))
    assert t.topics["b"]["follower.replication.throttled.replicas"] == expected
    involved = {1, 2, 3} | set(m.adding[0] for m in batch.moves)
    assert set(t.brokers) == involved
    for broker, rates in t.brokers.items():
        expected = "1000" if broker == 4 else "5000"  # an operator's lower rate is kept
        assert rates["leader.replication.throttled.rate"] in ("5000",) or broker == 4
        assert rates["follower.replication.throttled.rate"] == expected


def test_batches_respect_limits() -> None:
    snap = snapshot(brokers(9), [round_robin("a", 60, 3, list(range(1, 10)))])
    sizes = sizes_of(snap)
    execution = Execution(throttle=10**6, max_partitions=4, max_bytes=20000, max_moves_per_broker=2)
    result = plan(declare(decommission=[9], execution=execution), snap, sizes)
    assert len(result.batches) > 1
    for batch in result.batches:
        assert len(batch.moves) <= 4 and batch.bytes <= 20000
        ins: dict[int, int] = {}
        outs: dict[int, int] = {}
        for m in batch.moves:
            for b in m.adding:
                ins[b] = ins.get(b, 0) + 1
            if m.adding:
                outs[m.leader] = outs.get(m.leader, 0) + 1
        assert max(ins.values(), default=0) <= 2 and max(outs.values(), default=0) <= 2


def test_plan_then_rollback_restores_layout_and_configs() -> None:
    snap = snapshot(B6, [round_robin("a", 12, 3, [1, 2, 3, 4, 5, 6]), topic("c", [(1, 2)], {"retention.ms": "5000"})])
    result = plan(declare(td("c", rf=3, config={"retention.ms": "9000"}), decommission=[2]), snap, sizes_of(snap))
    back = apply_rollback(apply_plan(snap, result), result)
    assert layout_of(back) == layout_of(snap)
    assert back.topics["c"].config == {"retention.ms": "5000"}


def test_plans_are_byte_identical_and_round_trip() -> None:
    snap = snapshot(B6, [round_robin("a", 20, 3, [1, 2, 3, 4, 5, 6])])
    desired = declare(td("a", 24, 3), td("n", 5, 2), decommission=[3],
                      execution=Execution(throttle=10**7, max_partitions=5))
    first = plan_format.dumps(plan(desired, snap, sizes_of(snap)))
    second = plan_format.dumps(plan(desired, snap, sizes_of(snap)))
    assert first == second
    assert plan_format.dumps(plan_format.loads(first, "p.json")) == first


def test_estimates_from_sizes_and_rate() -> None:
    snap = snapshot(B6, [topic("t", [(1, 2)])])
    result = plan(declare(td("t", rf=3), execution=Execution(throttle=1000)), snap, {TopicPartition("t", 0): 50_000})
    assert result.summary.bytes == 50_000
    assert result.summary.estimated_seconds == pytest.approx(50.0)
    assert result.summary.lower_bound_seconds == pytest.approx(50.0)


def test_a_growing_partition_is_sized_for_when_its_batch_starts() -> None:
    snap = snapshot(B6, [topic("t", [(1, 2), (3, 4)])])
    sizes = {TopicPartition("t", 0): 50_000, TopicPartition("t", 1): 50_000}
    desired = declare(td("t", rf=3), execution=Execution(throttle=1000, max_partitions=1))
    still = plan(desired, snap, sizes)
    grown = plan(desired, snap, sizes, Policy(growth={TopicPartition("t", 0): 10.0, TopicPartition("t", 1): 10.0}))
    first, second = grown.batches
    assert first.moves[0].bytes == 50_000  # the first batch starts now
    assert second.moves[0].bytes == 50_000 + 10 * 50  # the second starts after the first's 50 s
    assert second.estimate.seconds == pytest.approx(50.5)
    assert grown.summary.estimated_seconds == pytest.approx(100.5)
    assert still.summary.estimated_seconds == pytest.approx(100.0)


def test_drift_names_what_changed_since_the_plan() -> None:
    from kops.planner.fingerprint import drift

    snap = snapshot(B6, [topic("a", [(1, 2)]), topic("b", [(2, 3)])])
    result = plan(declare(td("a", rf=3), td("b", rf=3)), snap)
    assert drift(result.fingerprint, snap) == []
    moved = snapshot(B6, [topic("a", [(1, 4)]), topic("b", [(2, 3)], {"retention.ms": "1"})])
    assert drift(result.fingerprint, moved) == ["topic a changed", "topic b changed"]
    gone = snapshot(B6[:5], [topic("b", [(2, 3)])])
    assert drift(result.fingerprint, gone) == ["the set of brokers (or their racks) changed", "topic a was deleted"]
    other = snapshot(B6, [topic("a", [(1, 2)]), topic("b", [(2, 3)])]).__class__(
        "another-cluster", snap.controller, snap.brokers, snap.topics)
    assert drift(result.fingerprint, other)[0].startswith("cluster id is another-cluster")


def test_a_topic_digest_is_the_one_plans_made_before_hold() -> None:
    """Digests are sha256 of `json.dumps(sort_keys=True, separators=(",", ":"))`, as every plan written so far
    holds them: the same for a topic whose config has non-ASCII text (escaped, as the standard library does)."""
    import hashlib
    import json

    from kops.planner.fingerprint import topic_digest

    snap = snapshot(B6, [topic("a", [(1, 2), (2, 3)], {"retention.ms": "1"}), topic("b", [(2, 3)], {"x": "é ü"})])
    for name in ("a", "b"):
        part = snap.topics[name].partitions
        value = {"partitions": {str(p): [list(x.replicas), list(x.adding), list(x.removing)] for p, x in part.items()},
                 "config": snap.topics[name].config, "pending_deletion": False}
        text = json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
        assert topic_digest(snap, name) == hashlib.sha256(text).hexdigest()[:16]


def test_the_playbooks_stall_timeout_travels_in_the_plan_file() -> None:
    snap = snapshot(B6, [round_robin("t", 6, 2, [1, 2, 3, 4, 5, 6])])
    result = plan(declare(td("t", 6, 3), execution=Execution(stall_timeout=120.0)), snap)
    assert result.stall_timeout == 120.0
    loaded = plan_format.loads(plan_format.dumps(result), "plan.json")
    assert loaded.stall_timeout == 120.0 and plan_format.dumps(loaded) == plan_format.dumps(result)
    assert "stall_timeout" not in plan_format.dumps(plan(declare(td("t", 6, 3)), snap)).decode()
    with pytest.raises(Exception, match="stall_timeout must be a positive number"):
        plan_format.loads(plan_format.dumps(result).replace(b'"stall_timeout": 120.0', b'"stall_timeout": -1'), "p")


def test_order_as_declared_batches_topics_in_the_playbooks_order() -> None:
    snap = snapshot(B6, [round_robin(name, 4, 2, [1, 2, 3]) for name in ("alpha", "mid", "zulu")])
    declared = declare(td("zulu", 4, 3), td("alpha", 4, 3), td("mid", 4, 3),
                       execution=Execution(order="as-declared", max_partitions=4))
    result = plan(declared, snap)
    assert [sorted({m.topic for m in b.moves}) for b in result.batches] == [["zulu"], ["alpha"], ["mid"]]
    by_name = plan(declare(td("zulu", 4, 3), td("alpha", 4, 3), td("mid", 4, 3),
                           execution=Execution(order="topic", max_partitions=4)), snap)
    assert [sorted({m.topic for m in b.moves}) for b in by_name.batches] == [["alpha"], ["mid"], ["zulu"]]


def test_warnings_name_what_a_reviewer_must_see() -> None:
    weak = topic("weak", [(1, 2, 3), (2, 3, 1)], config={"min.insync.replicas": "2"})
    weak.partitions[0] = Partition((1, 2, 3), state=PartitionState(1, 1, (1,), 1))  # ISR below min.insync
    snap = snapshot(B6, [weak])
    result = plan(declare(td("weak"), decommission=[1]), snap)
    assert any("weak-0 is below min.insync.replicas 2 (ISR [1])" in w for w in result.warnings)
    assert not any("weak-1" in w for w in result.warnings)
    doc = plan_format.loads(plan_format.dumps(result), "p")
    assert doc.warnings == result.warnings
    from kops.planner.markdown import render_markdown

    assert "> [!WARNING]" in render_markdown(result) and "weak-0 is below" in render_markdown(result)
