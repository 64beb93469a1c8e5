"""Headroom: what a plan does to each broker's known capacities, for the plan to show (docs/design/capacity.md
§6.1, §7), and the limits placement keeps (`Headroom`, §6.2, §6.4) and every declared plan is checked against
(`violations`, §6.5). Rebalance, leaders and batch peaks do not consult the limits yet (§10, commits 7-9).

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

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kops.model.capacity import RESOURCES, Capacities, CapacityDeclaration, Resource, resolve
from kops.model.partitions import TopicPartition
from kops.model.plan import Batch, CapacityReport, Plan, Usage
from kops.model.snapshot import Snapshot
from kops.units import format_rate, format_size

if TYPE_CHECKING:
    from kops.planner.layout import Layout

PEAKED: tuple[Resource, ...] = ("disk", "network_in", "replicas")  # what a copy in flight adds to its destination
PerResource = dict[Resource, dict[int, float]]
Walked = tuple[PerResource, list[tuple[int, PerResource]], PerResource]  # before, (batch, its peak)..., after


@dataclass
class Loads:
    """Per-broker loads of every resource, kept as replicas are placed and removed."""

    write: Mapping[TopicPartition, float]
    sizes: Mapping[TopicPartition, int]
    fanout: Mapping[str, int]
    of: dict[Resource, dict[int, float]] = field(default_factory=lambda: {r: {} for r in RESOURCES})

    def _add(self, resource: Resource, broker: int, amount: float) -> None:
        per = self.of[resource]
        per[broker] = per.get(broker, 0.0) + amount

    def place(self, tp: TopicPartition, replicas: tuple[int, ...], leader: int | None, sign: int = 1) -> None:
        size, rate = self.sizes.get(tp, 0), self.write.get(tp, 0.0)
        for b in replicas:
            self._add("disk", b, sign * size)
            self._add("network_in", b, sign * rate)
            self._add("replicas", b, sign)
        if leader is not None and rate:
            self._add("network_out", leader, sign * rate * (len(replicas) - 1 + self.fanout.get(tp.topic, 1)))

    def snapshot(self) -> PerResource:
        return {r: dict(per) for r, per in self.of.items()}


def _leader_of(snapshot: Snapshot, tp: TopicPartition, replicas: tuple[int, ...]) -> int | None:
    part = snapshot.partition(tp)
    if part is not None and part.state is not None and part.state.leader >= 0:
        return part.state.leader
    return replicas[0] if replicas else None


Placed = dict[TopicPartition, tuple[tuple[int, ...], int | None]]  # replicas and leader of each partition


def _changes_first(plan: Plan, snapshot: Snapshot, loads: Loads) -> tuple[PerResource, Placed]:
    """The loads before the plan; then the topics it deletes, creates and grows, which come before its batches."""
    current: Placed = {}
    for name, topic in snapshot.topics.items():
        for number, part in topic.partitions.items():
            tp = TopicPartition(name, number)
            current[tp] = (part.replicas, _leader_of(snapshot, tp, part.replicas))
            loads.place(tp, *current[tp])
    before = loads.snapshot()
    deleted = {d.topic for d in plan.deletions}
    for tp in [tp for tp in current if tp.topic in deleted]:
        loads.place(tp, *current.pop(tp), sign=-1)
    for name, assignment in [*((c.topic, c.assignment) for c in plan.creations),
                             *((a.topic, a.assignment) for a in plan.partition_additions)]:
        for number, replicas in assignment.items():
            current[TopicPartition(name, number)] = (replicas, replicas[0])
            loads.place(TopicPartition(name, number), replicas, replicas[0])
    return before, current


def _peak(loads: Loads, batch: Batch) -> PerResource:
    """The loads while `batch` copies: its start, plus every new copy on its destination."""
    peak = loads.snapshot()
    for move in batch.moves:
        size, rate = loads.sizes.get(move.tp, 0), loads.write.get(move.tp, 0.0)
        for b in move.adding:
            for resource, amount in (("disk", size), ("network_in", rate), ("replicas", 1)):
                peak[resource][b] = peak[resource].get(b, 0.0) + amount  # type: ignore[index]  # literals above
    return peak


def _move(loads: Loads, current: Placed, tp: TopicPartition, replicas: tuple[int, ...], leader: int | None) -> None:
    loads.place(tp, *current.get(tp, (replicas, None)), sign=-1)
    current[tp] = (replicas, leader)
    loads.place(tp, replicas, leader)


def _walk(plan: Plan, snapshot: Snapshot, loads: Loads) -> Walked:
    """Loads before the plan, at each batch's peak, and after it (the moved partitions led by their first
    replica, as the preferred-leader election leaves them)."""
    before, current = _changes_first(plan, snapshot, loads)
    peaks: list[tuple[int, PerResource]] = []
    for batch in plan.batches:
        peaks.append((batch.index, _peak(loads, batch)))
        for move in batch.moves:
            _move(loads, current, move.tp, move.to_replicas, move.to_replicas[0])
    for tp in plan.election:
        replicas = current.get(tp, ((), None))[0]
        if replicas:
            _move(loads, current, tp, replicas, replicas[0])
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
                    fanout: Mapping[str, int] | None = None) -> CapacityReport | None:
    """Each broker's capacity, usage before → after, peak and headroom, for every resource with a known
    capacity; None when none is known (the plan then says nothing of capacity)."""
    caps = resolve(declared, snapshot)
    if not caps.known:
        return None
    walked = _walk(plan, snapshot, Loads(write or {}, sizes, fanout or {}))
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


def with_capacity_report(plan: Plan, snapshot: Snapshot, sizes: Mapping[TopicPartition, int],
                         declared: CapacityDeclaration | None, write: Mapping[TopicPartition, float] | None = None,
                         fanout: Mapping[str, int] | None = None) -> Plan:
    """`plan` with `summary.capacity` filled (unchanged when no capacity is known)."""
    report = capacity_report(plan, snapshot, sizes, declared, write, fanout)
    return plan if report is None else replace(plan, summary=replace(plan.summary, capacity=report))


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


def violations(report: CapacityReport) -> list[str]:
    """Brokers the plan leaves over a limit they were within, or above their start when already over (§6.5)."""
    out = []
    for broker, usages in sorted(report.brokers.items()):
        for resource, u in usages.items():
            if u.after > u.limit and (u.before <= u.limit or u.after > u.before):
                out.append(f"broker {broker} would hold {_amount(resource, u.after)} of {resource} after the plan, "
                           f"over its limit {_amount(resource, u.limit)} ({_amount(resource, u.capacity)} "
                           f"{u.source}; before: {_amount(resource, u.before)})")
    return out
