"""Batching: split moves into batches that respect the limits and carry similar work on every broker port.

A batch lasts as long as its slowest partition (seed 000): its makespan is the time of its busiest broker
port, max over brokers of (bytes in ÷ follower rate, bytes out ÷ leader rate), where a move's bytes leave its
current leader once per new replica and arrive at each new replica. The sum of batch makespans is at least
the lower bound max over brokers of (all bytes in or out ÷ rate); it comes close when every batch carries the
same share of each busy broker's bytes. So moves are taken largest first and each goes to the batch whose
makespan it raises least (ties: the least loaded batch), among batches where it fits `max_partitions`,
`max_bytes`, `max_moves_per_broker` (in and out) and the 1 MB znode limit. The number of batches starts at
the least the limits allow and grows only when a move fits nowhere.

Without sizes, every new replica counts as one unit of work and durations are unknown.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from operator import attrgetter

from kops.bulk import in_key_order
from kops.model.plan import Move
from kops.planner.headroom import PeakRoom

ZNODE_LIMIT = 1_000_000  # bytes of /admin/reassign_partitions JSON (ZooKeeper's jute.maxbuffer is 1 MiB)
ZNODE_OVERHEAD = 30  # {"version":1,"partitions":[]}
_by_partition = attrgetter("topic", "partition")  # a move's (topic, partition), read in C
_copied = attrgetter("copied_bytes")  # a move's work where sizes are known (`work`)


@dataclass(frozen=True)
class Limits:
    max_partitions: int | None = None
    max_bytes: int | None = None
    max_moves_per_broker: int | None = None


def znode_entry_bytes(move: Move) -> int:
    """Size of the move's entry in the reassignment znode JSON (with its comma)."""
    replicas = move.to_replicas
    return (len('{"topic":"","partition":,"replicas":[]},') + len(move.topic) + len(str(move.partition))
            + sum(map(len, map(str, replicas))) + len(replicas))


def work(move: Move, sized: bool) -> int:
    return move.copied_bytes if sized else len(move.adding)


