"""Each goal's figure for an assignment, and its lower bound: what a plan reports per goal, before and after.

Every figure is a percentage so that "5 percentage points" reads the same for every goal (docs/design/goals.md §3):
resources (disk, network in, network out, leader bytes in) as the peak broker's utilization of its capacity; counts
(replicas, leaders) as the peak broker's count over the mean; `topic_replicas` as the replicas that sit above their
topic's per-broker ceiling ceil(replicas / brokers), over all replicas; `preferred_leaders` as the partitions led by
another replica than their first, over all partitions. A resource whose capacity some broker lacks is read with
equal capacities: its unit says "% of mean". A goal whose load is unknown (no sizes, no write rates) is skipped with
the reason, never guessed. The lower bound is the same figure for the best assignment racks and whole partitions
allow (kops/planner/lower_bounds.py).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kops.model.goals import GOAL_NAMES
from kops.model.partitions import TopicPartition
from kops.planner.lower_bounds import count_bound, fair_shares, rack_pools, topic_excess

Assignment = Mapping[TopicPartition, tuple[int, ...]]
OF_CAPACITY, OF_MEAN, OF_REPLICAS, OF_PARTITIONS = "% of capacity", "% of mean", "% of replicas", "% of partitions"


@dataclass(frozen=True)
class GoalInputs:
    """What the figures read besides the assignment: the brokers with their racks, each partition's size and
    write rate (empty: unknown), consumer fan-out per topic (1 when not declared), capacities per resource and
    broker (a broker missing: unknown), and the in-sync replicas and elected leaders where known (the goal
    `preferred_leaders` and its bound)."""

    racks: Mapping[int, str | None]
    sizes: Mapping[TopicPartition, int] = field(default_factory=dict)
    write: Mapping[TopicPartition, float] = field(default_factory=dict)
    fanout: Mapping[str, int] = field(default_factory=dict)
    capacity: Mapping[str, Mapping[int, float]] = field(default_factory=dict)  # disk, network_in, network_out
    isr: Mapping[TopicPartition, tuple[int, ...]] = field(default_factory=dict)
    leaders: Mapping[TopicPartition, int] = field(default_factory=dict)  # elected leaders, where the snapshot has them

    def out_load(self, tp: TopicPartition, replicas: int) -> float:
        """What leading `tp` sends: to each follower and to each consumer group (capacity.md §4)."""
        return self.write.get(tp, 0.0) * (replicas - 1 + self.fanout.get(tp.topic, 1))


@dataclass(frozen=True)
class GoalFigure:
    name: str
    unit: str
    value: float
    lower_bound: float
    skipped: str | None = None


def capacities(inputs: GoalInputs, resource: str) -> tuple[dict[int, float], str]:
    """Each broker's capacity of `resource` and the unit its utilization is read in: equal capacities where some
    broker's is unknown."""
    known = inputs.capacity.get(resource, {})
    if all(known.get(b, 0) > 0 for b in inputs.racks):
        return {b: float(known[b]) for b in inputs.racks}, OF_CAPACITY
    return dict.fromkeys(inputs.racks, 1.0), OF_MEAN


def _utilization(name: str, held: Mapping[int, float], items: list[tuple[float, int]], inputs: GoalInputs,
                 resource: str, by_racks: bool) -> GoalFigure:
    """Peak utilization and its bound; as a share of the mean where capacities are unknown."""
    caps, unit = capacities(inputs, resource)
    racks = inputs.racks if by_racks else dict.fromkeys(inputs.racks)
    bound = fair_shares(items, racks, caps).bound
    peak = max((held.get(b, 0.0) / caps[b] for b in caps), default=0.0)
    if unit == OF_MEAN:
        mean = sum(held.values()) / len(caps) if caps else 0.0
        scale = 100.0 / mean if mean else 0.0
    else:
        scale = 100.0
    return GoalFigure(name, unit, round(peak * scale, 2), round(bound * scale, 2))


def _count(name: str, held: Mapping[int, float], bound: int, brokers: int) -> GoalFigure:
    mean = sum(held.values()) / brokers if brokers else 0.0
    scale = 100.0 / mean if mean else 0.0
    return GoalFigure(name, OF_MEAN, round(max(held.values(), default=0.0) * scale, 2), round(bound * scale, 2))


