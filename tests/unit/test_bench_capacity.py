"""bench/capacity.py at a tiny size: every scenario's line has the keys the issue names, kops's plan keeps every
limit at every batch peak (or is refused), and moves_ratio is given exactly where the baseline stays inside."""

from __future__ import annotations

import pytest

from bench.capacity import SCENARIOS, declaration, judged, run, scenario_cluster, write_rates
from kops.planner.planner import Policy, plan

KEYS = {"brokers", "partitions", "scenario", "max_disk_usage_after", "max_network_in_usage_after", "hard_violations",
        "moves_ratio", "plan_seconds", "baseline_moves", "baseline_hard_violations", "baseline_max_disk_usage_after",
        "peak_rss_mb", "refused"}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_each_scenario_reports_its_figures_and_kops_stays_inside(scenario: str) -> None:
    row = run(scenario, 12, 600, 3)
    assert set(row) >= KEYS and row["scenario"] == scenario and row["partitions"] == 600
    assert row["hard_violations"] == 0
    if not row["refused"]:
        assert row["max_disk_usage_after"] <= 0.8 and row["max_network_in_usage_after"] <= 0.8  # none starts over
    assert (row["moves_ratio"] is None) == (row["baseline_hard_violations"] > 0 or row["refused"])


def test_the_full_rack_scenario_overfills_a_small_broker_without_capacities() -> None:
    """What the bench is for: the count-balanced decommission into the nearly full rack goes over a limit, the
    capacity-aware plan of the same cluster does not; both counted by the same function."""
    snap, sizes, desired = scenario_cluster("decommission-full-rack", 30, 3000, 3)
    write = write_rates(snap, 1e9)
    declared = declaration(snap, sizes, write, "decommission-full-rack")
    assert judged(plan(desired, snap, sizes, Policy(write=write)), snap, sizes, declared, write)["hard_violations"]
    kept = plan(desired, snap, sizes, Policy(capacity=declared, write=write))
    assert judged(kept, snap, sizes, declared, write)["hard_violations"] == 0
