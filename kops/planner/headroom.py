"""Headroom: what a plan does to each broker's known capacities, for the plan to show (docs/design/capacity.md
§6.1, §7), and the limits placement keeps (`Headroom`, §6.2, §6.4) and every declared plan is checked against
(`violations`, §6.5), and every batch's peak (`PeakRoom`, which batches.make_batches keeps within them, and
`hard_violations`, which counts what a plan takes over, §6.6).

Per broker and resource the plan is walked as the executor runs it: creations, deletions and partition additions
first, then batch after batch, the preferred-leader election last. Loads per partition (§4): disk is its local
size on every replica; network in its write rate on every replica (producers on the leader, fetches on each
follower); network out, on the leader only, write rate × (followers + the topic's consumer fan-out); replicas, 1
per replica. During batch k a destination already holds its new copy while the source still holds the old one,
so the batch's peak is the load at its start plus everything it copies in. Where the disk capacity in force is
the reported one, the filesystem's other contents (reported total − usable, beyond the replicas' sizes) count
too, and stay constant through the plan.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import TYPE_CHECKING

from kops.model.capacity import RESOURCES, Capacities, CapacityDeclaration, Resource, resolve
from kops.model.partitions import Partition, TopicPartition, keys_of
from kops.model.plan import (
    Batch,
    CapacityReport,
    Move,
    PartitionAddition,
    Plan,
    TopicCreation,
    TopicDeletion,
    Usage,
)
from kops.model.snapshot import Snapshot
from kops.units import format_rate, format_size

if TYPE_CHECKING:
    from kops.planner.layout import Layout, Limits

PEAKED: tuple[Resource, ...] = ("disk", "network_in", "replicas")  # what a copy in flight adds to its destination
PerResource = dict[Resource, dict[int, float]]
ROUNDING = 1e-9  # of a cap: what sums of a million loads in another order may differ by, and more
Walked = tuple[PerResource, list[tuple[int, PerResource]], PerResource]  # before, (batch, its peak)..., after
_replicas = attrgetter("replicas")


@dataclass
class Loads:
    """Per-broker loads of every resource, kept as replicas are placed and removed."""

    write: Mapping[TopicPartition, float]
    sizes: Mapping[TopicPartition, int]
    fanout: Mapping[str, int]
    of: dict[Resource, dict[int, float]] = field(default_factory=lambda: {r: {} for r in RESOURCES})

    def place(self, tp: TopicPartition, replicas: tuple[int, ...], leader: int | None, sign: int = 1) -> None:
        """`sign` 1 places the partition's replicas (and leadership), -1 takes them away."""
        placed, none = (replicas, leader), ((), None)
        self.replace(tp, none if sign > 0 else placed, placed if sign > 0 else none)

    def replace(self, tp: TopicPartition, old: tuple[tuple[int, ...], int | None],
                new: tuple[tuple[int, ...], int | None]) -> None:
        """`tp` as `old` (replicas and leader) taken away, then as `new` placed: every partition a plan moves or
        elects, half a million at a million partitions, each with one call. Only the brokers that lose or gain a
        replica, and the leaders where the leadership or the follower count changes, are touched."""
        self.weighed(tp, self.sizes.get(tp, 0), self.write.get(tp, 0.0), old, new)

    def weighed(self, tp: TopicPartition, size: int, rate: float, old: tuple[tuple[int, ...], int | None],
                new: tuple[tuple[int, ...], int | None]) -> None:
        """`replace`, with the partition's size and write rate already read (a plan's walk reads them once for a
        batch's peak and its moves)."""
        disk, rate_in, count, out = self.of["disk"], self.of["network_in"], self.of["replicas"], self.of["network_out"]
        (was, old_leader), (now, new_leader) = old, new
        if was != now:
            for replicas, others, sign in ((was, now, -1), (now, was, 1)):
                amount, flow = sign * size, sign * rate
                for b in replicas:
                    if b not in others:
                        disk[b] = disk.get(b, 0.0) + amount
                        rate_in[b] = rate_in.get(b, 0.0) + flow
                        count[b] = count.get(b, 0.0) + sign
        if rate and (old_leader != new_leader or len(was) != len(now)):
            fan = self.fanout.get(tp.topic, 1)
            if old_leader is not None:
                out[old_leader] = out.get(old_leader, 0.0) - rate * (len(was) - 1 + fan)
            if new_leader is not None:
                out[new_leader] = out.get(new_leader, 0.0) + rate * (len(now) - 1 + fan)

    def place_snapshot(self, snapshot: Snapshot) -> None:
        """Every partition of `snapshot`, as `place` would add them one by one (the same sums in the same order),
        inlined: a million partitions, once per plan."""
        sizes, write, fanout = self.sizes, self.write, self.fanout
        # the same sums, in maps that add a broker when it is first met (as `get(b, 0.0)` did), read in C
        disk, rate_in, count, out = (defaultdict(float, self.of[r]) for r in
                                     ("disk", "network_in", "replicas", "network_out"))
        counted: Counter[int] = Counter()  # replicas per broker: whole numbers, the same in any order, in C
        for name, topic in snapshot.topics.items():
            fan, parts = fanout.get(name, 1), topic.partitions
            counted.update(itertools.chain.from_iterable(map(_replicas, parts.values())))
            for tp, part in zip(keys_of(name, parts), parts.values()):
                size, rate, replicas = sizes.get(tp, 0), write.get(tp, 0.0), part.replicas
                for b in replicas:
                    disk[b] += size
                    rate_in[b] += rate
                if rate and (leader := _leader(part)) is not None:
                    out[leader] += rate * (len(replicas) - 1 + fan)
        for b, n in counted.items():
            count[b] += n
        self.of["disk"], self.of["network_in"] = dict(disk), dict(rate_in)
        self.of["replicas"], self.of["network_out"] = dict(count), dict(out)

    def snapshot(self) -> PerResource:
        return {r: dict(per) for r, per in self.of.items()}