Held = dict[str, dict[int, float]]  # per load (disk, network_in, ..., leader_in): each broker's


def _per_broker(assignment: Assignment, leaders: Mapping[TopicPartition, int], inputs: GoalInputs) -> Held:
    """Each broker's load per goal under `assignment`, leadership from `leaders` (else the first replica)."""
    held: dict[str, dict[int, float]] = {k: defaultdict(float) for k in
                                         ("disk", "network_in", "network_out", "replicas", "leaders", "leader_in")}
    for tp, replicas in assignment.items():
        if not replicas:
            continue
        size, rate = inputs.sizes.get(tp, 0), inputs.write.get(tp, 0.0)
        for b in replicas:
            held["disk"][b] += size
            held["network_in"][b] += rate
            held["replicas"][b] += 1
        leader = leaders.get(tp, replicas[0])
        held["leaders"][leader] += 1
        held["leader_in"][leader] += rate
        held["network_out"][leader] += inputs.out_load(tp, len(replicas))
    return held


def _topic_replicas(assignment: Assignment, inputs: GoalInputs) -> GoalFigure:
    per_topic: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    factors: dict[str, Counter[int]] = defaultdict(Counter)
    for tp, replicas in assignment.items():
        factors[tp.topic][len(replicas)] += 1
        for b in replicas:
            per_topic[tp.topic][b] += 1
    return topic_figure(per_topic, factors, inputs)


