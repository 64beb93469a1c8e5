"""Batch peaks (issue 35, docs/design/capacity.md §6.6): while a batch copies, each destination holds the new copy
and each source still the old one, so every batch's peak stays within each broker's limits: a move that would take
its destination over waits for a later batch, after its sources have freed their room, and a plan no batching keeps
inside is refused (exit 1) with the broker, the resource, the numbers and what would help."""

from __future__ import annotations

import pytest

from kops.errors import ExitCode
from kops.model import plan_format
from kops.model.capacity import CapacityDeclaration, Figure
from kops.model.desired import Execution
from kops.model.partitions import TopicPartition
from kops.model.plan import Plan
from kops.model.throttle_keys import FOLLOWER_RATE, LEADER_RATE
from kops.planner.batches import Limits, make_batches, repair_peaks, znode_entry_bytes
from kops.planner.headroom import Changes, peak_room
from kops.planner.planner import PlanningError, Policy, plan_targets
from tests.builders import brokers, snapshot, topic
from tests.overfills import hard_violations

INV = "declared inv.yml:3"
DISK = CapacityDeclaration(default={"disk": Figure(100_000, INV)})  # limit 80,000 on every broker


def batched(planned: Plan) -> list[list[str]]:
    return [[str(m.tp) for m in b.moves] for b in planned.batches]


def swap_through_a_full_broker():
    """Broker 3 holds a-0 and a-1 (60,000 of its 80,000): a-0 leaves it for 1 and b-0 (30,000) comes from 2, so it
    ends at 60,000 again, but holds 90,000 while both copy at once."""
    snap = snapshot(brokers(3, racks=None), [topic("a", [(3,), (3,)]), topic("b", [(2,)])])
    sizes = {TopicPartition("a", 0): 30_000, TopicPartition("a", 1): 30_000, TopicPartition("b", 0): 30_000}
    return snap, sizes, {TopicPartition("a", 0): (1,), TopicPartition("b", 0): (3,)}


def test_a_move_into_a_broker_waits_for_the_batch_that_frees_its_room() -> None:
    snap, sizes, targets = swap_through_a_full_broker()
    blind = plan_targets(snap, targets, "c", sizes=sizes)
    assert batched(blind) == [["a-0", "b-0"]]
    over = hard_violations(blind, snap, sizes, DISK)
    assert [(o.broker, o.resource, o.held, o.batch, o.cap) for o in over] == [(3, "disk", 90_000, 1, 80_000)]
    kept = plan_targets(snap, targets, "c", sizes=sizes, policy=Policy(capacity=DISK))
    assert batched(kept) == [["a-0"], ["b-0"]]
    assert hard_violations(kept, snap, sizes, DISK) == []
    report = kept.summary.capacity
    assert report is not None and report.brokers[3]["disk"].peak == 60_000


def test_where_every_copy_at_once_fits_the_batches_stand_as_made() -> None:
    """`PeakRoom.always_room`: with every copy of the plan in flight at once on top of the start, broker 3 would
    hold 90,000 (over 80,000) and the batches are repaired; with room for that, repairing keeps every batch as it
    is, so the batching skips it."""
    snap, sizes, targets = swap_through_a_full_broker()
    moves = list(plan_targets(snap, targets, "c", sizes=sizes).moves)
    entry_bytes = {(m.topic, m.partition): znode_entry_bytes(m) for m in moves}
    roomy = CapacityDeclaration(default={"disk": Figure(113_000, INV)})  # limit 90,400
    for declared, always in ((DISK, False), (roomy, True)):
        room = peak_room(Changes(), snap, sizes, declared)
        assert room is not None and room.always_room(moves) is always
        grouped = make_batches(moves, Limits(), 1.0, True)
        assert (repair_peaks(grouped, room, Limits(), entry_bytes) == grouped) is always


def test_a_batch_peak_over_the_limit_of_a_plan_made_elsewhere_is_named() -> None:
    """The same targets, with the peak check alone (`hard_violations` holds any plan to a declaration): what
    the bench and the property test count."""
    snap, sizes, targets = swap_through_a_full_broker()
    blind = plan_targets(snap, targets, "c", sizes=sizes)
    tighter = CapacityDeclaration(default={"disk": Figure(100_000, INV)}, limits={"disk": 0.95})
    assert hard_violations(blind, snap, sizes, tighter) == []  # 90,000 ≤ 95,000


def test_deferred_moves_keep_the_batch_limits() -> None:
    snap = snapshot(brokers(4, racks=None), [topic("a", [(3,), (3,)]), topic("b", [(2,), (2,)])])
    sizes = {tp: 30_000 for tp in (TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0),
                                   TopicPartition("b", 1))}
    targets = {TopicPartition("a", 0): (1,), TopicPartition("a", 1): (4,), TopicPartition("b", 0): (3,),
               TopicPartition("b", 1): (3,)}
    blind = plan_targets(snap, targets, "c", Execution(max_partitions=2), sizes=sizes)
    assert hard_violations(blind, snap, sizes, DISK)  # some batch copies onto 3 before both a's have left it
    kept = plan_targets(snap, targets, "c", Execution(max_partitions=2), sizes=sizes, policy=Policy(capacity=DISK))
    assert hard_violations(kept, snap, sizes, DISK) == []
    assert all(len(b.moves) <= 2 for b in kept.batches)
    assert sorted(m for b in batched(kept) for m in b) == ["a-0", "a-1", "b-0", "b-1"]