def current_loads(snapshot: Snapshot, sizes: Mapping[TopicPartition, int],
                  write: Mapping[TopicPartition, float] | None = None,
                  fanout: Mapping[str, int] | None = None) -> PerResource:
    """Every broker's loads as the snapshot's replicas stand: one pass over every partition, which a plan's
    batching (`peak_room`) and its report (`capacity_report`) both start from."""
    loads = Loads(write or {}, sizes, fanout or {})
    loads.place_snapshot(snapshot)
    return loads.snapshot()


def _leader(part: Partition) -> int | None:
    """The partition's elected leader, else its first replica (a leaderless or unread partition)."""
    if part.state is not None and part.state.leader >= 0:
        return part.state.leader
    return part.replicas[0] if part.replicas else None


Placed = dict[TopicPartition, tuple[tuple[int, ...], int | None]]  # replicas and leader of each partition


@dataclass(frozen=True)
class Changes:
    """What a plan does before its batches (a Plan has the same three fields): the batches' first start."""

    deletions: Sequence[TopicDeletion] = ()
    creations: Sequence[TopicCreation] = ()
    partition_additions: Sequence[PartitionAddition] = ()


def _changes_first(plan: Plan, snapshot: Snapshot, loads: Loads,
                   current_at: PerResource | None) -> tuple[PerResource, Placed]:
    """The loads before the plan (`current_at`, where the caller has them); then the topics it deletes, creates
    and grows, which come before its batches. The partitions placed here (deleted ones: no replicas) are kept; the
    rest are read from `snapshot` when a batch moves them (`_placed`), so no map of every partition is built."""
    if current_at is None:
        loads.place_snapshot(snapshot)
    else:
        loads.of = {r: dict(per) for r, per in current_at.items()}
    before = loads.snapshot()
    current: Placed = {}
    for deletion in plan.deletions:
        topic = snapshot.topics.get(deletion.topic)
        for number, part in (topic.partitions.items() if topic is not None else ()):
            tp = TopicPartition(deletion.topic, number)
            loads.place(tp, part.replicas, _leader(part), sign=-1)
            current[tp] = ((), None)
    for name, assignment in [*((c.topic, c.assignment) for c in plan.creations),
                             *((a.topic, a.assignment) for a in plan.partition_additions)]:
        for number, replicas in assignment.items():
            current[TopicPartition(name, number)] = (replicas, replicas[0])
            loads.place(TopicPartition(name, number), replicas, replicas[0])
    return before, current


def _placed(current: Placed, snapshot: Snapshot, tp: TopicPartition) -> tuple[tuple[int, ...], int | None] | None:
    """Where `tp` stands as the walk has it: placed by the walk, else as `snapshot` has it, else unknown (None)."""
    found = current.get(tp)
    if found is not None:
        return found
    part = snapshot.partition(tp)
    return None if part is None else (part.replicas, _leader(part))


def _weighed(loads: Loads, batch: Batch) -> list[tuple[Move, int, float]]:
    """The batch's moves with their partitions' sizes and write rates, read once for its peak and its moves."""
    sizes, write = loads.sizes, loads.write
    return [(move, sizes.get(move.tp, 0), write.get(move.tp, 0.0)) for move in batch.moves]


