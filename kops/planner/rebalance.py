"""Rebalancing: move the fewest replicas (and the fewest bytes) that bring every broker within tolerance.

Goal `replicas`: replica counts within `tolerance` of the mean (tolerance 0 means ±1). Each step moves one
replica from the most loaded broker to the least loaded one that can take it (not already a replica, racks
kept distinct), choosing the smallest partition that fits, so the bytes moved stay near their lower bound.
Goal `bytes`: the same over bytes, choosing the partition whose size best fills the gap without overshoot.
Used for `rebalance:` plays, for `brokers.add` (destinations limited to the new brokers) and by `kops
rebalance`. `replica_lower_bound` is the least number of replica moves any plan needs for the same bounds.

Sources and destinations sit in heaps with lazy updates, and each broker's partitions are kept sorted by
size until it gains a replica, so a step costs about log(brokers), not a scan of the cluster.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from kops.model.partitions import TopicPartition
from kops.planner.budget import Budget
from kops.planner.layout import Layout

DESTINATIONS_TRIED = 8


@dataclass(frozen=True)
class Bounds:
    lower: int
    upper: int


def bounds(total: int, brokers: int, tolerance: float) -> Bounds:
    mean = total / brokers if brokers else 0
    upper = max(math.ceil(mean), math.floor(mean * (1 + tolerance)))
    lower = min(math.floor(mean), math.ceil(mean * (1 - tolerance)))
    return Bounds(lower, upper)


def replica_lower_bound(counts: dict[int, int], brokers: list[int], b: Bounds) -> int:
    excess = sum(max(0, counts.get(x, 0) - b.upper) for x in brokers)
    deficit = sum(max(0, b.lower - counts.get(x, 0)) for x in brokers)
    return max(excess, deficit)


class _Candidates:
    """Each broker's movable partitions sorted by size (and their sizes, for bisecting), rebuilt only after the
    broker gained replicas."""

    def __init__(self, layout: Layout, movable: set[TopicPartition] | None) -> None:
        self.layout = layout
        self.movable = movable
        self.cache: dict[int, tuple[int, list[TopicPartition], list[int]]] = {}
        self.stacks: dict[int, tuple[int, list[TopicPartition]]] = {}

    def _entry(self, broker: int) -> tuple[int, list[TopicPartition], list[int]]:
        stamp = self.layout.gained[broker]
        cached = self.cache.get(broker)
        if cached is None or cached[0] != stamp:
            on = self.layout.by_broker[broker]
            # By (size, partition): sorted by partition, then stably by size, so the sorts compare ints or
            # (topic, number) pairs, never (size, (topic, number)) tuples, which took twice as long.
            by_name = sorted(on if self.movable is None else on.keys() & self.movable)
            sizes = list(map(on.__getitem__, by_name))
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

    def with_sizes(self, broker: int) -> tuple[list[TopicPartition], list[int]]:
        _, items, sizes = self._entry(broker)
        return items, sizes


def _try_move(layout: Layout, source: int, first: int, more: Callable[[], int | None], stack: list[TopicPartition],
              rack_aware: bool, budget: Budget | None = None) -> bool:
    """Move the smallest partition of `source` that a destination may take: `first`, then those `more` gives."""
    on_source = layout.by_broker[source]
    while stack and stack[-1] not in on_source:
        stack.pop()
    dest: int | None = first
    while dest is not None:
        for tp in reversed(stack):
            if tp in on_source and _move(layout, tp, source, dest, rack_aware, budget):
                return True
        dest = more()
    return False


def _move(layout: Layout, tp: TopicPartition, source: int, dest: int, rack_aware: bool, budget: Budget | None) -> bool:
    """Move one replica of `tp` from `source` to `dest` if the partition, its racks and the budget allow it."""
    replicas = layout.replicas[tp]
    if dest in replicas or (rack_aware and not layout.rack_ok(replicas, source, dest)):
        return False
    if budget is not None:
        if not budget.allows(tp, layout.size(tp), dest):
            return False
        budget.spend(tp, layout.size(tp), dest)
    layout.replace(tp, source, dest)
    return True


def _next_open(dests: list[tuple[int, int, int]], count: dict[int, int], load: dict[int, int], taken: list[int],
               source: int, upper: int) -> int | None:
    """The next lightest destination below `upper` that is not `source`, popped off its heap only when a step asks
    for it (most steps use the first); each current entry popped joins `taken`, at most DESTINATIONS_TRIED, for
    the caller to push back. An entry whose count is current is current in bytes too (a broker gains only after
    its entry is popped), so entries left unpopped need no refresh."""
    while dests and len(taken) < DESTINATIONS_TRIED:
        c, _, d = heapq.heappop(dests)
        if c != count[d]:
            heapq.heappush(dests, (count[d], load[d], d))
            continue
        taken.append(d)
        if c < upper and d != source:
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
) -> int:
    """Move replicas until counts are within bounds (or the budget is spent); returns the replica moves made."""
    total = sum(layout.replica_count[b] for b in brokers)
    limits = bounds(total, len(brokers), tolerance)
    targets = set(destinations if destinations is not None else brokers)
    count = layout.replica_count
    sources = [(-count[b], b) for b in brokers]
    heapq.heapify(sources)
    dests = [(count[b], layout.bytes[b], b) for b in targets]
    heapq.heapify(dests)
    candidates = _Candidates(layout, movable)
    stuck: set[int] = set()
    moved = 0
    limit = max_moves if max_moves is not None else 4 * total  # every move strictly evens counts; a safety net
    pop, push, load = heapq.heappop, heapq.heappush, layout.bytes  # bound once: half a million steps
    while sources and moved < limit and not (budget and budget.exhausted()):
        neg, source = pop(sources)
        if -neg != count[source]:
            push(sources, (-count[source], source))
            continue
        taken: list[int] = []
        more = partial(_next_open, dests, count, load, taken, source, limits.upper)
        first = more()
        need_out = count[source] > limits.upper
        need_in = first is not None and count[first] < limits.lower and count[source] > limits.lower
        if not (need_out or need_in):
            break
        if first is not None and _try_move(layout, source, first, more, candidates.stack(source), rack_aware, budget):
            moved += 1
            push(sources, (-count[source], source))
        else:
            # This broker cannot shed (racks, or nowhere to go): the others balance among themselves.
            stuck.add(source)
            pool = [b for b in brokers if b not in stuck]
            if pool:
                limits = bounds(sum(count[b] for b in pool), len(pool), tolerance)
        for d in taken:
            push(dests, (count[d], load[d], d))
    return moved


def balance_bytes(layout: Layout, brokers: list[int], tolerance: float, movable: set[TopicPartition] | None = None,
                  rack_aware: bool = True, max_moves: int | None = None, budget: Budget | None = None) -> int:
    """Move replicas until every broker's bytes are within `tolerance` of the mean (best effort).

    A move of s bytes from S to D is only made when s fits the gap of that very destination,
    s <= min(S - mean, mean - D), so both ends stay on their side of the mean: the spread strictly shrinks
    and the loop ends. The heaviest broker and the lightest few come from heaps with lazy updates, and the
    largest partition that fits a gap is found by bisecting the source's size-sorted list.
    """
    total = sum(layout.bytes[b] for b in brokers)
    if not brokers or total == 0:
        return 0
    mean = total / len(brokers)
    limit = max_moves if max_moves is not None else 4 * sum(layout.replica_count[b] for b in brokers)
    if budget is not None and budget.limits.max_moves is not None:
        return _largest_first(layout, brokers, mean, movable, rack_aware, budget, limit)
    high, low = mean * (1 + tolerance), mean * (1 - tolerance)
    candidates = _Candidates(layout, movable)
    heavy = [(-layout.bytes[b], b) for b in brokers]
    light = [(layout.bytes[b], b) for b in brokers]
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
        source = _pop_current(heavy, lambda b: -layout.bytes[b], stuck)
        if source is None:
            break
        pool = _lightest(layout, light, {source} | full)
        if pool and layout.bytes[source] <= high and layout.bytes[pool[0]] >= low:
            break  # balanced within tolerance
        done = any(_move_into_gap(layout, source, dest, mean, candidates, rack_aware, budget) for dest in pool)
        for d in pool:
            if budget is not None and budget.room(d) < smallest:
                full.add(d)
            else:
                heapq.heappush(light, (layout.bytes[d], d))
        heapq.heappush(light, (layout.bytes[source], source))
        if not done:
            stuck.add(source)
            continue
        moved += 1
        heapq.heappush(heavy, (-layout.bytes[source], source))
    return moved


def _largest_first(layout: Layout, brokers: list[int], mean: float, movable: set[TopicPartition] | None,
                   rack_aware: bool, budget: Budget, limit: int) -> int:
    """balance_bytes under `--max-moves`: every move should buy the most, so the largest replicas on brokers above
    the mean go first, each to one of the lightest brokers whose gap it fits (both ends stay on their side of
    the mean). Draining the heaviest broker first spent the count on megabytes where it was heavy with a
    partition no gap could take (bench/rebalance.py: budget fill 0.18 at 200,000 partitions)."""
    moved = 0
    light = [(layout.bytes[b], b) for b in brokers if layout.bytes[b] < mean]
    heapq.heapify(light)
    progress = True
    while progress and moved < limit and not budget.exhausted():
        progress = False
        ranked = sorted(((layout.size(tp), tp, b) for b in brokers if layout.bytes[b] > mean
                         for tp in layout.by_broker[b] if movable is None or tp in movable), reverse=True)
        for size, tp, source in ranked:
            if moved >= limit or budget.exhausted() or size <= 0:
                break
            if layout.bytes[source] - size < mean or tp not in layout.by_broker[source]:
                continue
            pool = _lightest(layout, light, {source})
            done = any(mean - layout.bytes[d] >= size and _move(layout, tp, source, d, rack_aware, budget)
                       for d in pool)
            for d in pool:
                if layout.bytes[d] < mean:
                    heapq.heappush(light, (layout.bytes[d], d))
            moved += done
            progress = progress or done
    return moved


def _lightest(layout: Layout, light: list[tuple[int, int]], skip: set[int]) -> list[int]:
    """Up to DESTINATIONS_TRIED of the lightest brokers, taken off the heap (the caller puts them back)."""
    pool: list[int] = []
    while light and len(pool) < DESTINATIONS_TRIED:
        d = _pop_current(light, lambda b: layout.bytes[b], skip | set(pool))
        if d is None:
            break
        pool.append(d)
    return pool


def _move_into_gap(layout: Layout, source: int, dest: int, mean: float, candidates: _Candidates, rack_aware: bool,
                   budget: Budget | None) -> bool:
    gap = min(layout.bytes[source] - mean, mean - layout.bytes[dest])
    return gap > 0 and _move_largest_fitting(layout, source, dest, candidates, gap, rack_aware, budget)


def _pop_current(heap: list[tuple[int, int]], key: Callable[[int], int], skip: set[int]) -> int | None:
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
                          rack_aware: bool, budget: Budget | None) -> bool:
    """Move the largest replica of `source` no bigger than `gap` that `dest` may take."""
    items, sizes = candidates.with_sizes(source)
    on_source = layout.by_broker[source]
    for i in range(bisect.bisect_right(sizes, gap) - 1, -1, -1):
        if sizes[i] <= 0:
            return False
        if items[i] in on_source and _move(layout, items[i], source, dest, rack_aware, budget):
            return True
    return False


def smallest_on(layout: Layout, broker: int, count: int) -> int:
    """Bytes of the `count` smallest replicas on a broker: what shedding `count` replicas costs at least."""
    if count <= 0:
        return 0
    return sum(sorted(layout.by_broker[broker].values())[:count])
