"""The planner's working copy of a cluster's assignment, with per-broker load kept up to date.

Placement, rebalancing and leader balancing all edit one `Layout`; the plan is then the difference between
the snapshot's assignment and the final layout. Loads are counted as the strategies need them: replicas,
preferred leaders (first replica) and bytes per broker; where write rates are known, network in (every replica)
and network out (the preferred leader: write rate × (followers + the topic's consumer fan-out)), as
docs/design/capacity.md §4 counts them.
"""

from __future__ import annotations

import builtins
import itertools
import operator
from collections import Counter, defaultdict
from collections.abc import Collection, Mapping
from typing import Protocol

from kops.bulk import in_key_order
from kops.model.capacity import Capacities, Resource
from kops.model.partitions import TopicPartition, keys_of
from kops.model.snapshot import Snapshot

SORT_FRACTION = 16  # a change to more than this fraction of the partitions is read off the layout's order


class Limits(Protocol):
    """Each broker's capacity limits as placement asks them (kops.planner.headroom.Headroom is one)."""

    ranked: bool  # every broker's capacity is known: brokers are ranked by utilization
    @property
    def weight(self) -> Mapping[int, float]: ...  # each broker's share of capacity, for replicas without a size

    @property
    def caps(self) -> Capacities: ...
    @property
    def limits(self) -> Mapping[Resource, Mapping[int, float]]: ...  # what each broker may hold, where known

    def utilization(self, layout: Layout, broker: int) -> float: ...
    def fits(self, layout: Layout, broker: int, tp: TopicPartition) -> bool: ...
    def blocked(self, layout: Layout, broker: int, tp: TopicPartition) -> Resource | None: ...
    def refusal(self, layout: Layout, tp: TopicPartition, candidates: list[int]) -> str: ...


