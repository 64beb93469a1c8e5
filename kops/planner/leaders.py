"""Leader balance: choose each partition's preferred leader (its first replica) so leaders spread evenly.

This is a bipartite b-matching: partitions on one side, brokers on the other, an edge for each replica, and
every broker may lead at most `cap` = ceil(partitions / brokers) partitions. Starting from the current
preferred leaders, brokers above `cap` hand leadership over along augmenting paths (a partition led by an
overloaded broker moves to another of its replicas, which may hand one of its own on, ...), as in
Ford–Fulkerson. That is exact: if any assignment within `cap` exists, this finds one, and it changes only
partitions on a path, so the plan stays small. A direct hand-over (path of length one) is tried first; it
settles almost everything.

Only the order of replicas changes (no data moves); a preferred-leader election then makes it real.

Network out (docs/design/capacity.md §4, §6.3). Where write rates are known, leading a partition sends its write
rate to each follower and each consumer group, and a leadership change moves that load whole. Where a broker's
network-out limit is known, no hand-over makes it the leader of a partition that would take it over that limit
(one already over takes no more). Then leaders of hot partitions are spread by network out: a broker well above its
fair share (the mean, or by share of network-out capacity where every broker's is known) hands a hot partition to
a follower below it, or swaps it for a cooler partition that follower leads and it follows; leader counts stay
within the cap, and each step moves load from above the fair share to below it, so the loop ends.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable

from kops.model.partitions import TopicPartition
from kops.planner.layout import Layout

NETWORK_OUT_BAND = 0.05  # brokers within 5% of their fair network out are left alone
SMALLEST_STEP = 0.005  # of the broker's fair network out: a change that moves less is not worth an election
Fits = Callable[[int, TopicPartition], bool]  # may this broker lead this partition (its network-out limit)?


def _lead(layout: Layout, tp: TopicPartition, leader: int) -> None:
    replicas = layout.replicas[tp]
    layout.set(tp, (leader,) + tuple(b for b in replicas if b != leader))


def balance_leaders(layout: Layout, brokers: list[int], scope: set[TopicPartition] | None = None,
                    max_changes: int | None = None) -> int:
    """Reorder replicas of partitions in `scope` (all when None), changing at most `max_changes` leaders (the
    most loaded brokers hand over first); returns how many partitions changed leader."""
    eligible = set(brokers)
    partitions = [(tp, replicas[0]) for tp, replicas in layout.replicas.items() if replicas]
    if not partitions or not brokers:
        return 0
    cap = math.ceil(len(partitions) / len(brokers))
    count = layout.leader_count
    led: dict[int, list[TopicPartition]] = {}
    for tp, leader in partitions:
        if scope is None or tp in scope:
            led.setdefault(leader, []).append(tp)
    for items in led.values():
        items.sort()
    changed: set[TopicPartition] = set()

    def room() -> int:
        return max_changes - len(changed) if max_changes is not None else len(partitions)

    fits = _network_out_fits(layout, brokers)
    # 1. Direct hand-overs from every broker above the cap (or not eligible, e.g. decommissioned).
    for broker in sorted(led, key=lambda b: (-count[b], b)):
        for tp in list(led[broker]):
            if (count[broker] <= cap and broker in eligible) or room() <= 0:
                break
            _hand_over(layout, tp, broker, cap, led, count, eligible, changed, fits)

    # 2. Augmenting paths for whatever is left above the cap.
    for broker in sorted(led):
        while (count[broker] > cap and room() > 0
               and _augment(layout, broker, cap, led, count, eligible, changed, room(), fits)):
            pass
    # 3. Network out, where write rates are known: hot partitions' leaders spread by share.
    if layout.write:
        _spread_network_out(layout, sorted(eligible), led, changed, room, fits)
    return len(changed)


def _network_out_fits(layout: Layout, brokers: list[int]) -> Fits | None:
    """Whether a broker may become a partition's leader within its network-out limit; None when no broker's
    limit is known (or no write rate is)."""
    room = layout.headroom
    if room is None or not layout.write:
        return None
    limits = {b: limit for b in brokers if (limit := room.caps.limit(b, "network_out")) is not None}
    if not limits:
        return None
    over = {b for b, limit in limits.items() if layout.nw_out[b] > limit}
    nw_out = layout.nw_out

    def fits(broker: int, tp: TopicPartition) -> bool:
        term = layout.out_term(tp, len(layout.replicas[tp]))
        limit = limits.get(broker)
        return limit is None or term <= 0 or (broker not in over and nw_out[broker] + term <= limit)

    return fits


def _hand_over(layout: Layout, tp: TopicPartition, broker: int, cap: int, led: dict[int, list[TopicPartition]],
               count: dict[int, int], eligible: set[int], changed: set[TopicPartition], fits: Fits | None) -> None:
    """`tp`'s leadership to its least-loaded eligible follower below the cap (and its network-out limit)."""
    for other in sorted((b for b in layout.replicas[tp][1:] if b in eligible), key=lambda b: (count[b], b)):
        if count[other] < cap and (fits is None or fits(other, tp)):
            _lead(layout, tp, other)
            led[broker].remove(tp)
            led.setdefault(other, []).append(tp)
            changed.add(tp)
            return