def _peak(loads: Loads, weighed: list[tuple[Move, int, float]]) -> PerResource:
    """The loads while a batch copies (`_weighed`): its start, plus every new copy on its destination."""
    peak = loads.snapshot()
    disk, rate_in, count = peak["disk"], peak["network_in"], peak["replicas"]
    for move, size, rate in weighed:
        for b in move.adding:
            disk[b] = disk.get(b, 0.0) + size
            rate_in[b] = rate_in.get(b, 0.0) + rate
            count[b] = count.get(b, 0.0) + 1
    return peak


def _walk(plan: Plan, snapshot: Snapshot, loads: Loads, current_at: PerResource | None = None) -> Walked:
    """Loads before the plan, at each batch's peak, and after it (the moved partitions led by their first
    replica, as the preferred-leader election leaves them)."""
    before, current = _changes_first(plan, snapshot, loads, current_at)
    peaks: list[tuple[int, PerResource]] = []
    for batch in plan.batches:
        weighed = _weighed(loads, batch)
        peaks.append((batch.index, _peak(loads, weighed)))
        for move, size, rate in weighed:
            tp = move.tp
            old = _placed(current, snapshot, tp) or (move.to_replicas, None)
            current[tp] = (move.to_replicas, move.to_replicas[0])
            loads.weighed(tp, size, rate, old, current[tp])
    for tp in plan.election:
        old = _placed(current, snapshot, tp) or ((), None)
        if old[0]:
            current[tp] = (old[0], old[0][0])
            loads.replace(tp, old, current[tp])
    return before, peaks, loads.snapshot()


def _usage(caps: Capacities, broker: int, resource: Resource, loads: Walked, other: float) -> Usage | None:
    figure, limit = caps.figure(broker, resource), caps.limit(broker, resource)
    if figure.value is None or limit is None:
        return None
    before, peaks, after = loads
    start, end = before[resource].get(broker, 0.0) + other, after[resource].get(broker, 0.0) + other
    peak, peak_batch = max(start, end), None
    if resource in PEAKED:
        for index, batch in peaks:
            at = batch[resource].get(broker, 0.0) + other
            if at > peak:
                peak, peak_batch = at, index
    return Usage(round(figure.value), round(limit), figure.source, round(start), round(end), round(peak),
                 peak_batch)


def capacity_report(plan: Plan, snapshot: Snapshot, sizes: Mapping[TopicPartition, int],
                    declared: CapacityDeclaration | None, write: Mapping[TopicPartition, float] | None = None,
                    fanout: Mapping[str, int] | None = None,
                    current_at: PerResource | None = None) -> CapacityReport | None:
    """Each broker's capacity, usage before → after, peak and headroom, for every resource with a known
    capacity; None when none is known (the plan then says nothing of capacity). `current_at`: the snapshot's
    `current_loads`, where the caller has them."""
    walked = plan_walk(plan, snapshot, sizes, declared, write, fanout, current_at)
    return None if walked is None else _report(*walked)


def plan_walk(plan: Plan, snapshot: Snapshot, sizes: Mapping[TopicPartition, int],
              declared: CapacityDeclaration | None, write: Mapping[TopicPartition, float] | None = None,
              fanout: Mapping[str, int] | None = None,
              current_at: PerResource | None = None) -> tuple[Capacities, Walked] | None:
    """The capacities and the loads before the plan, at each batch's peak and after it; None when no capacity is
    known. One walk serves the report, the throttle's caps and the warnings."""
    caps = resolve(declared, snapshot)
    if not caps.known:
        return None
    return caps, _walk(plan, snapshot, Loads(write or {}, sizes, fanout or {}), current_at)


def _report(caps: Capacities, walked: Walked) -> CapacityReport:
    brokers: dict[int, dict[str, Usage]] = {}
    for broker in sorted(caps.brokers):
        other = max(0.0, caps.in_use.get(broker, 0) - walked[0]["disk"].get(broker, 0.0))
        usages: dict[str, Usage] = {r: u for r in RESOURCES
                  if (u := _usage(caps, broker, r, walked, other if r == "disk" else 0.0)) is not None}
        if usages:
            brokers[broker] = usages
    over = tuple(b for b, usages in brokers.items() if any(u.before > u.limit for u in usages.values()))
    unknown = tuple(r for r in RESOURCES if not any(r in usages for usages in brokers.values()))
    return CapacityReport({r: f for r, f in caps.limits.items()}, brokers, over, unknown)