class Layout:
    def __init__(self, snapshot: Snapshot, sizes: dict[TopicPartition, int],
                 write: Mapping[TopicPartition, float] | None = None, fanout: Mapping[str, int] | None = None) -> None:
        self.racks: dict[int, str | None] = {b.id: b.rack for b in snapshot.brokers}
        self.sizes = sizes
        self.replicas: dict[TopicPartition, tuple[int, ...]] = {}
        self.replica_count: dict[int, int] = defaultdict(int)
        self.leader_count: dict[int, int] = defaultdict(int)
        self.bytes: dict[int, int] = defaultdict(int)
        # each broker's partitions with their sizes (`by_broker`), built when first read: the count balancers rank a
        # broker's partitions by size without looking each up among a million; a goal walk never reads it
        self._by_broker: dict[int, dict[TopicPartition, int]] | None = None
        self.gained: dict[int, int] = defaultdict(int)  # bumped when a broker gains a replica (cache key)
        # network in per broker, kept as `bytes` is, only when write rates are known (capacity limits)
        self.write: Mapping[TopicPartition, float] = write or {}
        self.nw_in: dict[int, float] = defaultdict(float)
        self.fanout: Mapping[str, int] = fanout or {}  # consumer fan-out per topic (1 when not declared)
        self.nw_out: dict[int, float] = defaultdict(float)  # on the preferred leader, only when `write` is known
        self.headroom: Limits | None = None  # each broker's limits, when any capacity is known
        self._load(snapshot)
        if self.write:
            self._load_rates()

    def out_term(self, tp: TopicPartition, replicas: int) -> float:
        """What leading `tp` sends: its write rate to each follower and to each consumer group (capacity.md §4);
        the same whichever replica leads, so a leadership change moves it whole."""
        rate = self.write.get(tp, 0.0)
        return _sent(rate, replicas, self.fanout.get(tp.topic, 1)) if rate else 0.0

    def _load_rates(self) -> None:
        """Every partition's network in on its replicas and network out on its preferred leader (`out_term`,
        inlined), in one pass."""
        write, fanout, nw_in, nw_out = self.write, self.fanout, self.nw_in, self.nw_out
        for tp, assigned in self.replicas.items():
            rate = write.get(tp, 0.0)
            for b in assigned:
                nw_in[b] += rate
            if assigned:
                nw_out[assigned[0]] += rate * (len(assigned) - 1 + fanout.get(tp.topic, 1)) if rate else 0.0

    def _load(self, snapshot: Snapshot) -> None:
        """Every partition as `set` would add it to an empty layout, in one pass without its bookkeeping; the
        replica and leader counts (whole numbers, the same in any order) counted in C, each broker first met in
        the same order."""
        replicas, sizes, bytes_ = self.replicas, self.sizes, self.bytes
        for name, topic in snapshot.topics.items():
            parts = topic.partitions
            for tp, part in zip(keys_of(name, parts), parts.values()):
                # In flight: plan from where the running reassignment will land (its target).
                assigned = tuple(part.target_replicas if part.adding or part.removing else part.replicas)
                replicas[tp] = assigned
                size = sizes.get(tp, 0)
                for b in assigned:
                    bytes_[b] += size
        self.replica_count.update(Counter(itertools.chain.from_iterable(replicas.values())))
        self.leader_count.update(Counter(map(operator.itemgetter(0), filter(None, replicas.values()))))
        self.gained.update(self.replica_count)  # each replica counts as gained once, as `set` counts it

    @property
    def by_broker(self) -> dict[int, dict[TopicPartition, int]]:
        """Each broker's partitions with their sizes, kept by `set` and `replace` once built."""
        if self._by_broker is None:
            found: dict[int, dict[TopicPartition, int]] = defaultdict(dict)
            sizes = self.sizes
            for tp, assigned in self.replicas.items():
                size = sizes.get(tp, 0)
                for b in assigned:
                    found[b][tp] = size
            self._by_broker = found
        return self._by_broker

    def loads(self) -> tuple[dict[int, int], dict[int, int], dict[int, int]]:
        """Replicas, preferred leaders and bytes per broker holding any replica, by broker id: the plan summary's
        before and after, read off the counters instead of another pass over every partition."""
        held = sorted(b for b, n in self.replica_count.items() if n > 0)
        return ({b: self.replica_count[b] for b in held},
                {b: n for b, n in sorted(self.leader_count.items()) if n > 0},
                {b: self.bytes[b] for b in held})

    def size(self, tp: TopicPartition) -> int:
        return self.sizes.get(tp, 0)

    def set(self, tp: TopicPartition, replicas: tuple[int, ...]) -> None:
        """Assign `tp`'s replicas; only brokers that lose or gain it have their loads touched. The partition's
        size, write rate and fan-out are read once (`out_term`'s products, the same): a million-partition plan
        sets a quarter of a million partitions, and each read of a map that large is a cache miss."""
        old = self.replicas.get(tp)
        replicas = tuple(replicas)
        size, rate = self.sizes.get(tp, 0), self.write.get(tp, 0.0)
        fan = self.fanout.get(tp.topic, 1) if rate else 1
        if old is not None:
            self._held(tp, [b for b in old if b not in replicas], -1, size, rate)
            if old:
                self.leader_count[old[0]] -= 1
                if self.write:
                    self.nw_out[old[0]] -= _sent(rate, len(old), fan)
        self.replicas[tp] = replicas
        self._held(tp, [b for b in replicas if old is None or b not in old], 1, size, rate)
        if replicas:
            self.leader_count[replicas[0]] += 1
            if self.write:
                self.nw_out[replicas[0]] += _sent(rate, len(replicas), fan)

    def set_changed(self, changed: Collection[TopicPartition],
                    replicas: Mapping[TopicPartition, tuple[int, ...]]) -> None:
        """Each of `changed` set to its `replicas`, in partition order, so the loads' float sums come out the same
        on every run: read off the layout's own order where that is sorted (a snapshot lists partitions so) and the
        change is large, instead of sorting a quarter of a million partitions by name (a second at a million)."""
        keys = self.replicas
        large = len(changed) * SORT_FRACTION > len(keys)
        order = in_key_order(list(filter(changed.__contains__, keys)), keys) if large else sorted(changed)
        for tp in order:
            self.set(tp, replicas[tp])

    def _held(self, tp: TopicPartition, brokers: list[int], sign: int, size: int, rate: float) -> None:
        """`brokers` gain (`sign` 1) or lose (-1) a replica of `tp` (`size` bytes, `rate` written): their counts,
        bytes and network in."""
        by_broker = self._by_broker
        for b in brokers:
            self.replica_count[b] += sign
            self.bytes[b] += sign * size
            if by_broker is not None:
                if sign > 0:
                    by_broker[b][tp] = size
                else:
                    by_broker[b].pop(tp, None)
            if sign > 0:
                self.gained[b] += 1
            if self.write:
                self.nw_in[b] += sign * rate

    def replace(self, tp: TopicPartition, leaving: int, arriving: int) -> None:
        """`set` for the balancers' one step (half a million at a million partitions): the replica on `leaving`
        (one of `tp`'s) goes to `arriving` (not one), in its position; only those two brokers' loads change."""
        replicas = self.replicas[tp]
        size = self.sizes.get(tp, 0)
        self.replicas[tp] = tuple(arriving if b == leaving else b for b in replicas)
        self.replica_count[leaving] -= 1
        self.bytes[leaving] -= size
        self.replica_count[arriving] += 1
        self.bytes[arriving] += size
        if self._by_broker is not None:
            del self._by_broker[leaving][tp]
            self._by_broker[arriving][tp] = size
        self.gained[arriving] += 1
        if self.write:
            rate = self.write.get(tp, 0.0)
            self.nw_in[leaving] -= rate
            self.nw_in[arriving] += rate
        if replicas[0] == leaving:
            self.leader_count[leaving] -= 1
            self.leader_count[arriving] += 1
            if self.write:
                term = self.out_term(tp, len(replicas))
                self.nw_out[leaving] -= term
                self.nw_out[arriving] += term

    def remove(self, tp: TopicPartition) -> None:
        self.set(tp, ())
        del self.replicas[tp]

    def rack(self, broker: int) -> str | None:
        return self.racks.get(broker)

    def racks_of(self, replicas: tuple[int, ...] | list[int]) -> builtins.set[str | None]:
        return {self.racks.get(b) for b in replicas}

    def rack_ok(self, replicas: tuple[int, ...], leaving: int | None, arriving: int) -> bool:
        """Does replacing `leaving` by `arriving` keep the partition's racks distinct where they were?"""
        if arriving in replicas:
            return False
        rack = self.racks.get(arriving)
        if rack is None:
            return True
        if leaving is not None and self.racks.get(leaving) == rack:
            return True
        return all(self.racks.get(b) != rack for b in replicas if b != leaving)

    def partitions_of_topic(self, topic: str) -> list[TopicPartition]:
        return sorted(tp for tp in self.replicas if tp.topic == topic)


def _sent(rate: float, replicas: int, fanout: int) -> float:
    """What a leader sends for a partition written at `rate`: to each follower and each consumer group."""
    return rate * (replicas - 1 + fanout) if rate else 0.0
