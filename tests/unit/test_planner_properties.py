"""Properties of the planner over random clusters and random declarations (hypothesis)."""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kops.executor import steps
from kops.executor.record import DONE, ExecutionRecord
from kops.model import plan_format
from kops.model.desired import Execution, Rebalance
from kops.model.partitions import TopicPartition
from kops.planner.planner import PlanningError, plan
from tests.builders import brokers, declare, snapshot, td, topic
from tests.simulate import apply_moves, apply_plan, apply_rollback, layout_of


@st.composite
def clusters(draw):
    count = draw(st.integers(3, 9))
    racks = draw(st.sampled_from([None, 2, 3]))
    broker_list = brokers(count, racks)
    ids = [b.id for b in broker_list]
    topics = []
    for index in range(draw(st.integers(1, 4))):
        rf = draw(st.integers(1, min(3, count)))
        layout = [tuple(draw(st.permutations(ids))[:rf]) for _ in range(draw(st.integers(1, 6)))]
        topics.append(topic(f"t{index}", layout))
    snap = snapshot(broker_list, topics)
    sizes = {TopicPartition(t.name, p): draw(st.integers(0, 10**6)) for t in topics for p in t.partitions}
    return snap, sizes


@st.composite
def declarations(draw, snap):
    ids = sorted(snap.live_broker_ids)
    decls = []
    for name, t in sorted(snap.topics.items()):
        if draw(st.booleans()):
            rf = draw(st.integers(1, min(3, len(ids) - 1)))
            partitions = len(t.partitions) + draw(st.integers(0, 3))
            decls.append(td(name, partitions, rf))
    if draw(st.booleans()):
        decls.append(td("created", draw(st.integers(1, 6)), draw(st.integers(1, min(3, len(ids) - 1)))))
    decommission = [draw(st.sampled_from(ids))] if draw(st.booleans()) else []
    rebalance = draw(st.sampled_from([None, Rebalance("replicas", 0.0), Rebalance("leaders", 0.1),
                                      Rebalance("bytes", 0.2)]))
    execution = Execution(throttle=draw(st.sampled_from([None, 10**6])),
                          max_partitions=draw(st.sampled_from([None, 1, 3])))
    return declare(*decls, decommission=decommission, rebalance=rebalance, execution=execution)


def distinct_racks(snap, replicas) -> int:
    rack = {b.id: b.rack for b in snap.brokers}
    return len({rack[r] for r in replicas}) if all(rack.get(r) for r in replicas) else len(replicas)


SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.data())
def test_plan_meets_declarations_and_rollback_restores(data) -> None:
    snap, sizes = data.draw(clusters())
    desired = data.draw(declarations(snap))
    try:
        result = plan(desired, snap, sizes)
    except PlanningError:
        assume(False)
        return
    after = apply_plan(snap, result)
    final = layout_of(after)
    # 1. every declaration holds in the final layout.
    for name, decl in desired.topics.items():
        parts = {p: r for (n, p), r in final.items() if n == name}
        if decl.partitions is not None:
            assert len(parts) == decl.partitions
        for replicas in parts.values():
            assert len(set(replicas)) == len(replicas)
            if decl.replication_factor is not None:
                assert len(replicas) == decl.replication_factor
    for broker in desired.brokers.decommission:
        assert all(broker not in r for r in final.values())
    # 2. rack rules at every batch boundary: no partition loses rack diversity it could keep.
    state = apply_plan(snap, result.__class__(**{**result.__dict__, "batches": ()}))
    for batch in result.batches:
        state = apply_moves(state, batch.moves)
        for move in batch.moves:
            before = distinct_racks(snap, move.from_replicas)
            now = distinct_racks(snap, state.topics[move.topic].partitions[move.partition].replicas)
            remaining = [b for b in snap.brokers if b.id not in desired.brokers.decommission]
            racks_total = len({b.rack for b in remaining})  # racks a plan can still use
            assert now >= min(before, racks_total, len(move.to_replicas))
    # 3. plan then rollback returns the original layout exactly, replica order included: through the plan's
    # rollback section, and through what `kops rollback` computes from the execution record and the cluster.
    back = apply_rollback(after, result)
    record = ExecutionRecord("x", "apply", "d", "p.json", None, 0.0, {}, steps.from_plan(result))
    for batch in record.batches:
        batch.status = DONE
    undo = steps.rollback_of(record, after, {})
    assert not undo.drift
    by_command = apply_moves(after, [m for b in undo.batches for m in b.moves])
    original = layout_of(snap)
    for key, replicas in original.items():
        if key[0] in {d.topic for d in result.deletions}:
            continue
        assert layout_of(back)[key] == replicas
        assert layout_of(by_command)[key] == replicas
    # and the original preferred leaders are elected again wherever a move changed them
    assert {m.tp for m in result.moves if m.from_replicas[0] != m.to_replicas[0]} <= set(undo.election)


@SETTINGS
@given(st.data())
def test_planning_twice_gives_identical_bytes(data) -> None:
    snap, sizes = data.draw(clusters())
    desired = data.draw(declarations(snap))
    try:
        first = plan_format.dumps(plan(desired, snap, sizes))
    except PlanningError as exc:
        try:
            plan(desired, snap, sizes)
        except PlanningError as again:
            assert str(again) == str(exc)
        return
    assert plan_format.dumps(plan(desired, snap, dict(reversed(list(sizes.items()))))) == first


@SETTINGS
@given(clusters())
def test_desired_equal_to_current_gives_no_changes(cluster) -> None:
    snap, sizes = cluster
    same = [td(name, len(t.partitions), len(t.partitions[0].replicas)) for name, t in snap.topics.items()
            if len({len(p.replicas) for p in t.partitions.values()}) == 1]
    result = plan(declare(*same), snap, sizes)
    assert not result.has_changes
