"""bench/vs_cruise_control.py: the one metric function on a hand-made case, and the comparison at a tiny scale.

The comparison asserts only what must hold of any result: each tool's assignment is valid (the same partitions,
each keeping its replication factor, no broker twice). Cruise Control's side starts a JVM, so it is an integration
test: tests/integration/test_vs_cruise_control_anchor.py."""

from __future__ import annotations

import statistics
from pathlib import Path

from bench.cc_cluster import MIB, Assignment, Cluster, assignment_csv, generate, read_assignment
from bench.cc_figures import bounds, figures, invalid
from bench.vs_cruise_control import VARIANTS, compare


def _hand_made() -> Cluster:
    """Brokers 1 and 2 in rack a, 3 in rack b; broker 2's disk is small, broker 3's large; RF 2."""
    return Cluster("hand", {1: "a", 2: "a", 3: "b"}, disk={1: 100, 2: 35, 3: 200}, nw_in={1: 100, 2: 100, 3: 100},
                   nw_out={1: 100, 2: 100, 3: 100},
                   assignment={("t", 0): (1, 3), ("t", 1): (2, 3), ("u", 0): (1, 2)},
                   size={("t", 0): 10, ("t", 1): 20, ("u", 0): 30}, write={("t", 0): 5, ("t", 1): 5, ("u", 0): 10})


def test_figures_by_hand() -> None:
    """t-0's leadership moves to 3, t-1's replica moves from 2 to 1, u-0 (both replicas in rack a) stays."""
    cluster = _hand_made()
    after: Assignment = {("t", 0): (3, 1), ("t", 1): (1, 3), ("u", 0): (1, 2)}
    f = figures(cluster, after)
    disk = [60.0, 100 * 30 / 35, 15.0]  # broker 1: 10 + 20 + 30 of 100; broker 2: 30 of 35; broker 3: 30 of 200
    assert (f["disk_max"], f["disk_min"], f["disk_std"]) == (85.71, 15.0, round(statistics.pstdev(disk), 2))
    assert (f["network_in_max"], f["network_in_min"]) == (20.0, 10.0)  # 5 + 5 + 10; 10; 5 + 5
    # network out on the leader: write × (1 follower + fan-out 1): broker 1 leads t-1 and u-0, 3 leads t-0
    assert (f["network_out_max"], f["network_out_min"]) == (30.0, 0.0)
    assert f["network_out_potential_max"] == 40.0  # broker 1 could lead all three: 10 + 10 + 20
    assert (f["replicas_max"], f["replicas_min"], f["replica_spread"]) == (3, 1, 2)
    assert (f["leaders_max"], f["leaders_min"], f["leader_spread"]) == (2, 0, 2)
    assert (f["topic_replica_spread"], f["topic_replica_spread_max"]) == (1.5, 2)  # t: 2, 0, 2; u: 1, 1, 0
    assert (f["rack_violations"], f["capacity_violations"], f["hard_violations"]) == (1, 1, 2)
    assert (f["replica_moves"], f["bytes_moved"], f["leader_moves"]) == (1, 20 * MIB, 1)


def test_bounds_by_hand() -> None:
    """RF 2 over two racks: each rack holds one replica of every partition, so rack b's lone broker 3 holds all
    three; rack a shares 60 MiB over 135 MiB of disk."""
    assert bounds(_hand_made()) == {"disk_max": round(100 * 60 / 135, 2), "network_in_max": 20.0,
                                    "network_out_max": 20.0,  # u-0's 20 on one broker of capacity 100
                                    "leader_bytes_in_max": 10.0, "replicas_max": 3, "leaders_max": 1,
                                    "topic_replica_spread": 1.0}


def test_no_figure_of_a_valid_assignment_beats_its_bound() -> None:
    cluster = generate(12, 600)
    found, bound = figures(cluster, cluster.assignment), bounds(cluster)
    for name, value in bound.items():
        assert found[name] >= value, name


def test_invalid_assignments_are_named() -> None:
    cluster = _hand_made()
    assert invalid(cluster, dict(cluster.assignment)) == []
    assert invalid(cluster, {("t", 0): (1, 3), ("t", 1): (2, 3)}) == ["partitions differ: 1 missing, 0 unknown"]
    wrong = {("t", 0): (1, 3, 2), ("t", 1): (3, 3), ("u", 0): (1, 9)}
    assert invalid(cluster, wrong) == ["t-0: replication factor 2 became 3", "t-1: a broker twice in (3, 3)",
                                       "u-0: unknown broker in (1, 9)"]


def test_the_csv_round_trip_keeps_order_and_leader(tmp_path: Path) -> None:
    cluster = generate(6, 120)
    path = tmp_path / "replicas.csv"
    path.write_text(assignment_csv(cluster, cluster.assignment), encoding="utf-8")
    assert read_assignment(path) == cluster.assignment
    path.write_text("topic,partition,broker,position,is_leader\nt,0,4,0,0\nt,0,5,1,1\nt,0,6,2,0\n", encoding="utf-8")
    assert read_assignment(path) == {("t", 0): (5, 4, 6)}  # the row marked leader first, whatever its position


def assert_valid(rows: list[dict], tools: set[str]) -> None:
    by_tool = {row["tool"]: row for row in rows}
    assert tools <= set(by_tool)
    for tool in tools:
        assert by_tool[tool]["status"] == "ok", by_tool[tool]
        assert "disk_max" in by_tool[tool]


def test_kops_at_a_tiny_scale(tmp_path: Path) -> None:
    """Each kops variant reads the cluster through kops's own readers and leaves a valid assignment."""
    assert_valid(list(compare(6, 120, tmp_path, cc_runs=0)), {"before", "lower-bound", *VARIANTS})
