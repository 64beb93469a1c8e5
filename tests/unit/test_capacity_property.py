"""Capacity as a hard limit of every plan (issue 35, docs/design/capacity.md §6.5, §6.6, §8), over random clusters
and declarations (hypothesis): brokers of unequal and partly unknown capacities, Zipf-like sizes, write rates, limit
fractions, playbooks (topics, replication factors, creations, a decommission, a rebalance, batch caps) and imported
targets. Every plan kops writes keeps each broker within its limits (or, where it starts over, no fuller than it
was) after every batch and at every batch's peak, while a destination holds the new copy and its source the old
one; or kops refuses it, exit 1 (a limit, or a declaration that cannot be placed at all).

Two checkers agree: the product's `violations` of the plan's capacity report (what bench/capacity.py counts) and one
written here, which steps the plan's batches over the cluster with tests/simulate.py and adds each batch's new
copies to its start."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kops.errors import ExitCode
from kops.model.capacity import CapacityDeclaration, Figure
from kops.model.desired import DesiredState, Execution, Rebalance
from kops.model.partitions import TopicPartition
from kops.model.plan import Plan
from kops.model.snapshot import Snapshot
from kops.planner.headroom import capacity_report, violations
from kops.planner.planner import PlanningError, Policy, plan, plan_targets
from tests.builders import brokers, declare, snapshot, td, topic
from tests.examples import examples
from tests.simulate import apply_moves, apply_plan

INV = "declared inv.yml:1"
Sizes = dict[TopicPartition, int]


@st.composite
def clusters(draw: st.DrawFn) -> tuple[Snapshot, Sizes, dict[TopicPartition, float]]:
    count = draw(st.integers(3, 9))
    broker_list = brokers(count, draw(st.sampled_from([None, 2, 3])))
    ids = [b.id for b in broker_list]
    topics = []
    for index in range(draw(st.integers(1, 4))):
        rf = draw(st.integers(1, min(3, count)))
        topics.append(topic(f"t{index}", [tuple(draw(st.permutations(ids))[:rf])
                                          for _ in range(draw(st.integers(1, 6)))]))
    snap = snapshot(broker_list, topics)
    parts = [TopicPartition(t.name, p) for t in topics for p in t.partitions]
    ranks = draw(st.permutations(range(1, len(parts) + 1)))
    sizes = {tp: int(10**6 / rank ** 1.1) for tp, rank in zip(parts, ranks, strict=True)}  # Zipf: a few large
    write = {tp: float(draw(st.sampled_from([0, 10, 1_000]))) for tp in parts}
    return snap, sizes, write


@st.composite
def capacities(draw: st.DrawFn, snap: Snapshot, sizes: Sizes) -> CapacityDeclaration:
    """Per broker a disk between a tight and a roomy share of what the cluster holds, or none (unknown); at
    times a network-in capacity and a replica cap, and limit fractions other than 0.8."""
    share = sum(sizes[TopicPartition(n, p)] * len(part.replicas) for n, t in snap.topics.items()
                for p, part in t.partitions.items()) / len(snap.brokers)
    per_broker = {}
    for b in sorted(snap.live_broker_ids):
        factor = draw(st.sampled_from([None, 0.9, 1.3, 2.0, 4.0]))
        if factor is not None:
            per_broker[b] = {"disk": Figure(max(1.0, share * factor), INV)}
    default = {}
    if draw(st.booleans()):
        default["network_in"] = Figure(draw(st.sampled_from([2_000.0, 20_000.0])), INV)
    if draw(st.booleans()):
        default["replicas"] = Figure(float(draw(st.integers(2, 8))), INV)
    limits = {"disk": draw(st.sampled_from([0.8, 0.95, 1.0])), "network_in": 0.8}
    return CapacityDeclaration(default=default, brokers=per_broker, limits=limits)


@st.composite
def playbooks(draw: st.DrawFn, snap: Snapshot) -> DesiredState:
    ids = sorted(snap.live_broker_ids)
    decls = []
    for name, t in sorted(snap.topics.items()):
        if draw(st.booleans()):
            decls.append(td(name, len(t.partitions) + draw(st.integers(0, 2)), draw(st.integers(1, 3))))
    if draw(st.booleans()):
        decls.append(td("created", draw(st.integers(1, 4)), draw(st.integers(1, 3))))
    decommission = [draw(st.sampled_from(ids))] if draw(st.booleans()) else []
    rebalance = draw(st.sampled_from([None, Rebalance("replicas", 0.0), Rebalance("bytes", 0.1)]))
    execution = Execution(max_partitions=draw(st.sampled_from([None, 1, 2, 4])))
    return declare(*decls, decommission=decommission, rebalance=rebalance, execution=execution)


@st.composite
def imported(draw: st.DrawFn, snap: Snapshot) -> dict[TopicPartition, tuple[int, ...]]:
    """kafka-reassign-partitions targets: some partitions each to brokers of the same replication factor."""
    ids = sorted(snap.live_broker_ids)
    targets = {}
    for name, t in sorted(snap.topics.items()):
        for p, part in sorted(t.partitions.items()):
            if draw(st.booleans()):
                targets[TopicPartition(name, p)] = tuple(draw(st.permutations(ids))[:len(part.replicas)])
    return targets


def disk_and_replicas(snap: Snapshot, sizes: Sizes) -> tuple[dict[int, float], dict[int, float]]:
    disk: dict[int, float] = {}
    count: dict[int, float] = {}
    for name, t in snap.topics.items():
        for p, part in t.partitions.items():
            for b in part.replicas:
                disk[b] = disk.get(b, 0) + sizes.get(TopicPartition(name, p), 0)
                count[b] = count.get(b, 0) + 1
    return disk, count


def stepped_overfills(snap: Snapshot, planned: Plan, sizes: Sizes, declared: CapacityDeclaration) -> list[str]:
    """This test's own checker, for disk and replicas: the cluster stepped batch by batch (tests/simulate.py), each
    batch's peak its start plus its new copies, every boundary and peak against each broker's limit (or its start,
    where it starts over)."""
    def cap(b: int, resource: str, before: dict[int, float]) -> float | None:
        figure = declared.brokers.get(b, {}).get(resource) or declared.default.get(resource)
        if figure is None or figure.value is None:
            return None
        limit = figure.value * (1.0 if resource == "replicas" else declared.limits.get(resource, 0.8))
        return max(limit, before.get(b, 0.0))

    before = dict(zip(("disk", "replicas"), disk_and_replicas(snap, sizes), strict=True))
    state = apply_plan(snap, replace(planned, batches=()))  # deletions, creations, partition additions
    found = []
    for index, batch in enumerate([*planned.batches, None], 1):
        loads = dict(zip(("disk", "replicas"), disk_and_replicas(state, sizes), strict=True))
        for move in batch.moves if batch is not None else ():
            for b in move.adding:
                loads["disk"][b] = loads["disk"].get(b, 0) + sizes.get(move.tp, 0)
                loads["replicas"][b] = loads["replicas"].get(b, 0) + 1
        for resource, per in loads.items():
            for b, held in per.items():
                limit = cap(b, resource, before[resource])
                if limit is not None and held > limit + 1e-6:
                    found.append(f"broker {b} {resource} {held} > {limit} at {'end' if batch is None else index}")
        if batch is not None:
            state = apply_moves(state, batch.moves)
    return found


def judged(make, snap: Snapshot, sizes: Sizes, declared: CapacityDeclaration,
           write: dict[TopicPartition, float]) -> None:
    """The plan keeps every limit at every boundary and peak, by both checkers, or it is refused with exit 1."""
    try:
        planned = make()
    except PlanningError as refused:
        assert refused.exit_code == ExitCode.ERROR
        line = refused.one_line()
        event("refused: " + ("a limit" if any(r in line for r in ("disk", "network_in", "replicas")) else "other"))
        return
    event("kept" if planned.batches else "nothing to move")
    report = capacity_report(planned, snap, sizes, declared, write)  # held to the declaration, peaks included
    assert report is None or violations(report) == []
    assert stepped_overfills(snap, planned, sizes, declared) == []


SETTINGS = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.data())
def test_a_playbooks_plan_keeps_every_limit_at_every_peak_or_is_refused(data: st.DataObject) -> None:
    snap, sizes, write = data.draw(clusters())
    declared = data.draw(capacities(snap, sizes))
    desired = data.draw(playbooks(snap))
    judged(lambda: plan(desired, snap, sizes, Policy(capacity=declared, write=write)), snap, sizes, declared, write)


@SETTINGS
@given(st.data())
def test_imported_targets_keep_every_limit_at_every_peak_or_are_refused(data: st.DataObject) -> None:
    snap, sizes, write = data.draw(clusters())
    declared = data.draw(capacities(snap, sizes))
    targets = data.draw(imported(snap))
    execution = Execution(max_partitions=data.draw(st.sampled_from([None, 1, 3])))
    judged(lambda: plan_targets(snap, targets, "c", execution, Policy(capacity=declared, write=write), sizes),
           snap, sizes, declared, write)
