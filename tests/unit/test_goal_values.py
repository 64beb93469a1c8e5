"""Each goal's figure and lower bound for an assignment, by hand and against the Cruise Control bench's judge."""

from __future__ import annotations

import pytest

from bench.cc_figures import bounds, figures
from kops.model.partitions import TopicPartition
from kops.planner.goal_values import OF_CAPACITY, OF_MEAN, GoalInputs, goal_figures
from tests.builders import bench_goal_inputs

T0, T1, U0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)


def _inputs(**overrides: object) -> GoalInputs:
    base: dict = {"racks": {1: "a", 2: "a", 3: "b"}, "sizes": {T0: 10, T1: 20, U0: 30},
                  "write": {T0: 5.0, T1: 5.0, U0: 10.0},
                  "capacity": {"disk": {1: 100, 2: 35, 3: 200}, "network_in": dict.fromkeys((1, 2, 3), 100),
                               "network_out": dict.fromkeys((1, 2, 3), 100)}}
    return GoalInputs(**(base | overrides))


def test_every_figure_by_hand() -> None:
    """RF 2 over racks a (1, 2) and b (3): broker 3 holds one replica of every partition in any valid layout."""
    assignment = {T0: (1, 3), T1: (3, 2), U0: (2, 3)}
    got = {f.name: f for f in goal_figures(assignment, _inputs(isr={T0: (3,), T1: (3, 2), U0: (2, 3)}))}
    assert (got["disk"].value, got["disk"].lower_bound, got["disk"].unit) == (
        round(100 * 50 / 35, 2), round(100 * 60 / 135, 2), OF_CAPACITY)
    assert (got["network_in"].value, got["network_in"].lower_bound) == (20.0, 20.0)
    # network out, leader first: 1 leads t-0 (5 x (1 + 1)), 3 leads t-1 (10), 2 leads u-0 (20)
    assert (got["network_out"].value, got["network_out"].lower_bound) == (20.0, 20.0)
    assert (got["leader_bytes_in"].value, got["leader_bytes_in"].lower_bound) == (10.0, 10.0)
    assert (got["replicas"].value, got["replicas"].lower_bound, got["replicas"].unit) == (150.0, 150.0, OF_MEAN)
    assert (got["leaders"].value, got["leaders"].lower_bound) == (100.0, 100.0)
    # topic t: 4 replicas, ceiling 2 per broker, broker 3 holds 2: none above; u: 2 replicas, ceiling 1
    assert (got["topic_replicas"].value, got["topic_replicas"].lower_bound) == (0.0, 0.0)
    # t-0's first replica (1) is out of sync: it cannot lead, so one partition of three is the bound
    assert (got["preferred_leaders"].value, got["preferred_leaders"].lower_bound) == (0.0, round(100 / 3, 2))
    led = {f.name: f for f in goal_figures(assignment, _inputs(), leaders={T0: 3})}
    assert led["preferred_leaders"].value == round(100 / 3, 2)
    assert led["leaders"].value == 200.0  # broker 3 leads two of three partitions: twice the mean


def test_unknown_capacities_read_as_a_share_of_the_mean_and_unknown_loads_are_skipped() -> None:
    inputs = _inputs(capacity={"disk": {1: 100, 2: 35}}, write={})
    got = {f.name: f for f in goal_figures({T0: (1, 3), T1: (3, 2), U0: (2, 3)}, inputs)}
    assert got["disk"].unit == OF_MEAN and got["disk"].value == pytest.approx(round(100 * 60 / 40, 2))
    assert all(got[g].skipped == "no write rates" for g in ("network_in", "network_out", "leader_bytes_in"))
    assert got["replicas"].skipped is None
    assert goal_figures({T0: (1, 3)}, _inputs(sizes={}), ("disk",))[0].skipped == "no sizes"


def test_the_resource_figures_and_bounds_agree_with_the_benchs_own_judge() -> None:
    assignment, inputs, cluster = bench_goal_inputs(20, 1200)
    got = {f.name: f for f in goal_figures(assignment, inputs)}
    judged, bound = figures(cluster, cluster.assignment), bounds(cluster)
    for name in ("disk", "network_in", "network_out", "leader_bytes_in"):
        assert got[name].value == judged[f"{name}_max"], name
        assert got[name].lower_bound == bound[f"{name}_max"], name
        assert got[name].value >= got[name].lower_bound, name