class _Batch:
    def __init__(self, entry_bytes: Mapping[tuple[str, int], int]) -> None:
        self.entry_bytes = entry_bytes  # each move's znode_entry_bytes by partition, counted once per plan
        self.moves: dict[tuple[str, int], Move] = {}  # by partition: O(1) membership and removal
        # the moves copying into each broker, and those each leader serves (by partition): `critical` reads the
        # ports at the makespan's, not every move of the batch
        self.into: dict[int, dict[tuple[str, int], Move]] = {}
        self.served: dict[int, dict[tuple[str, int], Move]] = {}
        self.bytes = 0
        self.znode = ZNODE_OVERHEAD
        self.moves_in: dict[int, int] = {}
        self.moves_out: dict[int, int] = {}
        self.time_in: dict[int, float] = {}
        self.time_out: dict[int, float] = {}
        self.makespan = 0.0

    def fits(self, move: Move, limits: Limits, sized: bool) -> bool:
        if limits.max_partitions is not None and len(self.moves) >= limits.max_partitions:
            return False
        if limits.max_bytes is not None and self.moves and self.bytes + move.copied_bytes > limits.max_bytes:
            return False
        if self.znode + self.entry_bytes[(move.topic, move.partition)] > ZNODE_LIMIT:
            return False
        cap = limits.max_moves_per_broker
        if cap is not None:
            if any(self.moves_in.get(b, 0) >= cap for b in move.adding):
                return False
            if move.adding and self.moves_out.get(move.leader, 0) >= cap:
                return False
        return True

    def remove(self, move: Move, rate_in: float, rate_out: float, sized: bool) -> None:
        amount = move.bytes if sized else 1
        # The makespan is the largest port time: it can only fall if the move left a port at it. The local search
        # tries out removing moves that set nothing thousands of times; each rescanned every port.
        at_top = any(self.time_in[b] == self.makespan for b in move.adding) or (
            bool(move.adding) and self.time_out[move.leader] == self.makespan)
        key = (move.topic, move.partition)
        del self.moves[key]
        for b in move.adding:
            del self.into[b][key]
        if move.adding:
            del self.served[move.leader][key]
        self.bytes -= move.copied_bytes
        self.znode -= self.entry_bytes[key]
        for b in move.adding:
            self.moves_in[b] -= 1
            self.time_in[b] -= amount / rate_in
        if move.adding:
            self.moves_out[move.leader] -= 1
            self.time_out[move.leader] -= amount * len(move.adding) / rate_out
        if at_top:
            self.makespan = max([*self.time_in.values(), *self.time_out.values(), 0.0])

    def defines_makespan(self, move: Move) -> bool:
        """Does the move sit on a port that is at this batch's makespan?"""
        top = self.makespan - 1e-9
        return any(self.time_in.get(b, 0.0) >= top for b in move.adding) or (
            bool(move.adding) and self.time_out.get(move.leader, 0.0) >= top)

    def critical(self) -> Iterator[Move]:
        """Its moves that define its makespan (as `defines_makespan` asks of each), with the ports at the makespan
        found once: the local search lists them in every batch at every pass, tens of thousands each."""
        top = self.makespan - 1e-9
        found: dict[tuple[str, int], Move] = {}
        for b, t in self.time_in.items():
            if t >= top:
                found.update(self.into[b])
        for b, t in self.time_out.items():
            if t >= top:
                found.update(self.served[b])
        return iter(found.values())

    def makespan_with(self, move: Move, rate_in: float, rate_out: float, sized: bool) -> float:
        amount = move.bytes if sized else 1
        worst = self.makespan
        for b in move.adding:
            worst = max(worst, self.time_in.get(b, 0.0) + amount / rate_in)
        if move.adding:
            worst = max(worst, self.time_out.get(move.leader, 0.0) + amount * len(move.adding) / rate_out)
        return worst

    def hold(self, move: Move) -> None:
        """`add` for what `fits` reads only (moves, bytes, znode, moves per broker), without port times: peaks
        repaired batch by batch (`repair_peaks`) after the times were balanced."""
        key = (move.topic, move.partition)
        self.moves[key] = move
        self.bytes += move.copied_bytes
        self.znode += self.entry_bytes[key]
        for b in move.adding:
            self.moves_in[b] = self.moves_in.get(b, 0) + 1
            self.into.setdefault(b, {})[key] = move
        if move.adding:
            self.moves_out[move.leader] = self.moves_out.get(move.leader, 0) + 1
            self.served.setdefault(move.leader, {})[key] = move

    def add(self, move: Move, rate_in: float, rate_out: float, sized: bool) -> None:
        """`hold`, and the move's bytes on its ports' times (the makespan)."""
        self.hold(move)
        amount = move.bytes if sized else 1
        time_in = self.time_in
        for b in move.adding:
            if (t := time_in.get(b, 0.0) + amount / rate_in) > self.makespan:
                self.makespan = t
            time_in[b] = t
        if move.adding:
            t = self.time_out.get(move.leader, 0.0) + amount * len(move.adding) / rate_out
            self.time_out[move.leader] = t
            if t > self.makespan:
                self.makespan = t


def minimum_batches(moves: list[Move], limits: Limits, sized: bool, entry_bytes: Mapping[tuple[str, int], int]) -> int:
    n = len(moves)
    if n == 0:
        return 0
    needed = 1
    if limits.max_partitions:
        needed = max(needed, math.ceil(n / limits.max_partitions))
    if limits.max_bytes and sized:
        needed = max(needed, math.ceil(sum(m.copied_bytes for m in moves) / limits.max_bytes))
    if limits.max_moves_per_broker:
        ins: dict[int, int] = {}
        outs: dict[int, int] = {}
        for m in moves:
            for b in m.adding:
                ins[b] = ins.get(b, 0) + 1
            if m.adding:
                outs[m.leader] = outs.get(m.leader, 0) + 1
        busiest = max([*ins.values(), *outs.values(), 0])
        needed = max(needed, math.ceil(busiest / limits.max_moves_per_broker))
    needed = max(needed, math.ceil(sum(entry_bytes[(m.topic, m.partition)] for m in moves)
                                   / (ZNODE_LIMIT - ZNODE_OVERHEAD)))
    return needed