def test_a_swap_between_two_full_brokers_is_refused_with_the_numbers() -> None:
    """A needs B's room and B needs A's: each move alone takes its destination over, in any batch."""
    snap = snapshot(brokers(3, racks=None), [topic("a", [(1,)]), topic("b", [(2,)]), topic("c", [(1,), (2,)])])
    sizes = {TopicPartition("a", 0): 40_000, TopicPartition("b", 0): 40_000, TopicPartition("c", 0): 35_000,
             TopicPartition("c", 1): 35_000}
    targets = {TopicPartition("a", 0): (2,), TopicPartition("b", 0): (1,)}
    assert plan_targets(snap, targets, "c", sizes=sizes).moves  # without capacities: one batch, both at once
    with pytest.raises(PlanningError) as refused:
        plan_targets(snap, targets, "c", sizes=sizes, policy=Policy(capacity=DISK), where="moves.json")
    line = refused.value.one_line()
    assert line.startswith("moves.json:1:1: no batching keeps this plan within the limits: broker 2 would hold "
                           "112.3 KiB of disk at the peak of batch 1 (its new copy of a-0 written while the old one "
                           "is still there), over its limit 78.1 KiB (limit 0.8 of 97.7 KiB declared inv.yml:3)")
    assert "through a third broker" in line and "capacity.limits.disk" in line
    assert refused.value.exit_code == ExitCode.ERROR


def test_targets_that_overfill_a_broker_at_the_end_are_named_as_such_not_as_a_peak() -> None:
    snap = snapshot(brokers(2, racks=None), [topic("t", [(1,), (1,)])])
    sizes = {TopicPartition("t", 0): 50_000, TopicPartition("t", 1): 50_000}
    targets = {TopicPartition("t", 0): (2,), TopicPartition("t", 1): (2,)}
    with pytest.raises(PlanningError, match="broker 2 would hold 97.7 KiB of disk after the plan"):
        plan_targets(snap, targets, "c", sizes=sizes, policy=Policy(capacity=DISK))


def test_network_in_and_replica_caps_peak_too() -> None:
    """A replica cap of 2: broker 3 holds a-0 and a-1, a-0 leaves and b-0 comes: 3 replicas while both copy."""
    snap, sizes, targets = swap_through_a_full_broker()
    capped = CapacityDeclaration(default={"replicas": Figure(2.0, INV)})
    assert [o.resource for o in hard_violations(plan_targets(snap, targets, "c", sizes=sizes), snap, sizes,
                                                 capped)] == ["replicas"]
    assert batched(plan_targets(snap, targets, "c", sizes=sizes, policy=Policy(capacity=capped))) == [["a-0"],
                                                                                                        ["b-0"]]
    rates = CapacityDeclaration(default={"network_in": Figure(1_000.0, INV)})  # limit 800 bytes/s
    write = {tp: 300.0 for tp in sizes}
    kept = plan_targets(snap, targets, "c", sizes=sizes, policy=Policy(capacity=rates, write=write))
    assert batched(kept) == [["a-0"], ["b-0"]]
    assert hard_violations(kept, snap, sizes, rates, write) == []


def into_a_busy_link(**kwargs):
    """Broker 3 receives b-0 and b-1 (1,000 bytes each, written at 100 bytes/s each) while producers already send it
    500 bytes/s for a-0: a network-in capacity of 1,000 bytes/s, limit 800."""
    snap = snapshot(brokers(3, racks=None), [topic("a", [(3,)]), topic("b", [(1,), (2,)])], **kwargs)
    sizes = {TopicPartition("a", 0): 1_000, TopicPartition("b", 0): 1_000, TopicPartition("b", 1): 1_000}
    write = {TopicPartition("a", 0): 500.0, TopicPartition("b", 0): 100.0, TopicPartition("b", 1): 100.0}
    rates = CapacityDeclaration(default={"network_in": Figure(1_000.0, INV)})
    return snap, sizes, write, rates, {TopicPartition("b", 0): (3,), TopicPartition("b", 1): (3,)}


def catch_up(planned: Plan) -> list[str]:
    return [w for w in planned.warnings if "catch up" in w or "follower throttle" in w]


def test_a_throttle_within_the_receiving_broker_s_network_room_is_left_as_it_is() -> None:
    """Broker 3 takes 500 in from producers; while the batch copies, its throttled fetches carry the backlog and
    the 200 written to b-0 and b-1, at up to 250: 750, within its 800."""
    snap, sizes, write, rates, targets = into_a_busy_link()
    kept = plan_targets(snap, targets, "c", Execution(throttle=250), sizes=sizes,
                        policy=Policy(capacity=rates, write=write))
    assert batched(kept) == [["b-0", "b-1"]] and catch_up(kept) == []
    throttle = kept.batches[0].throttle
    assert throttle.caps == {} and throttle.brokers[3][FOLLOWER_RATE] == "250"


