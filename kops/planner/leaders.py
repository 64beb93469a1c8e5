"""Leader balance: choose each partition's preferred leader (its first replica) so leaders spread evenly.

This is a bipartite b-matching: partitions on one side, brokers on the other, an edge for each replica, and
every broker may lead at most `cap` = ceil(partitions / brokers) partitions. Starting from the current
preferred leaders, brokers above `cap` hand leadership over along augmenting paths (a partition led by an
overloaded broker moves to another of its replicas, which may hand one of its own on, ...), as in
Ford–Fulkerson. That is exact: if any assignment within `cap` exists, this finds one, and it changes only
partitions on a path, so the plan stays small. A direct hand-over (path of length one) is tried first; it
settles almost everything.

Only the order of replicas changes (no data moves); a preferred-leader election then makes it real.
"""

from __future__ import annotations

import math
from collections import deque

from kops.model.partitions import TopicPartition
from kops.planner.layout import Layout


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

    # 1. Direct hand-overs from every broker above the cap (or not eligible, e.g. decommissioned).
    for broker in sorted(led, key=lambda b: (-count[b], b)):
        for tp in list(led[broker]):
            if (count[broker] <= cap and broker in eligible) or room() <= 0:
                break
            _hand_over(layout, tp, broker, cap, led, count, eligible, changed)

    # 2. Augmenting paths for whatever is left above the cap.
    for broker in sorted(led):
        while (count[broker] > cap and room() > 0
               and _augment(layout, broker, cap, led, count, eligible, changed, room())):
            pass
    return len(changed)


def _hand_over(layout: Layout, tp: TopicPartition, broker: int, cap: int, led: dict[int, list[TopicPartition]],
               count: dict[int, int], eligible: set[int], changed: set[TopicPartition]) -> None:
    """`tp`'s leadership to its least-loaded eligible follower below the cap, if it has one."""
    for other in sorted((b for b in layout.replicas[tp][1:] if b in eligible), key=lambda b: (count[b], b)):
        if count[other] < cap:
            _lead(layout, tp, other)
            led[broker].remove(tp)
            led.setdefault(other, []).append(tp)
            changed.add(tp)
            return


def _augment(layout: Layout, start: int, cap: int, led: dict[int, list[TopicPartition]], count: dict[int, int],
             eligible: set[int], changed: set[TopicPartition], room: int) -> bool:
    """BFS from `start` through partitions it leads to a broker below `cap`; flip leadership along the path
    (unless the path changes more than `room` partitions)."""
    parent: dict[int, tuple[int, TopicPartition] | None] = {start: None}
    queue = deque([start])
    end = None
    while queue and end is None:
        broker = queue.popleft()
        for tp in led.get(broker, ()):
            for other in layout.replicas[tp][1:]:
                if other in parent or other not in eligible:
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