def make_batches(moves: list[Move], limits: Limits, rate: float, sized: bool, order: str = "size",
                 declared: Sequence[str] = (), room: PeakRoom | None = None) -> list[list[Move]]:
    """Group moves into batches (each a list of moves in a stable order). Deterministic.

    `order`: size (balanced batches, largest work first), topic (by name), as-declared (topics in `declared`
    order, the playbook's; topics moved without being declared, by a decommission say, come after, by name).
    `room`: the brokers' limits, where any is known: every batch's peak is kept within them (`repair_peaks`)."""
    if not moves:
        return []
    data = [m for m in moves if m.adding]
    entry_bytes = {(m.topic, m.partition): znode_entry_bytes(m) for m in moves}
    batches = [_Batch(entry_bytes) for _ in range(max(1, minimum_batches(data, limits, sized, entry_bytes)))]
    ranked = _ranked(data, order, declared, sized)
    if order in ("topic", "as-declared"):
        _fill_in_order(batches, ranked, limits, rate, sized)
    else:
        _fill_balanced(batches, ranked, limits, rate, sized)
        _improve(batches, limits, rate, sized)
    # Leader-only moves copy nothing: they ride along in the first batch that has room.
    for move in sorted((m for m in moves if not m.adding), key=_by_partition):
        target = next((b for b in batches if b.fits(move, limits, sized)), None)
        if target is None:
            target = _Batch(entry_bytes)
            batches.append(target)
        target.add(move, rate, rate, sized)
    rank = _partition_ranks(moves)
    grouped = [_in_partition_order(b.moves, rank) for b in batches if b.moves]
    return grouped if room is None or room.always_room(moves) else repair_peaks(grouped, room, limits, entry_bytes)


def _partition_ranks(moves: Sequence[Move]) -> dict[tuple[str, int], int]:
    """Each move's place in partition order: a batch's moves are sorted by it, whole numbers compared in C, where
    sorting a million-partition plan's batches by (topic, partition) took 3.7 s."""
    keys = list(map(_by_partition, moves))
    return dict(zip(in_key_order(keys, keys), itertools.count()))


def _in_partition_order(moves: Mapping[tuple[str, int], Move], rank: Mapping[tuple[str, int], int]) -> list[Move]:
    return list(map(moves.__getitem__, sorted(moves, key=rank.__getitem__)))


def repair_peaks(grouped: list[list[Move]], room: PeakRoom, limits: Limits,
                 entry_bytes: Mapping[tuple[str, int], int]) -> list[list[Move]]:
    """The batches again, in order, with every batch's peak within the limits (docs/design/capacity.md §6.6):
    while batch k copies, a destination holds the new copy and its source the old one, so a move whose
    destination would go over waits for a later batch, after the sources of this one have freed their room
    (batches are appended as needed). Moves that waited go first, then the batch's own; each batch keeps
    `limits`. Once the batches made are done, a batch of waiting moves that takes none of them waits on room
    no move frees: refused (PeaksRefused). With nothing over, the batches are unchanged."""
    out: list[list[Move]] = []
    waiting: list[Move] = []
    k = 0
    while k < len(grouped) or waiting:
        batch, left = _Batch(entry_bytes), []
        for move in [*waiting, *(grouped[k] if k < len(grouped) else [])]:
            if batch.fits(move, limits, True) and room.claim(move):
                batch.hold(move)
            else:
                left.append(move)
        if batch.moves:
            room.close()
            out.append(sorted(batch.moves.values(), key=_by_partition) if left or waiting else grouped[k])
        elif k >= len(grouped):
            raise room.refusal(left[0], len(out) + 1)
        waiting, k = left, k + 1
    return out


def _ranked(data: list[Move], order: str, declared: Sequence[str], sized: bool) -> list[Move]:
    if order == "topic":
        return sorted(data, key=_by_partition)
    if order == "as-declared":
        position = {name: i for i, name in enumerate(declared)}
        return sorted(data, key=lambda m: (position.get(m.topic, len(position)), m.topic, m.partition))
    # By (-work, partition): in partition order (as `_moves` lists them, else sorted), then stably by work, most
    # first (a sort `reverse` keeps equal keys in order), the bytes a key read in C: cheaper than a key tuple built
    # in Python for each of half a million moves.
    by_partition = in_key_order(data, map(_by_partition, data))
    return sorted(by_partition, key=_copied if sized else partial(work, sized=False), reverse=True)


def _fill_in_order(batches: list[_Batch], ranked: list[Move], limits: Limits, rate: float, sized: bool) -> None:
    """Keep the requested order: fill batches in sequence."""
    current = 0
    for move in ranked:
        while not batches[current].fits(move, limits, sized):
            current += 1
            if current == len(batches):
                batches.append(_Batch(batches[0].entry_bytes))
        batches[current].add(move, rate, rate, sized)