def topic_figure(counts: Mapping[str, Mapping[int, int]], factors: Mapping[str, Counter[int]],
                 inputs: GoalInputs) -> GoalFigure:
    """topic_replicas from each topic's replicas per broker (`counts`) and its partitions' replication factors
    (`factors`: how many partitions have each): the replicas above their topic's ceiling, and the bound."""
    brokers = len(inputs.racks)
    total = sum(f * n for per in factors.values() for f, n in per.items())
    members = tuple(sorted(Counter(rack_pools(inputs.racks).values()).items()))  # the racks, once for every topic
    above = bound = 0
    for topic, per_broker in counts.items():
        per = factors.get(topic)
        if not per:
            continue
        ceiling = -(-sum(f * n for f, n in per.items()) // brokers)
        above += sum(max(0, n - ceiling) for n in per_broker.values())
        bound += topic_excess(tuple(sorted(per.items())), members)
    scale = 100.0 / total if total else 0.0
    return GoalFigure("topic_replicas", OF_REPLICAS, round(above * scale, 2), round(bound * scale, 2))


def _preferred(assignment: Assignment, leaders: Mapping[TopicPartition, int], inputs: GoalInputs) -> GoalFigure:
    """Partitions led elsewhere than their first replica; bound: those whose first replica is out of sync."""
    led = sum(1 for tp, r in assignment.items() if r and leaders.get(tp, r[0]) != r[0])
    stuck = sum(1 for tp, r in assignment.items() if r and tp in inputs.isr and r[0] not in inputs.isr[tp])
    scale = 100.0 / len(assignment) if assignment else 0.0
    return GoalFigure("preferred_leaders", OF_PARTITIONS, round(led * scale, 2), round(stuck * scale, 2))


def goal_figures(assignment: Assignment, inputs: GoalInputs, goals: tuple[str, ...] = GOAL_NAMES,
                 leaders: Mapping[TopicPartition, int] | None = None, *, held: Held | None = None,
                 topic: GoalFigure | None = None) -> tuple[GoalFigure, ...]:
    """Each of `goals`' figure for `assignment` (leaders: the partitions led by another replica than their first;
    `held` and `topic`: the per-broker loads and topic figure, where `reports` computed them already)."""
    leaders = leaders or {}
    held = held if held is not None else _per_broker(assignment, leaders, inputs)
    brokers = len(inputs.racks)
    replicated = [(float(inputs.sizes.get(tp, 0)), len(r)) for tp, r in assignment.items()]
    rated = [(inputs.write.get(tp, 0.0), len(r)) for tp, r in assignment.items()]
    figures: dict[str, Callable[[], GoalFigure]] = {
        "disk": lambda: _utilization("disk", held["disk"], replicated, inputs, "disk", True),
        "network_in": lambda: _utilization("network_in", held["network_in"], rated, inputs, "network_in", True),
        "network_out": lambda: _utilization("network_out", held["network_out"],
                                            [(inputs.out_load(tp, len(r)), 1) for tp, r in assignment.items()],
                                            inputs, "network_out", False),
        "leader_bytes_in": lambda: _utilization("leader_bytes_in", held["leader_in"], [(w, 1) for w, _ in rated],
                                                inputs, "network_in", False),
        "replicas": lambda: _count("replicas", held["replicas"], count_bound([f for _, f in replicated],
                                                                             inputs.racks), brokers),
        "leaders": lambda: _count("leaders", held["leaders"], -(-len(assignment) // brokers) if brokers else 0,
                                  brokers),
        "topic_replicas": lambda: topic or _topic_replicas(assignment, inputs),
        "preferred_leaders": lambda: _preferred(assignment, leaders, inputs),
    }
    needs = {"disk": inputs.sizes, "network_in": inputs.write, "network_out": inputs.write,
             "leader_bytes_in": inputs.write}
    reasons = {"disk": "no sizes", "network_in": "no write rates", "network_out": "no write rates",
               "leader_bytes_in": "no write rates"}
    return tuple(GoalFigure(g, "", 0.0, 0.0, reasons[g]) if g in needs and not needs[g] else figures[g]()
                 for g in goals)


def imbalances(assignment: Assignment, inputs: GoalInputs, *, held: Held | None = None,
               topic: GoalFigure | None = None, preferred: GoalFigure | None = None) -> dict[str, float]:
    """Each goal's imbalance: the share of its load above the brokers' fair share, Σ max(0, load − fair) ÷ Σ load
    (0 even; 0.25: a quarter would have to move), fair by capacity where every broker's is known. Topic replicas:
    the replicas above their topics' ceilings over all replicas; preferred leaders: partitions led elsewhere (its
    figure, `preferred`, which needs who leads: 0 without it)."""
    held = held if held is not None else _per_broker(assignment, {}, inputs)
    brokers = sorted(inputs.racks)
    out: dict[str, float] = {}
    for goal, load, resource in (("disk", "disk", "disk"), ("network_in", "network_in", "network_in"),
                                 ("network_out", "network_out", "network_out"), ("replicas", "replicas", ""),
                                 ("leaders", "leaders", ""), ("leader_bytes_in", "leader_in", "network_in")):
        caps = capacities(inputs, resource)[0] if resource else dict.fromkeys(brokers, 1.0)
        total = sum(held[load].get(b, 0.0) for b in brokers)
        level = total / sum(caps.values()) if caps and total else 0.0
        out[goal] = round(sum(max(0.0, held[load].get(b, 0.0) - level * caps[b]) for b in brokers) / total, 6) \
            if total else 0.0
    out["topic_replicas"] = round((topic or _topic_replicas(assignment, inputs)).value / 100, 6)
    out["preferred_leaders"] = round(preferred.value / 100, 6) if preferred is not None else 0.0
    return out


Measured = tuple[Held, GoalFigure]  # an assignment's per-broker loads and topic figure (GoalState.measured)


def reports(assignment: Assignment, inputs: GoalInputs, goals: tuple[str, ...], measured: Measured | None = None,
            leaders: Mapping[TopicPartition, int] | None = None) -> tuple[tuple[GoalFigure, ...], dict[str, float]]:
    """An assignment's goal figures and imbalances (preferred leaders), its per-broker loads and topic spread
    computed once for both (or taken from the optimizer's state, `measured`, which keeps them current): a
    million-partition plan's goal table read them four times. `leaders`: who leads each partition (missing: its first
    replica), read by `preferred_leaders` only."""
    held, topic = measured if measured is not None else (_per_broker(assignment, {}, inputs),
                                                         _topic_replicas(assignment, inputs))
    figures = goal_figures(assignment, inputs, goals, leaders, held=held, topic=topic)
    preferred = next((f for f in figures if f.name == "preferred_leaders"), None)
    return figures, imbalances(assignment, inputs, held=held, topic=topic, preferred=preferred)
