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

from collections.abc import Callable
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
PEAKS_REFUSED = "no batching keeps this plan within the limits"
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
        default["network_out"] = Figure(draw(st.sampled_from([4_000.0, 40_000.0])), INV)
    if draw(st.booleans()):
        default["replicas"] = Figure(float(draw(st.integers(2, 8))), INV)
    limits = {"disk": draw(st.sampled_from([0.8, 0.95, 1.0])), "network_in": 0.8, "network_out": 0.8}
    return CapacityDeclaration(default=default, brokers=per_broker, limits=limits)


def fanouts(snap: Snapshot) -> st.SearchStrategy[dict[str, int]]:
    """Consumer groups per topic (network out = write × (followers + fan-out)), or none declared (1 each)."""
    return st.dictionaries(st.sampled_from(sorted(snap.topics)), st.integers(0, 4), max_size=len(snap.topics))


@st.composite
def playbooks(draw: st.DrawFn, snap: Snapshot) -> DesiredState:
    ids = sorted(snap.live_broker_ids)
    decls = []
    for name, t in sorted(snap.topics.items()):
        if draw(st.booleans()):  # consumer groups too: the leader sends write × (followers + fan-out)
            decls.append(replace(td(name, len(t.partitions) + draw(st.integers(0, 2)), draw(st.integers(1, 3))),
                                 fanout=draw(st.integers(0, 4))))
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


def judged(make: Callable[[Policy], Plan], snap: Snapshot, sizes: Sizes, declared: CapacityDeclaration,
           write: dict[TopicPartition, float], fanout: dict[str, int]) -> None:
    """The plan keeps every limit at every boundary and peak, by both checkers, or it is refused with exit 1, and
    only where the same plan made blind to capacity is refused too or would break a limit: a planner that refused
    whatever it was given would pass the first half alone."""
    try:
        planned = make(Policy(capacity=declared, write=write, fanout=fanout))
    except PlanningError as refused:
        assert refused.exit_code == ExitCode.ERROR
        try:
            blind = make(Policy(write=write, fanout=fanout))
        except PlanningError:
            event("refused, and so is the plan without capacities")
            return
        report = capacity_report(blind, snap, sizes, declared, write, fanout)
        if report is not None and violations(report) or stepped_overfills(snap, blind, sizes, declared):
            event("refused: the plan without capacities breaks a limit")
            return
        # the one refusal a blind plan may escape: targets whose moves wait on each other through full brokers (a
        # partition must leave broker A before another's copy fits there, and that one must leave B first); each
        # move is one reassignment, so kops names the move to make through a third broker in a plan of its own
        assert PEAKS_REFUSED in refused.one_line(), (
            f"refused ({refused.one_line()}) where the plan without capacities keeps every limit")
        event("refused: moves that wait on each other through full brokers")
        return
    event("kept" if planned.batches else "nothing to move")
    report = capacity_report(planned, snap, sizes, declared, write, fanout)  # held to the declaration, peaks too
    assert report is None or violations(report) == []
    assert stepped_overfills(snap, planned, sizes, declared) == []


SETTINGS = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.data())
def test_a_playbooks_plan_keeps_every_limit_at_every_peak_or_is_refused(data: st.DataObject) -> None:
    snap, sizes, write = data.draw(clusters())
    declared = data.draw(capacities(snap, sizes))
    desired = data.draw(playbooks(snap))
    fanout = {name: t.fanout for name, t in desired.topics.items()}  # a playbook declares each topic's fan-out
    judged(lambda policy: plan(desired, snap, sizes, policy), snap, sizes, declared, write, fanout)


@SETTINGS
@given(st.data())
def test_imported_targets_keep_every_limit_at_every_peak_or_are_refused(data: st.DataObject) -> None:
    snap, sizes, write = data.draw(clusters())
    declared = data.draw(capacities(snap, sizes))
    targets = data.draw(imported(snap))
    execution = Execution(max_partitions=data.draw(st.sampled_from([None, 1, 3])))
    fanout = data.draw(fanouts(snap))
    judged(lambda policy: plan_targets(snap, targets, "c", execution, policy, sizes), snap, sizes, declared, write,
           fanout)
