"""Rebalancing: move the fewest replicas (and the fewest bytes) that bring every broker within tolerance.

Goal `replicas`: replica counts within `tolerance` of the mean (tolerance 0 means ±1). Each step moves one
replica from the most loaded broker to the least loaded one that can take it (not already a replica, racks
kept distinct), choosing the smallest partition that fits, so the bytes moved stay near their lower bound.
Goal `bytes`: the same over bytes, choosing the partition whose size best fills the gap without overshoot. Where
every broker's disk limit is known, bytes are evened by share of capacity (utilization: bytes ÷ the broker's disk
limit), so a broker twice the size holds twice the bytes (docs/design/capacity.md §6.3); where write rates and
every broker's network-in limit are known, a second pass evens network-in utilization the same way without raising
the disk peak. Every move keeps the destination within its limits (disk, network in, `max_replicas`): a broker
already over a limit takes nothing more of it, and moves off it are what lower it.
Used for `rebalance:` plays, for `brokers.add` (destinations limited to the new brokers) and by `kops
rebalance`. `replica_lower_bound` is the least number of replica moves any plan needs for the same bounds.

Sources and destinations sit in heaps with lazy updates, and each broker's partitions are kept sorted by
size until it gains a replica, so a step costs about log(brokers), not a scan of the cluster.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from operator import attrgetter

from kops.model.capacity import Resource
from kops.model.partitions import TopicPartition
from kops.planner.budget import Budget
from kops.planner.layout import Layout
from kops.planner.lower_bounds import capped, fair_shares

DESTINATIONS_TRIED = 8
# Where limits (or the network-in pass's disk guard) may refuse a destination, at most this many of a source's
# partitions are tried on it before the next destination: a broker over its network-in limit refuses every
# partition that carries writes, and scanning all of a source's thousands for it made the balancer quadratic.
CANDIDATES_TRIED = 16
NETWORK_IN_BAND = 0.05  # the network-in pass stops within 5% of the mean utilization (or the tolerance, if wider)
Guard = Callable[[TopicPartition, int], bool]  # may this partition's replica go to this broker (beyond the limits)?


@dataclass(frozen=True)
class Bounds:
    lower: int
    upper: int


def bounds(total: int, brokers: int, tolerance: float) -> Bounds:
    return bounds_around(total / brokers if brokers else 0, tolerance)


def bounds_around(share: float, tolerance: float) -> Bounds:
    """Whole counts within `tolerance` of `share`, never narrower than its floor and ceiling."""
    upper = max(math.ceil(share), math.floor(share * (1 + tolerance)))
    lower = min(math.floor(share), math.ceil(share * (1 - tolerance)))
    return Bounds(lower, upper)


def share_bounds(layout: Layout, brokers: list[int], tolerance: float) -> dict[int, Bounds]:
    """Each broker's replica bounds around the share racks leave it (kops/planner/lower_bounds.py: the mean where
    racks do not bind) and its `max_replicas` allows, as the goal walk's band reads them, counting the replicas on
    `brokers` only: with racks of unequal size the mean is out of reach, and a lower bound counted against it
    exceeded what any plan moves."""
    eligible = set(brokers)
    if eligible.issuperset(b for b, n in layout.replica_count.items() if n):  # every replica's (the usual case)
        on: Iterable[int] = map(len, layout.replicas.values())
    else:
        on = (sum(1 for b in r if b in eligible) for r in layout.replicas.values())
    shares = fair_shares(((1.0, n) for n in on if n), {b: layout.rack(b) for b in brokers},
                         dict.fromkeys(brokers, 1.0)).shares
    caps = layout.headroom.limits.get("replicas", {}) if layout.headroom is not None else {}
    return {b: bounds_around(s, tolerance) for b, s in capped(shares, caps).items()}


def outside(counts: Mapping[int, int], limits: Mapping[int, Bounds]) -> list[int]:
    """The brokers whose count lies outside their bounds."""
    return [b for b, w in sorted(limits.items()) if not w.lower <= counts.get(b, 0) <= w.upper]


def _pool_bounds(layout: Layout, pool: list[int], tolerance: float) -> Bounds:
    """Bounds over `pool`, less the brokers whose max_replicas keeps them below its lower bound: those end at their
    cap and the others share the rest (the same bounds as `bounds` where no cap binds)."""
    caps = layout.headroom.limits.get("replicas", {}) if layout.headroom is not None else {}
    count = layout.replica_count
    members, total = list(pool), sum(count[b] for b in pool)
    while True:
        limits = bounds(total, len(members), tolerance)
        capped = [b for b in members if b in caps and caps[b] < limits.lower]
        if not capped or len(capped) == len(members):
            return limits
        for b in capped:
            members.remove(b)
            total -= int(caps[b])


def replica_lower_bound(counts: dict[int, int], brokers: list[int], b: Bounds | Mapping[int, Bounds]) -> int:
    """The fewest moves that bring every broker within its bounds (one for all, or each its own)."""
    each = b if isinstance(b, Mapping) else dict.fromkeys(brokers, b)
    excess = sum(max(0, counts.get(x, 0) - each[x].upper) for x in brokers)
    deficit = sum(max(0, each[x].lower - counts.get(x, 0)) for x in brokers)
    return max(excess, deficit)


_in_turn = attrgetter("partition", "topic")  # equal sizes: partition 0 of every topic, then 1, ...


class _Candidates:
    """Each broker's movable partitions sorted by size (and their sizes, for bisecting), rebuilt only after the
    broker gained replicas."""

    def __init__(self, layout: Layout, movable: set[TopicPartition] | None,
                 weight: Mapping[TopicPartition, float] | None = None) -> None:
        self.layout = layout
        self.movable = movable
        self.weight = weight  # what a partition weighs when not its size (network in: its write rate)
        self.cache: dict[int, tuple[int, list[TopicPartition], list[float]]] = {}
        self.stacks: dict[int, tuple[int, list[TopicPartition]]] = {}

    def _entry(self, broker: int) -> tuple[int, list[TopicPartition], list[float]]:
        stamp = self.layout.gained[broker]
        cached = self.cache.get(broker)
        if cached is None or cached[0] != stamp:
            on = self.layout.by_broker[broker]
            # By (size, number, topic): sorted by number and topic (a key read in C), then stably by size, never by
            # (size, (number, topic)) tuples, which took twice as long. Equal sizes (none known) take the topics in
            # turn: by (topic, number), a count rebalance moved one topic's partitions one after another onto the
            # same broker (found on Kafka 4.3.1: all six partitions of a topic of one replica ended on broker 3).
            by_name = sorted(on if self.movable is None else on.keys() & self.movable, key=_in_turn)
            weight = self.weight
            sizes: Sequence[float] = (list(map(on.__getitem__, by_name)) if weight is None
                                      else [weight.get(tp, 0.0) for tp in by_name])
            order = sorted(range(len(by_name)), key=sizes.__getitem__)
            cached = (stamp, [by_name[i] for i in order], [sizes[i] for i in order])
            self.cache[broker] = cached
        return cached

    def stack(self, broker: int) -> list[TopicPartition]:
        """The broker's movable partitions largest first, so the smallest is on top (at the end): partitions that
        left the broker are popped off it, where dropping them from the front of a list of thousands copied it."""
        stamp = self.layout.gained[broker]
        cached = self.stacks.get(broker)
        if cached is None or cached[0] != stamp:
            cached = (stamp, self._entry(broker)[1][::-1])
            self.stacks[broker] = cached
        return cached[1]

    def with_sizes(self, broker: int) -> tuple[list[TopicPartition], list[float]]:
        _, items, sizes = self._entry(broker)
        return items, sizes


def _try_move(layout: Layout, source: int, first: int, more: Callable[[], int | None], stack: list[TopicPartition],
              rack_aware: bool, budget: Budget | None = None) -> bool:
    """Move the smallest partition of `source` that a destination may take: `first`, then those `more` gives."""
    on_source = layout.by_broker[source]
    while stack and stack[-1] not in on_source:
        stack.pop()
    room = layout.headroom
    dest: int | None = first
    while dest is not None:
        tried = 0
        for tp in reversed(stack):
            if tp in on_source:
                if _move(layout, tp, source, dest, rack_aware, budget):
                    return True
                tried += 1
                if room is not None and (tried >= CANDIDATES_TRIED
                                         or room.blocked(layout, dest, tp) in ("disk", "replicas")):
                    break  # the partitions still to try are larger: they do not fit its disk or its count either
        dest = more()
    return False


def _move(layout: Layout, tp: TopicPartition, source: int, dest: int, rack_aware: bool, budget: Budget | None,
          guard: Guard | None = None) -> bool:
    """Move one replica of `tp` from `source` to `dest` if the partition, its racks, the destination's limits
    (capacity.md §6.1: disk, network in, max_replicas), `guard` and the budget allow it."""
    replicas = layout.replicas[tp]
    if dest in replicas or (rack_aware and not layout.rack_ok(replicas, source, dest)):
        return False
    room = layout.headroom
    if (room is not None and not room.fits(layout, dest, tp)) or (guard is not None and not guard(tp, dest)):
        return False
    if budget is not None:
        if not budget.allows(tp, layout.size(tp), dest):
            return False
        budget.spend(tp, layout.size(tp), dest)
    layout.replace(tp, source, dest)
    return True


def _next_open(dests: list[tuple[int, int, int]], count: dict[int, int], load: dict[int, int], taken: list[int],
               source: int, limits: Mapping[int, Bounds], offset: Mapping[int, int]) -> int | None:
    """The next destination below its upper bound that is not `source`, furthest below its aim first (`offset`:
    0 for every broker where one pool's bounds hold, else its own lower bound), then lightest, popped off its heap
    only when a step asks for it (most steps use the first); each current entry popped joins `taken`, at most
    DESTINATIONS_TRIED, for the caller to push back. An entry whose count is current is current in bytes too (a
    broker gains only after its entry is popped), so entries left unpopped need no refresh."""
    while dests and len(taken) < DESTINATIONS_TRIED:
        c, _, d = heapq.heappop(dests)
        if c != count[d] - offset[d]:
            heapq.heappush(dests, (count[d] - offset[d], load[d], d))
            continue
        taken.append(d)
        if count[d] < limits[d].upper and d != source:
            return d
    return None


def balance_replicas(
    layout: Layout,
    brokers: list[int],
    tolerance: float,
    destinations: list[int] | None = None,
    movable: set[TopicPartition] | None = None,
    rack_aware: bool = True,
    max_moves: int | None = None,
    budget: Budget | None = None,
    shares: Mapping[int, Bounds] | None = None,
) -> int:
    """Move replicas until counts are within bounds (or the budget is spent); returns the replica moves made.
    `shares`: each broker's own bounds (`share_bounds`: with racks of unequal size a rack's brokers hold more than
    the mean, and aimed at the mean the brokers of a small rack stayed apart, one above its share and one below);
    without them, one pool's bounds around the mean, shared again by the rest when a broker cannot shed."""
    total = sum(layout.replica_count[b] for b in brokers)
    targets = set(destinations if destinations is not None else brokers)
    every = set(brokers) | targets
    limits: Mapping[int, Bounds] = (shares if shares is not None
                                    else dict.fromkeys(every, _pool_bounds(layout, brokers, tolerance)))
    # heap keys: a count less the broker's own bound, constant through the run (one pool's bounds: by count alone);
    # sources furthest above their upper bound first, destinations furthest below their lower bound
    above = {b: limits[b].upper for b in every} if shares is not None else dict.fromkeys(every, 0)
    offset = {b: limits[b].lower for b in every} if shares is not None else above
    count = layout.replica_count
    sources = [(above[b] - count[b], b) for b in brokers]
    heapq.heapify(sources)
    dests = [(count[b] - offset[b], layout.bytes[b], b) for b in targets]
    heapq.heapify(dests)
    candidates = _Candidates(layout, movable)
    stuck: set[int] = set()
    moved = 0
    limit = max_moves if max_moves is not None else 4 * total  # every move strictly evens counts; a safety net
    pop, push, load = heapq.heappop, heapq.heappush, layout.bytes  # bound once: half a million steps
    while sources and moved < limit and not (budget and budget.exhausted()):
        neg, source = pop(sources)
        if neg != above[source] - count[source]:
            push(sources, (above[source] - count[source], source))
            continue
        taken: list[int] = []
        more = partial(_next_open, dests, count, load, taken, source, limits, offset)
        first = more()
        need_out = count[source] > limits[source].upper
        need_in = first is not None and count[first] < limits[first].lower and count[source] > limits[source].lower
        if not (need_out or need_in):
            break
        if first is not None and _try_move(layout, source, first, more, candidates.stack(source), rack_aware, budget):
            moved += 1
            push(sources, (above[source] - count[source], source))
        else:
            # This broker cannot shed (racks, or nowhere to go): the others balance among themselves.
            stuck.add(source)
            pool = [b for b in brokers if b not in stuck]
            if pool and shares is None:
                limits = dict.fromkeys(every, _pool_bounds(layout, pool, tolerance))
        for d in taken:
            push(dests, (count[d] - offset[d], load[d], d))
    return moved


