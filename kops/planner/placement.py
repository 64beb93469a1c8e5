"""Placement strategies: where new replicas go, as pure functions over a `Layout`.

- rack-aware (the default when every broker has a rack): a partition's replicas on distinct racks as far as
  racks allow; within that, the least loaded brokers (replicas, then bytes, then id for determinism);
- balanced: the least loaded brokers, racks ignored;
- static: the declared assignment, as is.

Where capacities are known (docs/design/capacity.md §6.2), a broker takes a replica only if it stays within its
limits, and while every broker's capacity is known the lowest share of capacity in use ranks first (before replicas,
bytes and id); when none fits, the ValueError says why with the numbers (§6.4).

New partitions are placed against the cluster's existing load, so adding partitions evens load out instead of
stacking onto broker 1. A topic's new partitions are spread as Kafka spreads them: no broker above its share of
the topic while racks leave another, and each leader the replica leading fewest of the topic, then fewest preferred
leaders overall.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kops.model.partitions import TopicPartition
from kops.planner.layout import Layout


def _load_key(layout: Layout, broker: int, empty: bool = False) -> tuple[float, ...]:
    """Fewest replicas, then bytes; with every broker's capacity known, lowest utilization first (fuller brokers
    get less, unequal brokers fill by their share of capacity). `empty`: for a replica that weighs nothing yet (a
    new topic's or partition's), fewest replicas per share of capacity first: it changes no broker's utilization,
    so ranked by it every new partition of a play went to the same broker."""
    room = layout.headroom
    if room is not None and room.ranked:
        utilization = room.utilization(layout, broker)
        if empty:
            share = layout.replica_count[broker] / room.weight.get(broker, 1.0)
            return (share, utilization, layout.bytes[broker], broker)
        return (utilization, layout.replica_count[broker], layout.bytes[broker], broker)
    return (layout.replica_count[broker], layout.bytes[broker], broker)


def _fitting(layout: Layout, brokers: Iterable[int], tp: TopicPartition | None) -> list[int]:
    """The brokers that stay within their limits with one more replica of `tp` (all of them without limits)."""
    room = layout.headroom
    if room is None or tp is None:
        return list(brokers)
    return [b for b in brokers if room.fits(layout, b, tp)]


def _no_room(layout: Layout, tp: TopicPartition | None, candidates: list[int], count: int) -> ValueError:
    room = layout.headroom
    if room is None or tp is None or not candidates:
        return ValueError(f"needs {count} more brokers but only {len(candidates)} are eligible")
    return ValueError(room.refusal(layout, tp, candidates))


@dataclass
class TopicSpread:
    """A topic's replicas and leaderships per broker while its new partitions are placed, and each broker's
    ceiling: its share of the topic's replicas rounded up (by share of capacity where capacities rank brokers).
    A broker at its ceiling takes more of the topic only where racks leave no other; among the rest the cluster's
    load decides, so an empty broker still fills first, but not with the whole topic."""

    held: Counter[int]
    led: Counter[int]
    ceiling: dict[int, int]

    def full(self, broker: int) -> bool:
        return self.held[broker] >= self.ceiling.get(broker, 0)


def topic_spread(layout: Layout, topic: str, numbers: list[int], replication_factor: int,
                 eligible: list[int]) -> TopicSpread:
    """The spread of `topic` as it stands (partitions added to it are numbered after those it has) and each
    eligible broker's ceiling once `numbers` are placed."""
    held: Counter[int] = Counter()
    led: Counter[int] = Counter()
    for number in range(min(numbers, default=0)):
        replicas = layout.replicas.get(TopicPartition(topic, number), ())
        held.update(replicas)
        led.update(replicas[:1])
    room = layout.headroom
    weight = {b: room.weight.get(b, 1.0) if room is not None and room.ranked else 1.0 for b in eligible}
    total, whole = sum(held.values()) + len(numbers) * replication_factor, sum(weight.values())
    ceiling = {b: math.ceil(total * w / whole - 1e-9) if whole > 0 else total for b, w in weight.items()}
    return TopicSpread(held, led, ceiling)


