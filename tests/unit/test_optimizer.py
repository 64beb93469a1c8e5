"""The goal-list optimizer: hard limits and racks hold, no goal ends worse, a second walk finds nothing to do,
the same input gives the same actions, budgets bound it. Small random clusters (hypothesis) and the bench's
generated cluster."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from kops.model.goals import GOAL_NAMES
from kops.model.partitions import TopicPartition
from kops.planner import optimizer
from kops.planner.bands import Band, bands
from kops.planner.goal_state import GoalState
from kops.planner.goal_values import GoalInputs, goal_figures
from kops.planner.optimizer import Spend, _Order, optimize
from kops.planner.relief import RELIEF_GOALS
from tests.builders import bench_goal_inputs
from tests.examples import examples

CC_ORDER = ("replicas", "disk", "network_in", "network_out", "topic_replicas", "leaders", "leader_bytes_in")
LIMITED = ("disk", "network_in", "network_out")


def _cluster(rnd: random.Random) -> tuple[dict[TopicPartition, tuple[int, ...]], GoalInputs, dict]:
    brokers = rnd.randint(3, 8)
    rack_names = ["a", "b", "c"][: rnd.randint(1, 3)]
    racks: dict[int, str | None] = {b: (rack_names[b % len(rack_names)] if rnd.random() < 0.8 else None)
                                    for b in range(1, brokers + 1)}
    if None in racks.values():
        racks = dict.fromkeys(racks)
    assignment = {}
    for t in range(rnd.randint(1, 4)):
        for p in range(rnd.randint(1, 12)):
            rf = rnd.randint(1, min(3, brokers))
            favoured = sorted(racks, key=lambda b: (rnd.random() * (3 if b % 3 == 0 else 1)))
            assignment[TopicPartition(f"t{t}", p)] = tuple(favoured[:rf])
    caps = {r: {b: float(rnd.choice((1, 2)) * 1000) for b in racks} for r in LIMITED}
    inputs = GoalInputs(racks=racks, sizes={tp: rnd.randint(1, 200) for tp in assignment},
                        write={tp: float(rnd.randint(0, 50)) for tp in assignment}, capacity=caps)
    limits = {r: {b: 0.8 * c for b, c in caps[r].items()} for r in LIMITED} | {
        "replicas": {b: float(len(assignment)) for b in racks}}
    return assignment, inputs, limits


def _over(state: GoalState, start: dict[str, dict[int, float]]) -> list[str]:
    """Brokers above a limit that they were within, or fuller than they started where they started above."""
    bad = []
    for resource, per_broker in state.limits.items():
        for b, limit in per_broker.items():
            now, was = state.load[resource][b], start[resource][b]
            if now > limit + 1e-6 and now > was + 1e-6:
                bad.append(f"broker {b} {resource} {now} > {limit}")
    return bad


def _racks_kept(before: dict, after: dict, racks: dict) -> bool:
    """A partition never ends on fewer distinct racks than it started (kops's rack rule)."""
    return all(len({racks[b] for b in after[tp]}) >= len({racks[b] for b in r}) or None in racks.values()
               for tp, r in before.items())


@settings(max_examples=examples(200), deadline=None)
@given(st.randoms(use_true_random=False), st.permutations(CC_ORDER))
def test_limits_racks_no_goal_worse_and_a_second_walk_does_nothing(rnd: random.Random, order: list[str]) -> None:
    assignment, inputs, limits = _cluster(rnd)
    goals = tuple(order)
    state = GoalState(assignment, inputs, limits)
    start = {r: dict(state.load[r]) for r in limits}
    outcome = optimize(state, goals)
    after = dict(state.replicas)
    assert set(after) == set(assignment)
    assert all(len(after[tp]) == len(r) and len(set(after[tp])) == len(r) for tp, r in assignment.items())
    assert _over(state, start) == []
    assert _racks_kept(assignment, after, inputs.racks)
    if not any(a.goal in RELIEF_GOALS for a in outcome.actions):  # hard limits first: relief may cost a goal
        before_figures = {f.name: f.value for f in goal_figures(assignment, inputs, goals)}
        after_figures = {f.name: f.value for f in goal_figures(after, inputs, goals)}
        assert [g for g in goals if after_figures[g] > before_figures[g] + 0.01] == [], (before_figures, after_figures)
    if outcome.converged:
        again = GoalState(after, inputs, limits)
        assert optimize(again, goals).actions == ()



def test_a_second_walk_after_a_trough_lowered_by_a_higher_goal_does_nothing() -> None:
    """Found by the property test above (a developer's random run). Network in moves t0-6 off broker 2, which led
    it, so broker 2's network out falls to 24 while the goal's band, drawn from the start's trough, keeps its floor
    at 70: broker 2 pulls t0-5's leadership from broker 1, refused since broker 1 would fall to 69. A second run
    drew the floor at 37 from the lower trough and took the leadership; the walk now walks again with the bands
    drawn from where it ended whenever it lowered a goal's trough (`optimizer._trough_fell`)."""
    t = [TopicPartition("t0", p) for p in range(9)]
    layout = dict(zip(t, [(1,), (3, 1, 2), (1,), (1,), (2, 3), (1, 2), (2,), (1, 2, 3), (1,)], strict=True))
    sizes = dict(zip(t, [1, 1, 1, 1, 1, 2, 1, 1, 1], strict=True))
    write = dict(zip(t, [0.0, 24.0, 0.0, 0.0, 12.0, 25.0, 46.0, 23.0, 0.0], strict=True))
    caps = {"disk": {1: 1000.0, 2: 1000.0, 3: 1000.0}, "network_in": {1: 1000.0, 2: 1000.0, 3: 2000.0},
            "network_out": {1: 2000.0, 2: 2000.0, 3: 2000.0}}
    inputs = GoalInputs(racks={1: "a", 2: "a", 3: "a"}, sizes=sizes, write=write, capacity=caps)
    limits = {r: {b: 0.8 * c for b, c in per.items()} for r, per in caps.items()} | {
        "replicas": {b: 9.0 for b in (1, 2, 3)}}
    goals = ("replicas", "disk", "network_in", "network_out", "topic_replicas", "leaders", "leader_bytes_in")
    state = GoalState(layout, inputs, limits)
    assert optimize(state, goals).converged
    assert optimize(GoalState(dict(state.replicas), inputs, limits), goals).actions == ()


def test_the_same_input_gives_the_same_actions() -> None:
    runs = []
    for _ in range(2):
        assignment, inputs, limits = _cluster(random.Random(11))
        runs.append(optimize(GoalState(assignment, inputs, limits), CC_ORDER).actions)
    assert runs[0] == runs[1] and runs[0]


def test_a_budget_of_one_move_goes_to_the_highest_unmet_goal() -> None:
    assignment, inputs, _cluster = bench_goal_inputs(12, 600)
    state = GoalState(assignment, inputs)
    spend = Spend(max_moves=1, max_leader_moves=0)
    outcome = optimize(state, ("disk", "replicas"), spend)
    assert [a.goal for a in outcome.actions] == ["disk"] and spend.moves == 1


def test_goals_without_their_load_are_skipped_with_the_reason() -> None:
    assignment, inputs, limits = _cluster(random.Random(3))
    bare = GoalInputs(racks=inputs.racks)
    outcome = optimize(GoalState(assignment, bare, {}), GOAL_NAMES)
    assert outcome.skipped["disk"] == "no sizes" and outcome.skipped["network_in"] == "no write rates"
    assert "replicas" not in outcome.skipped


def test_on_the_benchs_skewed_cluster_disk_first_ends_in_its_band_within_the_limits() -> None:
    """Disk first (the default order): nothing above it, so every broker ends in its disk band, far from the
    start's 67% peak, and within 80% of its disk."""
    assignment, inputs, cluster = bench_goal_inputs(20, 1200)
    limits = {"disk": {b: 0.8 * c for b, c in cluster.disk.items()}}
    state = GoalState(assignment, inputs, limits)
    disk = bands(GoalState(assignment, inputs, limits), ("disk",))[0][0]
    assert isinstance(disk, Band)
    outcome = optimize(state, GOAL_NAMES)
    assert outcome.converged
    before = {f.name: f for f in goal_figures(assignment, inputs, GOAL_NAMES)}
    after = {f.name: f for f in goal_figures(state.replicas, inputs, GOAL_NAMES)}
    assert before["disk"].value > 60 and after["disk"].value < before["disk"].value
    assert all(disk.lo[b] - 1e-6 <= state.load["disk"][b] <= disk.hi[b] + 1e-6 for b in cluster.brokers)
    assert all(state.load["disk"][b] <= 0.8 * cluster.disk[b] for b in cluster.brokers)


def test_a_replica_on_an_absent_broker_is_counted_there_and_no_replica_goes_there() -> None:
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    racks: dict[int, str | None] = {1: None, 2: None, 3: None}
    assignment = {a: (1, 9), b: (1, 2), TopicPartition("t", 2): (1, 3), TopicPartition("t", 3): (1, 2)}
    state = GoalState(assignment, GoalInputs(racks=racks, sizes=dict.fromkeys(assignment, 10)))
    assert state.load["disk"][9] == 10 and 9 not in state.brokers
    optimize(state, ("replicas", "disk"))
    assert 9 in state.replicas[a] and all(9 not in r for tp, r in state.replicas.items() if tp != a)


@settings(max_examples=examples(100), deadline=None)
@given(st.randoms(use_true_random=False))
def test_followed_reads_what_the_replicas_say_after_moves_and_leadership_changes(rnd: random.Random) -> None:
    # GoalState.follows, built before the changes and kept through them, gives _followed's candidates: the first by
    # (leader's key, partition) of the partitions the broker holds and another broker of the walk leads
    assignment, inputs, limits = _cluster(rnd)
    state = GoalState(assignment, inputs, limits)
    order = _Order(state.brokers, lambda b: float(rnd.randint(0, 3)))  # ties: leaders grouped by key
    assert state.follows
    for _ in range(rnd.randint(0, 40)):
        tp = rnd.choice(sorted(state.replicas))
        replicas = state.replicas[tp]
        others = [b for b in state.brokers if b not in replicas]
        if len(replicas) > 1 and (rnd.random() < 0.5 or not others):
            state.lead(tp, rnd.choice(replicas[1:]))
        elif others:
            state.move(tp, rnd.choice(replicas), rnd.choice(others))
    walk = optimizer._Walk(state, (), Spend())
    for broker in state.brokers:
        expected = sorted((order.now[r[0]], tp) for tp, r in state.replicas.items()
                          if broker in r[1:] and r[0] in order.now)
        assert optimizer._followed(walk, broker, order) == [tp for _, tp in expected[:optimizer.CANDIDATES]]


def test_relief_that_moves_a_leader_leaves_no_goal_above_where_the_run_started() -> None:
    """Every broker leads 12 partitions; broker 1 is over its disk limit, so relief moves its large replica of
    t-0, the leader, to broker 2 (the only broker it may go to), which then leads 13: inside a band drawn from
    where relief left the cluster (12 + 9% slack), above the run's starting peak. The bands are drawn from the
    run's start, so the walk evens the leaders again (12 each) instead of leaving a goal worse than it started."""
    big = TopicPartition("t", 0)
    leader = {0: 1, 1: 2, 2: 3}
    assignment = {big: (1, 3)} | {TopicPartition("t", p): (leader[p % 3], (leader[p % 3] + p % 2) % 3 + 1)
                                  for p in range(1, 36)}
    inputs = GoalInputs(racks=dict.fromkeys((1, 2, 3)), sizes={t: 150 if t == big else 1 for t in assignment})
    state = GoalState(assignment, inputs, {"disk": {1: 100.0, 2: 1000.0, 3: 1000.0}})
    assert {b: state.load["leaders"][b] for b in (1, 2, 3)} == {1: 12, 2: 12, 3: 12}
    outcome = optimize(state, ("leaders",))
    assert (outcome.actions[0].goal, outcome.actions[0].tp, outcome.actions[0].dest) == ("disk limit", big, 2)
    assert {b: state.load["leaders"][b] for b in (1, 2, 3)} == {1: 12, 2: 12, 3: 12}


def test_a_leader_above_the_peak_whose_followers_all_sit_at_it_relays_a_leadership_through_one() -> None:
    """Every broker leads 12; relief moves broker 1's large leader replica of t-0 to broker 2 (13 leaders). t-0's
    and broker 2's partitions are all followed by broker 3, at the peak, so no single change lowers broker 2. Broker
    3 takes one of them and hands one of its own to broker 1, which relief left at 11: every broker leads 12 again
    (the 200 / 50,000 decommission of bench/goals.py ended one leader above its start this way)."""
    big = TopicPartition("t", 0)
    followers = {1: (4,), 2: (3,), 3: (1, 4), 4: (1,)}
    assignment = {big: (1, 3)} | {
        TopicPartition("t", 12 * (b - 1) + k + 1): (b, followers[b][k % len(followers[b])])
        for b in followers for k in range(12 - (b == 1))}
    inputs = GoalInputs(racks=dict.fromkeys(followers), sizes={t: 150 if t == big else 1 for t in assignment})
    state = GoalState(assignment, inputs, {"disk": {1: 100.0, 2: 1000.0, 3: 1000.0, 4: 100.0}})
    assert {state.load["leaders"][b] for b in followers} == {12}
    outcome = optimize(state, ("leaders",))
    assert [(a.goal, a.source, a.dest, a.leadership) for a in outcome.actions] == [
        ("disk limit", 1, 2, False), ("leaders", 2, 3, True), ("leaders", 3, 1, True)]
    assert {state.load["leaders"][b] for b in followers} == {12}
    assert optimize(GoalState(dict(state.replicas), inputs, state.limits), ("leaders",)).actions == ()


def test_network_out_above_its_band_relays_a_heavy_leadership_where_its_follower_sits_at_the_leader_peak() -> None:
    """Brokers 1-3 lead four partitions each (the leader count's peak), broker 4 three. Broker 1's leaderships write
    ten times the others' and are followed by broker 2 alone, at the peak: a leadership change to it lifts the
    leader count, a goal below, above its start. Broker 2 takes one heavy leadership and hands one of its light
    ones to broker 4, the one with room: network out falls on broker 1 and leaders end as even as they started
    (the 200 / 50,000 decommission of bench/goals.py ended 5.2 points above network out's bound for want of it)."""
    followers = {1: 2, 2: 4, 3: 4, 4: 3}
    assignment = {TopicPartition("t", 4 * (b - 1) + k): (b, followers[b])
                  for b in followers for k in range(4 - (b == 4))}
    write = {tp: 10.0 if r[0] == 1 else 1.0 for tp, r in assignment.items()}
    inputs = GoalInputs(racks=dict.fromkeys(followers), sizes=dict.fromkeys(assignment, 1), write=write,
                        capacity={"network_out": dict.fromkeys(followers, 1000.0)})
    state = GoalState(assignment, inputs)
    before = [state.load["network_out"][b] for b in followers]
    assert [state.load["leaders"][b] for b in followers] == [4, 4, 4, 3]
    outcome = optimize(state, ("network_out", "leaders"))
    assert [(a.goal, a.source, a.dest, a.leadership) for a in outcome.actions][:2] == [
        ("network_out", 1, 2, True), ("network_out", 2, 4, True)]
    assert state.load["network_out"][1] < before[0] and max(state.load["network_out"].values()) < max(before)
    assert sorted(state.load["leaders"][b] for b in followers) == [3, 4, 4, 4]
    assert optimize(GoalState(dict(state.replicas), inputs), ("network_out", "leaders")).actions == ()


def test_a_leader_count_above_its_band_hands_on_leaderships_beyond_the_lightest_few() -> None:
    """600 partitions over six brokers: a share of 100 leaderships, the band 91..109. Broker 1 leads 120; its ten
    lightest are followed by broker 2, at the band's top, the rest by broker 6, with room (98). No broker lies below
    the band, so none pulls: broker 1 must hand its leaderships on itself, past the ten it cannot (a million-
    partition cluster's leader count stopped at 121.6% of the mean this way, its band's top 109%)."""
    leads = {1: 120, 2: 109, 3: 91, 4: 91, 5: 91, 6: 98}
    follower = {2: 3, 3: 4, 4: 5, 5: 3, 6: 5}
    assignment: dict[TopicPartition, tuple[int, ...]] = {}
    for b, n in leads.items():
        for k in range(n):
            assignment[TopicPartition(f"t{b}", k)] = (b, (2 if k < 10 else 6) if b == 1 else follower[b])
    inputs = GoalInputs(racks=dict.fromkeys(leads), sizes=dict.fromkeys(assignment, 1))
    state = GoalState(assignment, inputs)
    leaders = bands(state, ("leaders",))[0][0]
    assert isinstance(leaders, Band) and (leaders.lo[1], leaders.hi[1]) == (91.0, 109.0)
    optimize(state, ("leaders",))
    assert {b: state.load["leaders"][b] for b in leads} == {1: 109, 2: 109, 3: 91, 4: 91, 5: 91, 6: 109}
    assert all(state.replicas[TopicPartition("t1", k)][0] == 1 for k in range(10))  # broker 2 stays at its top


def test_where_every_broker_sits_at_the_leader_peak_disk_moves_followers_and_hands_leaderships_over() -> None:
    """Each broker leads six partitions (the leader count's starting peak everywhere), and broker 1's large
    replicas, the candidates nearest its gap, are all leaders: none may go anywhere without lifting a broker above
    six. The walk moves broker 1's followers instead, so disk still ends inside its band with leaders as even."""
    brokers = (1, 2, 3, 4)
    assignment = {TopicPartition("t", 6 * (b - 1) + k): (b, [x for x in brokers if x != b][k % 3])
                  for b in brokers for k in range(6)}
    sizes = {tp: 10 if r[0] == 1 else 1 for tp, r in assignment.items()}
    inputs = GoalInputs(racks=dict.fromkeys(brokers), sizes=sizes, capacity={"disk": dict.fromkeys(brokers, 1000.0)})
    disk = bands(GoalState(assignment, inputs), ("disk",))[0][0]
    assert isinstance(disk, Band)
    state = GoalState(assignment, inputs)
    assert state.load["disk"][1] > disk.hi[1] and {state.load["leaders"][b] for b in brokers} == {6}
    optimize(state, ("disk", "leaders"))
    assert all(disk.lo[b] - 1e-6 <= state.load["disk"][b] <= disk.hi[b] + 1e-6 for b in brokers)
    assert {state.load["leaders"][b] for b in brokers} == {6}