@dataclass(frozen=True)
class Share:
    """One load evened by each broker's share of capacity (capacity.md §6.3): a broker's fair load is
    u* × scale, where u* = Σ load ÷ Σ scale. Without a scale every broker is alike and the fair load is the mean:
    bytes are evened as bytes, today's plans."""

    load: Mapping[int, float]  # live: the layout's bytes or network in per broker
    scale: Mapping[int, float] | None  # each broker's limit of that resource; None: every broker alike
    weight: Mapping[TopicPartition, float] | None = None  # a partition's load when it is not its size

    def level(self, brokers: list[int]) -> float:
        """u*: the utilization every broker would have if the load were spread by share (the mean unscaled)."""
        total = sum(self.load[b] for b in brokers)
        return total / (sum(self.scale[b] for b in brokers) if self.scale is not None else len(brokers))

    def key(self, broker: int, extra: float = 0) -> float:
        """The broker's utilization (its load, unscaled), with `extra` more."""
        load = self.load[broker] + extra
        return load / self.scale[broker] if self.scale is not None else load

    def fair(self, broker: int, level: float) -> float:
        return level * self.scale[broker] if self.scale is not None else level

    def of(self, layout: Layout, tp: TopicPartition) -> float:
        return layout.size(tp) if self.weight is None else self.weight.get(tp, 0.0)