def pick_brokers(
    layout: Layout,
    count: int,
    eligible: Iterable[int],
    existing: tuple[int, ...] = (),
    rack_aware: bool = True,
    tp: TopicPartition | None = None,
    spread: TopicSpread | None = None,
) -> list[int]:
    """Choose `count` more brokers for a partition (`tp`, checked against the limits) that already has
    `existing` replicas; `spread`: a new partition's topic, whose ceilings come before the load.

    Rack-aware: first brokers on racks the partition does not use yet, then (when racks run out) the least
    used racks. Raises ValueError when there are not enough eligible brokers, or not enough within their limits.
    """
    eligible = [b for b in eligible if b not in existing]
    empty = tp is None or not layout.size(tp)
    def full(b: int) -> bool:
        return spread is not None and spread.full(b)

    candidates = sorted(_fitting(layout, eligible, tp), key=lambda b: (full(b),) + _load_key(layout, b, empty))
    if len(candidates) < count:
        raise _no_room(layout, tp, eligible if len(eligible) >= count else candidates, count)
    chosen: list[int] = []
    used = list(existing)
    for _ in range(count):
        if rack_aware:
            rack_use: dict[str | None, int] = {}
            for b in used:
                rack_use[layout.rack(b)] = rack_use.get(layout.rack(b), 0) + 1
            best = min(
                (b for b in candidates if b not in chosen),
                key=lambda b: (rack_use.get(layout.rack(b), 0) if layout.rack(b) is not None else 0,
                               full(b)) + _load_key(layout, b, empty),
            )
        else:
            best = next(b for b in candidates if b not in chosen)
        chosen.append(best)
        used.append(best)
    return chosen


def lead_with_fewest_leaders(layout: Layout, replicas: list[int], led: Mapping[int, int]) -> tuple[int, ...]:
    """Put the replica leading fewest of the topic (`led`), then fewest preferred leaders overall, first; keep the
    others in order."""
    leader = min(replicas, key=lambda b: (led.get(b, 0), layout.leader_count[b], layout.replica_count[b], b))
    return (leader,) + tuple(b for b in replicas if b != leader)


def place_partitions(
    layout: Layout,
    topic: str,
    numbers: Iterable[int],
    replication_factor: int,
    eligible: list[int],
    rack_aware: bool,
) -> dict[int, tuple[int, ...]]:
    """Place new partitions one by one, updating the layout so each sees the load the previous ones added. A topic
    is spread over the brokers, as Kafka's own assignment spreads it: no broker takes more than its ceiling of the
    topic while racks leave another (`TopicSpread`), the cluster's load decides among the rest, and each leadership
    goes to the replica leading fewest of the topic (a new topic had gone whole to an empty broker, and every
    leadership with it)."""
    numbers = list(numbers)
    spread = topic_spread(layout, topic, numbers, replication_factor, eligible)
    result = {}
    for number in numbers:
        tp = TopicPartition(topic, number)
        brokers = pick_brokers(layout, replication_factor, eligible, (), rack_aware, tp, spread)
        replicas = lead_with_fewest_leaders(layout, brokers, spread.led)
        layout.set(tp, replicas)
        spread.held.update(replicas)
        spread.led[replicas[0]] += 1
        result[number] = replicas
    return result


def grow(layout: Layout, tp: TopicPartition, target_rf: int, eligible: list[int], rack_aware: bool) -> None:
    """Raise a partition's replication factor: keep every replica, add the fewest (rack-aware), append them."""
    current = layout.replicas[tp]
    extra = pick_brokers(layout, target_rf - len(current), eligible, current, rack_aware, tp)
    layout.set(tp, current + tuple(extra))


