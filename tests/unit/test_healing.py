"""Healing's planning (kops/planner/heal.py) and absences (kops/model/absence.py): pure, no ZooKeeper."""

from __future__ import annotations

import pytest

from kops.cli.healing import Heal, Sighting, heal_of, unnoted, verdict
from kops.errors import UsageError
from kops.executor import health
from kops.model.absence import Absence, absences, absent_brokers, described, due
from kops.model.capacity import CapacityDeclaration, Figure
from kops.model.partitions import Partition, PartitionState, TopicPartition
from kops.model.plan import Move
from kops.model.topics import Topic
from kops.planner.bounded import Request
from kops.planner.budget import Limits
from kops.planner.heal import heal, refusals
from kops.planner.planner import PlanningError, Policy
from tests.builders import brokers, snapshot


def dead(layout: list[tuple[int, ...]], gone: set[int], n_brokers: int = 6, racks: int | None = 3,
         **kwargs):
    """A cluster of `n_brokers` in which `gone` are no longer registered: out of every ISR; leaders elsewhere."""
    parts = {}
    for p, replicas in enumerate(layout):
        isr = tuple(b for b in replicas if b not in gone)
        parts[p] = Partition(replicas, state=PartitionState(isr[0] if isr else -1, 2, isr, 1))
    live = tuple(b for b in brokers(n_brokers, racks) if b.id not in gone)
    return snapshot(live, [Topic("t", parts)], **kwargs)


def test_absent_brokers_are_those_named_by_replicas_and_not_registered() -> None:
    snap = dead([(1, 4), (2, 3), (4, 5)], {4, 6})
    assert absent_brokers(snap) == {4}  # 6 holds nothing: nothing to heal
    found = absences({4: 1_000, 2: 50_000}, 61_000)
    assert found == (Absence(2, 50_000, 61_000), Absence(4, 1_000, 61_000))
    assert [a.broker for a in due(found, 60)] == [4]
    assert described(found, 60) == "broker 2 absent for 11 s, broker 4 absent for 60 s (heals after 60 s)"


def test_every_replica_of_the_absent_broker_is_rehomed_rack_aware_and_the_factor_kept() -> None:
    layout = [(4, 1), (1, 4), (2, 3), (4, 2, 3), (5, 6)]
    snap = dead(layout, {4})
    healing = heal(snap, [4])
    targets = {m.tp: m.to_replicas for m in healing.plan.moves}
    assert healing.brokers == (4,) and healing.left == 0
    assert set(targets) == {TopicPartition("t", p) for p in (0, 1, 3)}
    racks = {b.id: b.rack for b in snap.brokers}
    for tp, replicas in targets.items():
        assert 4 not in replicas and len(replicas) == len(layout[tp.partition])
        assert len({racks[b] for b in replicas}) == len(replicas)  # racks stay distinct
        assert replicas[0] == snap.partition(tp).leader  # the live leader stays the preferred one
    assert all(m.reason == "heal absent broker(s) 4" for m in healing.plan.moves)


def test_the_budget_cuts_the_healing_and_counts_what_is_left() -> None:
    snap = dead([(4, 1), (4, 2), (4, 3), (4, 5)], {4})
    healing = heal(snap, [4], Request(limits=Limits(max_moves=2)))
    assert len(healing.plan.moves) == 2 and healing.left == 2 and healing.brokers == (4,)


def test_no_live_broker_can_take_a_replica_is_refused_naming_it() -> None:
    snap = dead([(1, 2, 3)], {3}, n_brokers=3, racks=None)
    with pytest.raises(PlanningError, match="cannot re-home t-0 off absent broker 3"):
        heal(snap, [3])


def test_capacity_limits_hold() -> None:
    snap = dead([(4, 1), (4, 2), (3, 1), (3, 2)], {4}, n_brokers=4, racks=None)  # 1, 2 and 3 full
    full = CapacityDeclaration(default={"replicas": Figure(2.0, "declared inv.yml:3")})
    with pytest.raises(PlanningError, match="t-0 off absent broker 4: no eligible broker fits 1 of replicas"):
        heal(snap, [4], policy=Policy(capacity=full))