def with_report(plan: Plan, caps: Capacities, walked: Walked) -> Plan:
    """`plan` with `summary.capacity` filled from `plan_walk`'s walk, and what its throttle leaves unbounded or
    holds back said (`catch_up_warnings`)."""
    return replace(plan, summary=replace(plan.summary, capacity=_report(caps, walked)),
                   warnings=plan.warnings + catch_up_warnings(plan, caps))


def catch_up_caps(plan: Plan, caps: Capacities, walked: Walked,
                  write: Mapping[TopicPartition, float] | None = None) -> list[dict[int, int]]:
    """Per batch, each receiving broker's follower rate where its network-in room is below the plan's rate.

    While a batch copies, a receiving broker fetches its new replicas at up to its follower throttle: their backlog
    and what is written to them meanwhile, which the batch's peak already counts. So the rate may be the broker's
    limit (its start where it starts over, as the peak check holds it) less that peak, plus those writes. The peak
    check keeps the peak within it, so the rate is at least what is written to the new replicas (docs/design/
    capacity.md §6.6)."""
    before, peaks, _after = walked
    return [_batch_caps(batch, peak["network_in"], before["network_in"], caps, write or {})
            for batch, (_index, peak) in zip(plan.batches, peaks, strict=True)]


def rollback_caps(plan: Plan, caps: Capacities, walked: Walked, sizes: Mapping[TopicPartition, int],
                  write: Mapping[TopicPartition, float] | None = None) -> list[dict[int, int]]:
    """`catch_up_caps` for the plan's rollback batches: the rollback copies back onto the brokers the plan took
    replicas from, which may have less network-in room than the plan's rate. Rolling back forward batch k starts
    where that batch ended however far the execution got (the later batches were undone first), so the caps
    computed from the whole plan's end hold for a partial rollback too (capacity.md §6.6)."""
    write = write or {}
    if all(b.throttle.rate is None for b in plan.rollback.batches) or not any(
            caps.limit(b, "network_in") is not None for b in caps.brokers):
        return [{} for _ in plan.rollback.batches]  # nothing to hold: no walk (half a million moves at a million)
    before, _peaks, after = walked
    loads = Loads(write, sizes, {})
    loads.of = {r: dict(per) for r, per in after.items()}
    start = {b: max(before["network_in"].get(b, 0.0), after["network_in"].get(b, 0.0))
             for b in before["network_in"].keys() | after["network_in"].keys()}
    out: list[dict[int, int]] = []
    for batch in plan.rollback.batches:
        weighed = _weighed(loads, batch)
        out.append(_batch_caps(batch, _peak(loads, weighed)["network_in"], start, caps, write))
        for move, size, rate in weighed:  # leaders left out: network out does not bound a follower's fetches
            loads.weighed(move.tp, size, rate, (move.from_replicas, None), (move.to_replicas, None))
    return out


def _batch_caps(batch: Batch, peak: Mapping[int, float], start: Mapping[int, float], caps: Capacities,
                write: Mapping[TopicPartition, float]) -> dict[int, int]:
    """Each receiving broker's network-in room at the batch's peak (its limit, or its start where it starts over,
    less the peak, plus what is written to its new replicas), where that is below the batch's rate."""
    rate = batch.throttle.rate
    if rate is None:
        return {}
    carried: dict[int, float] = {}
    for move in batch.moves:
        for b in move.adding:
            carried[b] = carried.get(b, 0.0) + write.get(move.tp, 0.0)
    found: dict[int, int] = {}
    for b, own in sorted(carried.items()):
        limit = caps.limit(b, "network_in")
        if limit is not None:
            room = max(limit, start.get(b, 0.0)) - peak.get(b, 0.0) + own
            if room < rate:
                found[b] = max(1, int(room))
    return found


UNKNOWN_LOADS = "capacity is known but no partition's"  # in its warning: a no-op rebalance says it too


def unknown_loads(room: Limits | None, sizes: Mapping[TopicPartition, int],
                  write: Mapping[TopicPartition, float]) -> list[str]:
    """A capacity known with nothing to weigh against it: without sizes every replica counts 0 B of disk (without
    write rates 0 B/s of network in), so the limits hold nothing back and the plan's Capacity table reads 0 B
    (found by an outside check: a plan through ZooKeeper, which reports no sizes, overfilled a declared disk)."""
    if room is None:
        return []
    weighed: tuple[tuple[Resource, Mapping[TopicPartition, float]], ...] = (("disk", sizes), ("network_in", write))
    unchecked = [resource for resource, loads in weighed if room.limits.get(resource) and not any(loads.values())]
    return [f"{resource} {UNKNOWN_LOADS} {'size' if resource == 'disk' else 'write rate'} is: "
            f"the plan is not held to it (pass --sizes PATH from kops sizes summarize"
            f"{', or read the cluster with -b, which reports sizes' if resource == 'disk' else ''})"
            for resource in unchecked]