def _augment(layout: Layout, start: int, cap: int, led: dict[int, list[TopicPartition]], count: dict[int, int],
             eligible: set[int], changed: set[TopicPartition], room: int, fits: Fits | None) -> bool:
    """BFS from `start` through partitions it leads to a broker below `cap`; flip leadership along the path
    (unless the path changes more than `room` partitions). A step onto a broker whose network-out limit the
    partition would break is not taken (counted as if the broker kept what it hands on: never over)."""
    parent: dict[int, tuple[int, TopicPartition] | None] = {start: None}
    queue = deque([start])
    end = None
    while queue and end is None:
        broker = queue.popleft()
        for tp in led.get(broker, ()):
            for other in layout.replicas[tp][1:]:
                if other in parent or other not in eligible or (fits is not None and not fits(other, tp)):
                    continue
                parent[other] = (broker, tp)
                if count[other] < cap:
                    end = other
                    break
                queue.append(other)
            if end is not None:
                break
    if end is None:
        return False
    path: list[tuple[int, int, TopicPartition]] = []  # (from, to, partition), end first
    node = end
    while (step := parent[node]) is not None:
        path.append((step[0], node, step[1]))
        node = step[0]
    if len(path) > room:
        return False
    for previous, node, tp in path:
        _lead(layout, tp, node)
        led[previous].remove(tp)
        led.setdefault(node, []).append(tp)
        changed.add(tp)
    return True


def _spread_network_out(layout: Layout, brokers: list[int], led: dict[int, list[TopicPartition]],
                        changed: set[TopicPartition], room: Callable[[], int], fits: Fits | None) -> None:
    """Brokers above their fair network out, most used first, shed hot leaderships (`_shed`) until each is within
    NETWORK_OUT_BAND of its fair share or can shed nothing more."""
    nw_out = layout.nw_out
    total = sum(nw_out[b] for b in brokers)
    if total <= 0 or not brokers:
        return
    known = layout.headroom.caps if layout.headroom is not None else None
    limits = {b: known.limit(b, "network_out") for b in brokers} if known is not None else {}
    scale = {b: float(v) for b, v in limits.items() if v} if all(limits.get(b) for b in brokers) else None
    level = total / (sum(scale.values()) if scale else len(brokers))
    fair = {b: level * (scale[b] if scale else 1.0) for b in brokers}

    def use(b: int) -> float:
        return nw_out[b] / (scale[b] if scale else 1.0)

    heap = [(-use(b), b) for b in brokers]
    heapq.heapify(heap)
    steps = 4 * len(layout.replicas)  # every step lowers the distance to the fair shares; a safety net
    while heap and room() > 0 and steps > 0:
        neg, broker = heapq.heappop(heap)
        if -neg != use(broker):
            heapq.heappush(heap, (-use(broker), broker))
            continue
        if nw_out[broker] <= fair[broker] * (1 + NETWORK_OUT_BAND):
            break
        steps -= 1
        touched = _shed(layout, broker, led, changed, fair, fits, room())
        if touched is not None:
            heapq.heappush(heap, (-use(broker), broker))
            heapq.heappush(heap, (-use(touched), touched))


def _shed(layout: Layout, broker: int, led: dict[int, list[TopicPartition]], changed: set[TopicPartition],
          fair: dict[int, float], fits: Fits | None, room: int) -> int | None:
    """One step off `broker`: its hottest led partition whose follower F is below its fair share takes it, alone
    when F leads at least two fewer partitions (the counts' spread does not widen), else swapped for a cooler
    partition F leads and `broker` follows; the load moved fits both gaps (so both stay on their side of their
    fair share). The follower, or None."""
    nw_out, count = layout.nw_out, layout.leader_count
    excess, floor = nw_out[broker] - fair[broker], SMALLEST_STEP * fair[broker]
    for tp in sorted(led.get(broker, ()), key=lambda t: (-layout.out_term(t, len(layout.replicas[t])), t)):
        term = layout.out_term(tp, len(layout.replicas[tp]))
        if term < floor or term <= 0:
            return None
        for other in sorted(b for b in layout.replicas[tp][1:] if b in fair):
            gap = min(excess, fair[other] - nw_out[other])
            if gap <= 0 or (fits is not None and not fits(other, tp)):
                continue
            if count[other] + 1 < count[broker] and term <= gap:  # the leader counts' spread does not widen
                _switch(layout, tp, broker, other, led, changed)
                return other
            back = _swap_for(layout, broker, other, led, term, gap, floor) if room >= 2 else None
            if back is not None:
                _switch(layout, tp, broker, other, led, changed)
                _switch(layout, back, other, broker, led, changed)
                return other
    return None


def _swap_for(layout: Layout, broker: int, other: int, led: dict[int, list[TopicPartition]], term: float,
              gap: float, floor: float) -> TopicPartition | None:
    """The partition `other` leads and `broker` follows whose swap moves the most network out within `gap` (and
    at least `floor`)."""
    best, best_moved = None, 0.0
    for tp in led.get(other, ()):
        replicas = layout.replicas[tp]
        if broker in replicas:
            moved = term - layout.out_term(tp, len(replicas))
            if moved >= floor and best_moved < moved <= gap:
                best, best_moved = tp, moved
    return best


def _switch(layout: Layout, tp: TopicPartition, leader: int, to: int, led: dict[int, list[TopicPartition]],
            changed: set[TopicPartition]) -> None:
    _lead(layout, tp, to)
    led[leader].remove(tp)
    led.setdefault(to, []).append(tp)
    changed.add(tp)
