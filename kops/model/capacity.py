"""Capacity: how much disk, network and replicas each broker may hold, and where each figure came from.

Two sources meet here. The cluster reports each log dir's size (DescribeLogDirs v4, KIP-827: `LogDirUsage`,
kept in `Snapshot.log_dirs`); the operator declares figures in the inventory or in Cruise Control's capacity file
(`CapacityDeclaration`). `resolve` combines them, purely, so `kops state`, `kops plan` and the executor see the
same `Capacities`: per broker, the declared override, else the declared default, else what was reported, else
unknown (nothing limits an unknown resource). docs/design/capacity.md §1 and §3.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

from kops.model.brokers import Broker

Resource = Literal["disk", "network_in", "network_out", "replicas"]
RESOURCES: tuple[Resource, ...] = ("disk", "network_in", "network_out", "replicas")
FRACTIONED: tuple[Resource, ...] = ("disk", "network_in", "network_out")  # `replicas` is a count: no fraction
DEFAULT_LIMIT = 0.8  # of each known capacity: Cruise Control's default capacity thresholds
DEFAULT_LIMITS: Mapping[Resource, float] = {r: DEFAULT_LIMIT for r in FRACTIONED}
REPORTED = "reported (DescribeLogDirs)"
UNKNOWN = "unknown"
SAME_VOLUME = 0.001  # usable bytes within this share of the total: one filesystem read twice (§3)


@dataclass(frozen=True, order=True)
class LogDirUsage:
    """One log dir as DescribeLogDirs v4 reports it; a byte figure is None where Kafka answers -1 (before 3.3,
    or the dir is offline)."""

    broker: int
    path: str
    total_bytes: int | None
    usable_bytes: int | None
    error: str | None = None

    @classmethod
    def of(cls, broker: int, path: str, total_bytes: int | None, usable_bytes: int | None,
           error: str | None = None) -> LogDirUsage:
        """From the wire: Kafka's -1 (or a field an older version lacks) and an erring dir's figures become None."""
        def known(value: int | None) -> int | None:
            return None if error is not None or value is None or value < 0 else value
        return cls(broker, path, known(total_bytes), known(usable_bytes), error)

    @property
    def reported(self) -> bool:
        return self.error is None and self.total_bytes is not None and self.usable_bytes is not None


@dataclass(frozen=True)
class Volume:
    """Log dirs of one broker that share a filesystem, counted once; None figures where they are not reported."""

    broker: int
    paths: tuple[str, ...]
    total_bytes: int | None
    usable_bytes: int | None


def _same_volume(a: LogDirUsage, b: LogDirUsage) -> bool:
    assert a.total_bytes is not None and a.usable_bytes is not None and b.usable_bytes is not None
    return a.total_bytes == b.total_bytes and abs(a.usable_bytes - b.usable_bytes) < SAME_VOLUME * a.total_bytes


def volumes(dirs: Iterable[LogDirUsage]) -> tuple[Volume, ...]:
    """The volumes behind `dirs`. Kafka gives no device id, so two dirs of one broker are one filesystem when
    their totals are equal and their usable bytes differ by less than 0.1% of it (Java reads both from statvfs,
    in one pass): two equal disks equally full are then counted once, which undercounts and never overcounts.
    Never across brokers: brokers sharing a host each see the whole filesystem, and kops cannot tell."""
    groups: list[list[LogDirUsage]] = []
    for d in sorted(dirs, key=lambda d: (d.broker, not d.reported, d.total_bytes or 0, d.usable_bytes or 0, d.path)):
        last = groups[-1][0] if groups else None
        if last is not None and d.reported and last.reported and last.broker == d.broker and _same_volume(last, d):
            groups[-1].append(d)
        else:
            groups.append([d])
    out = []
    for group in groups:
        first = group[0]
        usable = None if not first.reported else min(d.usable_bytes or 0 for d in group)
        out.append(Volume(first.broker, tuple(sorted(d.path for d in group)),
                          first.total_bytes if first.reported else None, usable))
    return tuple(sorted(out, key=lambda v: (v.broker, v.paths)))


@dataclass(frozen=True)
class Figure:
    """One capacity and where it came from: `declared FILE:LINE`, `cruise-control FILE`, `reported
    (DescribeLogDirs)` or `unknown` (value None)."""

    value: float | None
    source: str = UNKNOWN


UNKNOWN_FIGURE = Figure(None, UNKNOWN)


@dataclass(frozen=True)
class CapacityDeclaration:
    """Declared figures (bytes, bytes/s, a replica count), each with its source: a default for every broker,
    overrides by broker id, and the limits as fractions of each capacity. `origin` names the declaration as a
    whole (the inventory variable's location, or the Cruise Control file) for messages."""

    default: Mapping[Resource, Figure] = field(default_factory=dict)
    brokers: Mapping[int, Mapping[Resource, Figure]] = field(default_factory=dict)
    limits: Mapping[Resource, float] = field(default_factory=lambda: dict(DEFAULT_LIMITS))
    origin: str = ""


@dataclass(frozen=True)
class Capacities:
    """The capacities that apply to each broker, resolved, and the limits as fractions."""

    brokers: Mapping[int, Mapping[Resource, Figure]]
    limits: Mapping[Resource, float] = field(default_factory=lambda: dict(DEFAULT_LIMITS))
    in_use: Mapping[int, int] = field(default_factory=dict)  # reported total − usable, where the disk is reported

    def figure(self, broker: int, resource: Resource) -> Figure:
        return self.brokers.get(broker, {}).get(resource, UNKNOWN_FIGURE)

    def limit(self, broker: int, resource: Resource) -> float | None:
        """What the broker may hold of `resource`: capacity × its limit fraction (a replica cap as declared),
        None when the capacity is unknown."""
        value = self.figure(broker, resource).value
        if value is None:
            return None
        return value if resource == "replicas" else value * self.limits.get(resource, DEFAULT_LIMIT)

    @property
    def known(self) -> bool:
        return any(f.value is not None for figures in self.brokers.values() for f in figures.values())


class Reported(Protocol):
    """What `resolve` reads of a snapshot (kops.model.snapshot.Snapshot is one)."""

    @property
    def brokers(self) -> tuple[Broker, ...]: ...
    @property
    def log_dirs(self) -> tuple[LogDirUsage, ...]: ...


def reported_disks(dirs: Iterable[LogDirUsage]) -> dict[int, tuple[int, int] | None]:
    """Per broker that reported dirs: (total, in use) over the volumes it reported, or None when it reported none
    (Kafka before 3.3, or every dir offline: its disk capacity is then unknown unless declared). A broker with one
    dir offline keeps the capacity of the others, where Kafka still writes: a JBOD broker that lost a disk is the
    one most at risk of filling the rest, and an unknown capacity would have lifted its limit altogether. The
    offline dir's replicas still count in its load, so the broker looks fuller than it is, never emptier."""
    out: dict[int, tuple[int, int] | None] = {}
    for v in volumes(dirs):
        if v.total_bytes is None or v.usable_bytes is None:
            out.setdefault(v.broker, None)
            continue
        total, used = out.get(v.broker) or (0, 0)
        out[v.broker] = (total + v.total_bytes, used + v.total_bytes - v.usable_bytes)
    return out


def unreported(dirs: Iterable[LogDirUsage]) -> list[int]:
    """Brokers that answered DescribeLogDirs without any disk's size."""
    return sorted(b for b, disk in reported_disks(dirs).items() if disk is None)


def partly_reported(dirs: Iterable[LogDirUsage]) -> dict[int, tuple[str, ...]]:
    """Per broker that reported some of its dirs: those it did not (offline, or erring), which its capacity leaves
    out (`reported_disks`)."""
    dirs = tuple(dirs)
    unknown = set(unreported(dirs))
    out: dict[int, list[str]] = {}
    for d in sorted(dirs):
        if d.broker not in unknown and not d.reported:
            out.setdefault(d.broker, []).append(d.path)
    return {b: tuple(paths) for b, paths in out.items()}


def resolve(declared: CapacityDeclaration | None, snapshot: Reported) -> Capacities:
    """Each live broker's capacities: `brokers.ID`, then the declared default, then reported (disk only),
    else unknown. Network figures and `max_replicas` are only ever declared."""
    declared = declared or CapacityDeclaration()
    disks = reported_disks(snapshot.log_dirs)
    brokers: dict[int, dict[Resource, Figure]] = {}
    for b in sorted(snapshot.brokers, key=lambda b: b.id):
        figures: dict[Resource, Figure] = {}
        disk = disks.get(b.id)
        if disk is not None:
            figures["disk"] = Figure(float(disk[0]), REPORTED)
        figures.update(declared.default)
        figures.update(declared.brokers.get(b.id, {}))
        brokers[b.id] = figures
    in_use = {b: disk[1] for b, disk in disks.items()
              if disk is not None and brokers.get(b, {}).get("disk", UNKNOWN_FIGURE).source == REPORTED}
    return Capacities(brokers, dict(declared.limits), in_use)


def stray_brokers(declared: CapacityDeclaration | None, cluster: Collection[int]) -> list[int]:
    """The brokers `declared` gives figures for that are not in `cluster` (its brokers, live or named by a replica):
    a typo or a broker since removed, whose figures `resolve` would apply to nothing without a word."""
    return [] if declared is None else sorted(set(declared.brokers) - set(cluster))


STRAY_WARNING = "capacity declared for broker(s)"  # how its warning starts: a no-op rebalance says it too


def stray_warnings(declared: CapacityDeclaration | None, cluster: Collection[int]) -> tuple[str, ...]:
    """`stray_brokers` as a plan's warning line (none when every declared broker is the cluster's)."""
    stray = stray_brokers(declared, cluster)
    if declared is None or not stray:
        return ()
    return (f"{STRAY_WARNING} {', '.join(map(str, stray))} ({declared.origin}), which the cluster "
            "does not have: ignored (a typo, or a broker since removed)",)


def disk_warnings(caps: Capacities, dirs: Iterable[LogDirUsage]) -> tuple[str, ...]:
    """What a reader must know of the disks the cluster reported: brokers whose disk size is known neither way
    (nothing checks their disk), and brokers with a dir offline whose reported capacity leaves it out."""
    dirs = tuple(dirs)
    unknown = [b for b in unreported(dirs) if caps.figure(b, "disk").value is None]
    said = [f"broker(s) {', '.join(map(str, unknown))}: disk size not reported (Kafka before 3.3, or every log "
            "dir offline) and not declared: their disk is not checked (declare capacity.disk)"] if unknown else []
    for b, paths in sorted(partly_reported(dirs).items()):
        if caps.figure(b, "disk").source == REPORTED:
            said.append(f"broker {b}: log dir(s) {', '.join(paths)} offline or not reported: its disk capacity "
                        "counts its other dirs only")
    return tuple(said)