def _known_limits(layout: Layout, brokers: list[int], resource: Resource) -> dict[int, float] | None:
    """Every broker's limit of `resource`, or None unless all of them are known and positive."""
    room = layout.headroom
    if room is None:
        return None
    per = room.limits.get(resource, {})
    return {b: per[b] for b in brokers} if all(per.get(b, 0.0) > 0 for b in brokers) else None


def disk_share(layout: Layout, brokers: list[int]) -> Share:
    """Bytes by share of each broker's disk limit where every one is known, else bytes as bytes."""
    return Share(layout.bytes, _known_limits(layout, brokers, "disk"))


def balance_bytes(layout: Layout, brokers: list[int], tolerance: float, movable: set[TopicPartition] | None = None,
                  rack_aware: bool = True, max_moves: int | None = None, budget: Budget | None = None) -> int:
    """Even disk, then network in where it is known: returns the replica moves made (best effort).

    Disk by utilization where every broker's disk limit is known (bytes otherwise). Network in, where write rates
    and every broker's network-in limit are known, second and to within NETWORK_IN_BAND (or the tolerance): a move
    for it may not take its destination's disk above the highest utilization the disk pass left, or the band
    above disk's fair share when that is higher, so it never undoes disk's peak."""
    if not brokers:
        return 0
    limit = max_moves if max_moves is not None else 4 * sum(layout.replica_count[b] for b in brokers)
    disk = disk_share(layout, brokers)
    moved = _even(layout, brokers, tolerance, disk, movable, rack_aware, limit, budget)
    scale = _known_limits(layout, brokers, "network_in") if layout.write else None
    if scale is None or moved >= limit or (budget is not None and budget.exhausted()):
        return moved
    band = max(tolerance, NETWORK_IN_BAND)
    ceiling = max(max(disk.key(b) for b in brokers), disk.level(brokers) * (1 + band))

    def below_ceiling(tp: TopicPartition, dest: int) -> bool:
        return disk.key(dest, layout.size(tp)) <= ceiling

    network = Share(layout.nw_in, scale, layout.write)
    return moved + _even(layout, brokers, band, network, movable, rack_aware, limit - moved, budget, below_ceiling)