def catch_up_warnings(plan: Plan, caps: Capacities) -> tuple[str, ...]:
    """Where the plan copies onto brokers with a `network_in` limit unthrottled, the catch-up is not bounded; where
    a batch holds a broker's follower rate below the plan's (`catch_up_caps`), say how many and the tightest, so a
    reviewer knows why those batches take longer."""
    receiving = [(batch, b) for batch in plan.batches for move in batch.moves for b in move.adding
                 if caps.limit(b, "network_in") is not None]
    if any(batch.throttle.rate is None for batch, _ in receiving):
        return ("network in while the copies catch up is not held to capacity.limits.network_in: the plan has no "
                "throttle (set execution.throttle or pass --throttle)",)
    said: list[str] = []
    held = _tightest(plan.batches)
    if held is not None:
        count, cap, broker, index = held
        said.append(f"the follower throttle is held below the plan's rate on {count} broker(s), to their network-in "
                    f"room at a batch's peak (tightest: broker {broker} at {format_rate(cap)} in batch {index}); the "
                    f"batches that copy to them take longer, as their estimates say")
    back = _tightest(plan.rollback.batches)
    if back is not None:
        count, cap, broker, index = back
        said.append(f"a rollback would hold the follower throttle below the plan's rate on {count} broker(s) it "
                    f"copies back onto (tightest: broker {broker} at {format_rate(cap)} in rollback batch {index}): "
                    f"the rollback batches' estimates count the slower copy")
    return tuple(said)


def _tightest(batches: Sequence[Batch]) -> tuple[int, int, int, int] | None:
    """How many brokers the batches' caps hold, and the tightest cap with its broker and batch; None: no cap."""
    held = [(cap, b, batch.index) for batch in batches for b, cap in batch.throttle.caps.items()]
    if not held:
        return None
    cap, broker, index = min(held)
    return len({b for _, b, _ in held}), cap, broker, index


def _amount(resource: str, value: float) -> str:
    if resource == "disk":
        return format_size(value)
    return format_rate(value) if resource.startswith("network") else str(round(value))


def capacity_rows(report: CapacityReport) -> list[tuple[str, ...]]:
    """One row per broker and known resource: broker, resource, capacity (source), before → after, peak (batch),
    headroom at the peak (limit − peak), for the text and Markdown tables alike."""
    rows: list[tuple[str, ...]] = []
    for broker, usages in sorted(report.brokers.items()):
        for resource, u in usages.items():
            limit = "" if resource == "replicas" else f", limit {report.limits.get(resource, 1):g}"
            peak = _amount(resource, u.peak) + ("" if u.peak_batch is None else f" (batch {u.peak_batch})")
            room = _amount(resource, abs(u.headroom)) + (" over" if u.headroom < 0 else "")
            rows.append((str(broker), resource, f"{_amount(resource, u.capacity)} ({u.source}{limit})",
                         f"{_amount(resource, u.before)} → {_amount(resource, u.after)}", peak, room))
    return rows


def capacity_notes(report: CapacityReport) -> list[str]:
    """Brokers already over a limit, and the resources nothing is known of (once each)."""
    notes = [f"broker {b} is already over its limit before the plan" for b in report.over_before]
    return notes + [f"{resource}: capacity unknown, not checked" for resource in report.unknown]