def test_a_throttle_above_a_receiving_broker_s_network_room_is_held_to_it_there() -> None:
    """At 400 the fetches could take broker 3 to 900 in: its follower rate is held to 300 (800 less the 500 not
    throttled), the batch's estimate counts 2,000 bytes at 300 bytes/s, the sources keep 400, and the plan says so."""
    snap, sizes, write, rates, targets = into_a_busy_link()
    planned = plan_targets(snap, targets, "c", Execution(throttle=400), sizes=sizes,
                           policy=Policy(capacity=rates, write=write))
    batch = planned.batches[0]
    assert batch.throttle.caps == {3: 300} and batch.throttle.rate == 400
    assert batch.throttle.brokers[3] == {LEADER_RATE: "400", FOLLOWER_RATE: "300"}
    assert batch.throttle.brokers[1] == {LEADER_RATE: "400", FOLLOWER_RATE: "400"}
    assert batch.estimate.seconds == pytest.approx(2_000 / 300)
    assert planned.summary.estimated_seconds == pytest.approx(2_000 / 300)
    assert planned.summary.lower_bound_seconds == pytest.approx(2_000 / 300, abs=1e-3)  # broker 3 never faster
    assert catch_up(planned) == [
        "the follower throttle is held below the plan's rate on 1 broker(s), to their network-in room at a batch's "
        "peak (tightest: broker 3 at 300 B/s in batch 1); the batches that copy to them take longer, as their "
        "estimates say"]
    assert hard_violations(planned, snap, sizes, rates, write) == []
    written = plan_format.dumps(planned)
    assert b'"caps":{"3":300}' in written.replace(b" ", b"").replace(b"\n", b"")
    assert plan_format.loads(written, "plan.json").batches[0].throttle.caps == {3: 300}


def test_the_rollback_copies_back_within_the_room_of_the_brokers_it_refills() -> None:
    """Broker 1 also leads c-0, written at 700 bytes/s: once b-0 left it, the rollback's fetches of b-0 back onto it
    carry b-0's backlog and its 100 bytes/s on top of those 700, so its follower rate in the rollback is held to
    100 (800 less 700); broker 2 (nothing else written to it) keeps the rate, and the forward batch is as before."""
    snap, sizes, write, rates, targets = into_a_busy_link()
    snap = snapshot(brokers(3, racks=None), [topic("a", [(3,)]), topic("b", [(1,), (2,)]), topic("c", [(1,)])])
    sizes, write = sizes | {TopicPartition("c", 0): 1_000}, write | {TopicPartition("c", 0): 700.0}
    planned = plan_targets(snap, targets, "c", Execution(throttle=400), sizes=sizes,
                           policy=Policy(capacity=rates, write=write))
    assert [b.throttle.caps for b in planned.batches] == [{3: 300}]
    back = planned.rollback.batches
    assert [[str(m.tp) for m in b.moves] for b in back] == [["b-0", "b-1"]]
    assert back[0].throttle.caps == {1: 100}
    assert back[0].throttle.brokers[1] == {LEADER_RATE: "400", FOLLOWER_RATE: "100"}
    assert back[0].throttle.brokers[2] == {LEADER_RATE: "400", FOLLOWER_RATE: "400"}
    assert plan_format.loads(plan_format.dumps(planned), "plan.json").rollback.batches[0].throttle.caps == {1: 100}
    assert catch_up(planned)[1:] == [
        "a rollback would hold the follower throttle below the plan's rate on 1 broker(s) it copies back onto "
        "(tightest: broker 1 at 100 B/s in rollback batch 1): the rollback batches' estimates count the slower copy"]


def test_a_lower_follower_rate_already_on_the_broker_stays() -> None:
    """Broker 3 already holds its fetches to 50 bytes/s (an operator's rate, which kops keeps under its own cap)."""
    snap, sizes, write, rates, targets = into_a_busy_link(broker_configs={"3": {FOLLOWER_RATE: "50"}})
    planned = plan_targets(snap, targets, "c", Execution(throttle=400), sizes=sizes,
                           policy=Policy(capacity=rates, write=write))
    assert planned.batches[0].throttle.brokers[3][FOLLOWER_RATE] == "50"
    assert planned.batches[0].throttle.caps == {3: 300}


def test_an_unthrottled_plan_says_its_catch_up_is_not_bounded() -> None:
    snap, sizes, write, rates, targets = into_a_busy_link()
    planned = plan_targets(snap, targets, "c", sizes=sizes, policy=Policy(capacity=rates, write=write))
    assert catch_up(planned) == ["network in while the copies catch up is not held to capacity.limits.network_in: "
                                 "the plan has no throttle (set execution.throttle or pass --throttle)"]