def _even(layout: Layout, brokers: list[int], tolerance: float, share: Share, movable: set[TopicPartition] | None,
          rack_aware: bool, limit: int, budget: Budget | None, guard: Guard | None = None) -> int:
    """Move replicas until every broker's load is within `tolerance` of its fair share (best effort).

    A move of w from S to D is only made when w fits the gap of that very destination,
    w <= min(S − fair S, fair D − D), so both ends stay on their side of their fair share: the total distance
    strictly shrinks and the loop ends. The most used broker and the least used few come from heaps with lazy
    updates, and the largest partition that fits a gap is found by bisecting the source's weight-sorted list.
    """
    if sum(share.load[b] for b in brokers) <= 0:
        return 0
    level = share.level(brokers)
    if budget is not None and budget.limits.max_moves is not None:
        return _largest_first(layout, brokers, share, level, movable, rack_aware, budget, limit, guard)
    high, low = level * (1 + tolerance), level * (1 - tolerance)
    candidates = _Candidates(layout, movable, share.weight)
    key = share.key
    heavy = [(-key(b), b) for b in brokers]
    light = [(key(b), b) for b in brokers]
    heapq.heapify(heavy)
    heapq.heapify(light)
    moved = 0
    stuck: set[int] = set()
    # Destinations whose port budget cannot take even the smallest partition leave the pool for good (rooms only
    # shrink), so the lightest brokers filling up does not leave every source stuck.
    smallest = min((size for tp, size in layout.sizes.items() if size > 0 and (movable is None or tp in movable)),
                   default=0)
    full: set[int] = set()
    while moved < limit and not (budget and budget.exhausted()):
        source = _pop_current(heavy, lambda b: -key(b), stuck)
        if source is None:
            break
        pool = _lightest(light, key, {source} | full)
        if pool and key(source) <= high and key(pool[0]) >= low:
            break  # balanced within tolerance
        done = any(_move_into_gap(layout, source, dest, share, level, candidates, rack_aware, budget, guard)
                   for dest in pool)
        for d in pool:
            if budget is not None and budget.room(d) < smallest:
                full.add(d)
            else:
                heapq.heappush(light, (key(d), d))
        heapq.heappush(light, (key(source), source))
        if not done:
            stuck.add(source)
            continue
        moved += 1
        heapq.heappush(heavy, (-key(source), source))
    return moved