def capacity_markdown(report: CapacityReport | None) -> list[str]:
    """The Capacity table of the pull-request comment, folded; nothing when no capacity is known."""
    if report is None:
        return []
    lines = ["<details><summary>Capacity</summary>", "",
             "| broker | resource | capacity | before → after | peak | headroom |", "|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in capacity_rows(report)]
    lines += [""] + [f"- {note}" for note in capacity_notes(report)]
    return lines + ["", "</details>", ""]


PLACED: tuple[Resource, ...] = ("disk", "network_in", "replicas")  # what a replica brings to the broker holding it


class Headroom:
    """Each broker's limits (capacity × limit fraction, less the filesystem's other files where the disk is the
    reported one) for placement to keep: `fits` asks whether a broker can take one more replica of a partition,
    `utilization` ranks brokers by their share of capacity. A broker already over a resource takes none of it."""

    def __init__(self, caps: Capacities, layout: Layout) -> None:
        self.caps = caps
        self.limits: dict[Resource, dict[int, float]] = {r: {} for r in PLACED}
        self.over: dict[Resource, set[int]] = {r: set() for r in PLACED}
        for broker in caps.brokers:
            other = max(0.0, caps.in_use.get(broker, 0) - layout.bytes.get(broker, 0))
            for resource in PLACED:
                limit = caps.limit(broker, resource)
                if limit is not None:
                    self.limits[resource][broker] = limit - (other if resource == "disk" else 0.0)
                    if _load(layout, resource, broker) > self.limits[resource][broker]:
                        self.over[resource].add(broker)
        # brokers are ranked by their share of capacity only while every one of them has a known limit
        self.ranked = self.knows_all(caps.brokers)
        self.weight = self._weights(caps.brokers)

    def _weights(self, brokers: Iterable[int]) -> dict[int, float]:
        """Each broker's share of capacity for replicas that weigh nothing yet (a new topic's or partition's): its
        disk limit where every broker's is known, else its replica limit, else one each. Utilization cannot rank
        them (an empty replica changes no load), and ranked by it every new partition went to the emptiest broker."""
        brokers = list(brokers)
        for resource in ("disk", "replicas"):
            per = self.limits[resource]
            if brokers and all(per.get(b, 0.0) > 0 for b in brokers):
                return {b: per[b] for b in brokers}
        return {}

    def knows_all(self, brokers: Iterable[int]) -> bool:
        """Whether every one of `brokers` has a known limit: only then are brokers ranked by utilization."""
        return all(any(b in per for per in self.limits.values()) for b in brokers)

    def utilization(self, layout: Layout, broker: int) -> float:
        """The largest load ÷ limit over the broker's known resources."""
        return max((_load(layout, r, broker) / per[broker] if per[broker] > 0 else math.inf
                    for r, per in self.limits.items() if broker in per), default=0.0)

    def fits(self, layout: Layout, broker: int, tp: TopicPartition) -> bool:
        """Whether `broker` stays within every known limit with one more replica of `tp`."""
        return self.blocked(layout, broker, tp) is None

    def blocked(self, layout: Layout, broker: int, tp: TopicPartition) -> Resource | None:
        """The first resource one more replica of `tp` would take `broker` over, or None."""
        for resource, per in self.limits.items():
            gain = _gain(layout, resource, tp)
            if broker in per and gain > 0 and (
                    broker in self.over[resource] or _load(layout, resource, broker) + gain > per[broker]):
                return resource
        return None

    def refusal(self, layout: Layout, tp: TopicPartition, candidates: list[int]) -> str:
        """Why no candidate takes a replica of `tp`, with the numbers and what would help (§6.4)."""
        if not candidates:
            return "no eligible broker is left"
        blocks = {b: self.blocked(layout, b, tp) for b in candidates}
        resource = next(r for r in PLACED if r in blocks.values())
        gain, per = _gain(layout, resource, tp), self.limits[resource]
        rooms = sorted(((max(0.0, per[b] - _load(layout, resource, b)), b) for b in candidates if b in per),
                       reverse=True)[:3]
        room = ", ".join(f"{_amount(resource, r)} on broker {b}" for r, b in rooms)
        known = sorted((b for b in candidates if b in per), key=lambda b: (per[b], b))
        broker = known[len(known) // 2]  # a typical eligible broker, as Cruise Control's recommendation takes
        typical, figure = per[broker], self.caps.figure(broker, resource)
        fraction = "" if resource == "replicas" else f"limit {self.caps.limits.get(resource, 0.8):g} of "
        needed = max(1, math.ceil((gain - (rooms[0][0] if rooms else 0.0)) / typical)) if typical > 0 else 1
        return (f"no eligible broker fits {_amount(resource, gain)} of {resource} (room {room}; {fraction}"
                f"{_amount(resource, figure.value or 0)} {figure.source}); add {needed} broker(s) of "
                f"{_amount(resource, figure.value or 0)}, raise capacity.limits.{resource}, or decommission fewer "
                f"brokers at once")


def _load(layout: Layout, resource: Resource, broker: int) -> float:
    if resource == "disk":
        return float(layout.bytes.get(broker, 0))
    if resource == "network_in":
        return layout.nw_in.get(broker, 0.0)
    return float(layout.replica_count.get(broker, 0))


def _gain(layout: Layout, resource: Resource, tp: TopicPartition) -> float:
    if resource == "disk":
        return float(layout.sizes.get(tp, 0))
    return layout.write.get(tp, 0.0) if resource == "network_in" else 1.0


def violations(report: CapacityReport, peaks: bool = True) -> list[str]:
    """Brokers the plan leaves over a limit they were within, or above their start when already over (§6.5), after
    the plan or (`peaks`) at the peak of a batch (§6.6: the new copy written while the old one is still there)."""
    out = []
    for broker, usages in sorted(report.brokers.items()):
        for resource, u in usages.items():
            if u.after > u.cap:
                when, held = "after the plan", u.after
            elif peaks and u.peak > u.cap:
                when, held = f"at the peak of batch {u.peak_batch}", u.peak
            else:
                continue
            out.append(f"broker {broker} would hold {_amount(resource, held)} of {resource} {when}, over its limit "
                       f"{_amount(resource, u.limit)} ({_amount(resource, u.capacity)} {u.source}; before: "
                       f"{_amount(resource, u.before)})")
    return out


class PeaksRefused(Exception):
    """No batching keeps every batch's peak within the limits (§6.6): the message names the broker, the resource
    and the numbers; the hint what would help."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


class PeakRoom:
    """The loads at the current batch boundary, as `capacity_report` walks them, and each broker's cap of what a
    copy in flight adds to its destination (disk, network in, replicas): batches.make_batches asks `short` of
    each move, `claim`s those that fit into the batch it is filling and `close`s the batch, so every batch's peak
    (its start plus every new copy while the old ones are still there) stays within the caps (§6.6)."""

    def __init__(self, at: PerResource, caps: PerResource, other: Mapping[int, float], capacities: Capacities,
                 sizes: Mapping[TopicPartition, int], write: Mapping[TopicPartition, float]) -> None:
        self.at, self.caps, self.other, self.capacities = at, caps, other, capacities
        self.sizes, self.write = sizes, write
        self.coming: PerResource = {r: {} for r in PEAKED}
        self.taken: list[tuple[Move, tuple[tuple[Resource, float], ...]]] = []  # with what each adds

    def _gains(self, move: Move) -> tuple[tuple[Resource, float], ...]:
        """What a copy of the move's partition adds to a broker (read when it is tried; kept with it once taken)."""
        tp = move.tp
        return ("disk", float(self.sizes.get(tp, 0))), ("network_in", self.write.get(tp, 0.0)), ("replicas", 1.0)

    def short(self, move: Move) -> tuple[int, Resource, float] | None:
        """The first destination and resource `move` would take over its cap at the peak of the batch being
        filled, with what it would hold there; None when it fits."""
        return self._short(move, self._gains(move))

    def _short(self, move: Move, gains: tuple[tuple[Resource, float], ...]) -> tuple[int, Resource, float] | None:
        for b in move.adding:
            for resource, gain in gains:
                cap = self.caps[resource].get(b)
                if cap is not None and gain > 0:
                    held = self.at[resource].get(b, 0.0) + self.coming[resource].get(b, 0.0) + gain
                    if held > cap:
                        return b, resource, held
        return None

    def always_room(self, moves: Iterable[Move]) -> bool:
        """Would every destination stay within its caps even with every copy of `moves` in flight at once, on top
        of the loads at the first batch's start? Then no batch's peak can pass a cap (a batch starts with at most
        what the batches before it brought in), and `repair_peaks` would keep every batch as made: a
        million-partition plan skips its claim of every move (four seconds). A margin of a billionth of each cap
        keeps the sums' rounding on the safe side."""
        sizes, write, gained = self.sizes, self.write, {r: dict(self.at[r]) for r in PEAKED}
        disk, rate_in, count = gained["disk"], gained["network_in"], gained["replicas"]
        for move in moves:
            tp = move.tp
            size, rate = float(sizes.get(tp, 0)), write.get(tp, 0.0)
            for b in move.adding:
                disk[b] = disk.get(b, 0.0) + size
                rate_in[b] = rate_in.get(b, 0.0) + rate
                count[b] = count.get(b, 0.0) + 1.0
        return all(held <= cap - abs(cap) * ROUNDING for resource, per in gained.items()
                   for b, held in per.items() if (cap := self.caps[resource].get(b)) is not None
                   and held > self.at[resource].get(b, 0.0))

    def claim(self, move: Move) -> bool:
        """`move` joins the batch being filled where it fits (`short`): its new copies count at their destinations
        until the batch ends (`close`). False: it does not fit, and nothing is taken."""
        gains = self._gains(move)
        if self._short(move, gains) is not None:
            return False
        coming = self.coming
        for b in move.adding:
            for resource, gain in gains:
                per = coming[resource]
                per[b] = per.get(b, 0.0) + gain
        self.taken.append((move, gains))
        return True

    def close(self) -> None:
        """The batch is done: its sources no longer hold the old copies, its destinations hold the new ones."""
        disk, rate_in, count = self.at["disk"], self.at["network_in"], self.at["replicas"]
        for move, ((_, size), (_, rate), _) in self.taken:  # `_gains`' three, in its order
            for b in move.removing:
                disk[b] = disk.get(b, 0.0) - size
                rate_in[b] = rate_in.get(b, 0.0) - rate
                count[b] = count.get(b, 0.0) - 1.0
            for b in move.adding:
                disk[b] = disk.get(b, 0.0) + size
                rate_in[b] = rate_in.get(b, 0.0) + rate
                count[b] = count.get(b, 0.0) + 1.0
        self.taken = []
        self.coming = {r: {} for r in PEAKED}

    def refusal(self, move: Move, batch: int) -> PeaksRefused:
        """Why `move` fits in no batch: the broker, the resource and the numbers (it waits on room no other move
        frees: a cycle, or a broker that is full)."""
        broker, resource, held = self.short(move) or (move.adding[0], "disk", 0.0)
        extra = self.other.get(broker, 0.0) if resource == "disk" else 0.0
        figure = self.capacities.figure(broker, resource)
        fraction = "" if resource == "replicas" else f"limit {self.capacities.limits.get(resource, 0.8):g} of "
        limit, capacity = self.caps[resource][broker] + extra, _amount(resource, figure.value or 0)
        return PeaksRefused(
            f"broker {broker} would hold {_amount(resource, held + extra)} of {resource} at the peak of batch "
            f"{batch} (its new copy of {move.tp} written while the old one is still there), over its limit "
            f"{_amount(resource, limit)} ({fraction}{capacity} {figure.source}), and no later batch frees room for it",
            f"move {move.tp} through a third broker in a plan of its own, free room on broker {broker}, or raise "
            f"capacity.limits.{resource}")


def _copies(assignments: Iterable[tuple[str, Mapping[int, tuple[int, ...]]]], sizes: Mapping[TopicPartition, int],
            write: Mapping[TopicPartition, float], per: PerResource, sign: int) -> None:
    """Adds (`sign` 1) or takes away (-1) what every replica of `assignments` puts on its broker, of the resources
    a copy adds to: the loads `Loads.place` keeps, for these three only and without a map of every partition
    (a million partitions: seconds saved where the report walks the plan anyway)."""
    disk, nw_in, count = per["disk"], per["network_in"], per["replicas"]
    for name, assignment in assignments:
        for tp, replicas in zip(keys_of(name, assignment), assignment.values()):
            size, rate = sign * sizes.get(tp, 0), sign * write.get(tp, 0.0)
            for b in replicas:
                disk[b] = disk.get(b, 0.0) + size
                nw_in[b] = nw_in.get(b, 0.0) + rate
                count[b] = count.get(b, 0.0) + sign


def peak_room(changes: Changes, snapshot: Snapshot, sizes: Mapping[TopicPartition, int],
              declared: CapacityDeclaration | None, write: Mapping[TopicPartition, float] | None = None,
              current_at: PerResource | None = None) -> PeakRoom | None:
    """The room at the first batch's start of the plan being made (after its deletions, creations and partition
    additions), or None when no broker has a known limit of what a copy adds: batching is then today's.
    `current_at`: the snapshot's `current_loads`, where the caller has them."""
    caps = resolve(declared, snapshot)
    if not any(caps.limit(b, r) is not None for b in caps.brokers for r in PEAKED):
        return None
    write = write or {}
    before: PerResource = {r: {} for r in PEAKED}
    if current_at is not None:
        before = {r: dict(current_at[r]) for r in PEAKED}
    else:
        _copies(((name, {n: p.replicas for n, p in t.partitions.items()}) for name, t in snapshot.topics.items()),
                sizes, write, before, 1)
    at = {r: dict(per) for r, per in before.items()}
    deleted = {d.topic for d in changes.deletions}
    _copies(((name, {n: p.replicas for n, p in t.partitions.items()}) for name, t in snapshot.topics.items()
             if name in deleted), sizes, write, at, -1)
    _copies([*((c.topic, c.assignment) for c in changes.creations),
             *((a.topic, a.assignment) for a in changes.partition_additions)], sizes, write, at, 1)
    room: PerResource = {r: {} for r in PEAKED}
    other: dict[int, float] = {}
    for broker in caps.brokers:
        other[broker] = max(0.0, caps.in_use.get(broker, 0) - before["disk"].get(broker, 0.0))
        for resource in PEAKED:
            limit = caps.limit(broker, resource)
            if limit is not None:
                limit -= other[broker] if resource == "disk" else 0.0
                room[resource][broker] = max(limit, before[resource].get(broker, 0.0))
    return PeakRoom(at, room, other, caps, sizes, write)