def test_refusals_too_many_absent_no_isr_left_and_other_under_replication() -> None:
    snap = dead([(4, 1), (2, 3)], {4})
    assert refusals(snap, {4}, 1) == []
    assert "2 brokers absent (4, 5), more than --heal-max-brokers 1" in refusals(snap, {4, 5}, 1)[0]
    offline = dead([(4,), (2, 3)], {4})
    assert "have no in-sync replica on a live broker (t-0): kops never elects an unclean leader" in refusals(
        offline, {4}, 1)[0]
    lagging = snapshot(brokers(6), [Topic("t", {0: Partition((1, 2), state=PartitionState(1, 1, (1,), 1))})])
    assert "under-replicated with every replica's broker live (t-0)" in refusals(lagging, set(), 1)[0]


def test_a_run_heals_past_the_duration_and_says_how_long_before_it() -> None:
    snap = dead([(4, 1), (2, 3)], {4})
    soon, late = Sighting((Absence(4, 0, 10_000),)), Sighting((Absence(4, 0, 70_000),))
    waiting = verdict(snap, soon, Heal(60))
    assert waiting.healing == () and waiting.reasons[-1] == "broker 4 absent for 10 s (heals after 60 s)"
    assert verdict(snap, late, Heal(60)) == verdict(snap, late, Heal(60, 1))
    assert verdict(snap, late, Heal(60)).healing == (4,) and verdict(snap, late, Heal(60)).reasons == []
    assert soon.summary() == [{"broker": 4, "seconds": 10.0}]
    assert heal_of(None, 1) is None and heal_of("30m", 2) == Heal(1800.0, 2)
    with pytest.raises(UsageError, match="--heal-after"):
        heal_of("soon", 1)


def test_a_run_without_heal_after_times_nothing_and_says_what_heals() -> None:
    """It writes nothing (docs/design/healing.md §1): the absent brokers come from the snapshot, untimed."""
    snap = dead([(4, 1), (2, 3)], {4})
    seen = unnoted(snap)
    assert seen.untimed == (4,) and seen.timed == () and seen.summary() == [{"broker": 4, "seconds": None}]
    judged = verdict(snap, seen, None)
    assert judged.healing == () and "replicas on broker(s) [4], which are not registered" in judged.reasons
    assert judged.reasons[-1] == "--heal-after re-homes the replicas of absent broker(s) 4"


def test_a_note_the_unhealthy_cluster_cannot_take_is_a_reason_to_refuse_naming_the_brokers() -> None:
    """Two brokers gone: healing's note failed (kops's records below min.insync.replicas). Not healing, and why:
    the cluster's state first, then too many absent, then the clock that could not be kept."""
    snap = dead([(4, 1), (2, 3), (3, 4)], {3, 4})
    seen = unnoted(snap, "cannot write to __kops: [Error 19] NotEnoughReplicasError: None")
    judged = verdict(snap, seen, Heal(60))
    assert judged.healing == ()
    assert judged.reasons[:3] == ["1 partition(s) offline (t-2)", "3 partition(s) under-replicated (t-0, t-1, t-2)",
                                  "replicas on broker(s) [3, 4], which are not registered"]
    assert judged.reasons[3].startswith("2 brokers absent (3, 4), more than --heal-max-brokers 1")
    assert judged.reasons[4] == ("broker(s) 3, 4 absent since a time kops could not note (cannot write to __kops: "
                                 "[Error 19] NotEnoughReplicasError: None): not healing")
    assert seen.summary() == [{"broker": 3, "seconds": None}, {"broker": 4, "seconds": None}]


def test_the_executor_does_not_wait_for_an_absent_broker_a_move_leaves_but_for_one_that_leaves_later() -> None:
    snap = dead([(4, 1), (2, 3)], {4})
    move = Move("t", 0, (4, 1), (1, 2))
    assert set(health.needed(move, snap)) == {1, 2}  # 4 is out of the ISR and leaves: Kafka drops it
    assert set(health.needed(Move("t", 1, (2, 3), (2, 4)), snap)) == {2, 3, 4}
    assert health.baseline(snap, [move]).absent == {4}
    assert health.problem(snap, [move], health.baseline(snap, [move])) is None
    live = dead([(4, 1), (2, 3)], set())
    assert health.problem(snap, [move], health.baseline(live, [move])) == "broker 4 of the batch left the cluster"
