"""Lower bounds: the best spread a goal could reach, so a plan's figure can be read against what is possible.

The mean is not that bound. Racks force load: with racks a (3 brokers), b (2) and c (1) and replication factor 3,
broker 6 holds a replica of every partition whatever the plan does, so its disk is twice the mean. Whole
partitions force it too: a broker holding the largest partition is at least that full.

The bound is a relaxation that any valid assignment obeys, so no plan can beat it: load is treated as divisible
inside a rack, and across racks each rack r must hold between F_r and U_r of it, where, with R racks and every
broker in one, a partition of load l and replication factor f puts between floor(f / R) and ceil(f / R) replicas
in each rack (spread over racks as evenly as racks allow, `_split`). The level lam solving
sum_r clamp(lam * C_r, F_r, U_r) = T (C_r the rack's capacity, T all load) gives every broker of rack r the fair
share clamp(lam * C_r, F_r, U_r) / C_r; the bound is the largest fair share, or the largest single load over the
largest capacity where that is higher. Without racks on every broker (or with one rack) the fair share is the
mean. docs/design/goals.md §6.2.
"""

from __future__ import annotations

import functools
import math
import operator
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

NO_RACK = ""  # the one pool every broker is in when racks do not constrain placement
_ROUNDS = 100  # bisection rounds: 2^-100 of the starting interval, far below any figure shown


@dataclass(frozen=True)
class FairShares:
    """Each broker's fair share (load per unit of its capacity) and the lowest peak any valid assignment reaches."""

    shares: Mapping[int, float]
    bound: float


@dataclass(frozen=True)
class _Rack:
    capacity: float
    forced: float  # F_r: load the rack must hold
    ceiling: float  # U_r: load the rack may hold at most


def rack_pools(racks: Mapping[int, str | None]) -> dict[int, str]:
    """Each broker's rack, or one pool for all when some broker has none or all share one (no rack rule binds)."""
    named = set(racks.values())
    if None in named or len(named) < 2:
        return dict.fromkeys(racks, NO_RACK)
    return {b: r for b, r in racks.items() if r is not None}


