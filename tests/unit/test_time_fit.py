"""Trimming a bounded rebalance into its time budget (kops/planner/time_fit.py)."""

from __future__ import annotations

import random

from kops.model.plan import Batch, Estimate, Move, Throttle
from kops.planner.batches import port_times
from kops.planner.time_fit import moves_to_drop

RATE = 100.0


def _batch(index: int, moves: list[Move]) -> Batch:
    return Batch(index, tuple(moves), Throttle({}, {}, None), Estimate(None, None))


def _move(partition: int, source: int, dest: int, size: int) -> Move:
    return Move("t", partition, (source, 9), (dest, 9), size, source)


def _seconds(batches: list[Batch], dropped: set) -> float:
    return sum(port_times([m for m in b.moves if m.tp not in dropped], RATE, RATE)[2] for b in batches)


def test_a_plan_within_its_budget_loses_nothing() -> None:
    batches = [_batch(1, [_move(0, 1, 2, 500), _move(1, 3, 4, 300)])]
    assert moves_to_drop(batches, 5.0, RATE) == set()


def test_the_overshoot_costs_the_move_on_the_busiest_port_that_covers_it_not_the_largest_move() -> None:
    # broker 2 takes 900 bytes (9 s); the next port carries 800 (8 s); a 1 s overshoot is best paid with the
    # 100-byte move into broker 2, not with the 800-byte move elsewhere
    batches = [_batch(1, [_move(0, 1, 2, 800), _move(1, 3, 2, 100), _move(2, 5, 6, 800)])]
    assert moves_to_drop(batches, 8.0, RATE) == {_move(1, 3, 2, 100).tp}


def test_a_leader_serving_several_copies_is_a_port_too() -> None:
    both = Move("t", 0, (1, 2), (3, 4), 400, 1)  # leader 1 sends 800 bytes
    batches = [_batch(1, [both, _move(1, 5, 6, 300)])]
    assert moves_to_drop(batches, 7.0, RATE) == {both.tp}


def test_whatever_the_batches_the_trimmed_plan_fits_and_gives_up_less_than_dropping_the_largest_moves() -> None:
    rng = random.Random(7)
    lost_here = lost_before = 0
    for _ in range(50):
        batches = [_batch(i, [_move(i * 100 + p, rng.randrange(10), 10 + rng.randrange(10), rng.randrange(1, 1000))
                              for p in range(rng.randrange(1, 40))]) for i in range(rng.randrange(1, 6))]
        total = _seconds(batches, set())
        budget = total * rng.uniform(0.3, 1.0)
        dropped = moves_to_drop(batches, budget, RATE)
        assert _seconds(batches, dropped) <= budget + 1e-9
        lost_here += sum(m.bytes for b in batches for m in b.moves if m.tp in dropped)
        lost_before += _largest_tenths_lost(batches, budget)
    assert lost_here < 0.8 * lost_before


def _largest_tenths_lost(batches: list[Batch], budget: float) -> int:
    """What the rule time_fit replaced gave up: the largest tenth of the moves, again, until the plan fits."""
    dropped: set = set()
    while _seconds(batches, dropped) > budget + 1e-9:
        kept = sorted((m for b in batches for m in b.moves if m.tp not in dropped), key=lambda m: (m.bytes, m.tp))
        dropped |= {m.tp for m in kept[-max(1, len(kept) // 10):]}
    return sum(m.bytes for b in batches for m in b.moves if m.tp in dropped)
