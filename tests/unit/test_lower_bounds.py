"""Lower bounds are below every valid assignment's peak, and above the mean where racks force load."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kops.planner.lower_bounds import _split, count_bound, fair_shares, rack_pools, topic_excess_bound
from tests.examples import examples

RACKS_321 = {1: "a", 2: "a", 3: "a", 4: "b", 5: "b", 6: "c"}


def test_a_rack_of_one_broker_holds_every_partition_so_the_bound_is_twice_the_mean() -> None:
    items = [(10.0, 3)] * 12
    shares = fair_shares(items, RACKS_321, dict.fromkeys(RACKS_321, 100.0))
    mean = sum(load * f for load, f in items) / 600.0
    assert shares.shares[6] == pytest.approx(2 * mean)
    assert shares.bound == pytest.approx(2 * mean)
    # every rack holds one replica of each partition (RF = racks): 120 on rack a's 300, and on rack b's 200
    assert shares.shares[1] == pytest.approx(120 / 300) and shares.shares[4] == pytest.approx(120 / 200)


def test_without_racks_the_fair_share_is_the_mean_utilization_of_unequal_brokers() -> None:
    racks: dict[int, str | None] = {1: None, 2: None, 3: None}
    shares = fair_shares([(30.0, 2)] * 10, racks, {1: 100.0, 2: 200.0, 3: 300.0})
    assert all(v == pytest.approx(600 / 600) for v in shares.shares.values())
    assert shares.bound == pytest.approx(1.0)


def test_the_largest_partition_over_the_largest_disk_bounds_a_few_big_partitions() -> None:
    racks: dict[int, str | None] = {1: None, 2: None, 3: None, 4: None}
    shares = fair_shares([(90.0, 1), (1.0, 1), (1.0, 1)], racks, dict.fromkeys(racks, 100.0))
    assert shares.bound == pytest.approx(0.9)
    assert max(shares.shares.values()) == pytest.approx(92 / 400)


def test_one_rack_missing_means_no_rack_rule_binds() -> None:
    assert set(rack_pools({1: "a", 2: None, 3: "b"}).values()) == {""}
    assert set(rack_pools({1: "a", 2: "a"}).values()) == {""}
    assert rack_pools({1: "a", 2: "b"}) == {1: "a", 2: "b"}


def test_counts_and_topic_excess_with_a_lone_rack() -> None:
    # 12 partitions of RF 3 on racks of 3, 2 and 1 brokers: broker 6 holds 12 replicas, the mean is 6
    assert count_bound([3] * 12, RACKS_321) == 12
    assert count_bound([3] * 12, dict.fromkeys(RACKS_321)) == 6
    # one topic: ceiling ceil(36 / 6) = 6 per broker, broker 6 must hold 12: 6 above
    assert topic_excess_bound([3] * 12, RACKS_321) == 6
    assert topic_excess_bound([3] * 12, dict.fromkeys(RACKS_321)) == 0


def test_more_replicas_than_brokers_counts_only_what_the_brokers_can_hold() -> None:
    # a play that leaves two eligible brokers for partitions of three replicas: the third sits on a broker being
    # drained, outside the count (this loop ran forever before)
    assert _split(3, {"a": 1, "b": 1}) == {"a": (1, 1), "b": (1, 1)}
    assert count_bound([3, 3, 3], {1: "a", 2: "b"}) == 3


def test_a_factor_above_the_racks_fills_a_small_rack_to_one_replica_per_broker() -> None:
    # RF 4 over 2 racks: 2 replicas per rack; rack b has one broker, so it can hold only one of them
    racks = {1: "a", 2: "a", 3: "a", 4: "b"}
    shares = fair_shares([(1.0, 4)] * 5, racks, dict.fromkeys(racks, 1.0))
    assert shares.shares[4] == pytest.approx(5.0)
    assert shares.shares[1] == pytest.approx(5.0)


def _valid_assignments(factors: list[int], racks: dict[int, str | None]) -> list[list[tuple[int, ...]]]:
    """Every assignment of the partitions whose replicas sit on distinct brokers, spread over racks as evenly as
    they allow: the rack counts, largest first, are the least of all choices (what the bound calls valid)."""
    brokers = sorted(racks)
    pools = rack_pools(racks)

    def spread(replicas: tuple[int, ...]) -> list[int]:
        per = dict.fromkeys(set(pools.values()), 0)
        for b in replicas:
            per[pools[b]] += 1
        return sorted(per.values(), reverse=True)

    def evenest(f: int) -> list[tuple[int, ...]]:
        combos = list(itertools.combinations(brokers, f))
        best = min(spread(c) for c in combos)
        return [c for c in combos if spread(c) == best]

    options = [evenest(f) for f in factors]
    return [list(a) for a in itertools.product(*options)]


@settings(max_examples=examples(150), deadline=None)
@given(st.integers(2, 5), st.integers(1, 3), st.randoms(use_true_random=False))
def test_no_valid_assignment_peaks_below_the_bound(brokers: int, partitions: int, rnd: random.Random) -> None:
    rack_names = ["a", "b", "c"][: rnd.randint(1, 3)]
    racks: dict[int, str | None] = {b: rnd.choice(rack_names) for b in range(1, brokers + 1)}
    capacity = {b: float(rnd.choice((1, 2, 3))) for b in racks}
    factors = [rnd.randint(1, brokers) for _ in range(partitions)]
    loads = [float(rnd.randint(1, 9)) for _ in range(partitions)]
    shares = fair_shares(list(zip(loads, factors, strict=True)), racks, capacity)
    assignments = _valid_assignments(factors, racks)
    peaks = []
    for assignment in assignments:
        held = dict.fromkeys(racks, 0.0)
        for load, replicas in zip(loads, assignment, strict=True):
            for b in replicas:
                held[b] += load
        peaks.append(max(held[b] / capacity[b] for b in racks))
    if peaks:
        assert min(peaks) >= shares.bound - 1e-9


@settings(max_examples=examples(150), deadline=None)
@given(st.dictionaries(st.sampled_from("abcd"), st.integers(1, 3), min_size=1), st.integers(1, 6))
def test_the_split_is_what_the_evenest_spreads_hold(members: dict[str, int], factor: int) -> None:
    racks: dict[int, str | None] = {}
    for rack, n in sorted(members.items()):
        for _ in range(n):
            racks[len(racks) + 1] = rack
    if factor > len(racks):
        return
    if len(members) < 2:
        return
    held = [[sum(1 for b in replicas if racks[b] == r) for r in sorted(members)]
            for (replicas,) in _valid_assignments([factor], racks)]
    split = _split(factor, members)
    for i, rack in enumerate(sorted(members)):
        assert split[rack] == (min(h[i] for h in held), max(h[i] for h in held))