def _split(factor: int, members: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """How few and how many of a partition's `factor` replicas each rack holds when they are spread as evenly as
    the racks allow (round robin over racks, as Kafka's rack-aware assignment does; a rack of n brokers holds at
    most n): the smallest level k whose racks, each filled to min(k, n), hold them all; a rack then holds k or
    k - 1, fewer only where it has fewer brokers, and more than k - 1 where the others cannot take the rest."""
    factor = min(factor, sum(members.values()))  # more replicas than brokers: the rest sit on brokers not counted
    k = 0
    while sum(min(k, n) for n in members.values()) < factor:
        k += 1
    room = {r: min(k, n) for r, n in members.items()}
    whole = sum(room.values())
    return {r: (max(min(k - 1, n), factor - (whole - room[r])), room[r]) for r, n in members.items()}


def _racks(items: Iterable[tuple[float, int]], pools: Mapping[int, str],
           capacity: Mapping[int, float]) -> tuple[dict[str, _Rack], float, float]:
    """Per rack its capacity, forced load and ceiling; with the total load and the largest single load."""
    loads, factors = _columns(items)
    # the same sums in the same order as a loop over the items, in C (sum() adds floats one by one, in order)
    total = sum(map(operator.mul, loads, factors), 0.0)
    largest = max(loads, default=0.0)
    by_factor: dict[int, float] = defaultdict(float)
    if len(set(factors)) == 1:
        by_factor[factors[0]] = sum(loads, 0.0)
    else:
        for load, factor in zip(loads, factors):
            by_factor[factor] += load
    caps: dict[str, float] = defaultdict(float)
    members: dict[str, int] = defaultdict(int)
    for broker, rack in pools.items():
        caps[rack] += capacity[broker]
        members[rack] += 1
    forced: dict[str, float] = defaultdict(float)
    ceiling: dict[str, float] = defaultdict(float)
    for factor, load in by_factor.items():
        for rack, (low, high) in _split(factor, members).items():
            forced[rack] += load * low
            ceiling[rack] += load * high
    return {r: _Rack(caps[r], forced[r], ceiling[r]) for r in sorted(members)}, total, largest


def _columns(items: Iterable[tuple[float, int]]) -> tuple[list[float], list[int]]:
    """The items' loads and replication factors, as two lists."""
    pairs = list(items)
    return list(map(operator.itemgetter(0), pairs)), list(map(operator.itemgetter(1), pairs))


def _level(racks: Mapping[str, _Rack], total: float) -> float:
    """The water level lam at which the racks, each clamped to [F_r, U_r], hold exactly `total`."""
    def held(lam: float) -> float:
        return sum(min(max(lam * r.capacity, r.forced), r.ceiling) for r in racks.values())

    low, high = 0.0, max((r.ceiling / r.capacity for r in racks.values() if r.capacity > 0), default=0.0)
    for _ in range(_ROUNDS):
        middle = (low + high) / 2
        if held(middle) < total:
            low = middle
        else:
            high = middle
    return high


def fair_shares(items: Iterable[tuple[float, int]], racks: Mapping[int, str | None],
                capacity: Mapping[int, float]) -> FairShares:
    """`items`: (load, replication factor) per partition; `capacity`: per broker, positive (1.0 each for counts).

    A rack of no capacity cannot hold its forced load: its brokers' shares are infinite, as is the bound."""
    pools = rack_pools(racks)
    per_rack, total, largest = _racks(list(items), pools, capacity)
    lam = _level(per_rack, total)
    share: dict[str, float] = {}
    for name, rack in per_rack.items():
        held = min(max(lam * rack.capacity, rack.forced), rack.ceiling)
        share[name] = held / rack.capacity if rack.capacity > 0 else (math.inf if held > 0 else 0.0)
    shares = {b: share[pools[b]] for b in sorted(pools)}
    biggest = max(capacity.values(), default=0.0)
    single = largest / biggest if biggest > 0 else 0.0
    return FairShares(shares, max(max(shares.values(), default=0.0), single))


def capped(shares: Mapping[int, float], caps: Mapping[int, float]) -> dict[int, float]:
    """Fair shares with each broker held to its cap (`capacity.max_replicas`), what it cannot hold spread over the
    others in proportion to their shares: 24 replicas over 4 brokers, one capped at 3, are 3, 7, 7, 7, not 6 each."""
    shares = dict(shares)
    while over := [b for b, s in shares.items() if s > caps.get(b, math.inf) + 1e-9]:
        excess = sum(shares[b] - caps[b] for b in over)
        for b in over:
            shares[b] = caps[b]
        free = [b for b, s in shares.items() if s < caps.get(b, math.inf) - 1e-9]
        room = sum(shares[b] for b in free)
        if room <= 0:
            return shares
        for b in free:
            shares[b] += excess * shares[b] / room
    return shares


def count_bound(items: Iterable[int], racks: Mapping[int, str | None]) -> int:
    """The lowest peak count of replicas any valid assignment reaches: `items` are replication factors."""
    shares = fair_shares(((1.0, f) for f in items), racks, dict.fromkeys(racks, 1.0))
    return math.ceil(shares.bound - 1e-9)


def topic_excess_bound(factors: Iterable[int], racks: Mapping[int, str | None]) -> int:
    """Replicas of one topic that must sit above its per-broker ceiling ceil(replicas / brokers) in any valid
    assignment (`factors`: its partitions' replication factors): a rack of n brokers that must hold F of them
    carries at least F - n * ceiling above it."""
    pools = rack_pools(racks)
    return topic_excess(tuple(sorted(Counter(factors).items())), tuple(sorted(Counter(pools.values()).items())))


@functools.lru_cache(maxsize=4096)
def topic_excess(factors: tuple[tuple[int, int], ...], members: tuple[tuple[str, int], ...]) -> int:
    """`topic_excess_bound` of a topic with `factors` ((replication factor, partitions) pairs) over racks of
    `members` ((rack, brokers) pairs). Partitions of one factor split alike, so each factor is split once; and
    topics alike (most have one factor and a partition count among a few) share the answer: a million-partition
    cluster's tens of thousands of topics ask a few hundred questions."""
    brokers = sum(n for _, n in members)
    if not brokers:
        return 0
    ceiling = -(-sum(f * n for f, n in factors) // brokers)
    per_rack = dict(members)
    forced: dict[str, int] = defaultdict(int)
    for factor, partitions in factors:
        for rack, (low, _) in _split(factor, per_rack).items():
            forced[rack] += low * partitions
    return sum(max(0, forced[r] - n * ceiling) for r, n in members)