def _fill_balanced(batches: list[_Batch], ranked: list[Move], limits: Limits, rate: float, sized: bool) -> None:
    """Each move (largest first) to the batch whose makespan it raises least (ties: the lower makespan, then
    the lower index). Batches are tried in order of makespan: the first that fits and is not raised at all is
    the best, and the rest need not be tried (most moves of a million-partition plan stop at the first)."""
    order = sorted((batch.makespan, index) for index, batch in enumerate(batches))  # kept sorted
    znode_only = limits == Limits()  # no execution limit: `fits` is the znode's room alone, read here
    entry_bytes = batches[0].entry_bytes
    for move in ranked:
        best, best_key, entry = None, None, None
        adding, leader, amount = move.adding, move.leader, move.bytes if sized else 1
        into, out = amount / rate, amount * len(adding) / rate  # `_Batch.makespan_with`, inlined: its port times
        room = ZNODE_LIMIT - entry_bytes[(move.topic, move.partition)]
        for makespan, index in order:
            batch = batches[index]
            if batch.znode > room if znode_only else not batch.fits(move, limits, sized):
                continue
            worst, time_in = makespan, batch.time_in
            for b in adding:  # max(), compared inline: half a million moves, a few batches each
                if (t := time_in.get(b, 0.0) + into) > worst:
                    worst = t
            if adding and (t := batch.time_out.get(leader, 0.0) + out) > worst:
                worst = t
            key = (worst - makespan, makespan, index)
            if best_key is None or key < best_key:
                best, best_key, entry = batch, key, (makespan, index)
            if key[0] == 0.0:
                break
        if best is None or entry is None:
            best, entry = _Batch(batches[0].entry_bytes), (0.0, len(batches))
            batches.append(best)
        else:
            order.remove(entry)
        best.add(move, rate, rate, sized)
        bisect.insort(order, (best.makespan, entry[1]))



IMPROVEMENT_PASSES = 8
CRITICAL_TRIED = 16  # moves setting a batch's makespan, examined per batch and pass
EVICTABLE_TRIED = 4  # cheapest moves of a target batch considered for a swap
CHEAPEST_KEPT = EVICTABLE_TRIED * 4  # of which this many are read, cheapest first, some of them setting its makespan
CHEAPEST_RESERVE = CHEAPEST_KEPT * 2  # and up to this many kept, so a few leaving do not read the batch again


def _improve(batches: list[_Batch], limits: Limits, rate: float, sized: bool) -> None:
    """Local search after the greedy: a move that sets its batch's makespan goes (or swaps with a cheap move
    that sets nothing) to a batch where it costs less. Largest-first placement fills the first batches with
    whatever comes next; this puts the critical ports' moves where their time is already being paid.
    Every accepted step lowers the sum of makespans; passes and candidates are bounded, so the cost stays
    linear in the number of batches even for batches of thousands of moves."""
    search = _Search(batches, limits, rate, sized)
    for _ in range(IMPROVEMENT_PASSES):
        improved = False
        for j in sorted(range(len(batches)), key=lambda k: (-batches[k].makespan, k)):
            source = batches[j]
            critical = heapq.nsmallest(CRITICAL_TRIED, source.critical(),
                                       key=lambda m: (-work(m, sized), m.topic, m.partition))
            for move in critical:
                if (move.topic, move.partition) in source.moves:
                    improved |= search.relocate(j, move)
        if not improved:
            return


