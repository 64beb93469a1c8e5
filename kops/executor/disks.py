"""The disk gate (docs/design/capacity.md §6.8): before a batch or a rolling submission starts, each broker
receiving new replicas must have room for them now, on the cluster's own figures.

The plan checked its limits against the sizes and disks it was made with; the disks may have filled since (other
topics grew, a retention change, a log dir gone offline). So just before anything of a batch is written, the
executor asks the port's `log_dirs()` (a read, one request without partitions) and, per destination broker,
sums the usable bytes over its volumes (kops.model.capacity: two dirs on one filesystem count once). The batch
starts only if `usable − incoming ≥ margin`, where `incoming` is the plan's size of every new replica the broker
gets and `margin = (1 − limits.disk) × total`: the plan's own limit held against live figures. Otherwise the
run stops at the checkpoint (exit 3), nothing of the batch written, and a resume checks again.

A broker with a dir offline is checked on its other dirs, where Kafka still writes. A broker whose usable bytes
are unknown (ZooKeeper without KIP-179, Kafka before 3.3, every dir offline, or a DescribeLogDirs that failed) is
checked against nothing; one `CapacityUnknown` event names it, once per run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kops.errors import KopsError
from kops.executor.events import CapacityUnknown, Reporter
from kops.model.capacity import DEFAULT_LIMIT, LogDirUsage, reported_disks
from kops.model.partitions import TopicPartition
from kops.model.plan import CapacityReport, Move, Plan
from kops.units import format_size

NOT_REPORTED = "usable bytes not reported (ZooKeeper without KIP-179, Kafka before 3.3, or every log dir offline)"


def disk_limit(plan: Plan | None) -> float:
    """The plan's `limits.disk` (summary.capacity, where the plan knew any capacity), else 0.8."""
    report = plan.summary.capacity if plan is not None else None
    return report.limits.get("disk", DEFAULT_LIMIT) if report is not None else DEFAULT_LIMIT


@dataclass(frozen=True)
class Room:
    """One broker's disk now, over its volumes: what it may still take is `usable − margin`."""

    broker: int
    usable: int
    total: int
    margin: int

    @property
    def free(self) -> int:
        return self.usable - self.margin


@dataclass(frozen=True)
class Shortfall:
    """A broker that cannot take what is coming to it: the line an operator reads."""

    room: Room
    needs: int
    replicas: int
    in_flight: int = 0  # bytes the moves in flight still bring it (rolling)

    def describe(self, limit: float) -> str:
        r = self.room
        flying = f" + {format_size(self.in_flight)} for the moves in flight" if self.in_flight else ""
        return (f"broker {r.broker} has {format_size(r.usable)} usable, needs {format_size(self.needs)} for its "
                f"{self.replicas} new replica{'s' if self.replicas != 1 else ''}{flying} + "
                f"{format_size(r.margin)} margin (limit {limit:g} of {format_size(r.total)})")


def incoming(moves: Iterable[Move]) -> dict[int, tuple[int, int]]:
    """Per destination broker: the bytes of the new replicas it receives (the plan's sizes) and how many."""
    out: dict[int, tuple[int, int]] = {}
    for m in moves:
        for b in m.adding:
            size, count = out.get(b, (0, 0))
            out[b] = (size + m.bytes, count + 1)
    return out


class DiskGate:
    """Live disk checks for one run; remembers which brokers it already said were unknown."""

    def __init__(self, read: Callable[[], tuple[LogDirUsage, ...]], emit: Reporter,
                 limit: float = DEFAULT_LIMIT) -> None:
        self.read = read
        self.emit = emit
        self.limit = limit
        self.planned: CapacityReport | None = None  # the plan's figures, for rolling's planned room
        self._unknown_said: set[int] = set()

    def rooms(self, brokers: Iterable[int]) -> dict[int, Room]:
        """The room of each of `brokers` whose disk is reported now; the others are said unknown, once each."""
        wanted = set(brokers)
        if not wanted:
            return {}
        try:
            disks = reported_disks(self.read())
            reason = NOT_REPORTED
        except KopsError as exc:
            disks, reason = {}, f"usable bytes not read: {exc.one_line()}"
        out: dict[int, Room] = {}
        for b in sorted(wanted):
            disk = disks.get(b)
            if disk is not None:
                total, in_use = disk
                out[b] = Room(b, total - in_use, total, round((1 - self.limit) * total))
        unknown = tuple(sorted(wanted - set(out) - self._unknown_said))
        if unknown:
            self._unknown_said.update(unknown)
            self.emit(CapacityUnknown(unknown, reason))
        return out

    def check(self, moves: Iterable[Move], what: str) -> str | None:
        """Why `moves` may not start now (`what` names them: "batch 2"), or None when every destination fits."""
        coming = incoming(moves)
        rooms = self.rooms(coming)
        short = [Shortfall(rooms[b], size, count) for b, (size, count) in sorted(coming.items())
                 if b in rooms and size > rooms[b].free]
        if not short:
            return None
        also = f" (also brokers {', '.join(str(s.room.broker) for s in short[1:])})" if len(short) > 1 else ""
        return f"{what}: {short[0].describe(self.limit)}{also}"

    def admit(self, ready: list[Move], in_flight: list[Move],
              choose: Callable[[list[Move]], list[Move]]) -> tuple[list[Move], dict[TopicPartition, Shortfall]]:
        """Rolling: of `ready` (in order), the moves that fit beside those in flight, as `choose` (the caps)
        picks among them, and the ready moves held back, each with its first broker short. A move in flight
        counts whole at its destinations until it finishes (what it has copied counts twice meanwhile: the safe
        side)."""
        rooms = self.rooms(incoming([*ready, *in_flight]))
        if not rooms:
            return choose(ready), {}
        flying = {b: size for b, (size, _count) in incoming(in_flight).items() if b in rooms}
        free = {b: r.free - flying.get(b, 0) for b, r in rooms.items()}
        held: dict[TopicPartition, Shortfall] = {}
        for m in ready:
            short = [Shortfall(rooms[b], size, count, flying.get(b, 0)) for b, (size, count)
                     in sorted(incoming([m]).items()) if b in free and size > free[b]]
            if short:
                held[m.tp] = short[0]
        chosen: list[Move] = []
        for m in choose([m for m in ready if m.tp not in held]):
            coming = incoming([m])
            if any(b in free and size > free[b] for b, (size, _c) in coming.items()):
                continue  # fits alone, not beside the moves chosen before it: the next round
            for b, (size, _c) in coming.items():
                if b in free:
                    free[b] -= size
            chosen.append(m)
        return chosen, held


def what_to_do(kind: str, remedy: str = "free space on it", setting: str = "capacity.limits.disk") -> str:
    """The hint after a shortfall: the limit (`setting`) is the plan's, so raising it means a new plan."""
    if kind == "rollback":
        return f"{remedy}, then `kops rollback --resume`"
    return f"{remedy}, then `kops apply --resume`; or `kops rollback` and plan again with a higher {setting}"