def _largest_first(layout: Layout, brokers: list[int], share: Share, level: float,
                   movable: set[TopicPartition] | None, rack_aware: bool, budget: Budget, limit: int,
                   guard: Guard | None) -> int:
    """_even under `--max-moves`: every move should buy the most, so the largest replicas on brokers above
    their fair share go first, each to one of the least used brokers whose gap it fits (both ends stay on their
    side of their fair share). Draining the heaviest broker first spent the count on megabytes where it was heavy
    with a partition no gap could take (bench/rebalance.py: budget fill 0.18 at 200,000 partitions)."""
    moved = 0
    load, key = share.load, share.key
    fair = {b: share.fair(b, level) for b in brokers}
    light = [(key(b), b) for b in brokers if load[b] < fair[b]]
    heapq.heapify(light)
    progress = True
    while progress and moved < limit and not budget.exhausted():
        progress = False
        ranked = sorted(((share.of(layout, tp), tp, b) for b in brokers if load[b] > fair[b]
                         for tp in layout.by_broker[b] if movable is None or tp in movable), reverse=True)
        for weight, tp, source in ranked:
            if moved >= limit or budget.exhausted() or weight <= 0:
                break
            if load[source] - weight < fair[source] or tp not in layout.by_broker[source]:
                continue
            pool = _lightest(light, key, {source})
            done = any(fair[d] - load[d] >= weight and _move(layout, tp, source, d, rack_aware, budget, guard)
                       for d in pool)
            for d in pool:
                if load[d] < fair[d]:
                    heapq.heappush(light, (key(d), d))
            moved += done
            progress = progress or done
    return moved