class _Search:
    """One step of the local search: take a critical move out of its batch and put it where it costs less."""

    def __init__(self, batches: list[_Batch], limits: Limits, rate: float, sized: bool) -> None:
        self.batches, self.limits, self.rate, self.sized = batches, limits, rate, sized
        # per batch, its cheapest moves by `_cost` (at least CHEAPEST_KEPT, up to CHEAPEST_RESERVE) kept as the
        # search moves moves in and out, and whether they are all the batch holds
        self._cheapest: dict[int, tuple[list[tuple[tuple[int, str, int], Move]], bool]] = {}

    def _cost(self, move: Move) -> tuple[int, str, int]:
        return work(move, self.sized), move.topic, move.partition

    def cheap(self, i: int) -> list[Move]:
        """The cheapest moves of batch i that set nothing: candidates for a swap. The cheapest moves depend on
        the batch's moves only (kept by `_add` and `_left`); which of them set its makespan is asked each time."""
        target = self.batches[i]
        found = self._cheapest.get(i)
        if found is None:
            sized = self.sized
            kept = heapq.nsmallest(CHEAPEST_RESERVE, (((work(m, sized), m.topic, m.partition), m)
                                                      for m in target.moves.values()))
            found = self._cheapest[i] = (kept, len(target.moves) <= CHEAPEST_RESERVE)
        return [m for _, m in found[0][:CHEAPEST_KEPT] if not target.defines_makespan(m)][:EVICTABLE_TRIED]

    def _add(self, i: int, move: Move) -> None:
        """`move` joins batch i, and its cheapest where it is cheaper than the last kept (or all are kept)."""
        self.batches[i].add(move, self.rate, self.rate, self.sized)
        found = self._cheapest.get(i)
        if found is not None:
            kept, whole = found
            cost = self._cost(move)
            if whole or cost < kept[-1][0]:
                bisect.insort(kept, (cost, move))
                if len(kept) > CHEAPEST_RESERVE:
                    del kept[CHEAPEST_RESERVE:]
                    self._cheapest[i] = (kept, False)

    def _left(self, i: int, move: Move) -> None:
        """`move` left batch i for good: a kept one leaves a place the next cheapest would take, unknown here once
        fewer than CHEAPEST_KEPT are left (read again when next asked)."""
        found = self._cheapest.get(i)
        if found is None:
            return
        kept, whole = found
        cost = self._cost(move)
        if whole or cost <= kept[-1][0]:
            del kept[[c for c, _ in kept].index(cost)]
            if not whole and len(kept) < CHEAPEST_KEPT:
                del self._cheapest[i]

    def relocate(self, j: int, move: Move) -> bool:
        source, rate, sized = self.batches[j], self.rate, self.sized
        before = source.makespan
        source.remove(move, rate, rate, sized)
        gain = before - source.makespan
        best = self._best_place(j, move, gain) if gain > 1e-9 else None
        if best is None:
            source.add(move, rate, rate, sized)  # back as it was: the cheapest it keeps are unchanged
            return False
        self._left(j, move)
        _, i, other = best
        if other is not None:
            self.batches[i].remove(other, rate, rate, sized)
            self._left(i, other)
            self._add(j, other)
        self._add(i, move)
        return True

    def _best_place(self, j: int, move: Move, gain: float) -> tuple[float, int, Move | None] | None:
        """The cheapest batch for `move` (and the move it swaps with, if any) costing less than `gain`."""
        source, limits, rate, sized = self.batches[j], self.limits, self.rate, self.sized
        best: tuple[float, int, Move | None] | None = None
        for i, target in enumerate(self.batches):
            if i == j:
                continue
            if target.fits(move, limits, sized):
                cost = target.makespan_with(move, rate, rate, sized) - target.makespan
                if cost < gain - 1e-9 and (best is None or cost < best[0]):
                    best = (cost, i, None)
                continue
            for swapped in self.cheap(i):
                t_before = target.makespan
                target.remove(swapped, rate, rate, sized)
                ok = target.fits(move, limits, sized) and source.fits(swapped, limits, sized)
                swap_cost = (target.makespan_with(move, rate, rate, sized) - t_before
                             + source.makespan_with(swapped, rate, rate, sized) - source.makespan) if ok else None
                target.add(swapped, rate, rate, sized)  # a trial: the cheapest it keeps are unchanged
                if swap_cost is not None and swap_cost < gain - 1e-9 and (best is None or swap_cost < best[0]):
                    best = (swap_cost, i, swapped)
        return best


def port_times(moves: list[Move], rate_in: float, rate_out: float,
               caps: Mapping[int, int] | None = None) -> tuple[dict[int, int], dict[int, int], float]:
    """Bytes in and out per broker and the makespan in seconds for a set of moves run at once; `caps`: brokers that
    receive at a lower rate (their follower throttle held to their network-in room)."""
    bytes_in: dict[int, int] = {}
    bytes_out: dict[int, int] = {}
    for m in moves:
        for b in m.adding:
            bytes_in[b] = bytes_in.get(b, 0) + m.bytes
        if m.adding:
            bytes_out[m.leader] = bytes_out.get(m.leader, 0) + m.bytes * len(m.adding)
    caps = caps or {}
    seconds = max([v / min(rate_in, caps.get(b, rate_in)) for b, v in bytes_in.items()]
                  + [v / rate_out for v in bytes_out.values()] + [0.0])
    return bytes_in, bytes_out, seconds
