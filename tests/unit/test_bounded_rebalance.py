"""`kops rebalance`'s planning: limits respected, the threshold, readiness (pure, no ZooKeeper)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kops.model.partitions import Partition, PartitionState, TopicPartition
from kops.model.snapshot import RequestedMove
from kops.planner.bounded import Request, imbalance, readiness, rebalance
from kops.planner.budget import Limits
from kops.planner.planner import Policy
from tests.builders import brokers, sizes_of, snapshot, topic


def skewed(n_brokers: int = 6, partitions: int = 24):
    """Every partition on brokers 1-3: brokers 4-6 are empty."""
    return snapshot(brokers(n_brokers), [topic("t", [((p % 3) + 1, ((p + 1) % 3) + 1) for p in range(partitions)])])


def test_imbalance_is_the_share_of_load_above_the_fair_share() -> None:
    assert imbalance({1: 10, 2: 10, 3: 10}, [1, 2, 3]) == 0.0
    assert imbalance({1: 15, 2: 10, 3: 5}, [1, 2, 3]) == pytest.approx(5 / 30, abs=1e-6)
    assert imbalance({1: 0, 2: 0}, [1, 2]) == 0.0


def test_unbounded_rebalance_evens_replicas_and_reports_both_imbalances() -> None:
    snap = skewed()
    result = rebalance(snap, Request("replicas", Limits(), 0.05))
    after = result.plan.summary.replicas_after
    assert result.imbalance_before == 0.5 and result.worthwhile
    assert max(after.values()) - min(after.values()) <= 1 and result.imbalance_after == 0.0
    assert all(m.reason == "rebalance replicas" for m in result.plan.moves)


@settings(max_examples=30, deadline=None)
@given(max_moves=st.integers(1, 30), max_bytes=st.integers(0, 40_000), max_seconds=st.floats(0.0, 2.0))
def test_limits_are_respected(max_moves: int, max_bytes: int, max_seconds: float) -> None:
    snap = skewed()
    sizes = sizes_of(snap)
    limits = Limits(max_moves, max_bytes, max_seconds)
    result = rebalance(snap, Request("replicas", limits, 0.0), sizes, Policy(throttle=10_000))
    s = result.plan.summary
    assert s.moves <= max_moves and s.bytes <= max_bytes
    assert (s.estimated_seconds or 0.0) <= max_seconds + 1e-9
    # The plan leaves the cluster at least as balanced as it found it.
    assert result.imbalance_after <= result.imbalance_before


def test_the_cheapest_moves_go_first() -> None:
    snap = skewed()
    sizes = sizes_of(snap)
    few = rebalance(snap, Request("replicas", Limits(max_moves=4), 0.0), sizes)
    moved = {m.tp for m in few.plan.moves if m.kind == "data"}
    smallest = sorted(sizes.values())[:12]
    assert all(sizes[tp] <= smallest[-1] for tp in moved)


def test_below_the_threshold_nothing_is_worth_doing() -> None:
    snap = skewed()
    one = rebalance(snap, Request("replicas", Limits(max_moves=1), 0.05))
    assert one.plan.has_changes and one.improvement == pytest.approx(1 / 48, abs=1e-6) and not one.worthwhile
    three = rebalance(snap, Request("replicas", Limits(max_moves=3), 0.05))
    assert three.improvement == pytest.approx(3 / 48, abs=1e-6) and three.worthwhile
    balanced = snapshot(brokers(3), [topic("t", [(1, 2), (2, 3), (3, 1)])])
    even = rebalance(balanced, Request("replicas", Limits(), 0.0))
    assert not even.plan.has_changes and not even.worthwhile and even.imbalance_before == 0.0


def test_leader_goal_only_reorders_and_respects_max_moves() -> None:
    snap = snapshot(brokers(3), [topic("t", [(1, 2, 3)] * 9)])
    result = rebalance(snap, Request("leaders", Limits(max_moves=2), 0.0))
    assert result.plan.summary.moves == 0 and result.plan.summary.leader_moves == 2
    assert result.imbalance_before == pytest.approx(6 / 9, abs=1e-6)
    assert result.imbalance_after == pytest.approx(4 / 9, abs=1e-6)
    full = rebalance(snap, Request("leaders", Limits(), 0.0))
    assert full.imbalance_after == 0.0 and len(full.plan.election) == 6


def test_bytes_goal_moves_bytes_toward_the_mean_within_the_byte_limit() -> None:
    snap = skewed()
    sizes = sizes_of(snap)
    result = rebalance(snap, Request("bytes", Limits(max_bytes=20_000), 0.0), sizes)
    assert 0 < result.plan.summary.bytes <= 20_000 and result.imbalance_after < result.imbalance_before


def test_a_move_budget_buys_the_largest_moves_that_fit_not_the_heaviest_brokers_crumbs() -> None:
    # broker 1 is heaviest because of one partition no gap can take, plus crumbs; broker 2 is above the mean
    # with partitions that fit: under --max-moves the budget goes to those
    snap = snapshot(brokers(6, racks=None), [topic("giant", [(1,)]), topic("crumbs", [(1,)] * 5),
                                             topic("mid", [(2,)] * 5), topic("small", [(3,), (4,), (5,), (6,)])])
    sizes = {TopicPartition("giant", 0): 100_000}
    sizes |= {TopicPartition("crumbs", p): 10 for p in range(5)}
    sizes |= {TopicPartition("mid", p): 9_000 for p in range(5)}
    sizes |= {TopicPartition("small", p): 1_000 for p in range(4)}
    result = rebalance(snap, Request("bytes", Limits(max_moves=2), 0.0), sizes)
    assert sorted(m.topic for m in result.plan.moves) == ["mid", "mid"]
    assert result.imbalance_before - result.imbalance_after == pytest.approx(18_000 / sum(sizes.values()), abs=1e-6)


def test_readiness_names_what_is_wrong() -> None:
    snap = skewed()
    assert readiness(snap) == []
    busy = dataclasses.replace(snap, requested_moves=(RequestedMove("t", 0, (4, 5)),))
    assert "a reassignment of 1 partition(s) is in flight (t-0)" in readiness(busy)[0]
    t = snap.topics["t"]
    hurt = dict(t.partitions)
    hurt[1] = Partition((2, 3), state=PartitionState(2, 1, (2,), 1))
    gone = dict(t.partitions)
    gone[2] = Partition((3, 9), state=PartitionState(3, 1, (3,), 1))
    assert "1 partition(s) under-replicated (t-1)" in readiness(
        dataclasses.replace(snap, topics={"t": dataclasses.replace(t, partitions=hurt)}))
    reasons = readiness(dataclasses.replace(snap, topics={"t": dataclasses.replace(t, partitions=gone)}))
    assert any("broker(s) [9], which are not registered" in r for r in reasons)


def test_topics_being_deleted_are_never_moved() -> None:
    snap = dataclasses.replace(skewed(), pending_deletions=("t",))
    assert not rebalance(snap, Request("replicas", Limits(), 0.0)).plan.has_changes


def test_the_plan_is_deterministic() -> None:
    snap = skewed()
    sizes = sizes_of(snap)
    a = rebalance(snap, Request("replicas", Limits(max_moves=7), 0.0), sizes)
    b = rebalance(snap, Request("replicas", Limits(max_moves=7), 0.0), sizes)
    assert a.plan == b.plan and {m.tp for m in a.plan.moves} <= {TopicPartition("t", p) for p in range(24)}
