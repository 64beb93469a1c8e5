"""Each goal's band per broker: its fair share, a slack around it, and how far a broker lies outside.

A goal is met when every broker lies in its band. The fair share is what the best spread gives the broker
(kops/planner/lower_bounds.py: racks and whole partitions, not simply the mean). The slack makes the band
reachable with whole replicas and keeps the walk from trading bytes for noise: for utilization, the lesser of
2 points and 9% of the mean (Cruise Control's band is 1.10 x 0.9 around the mean), never less than the median
replica's share of a median broker; for counts, 2% of the share beyond its floor and ceiling; for topic replicas,
TOPIC_SLACK above the topic's per-broker ceiling. A band never reaches above the run's starting peak (even where
a fair share lies above it: the current layout breaks the even spread over racks) or below its starting trough, so
no goal ends worse than it started. docs/design/goals.md §5.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field

from kops.model.goals import PREFERRED
from kops.planner.goal_state import LEADER_LOADS, GoalState
from kops.planner.goal_values import capacities
from kops.planner.lower_bounds import capped, fair_shares
from kops.planner.trial import Trial

MEAN_SLACK = 0.09  # of the mean: Cruise Control's band (balance threshold 1.10 x margin 0.9 = 9%)
LEADERSHIP_SLACK = 0.05  # goals that leadership moves: cheaper, so held closer
COUNT_SLACK = 0.09  # 9% of a count's fair share, as Cruise Control's balance band
TOPIC_SLACK = 2  # replicas above the topic's per-broker ceiling
NEEDS = {"disk": "disk", "network_in": "network_in", "network_out": "network_in", "leader_bytes_in": "network_in"}
CAPACITY_OF = {"disk": "disk", "network_in": "network_in", "network_out": "network_out",
               "leader_bytes_in": "network_in"}
COUNTS = ("replicas", "leaders")


@dataclass(frozen=True)
class Band:
    """One goal's band per broker, in load units; `scale` turns a load into the goal's unit (1 / capacity)."""

    name: str
    lo: dict[int, float]
    hi: dict[int, float]
    scale: dict[int, float]
    peak: float  # the run's starting peak, in the goal's unit: no action of another goal raises a broker above it
    share: dict[int, float] = field(default_factory=dict)  # each broker's fair share, in load units

    @property
    def leadership(self) -> bool:
        return self.name in LEADER_LOADS

    def distance(self, state: GoalState, broker: int) -> float:
        x = state.load[self.name][broker]
        return (max(0.0, x - self.hi[broker]) + max(0.0, self.lo[broker] - x)) * self.scale[broker]

    def parts(self, x: float, broker: int) -> tuple[float, float]:
        """How far above and how far below its band the broker lies at load `x`: apart, so that a broker taken from
        below its band to above it counts as growing, not as a smaller distance."""
        return max(0.0, x - self.hi[broker]) * self.scale[broker], max(0.0, self.lo[broker] - x) * self.scale[broker]


@dataclass(frozen=True)
class TopicBand:
    """topic_replicas: per topic, at most ceil(replicas / brokers) + TOPIC_SLACK on any broker. The goal's figure
    counts the replicas above ceil(replicas / brokers) itself (`base`), which no other goal may raise."""

    ceiling: dict[str, int]
    base: dict[str, int]
    name: str = "topic_replicas"
    leadership: bool = False

    def over(self, count: int, topic: str) -> float:
        """How far `count` replicas of `topic` on one broker lie above the band."""
        return float(max(0, count - self.ceiling[topic]))

    def excess(self, trial: Trial, topics: tuple[str, ...], brokers: tuple[int, ...]) -> int:
        """Replicas above their topic's base ceiling on these brokers: the goal's figure, where an action acts."""
        return sum(max(0, trial.count(t, b) - self.base[t]) for t in set(topics) for b in brokers)

    def total(self, state: GoalState) -> int:
        return sum(max(0, n - self.base[t]) for t, counts in state.topic.items() for n in counts.values())


Extremes = dict[str, tuple[float, float]]  # per goal, the highest and lowest broker in the goal's unit


def _utilizations(state: GoalState, name: str, caps: Mapping[int, float]) -> dict[int, float]:
    return {b: state.load[name][b] / caps[b] for b in state.brokers}


def _capacities(state: GoalState, name: str) -> dict[int, float]:
    return capacities(state.inputs, CAPACITY_OF[name])[0]  # the same rule as the figures it is read against


def extremes(state: GoalState, goals: tuple[str, ...]) -> Extremes:
    """Each band goal's peak and trough as the state stands: an optimize run's start, taken before hard limits are
    relieved, so that relief (which moves a leader's leadership with its replica) leaves no goal above its start."""
    out: Extremes = {}
    for name in goals:
        if name in COUNTS:
            values = [state.load[name][b] for b in state.brokers]
        elif name in CAPACITY_OF:
            values = list(_utilizations(state, name, _capacities(state, name)).values())
        else:
            continue
        if values:
            out[name] = (max(values), min(values))
    return out


def _within_start(name: str, peak: float, trough: float, start: Extremes | None) -> tuple[float, float]:
    """The band's peak and trough held to the run's start: never above its peak nor below its trough."""
    if start is None or name not in start:
        return peak, trough
    return min(peak, start[name][0]), max(trough, start[name][1])


def _utilization_band(state: GoalState, name: str, start: Extremes | None = None) -> Band:
    caps = _capacities(state, name)
    shares, floor = _constants(state, name, caps)
    util = _utilizations(state, name, caps)
    mean = sum(state.load[name][b] for b in state.brokers) / sum(caps.values())
    share = LEADERSHIP_SLACK if name in LEADER_LOADS else MEAN_SLACK  # leadership changes copy no data
    slack = max(share * mean, floor)
    peak, trough = _within_start(name, max(util.values()), min(util.values()), start)
    hi = {b: min(shares[b] + slack, peak) * caps[b] for b in state.brokers}
    lo = {b: min(max(shares[b] - slack, min(shares[b], trough)) * caps[b], hi[b]) for b in state.brokers}
    return Band(name, lo, hi, {b: 1.0 / caps[b] for b in state.brokers}, peak,
                {b: shares[b] * caps[b] for b in state.brokers})


def _constants(state: GoalState, name: str, caps: Mapping[int, float]) -> tuple[dict[int, float], float]:
    """A utilization band's fair shares and its slack's floor (the median replica over the median capacity): what
    no action changes (values, replication factors, racks and capacities stay), read once per walk instead of
    once per round (each a pass and a sort over every partition)."""
    found = state.band_constants.get(name)
    if found is None:
        by_racks = name in ("disk", "network_in")
        # the value maps hold the replicas' keys in their order: read alongside, in C
        per = state.value[name]
        factors = map(len, state.replicas.values()) if by_racks else itertools.repeat(1)
        items = list(zip(per.values(), factors))
        shares = dict(fair_shares(items, state.racks if by_racks else dict.fromkeys(state.brokers), caps).shares)
        values = sorted(filter((0.0).__lt__, per.values()))
        floor = _median_of_sorted(values) / statistics.median(caps.values()) if values else 0.0
        found = state.band_constants[name] = (shares, floor)
    return found


def _median_of_sorted(values: list[float]) -> float:
    """`statistics.median` of a list already sorted (it would sort a million values again)."""
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def _count_band(state: GoalState, name: str, start: Extremes | None = None) -> Band:
    ones = dict.fromkeys(state.brokers, 1.0)
    if name == "replicas":
        shares = fair_shares(((1.0, len(r)) for r in state.replicas.values()), state.racks, ones).shares
        shares = capped(shares, state.limits.get("replicas", {}))
    else:
        shares = dict.fromkeys(state.brokers, len(state.replicas) / len(state.brokers))
    counts = [state.load[name][b] for b in state.brokers]
    peak, trough = _within_start(name, max(counts), min(counts), start)
    hi = {b: min(math.ceil(s - 1e-9) + math.floor(COUNT_SLACK * s), peak) for b, s in shares.items()}
    lo = {b: min(max(math.floor(s + 1e-9) - math.floor(COUNT_SLACK * s), min(math.floor(s + 1e-9), trough)), hi[b])
          for b, s in shares.items()}
    return Band(name, {b: float(v) for b, v in lo.items()}, {b: float(v) for b, v in hi.items()}, ones, float(peak),
                dict(shares))


def _topic_band(state: GoalState) -> TopicBand:
    brokers = len(state.brokers)
    base = {t: -(-sum(c.values()) // brokers) for t, c in state.topic.items()}
    return TopicBand({t: n + TOPIC_SLACK for t, n in base.items()}, base)


def bands(state: GoalState, goals: tuple[str, ...],
          start: Extremes | None = None) -> tuple[tuple[Band | TopicBand, ...], dict[str, str]]:
    """The bands of `goals` the optimizer can work on, in order, and why each other goal is skipped (`start`: the
    run's starting extremes, `extremes`, where the state has changed since)."""
    made: list[Band | TopicBand] = []
    skipped: dict[str, str] = {}
    for name in goals:
        needs = NEEDS.get(name)
        if needs is not None and not any(state.value[needs].values()):
            skipped[name] = "no sizes" if needs == "disk" else "no write rates"
        elif name == PREFERRED:
            continue  # elections after the walk (kops/planner/preferred.py), no band
        elif name == "topic_replicas":
            made.append(_topic_band(state))
        elif name in COUNTS:
            made.append(_count_band(state, name, start))
        else:
            made.append(_utilization_band(state, name, start))
    return tuple(made), skipped


def beyond(state: GoalState, band: Band | TopicBand, tolerance: float) -> bool:
    """Does a playbook's `tolerance` let this goal act: some broker beyond both its band and its fair share ±
    tolerance × the share (a topic: above both its ceiling and its base × (1 + tolerance)). With tolerance 0 a goal
    acts wherever a broker is out of its band, as `kops rebalance` does; above it a goal whose brokers all lie within
    the tolerance is left alone (the playbook's trigger, docs/design/goals.md §5), still held by the goals below."""
    if isinstance(band, TopicBand):
        return any(n > max(band.ceiling[t], math.ceil(band.base[t] * (1 + tolerance) - 1e-9))
                   for t, counts in state.topic.items() for n in counts.values())
    load = state.load[band.name]
    for b in state.brokers:
        share = band.share.get(b, 0.0)
        if (load[b] > max(band.hi[b], share * (1 + tolerance)) + 1e-9
                or load[b] < min(band.lo[b], share * (1 - tolerance)) - 1e-9):
            return True
    return False