def shrink(layout: Layout, tp: TopicPartition, target_rf: int) -> None:
    """Lower a replication factor: keep the preferred leader; drop replicas that share a rack with another
    kept replica first, then those on the most loaded brokers."""
    current = list(layout.replicas[tp])
    keep = current[:1]
    rest = current[1:]
    while len(keep) + len(rest) > target_rf:
        def drop_key(b: int) -> tuple[Any, ...]:
            others = keep + [r for r in rest if r != b]
            shares_rack = layout.rack(b) is not None and layout.rack(b) in layout.racks_of(others)
            return (shares_rack, layout.replica_count[b], layout.bytes[b], b)

        victim = max(rest, key=drop_key)
        rest.remove(victim)
    layout.set(tp, tuple(keep + rest))


class LeastLoaded:
    """Brokers in a heap by load key (replicas, bytes, id): the least loaded broker that passes a test, found
    without scanning every broker (a decommission of 20 brokers out of 1,000 scanned 980 brokers for each of its
    60,000 replicas). Entries are refreshed when popped, which is exact only while loads grow: use it where
    replicas leave brokers outside it (a decommission) and arrive on brokers in it."""

    def __init__(self, layout: Layout, brokers: Iterable[int]) -> None:
        self.layout = layout
        self.heap = [_load_key(layout, b) for b in brokers]
        heapq.heapify(self.heap)

    def first(self, accept: Callable[[int], bool]) -> int | None:
        """The least loaded broker `accept` takes, or None."""
        heap, layout = self.heap, self.layout
        seen: list[tuple[float, ...]] = []
        found = None
        while heap:
            entry = heapq.heappop(heap)
            current = _load_key(layout, int(entry[-1]))
            if entry != current:
                heapq.heappush(heap, current)
                continue
            seen.append(entry)
            if accept(int(entry[-1])):
                found = int(entry[-1])
                break
        for entry in seen:
            heapq.heappush(heap, entry)
        return found


def replace(layout: Layout, tp: TopicPartition, leaving: int, eligible: list[int], rack_aware: bool,
            index: LeastLoaded | None = None) -> int:
    """Move one replica off `leaving` to the least loaded eligible broker that keeps racks distinct (else to the
    least loaded eligible one). `index`, when given, holds exactly the `eligible` brokers.

    The new broker takes the leaving one's position, so a moved preferred leader stays first.
    """
    current = layout.replicas[tp]
    if index is not None:
        best = _replacement_indexed(layout, tp, current, leaving, index, rack_aware)
    else:
        best = _replacement_scanned(layout, current, leaving, _fitting(layout, eligible, tp), rack_aware)
    if best is None:
        candidates = [b for b in eligible if b not in current]
        if layout.headroom is not None and candidates:
            raise ValueError(layout.headroom.refusal(layout, tp, candidates))
        raise ValueError(f"no eligible broker can take the replica of {tp} on broker {leaving}")
    layout.replace(tp, leaving, best)
    return best


def _replacement_scanned(layout: Layout, current: tuple[int, ...], leaving: int, eligible: list[int],
                         rack_aware: bool) -> int | None:
    candidates = [b for b in eligible if b not in current]
    if rack_aware:
        good = [b for b in candidates if layout.rack_ok(current, leaving, b)]
        candidates = good or candidates
    return min(candidates, key=lambda b: _load_key(layout, b)) if candidates else None


def _replacement_indexed(layout: Layout, tp: TopicPartition, current: tuple[int, ...], leaving: int,
                         index: LeastLoaded, rack_aware: bool) -> int | None:
    """The same choice as `_replacement_scanned`, from the heap: the racks `rack_ok` refuses are those of the
    other replicas, but for the leaving broker's own rack and brokers without a rack."""
    racks, room = layout.racks, layout.headroom

    def free(b: int) -> bool:
        return b not in current and (room is None or room.fits(layout, b, tp))

    if rack_aware:
        taken = {racks.get(b) for b in current if b != leaving} - {racks.get(leaving), None}
        best = index.first(lambda b: free(b) and racks.get(b) not in taken)
        if best is not None:
            return best
    return index.first(free)