def _lightest(light: list[tuple[float, int]], key: Callable[[int], float], skip: set[int]) -> list[int]:
    """Up to DESTINATIONS_TRIED of the least used brokers, taken off the heap (the caller puts them back)."""
    pool: list[int] = []
    while light and len(pool) < DESTINATIONS_TRIED:
        d = _pop_current(light, key, skip | set(pool))
        if d is None:
            break
        pool.append(d)
    return pool


def _move_into_gap(layout: Layout, source: int, dest: int, share: Share, level: float, candidates: _Candidates,
                   rack_aware: bool, budget: Budget | None, guard: Guard | None) -> bool:
    gap = min(share.load[source] - share.fair(source, level), share.fair(dest, level) - share.load[dest])
    return gap > 0 and _move_largest_fitting(layout, source, dest, candidates, gap, rack_aware, budget, guard)


def _pop_current(heap: list[tuple[float, int]], key: Callable[[int], float], skip: set[int]) -> int | None:
    """Pop the best broker whose entry is current (lazy deletion); entries of `skip` are dropped."""
    while heap:
        value, broker = heapq.heappop(heap)
        if broker in skip:
            continue
        if value != key(broker):
            heapq.heappush(heap, (key(broker), broker))
            continue
        return broker
    return None


def _move_largest_fitting(layout: Layout, source: int, dest: int, candidates: _Candidates, gap: float,
                          rack_aware: bool, budget: Budget | None, guard: Guard | None = None) -> bool:
    """Move the largest replica of `source` no heavier than `gap` that `dest` may take."""
    items, sizes = candidates.with_sizes(source)
    on_source = layout.by_broker[source]
    room = layout.headroom
    limited = room is not None or guard is not None
    capped = room is not None and dest in room.limits.get("replicas", {})  # has a max_replicas
    tried = 0
    for i in range(bisect.bisect_right(sizes, gap) - 1, -1, -1):
        if sizes[i] <= 0:
            return False
        if items[i] in on_source:
            if _move(layout, items[i], source, dest, rack_aware, budget, guard):
                return True
            tried += 1
            if limited and tried >= CANDIDATES_TRIED:
                return False
            if capped and room is not None and room.blocked(layout, dest, items[i]) == "replicas":
                return False  # at its max_replicas: it takes no replica of any partition
    return False


def smallest_on(layout: Layout, broker: int, count: int) -> int:
    """Bytes of the `count` smallest replicas on a broker: what shedding `count` replicas costs at least."""
    if count <= 0:
        return 0
    return sum(sorted(layout.by_broker[broker].values())[:count])
