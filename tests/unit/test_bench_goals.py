"""bench/goals.py's own logic: the scenarios' clusters (a new rack, hot topics, the broker drained), the verdict on
each goal's gap to its lower bound, and one tiny run's line."""

from __future__ import annotations

import pytest

from bench.cc_cluster import generate
from bench.goals import GAP, Check, fullest, hot_topics, new_rack, run, verdict


def test_a_new_rack_is_one_rack_of_empty_brokers_sized_as_the_others() -> None:
    cluster = generate(12, 240, racks=3)
    grown = new_rack(cluster)
    added = sorted(set(grown.brokers) - set(cluster.brokers))
    assert added == [13, 14, 15, 16]
    assert {grown.racks[b] for b in added} == {"rack-3"} and "rack-3" not in cluster.racks.values()
    assert not any(b in r for r in grown.assignment.values() for b in added)
    for caps, known in ((grown.disk, cluster.disk), (grown.nw_in, cluster.nw_in), (grown.nw_out, cluster.nw_out)):
        assert [caps[b] for b in added] == [min(known.values()), max(known.values())] * 2
        assert {b: caps[b] for b in cluster.brokers} == known


def test_hot_topics_give_a_tenth_of_the_topics_most_of_the_writes_and_keep_the_total() -> None:
    cluster = generate(12, 600, racks=3)
    hot = hot_topics(cluster)
    names = sorted({t for t, _ in cluster.write})
    hottest = {n for i, n in enumerate(names) if i % 10 == 0}
    share = sum(w for (t, _), w in hot.write.items() if t in hottest) / sum(hot.write.values())
    assert share == pytest.approx(0.9, abs=0.01)
    assert sum(hot.write.values()) == pytest.approx(sum(cluster.write.values()), rel=0.01)
    assert hot.assignment == cluster.assignment and hot.size == cluster.size


def test_the_decommission_drains_the_fullest_disk() -> None:
    cluster = generate(12, 240, racks=3)
    used = {b: sum(cluster.size[tp] for tp, r in cluster.assignment.items() if b in r) / cluster.disk[b]
            for b in cluster.brokers}
    assert used[fullest(cluster)] == max(used.values())


@pytest.mark.parametrize(("after", "found", "expected"), [
    (104.0, None, "ok"),  # within GAP of the bound (100)
    (120.0, None, "not checked"),
    (108.0, Check(109.0, 108.0, 108.0), "slack"),  # within its band's top, which lies beyond GAP
    (120.0, Check(109.0, 103.0, 120.0), "held by goals above"),  # alone it gets within GAP, not after those above
    (120.0, Check(109.0, 108.5, 119.0), "held by goals above"),  # alone it reaches its band's top
    (120.0, Check(109.0, 108.5, 108.5), "MISS: held by goals below"),  # the list up to it gets there
    (120.0, Check(109.0, 118.0, 119.0), "MISS"),  # even alone it stays beyond both
])
def test_the_verdict_on_a_gap(after: float, found: Check | None, expected: str) -> None:
    assert GAP == 5.0
    assert verdict(after, 100.0, found) == expected


def test_a_tiny_decommission_line_drains_the_broker_and_judges_from_the_assignment() -> None:
    row = run("decommission", 12, 240)
    assert row["drained"] == fullest(generate(12, 240))
    assert row["violations"]["left_on_drained"] == 0 and row["violations"]["invalid"] == []
    assert row["drain_moves"] > 0 and row["moves"] >= row["drain_moves"]
    assert row["after_plan_moves"] == row["after_plan_leader_moves"] == 0  # a plan by the list, then the rebalance
    assert set(row["goals"]) == {"disk", "network_in", "network_out", "replicas", "topic_replicas", "leaders",
                                 "leader_bytes_in", "preferred_leaders"}
    for figures in row["goals"].values():
        assert figures["lower_bound"] <= figures["after"] + 0.01 and "start" in figures
        assert (figures["room"] == "ok") == (figures["gap"] <= GAP)


def test_without_the_baseline_the_room_checks_still_say_where_each_far_goal_is_held() -> None:
    """--no-baseline (the million row): the room checks run, the single-goal baseline does not."""
    row = run("skewed", 12, 240, baseline=False)
    assert row["baseline"] == "none" and row["room_checks"] is True
    far = {g: f for g, f in row["goals"].items() if f["gap"] > GAP}
    assert far and all(f["room"] != "not checked" and f["alone"] is not None for f in far.values())
    assert row["baseline_moves"] is None and all(f["baseline_after"] is None for f in row["goals"].values())
    plan_only = run("skewed", 12, 240, checks=False, baseline=False)
    assert all(f["room"] in ("ok", "not checked") for f in plan_only["goals"].values())
    assert plan_only["moves"] == row["moves"] and plan_only["room_checks"] is False
