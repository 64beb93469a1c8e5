"""One broker's log dirs as a plan fills them (JBOD, docs/design/jbod.md §5): the bytes of replicas in each dir,
and per volume the room left under the disk limit, for kops/planner/log_dirs.py (removed dirs, new replicas' dirs)
and kops/planner/intra_broker.py (the goal `disk_within_broker`).

Capacity per dir is capacity.md §3's: dirs on one filesystem (`volumes`) share its room; a volume's figure is its
reported total × the plan's disk limit, the other files on it (total − usable − the replicas) kept as they are.
A volume whose size is not reported limits nothing. Dirs a replica may not go to: offline ones (an error in
DescribeLogDirs), cordoned ones (`cordoned.log.dirs`, KIP-1066) and the ones being removed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kops.model.capacity import volumes
from kops.model.partitions import TopicPartition
from kops.model.snapshot import Snapshot

CORDONED = "cordoned.log.dirs"  # KIP-1066 (Kafka 4.3): no new replica lands on these dirs of the broker


@dataclass
class Dirs:
    """One broker's log dirs as the plan fills them. `targets`: the dirs a replica may go to (not offline,
    cordoned or being removed); `where`: each replica's dir (current replicas, then the plan's)."""

    broker: int
    targets: tuple[str, ...]
    volume_of: dict[str, int]
    limit: list[float]  # per volume: total × the disk limit; inf where the size is not reported
    total: list[float | None]
    other: list[float]  # per volume: bytes in use that are no replica's
    held: dict[str, float] = field(default_factory=dict)  # per dir: the replicas' bytes
    where: dict[TopicPartition, str] = field(default_factory=dict)

    def used(self, volume: int) -> float:
        return self.other[volume] + sum(b for p, b in self.held.items() if self.volume_of[p] == volume)

    def room(self, path: str) -> float:
        volume = self.volume_of[path]
        return self.limit[volume] - self.used(volume)

    def best(self, size: float, among: Iterable[str] | None = None) -> str | None:
        """The dir with the most room that still fits `size` (ties: fewer bytes held, then path); None if none."""
        fitting = [p for p in (self.targets if among is None else among) if self.room(p) >= size]
        return min(fitting, key=lambda p: (-self.room(p), self.held.get(p, 0.0), p), default=None)

    def put(self, tp: TopicPartition, path: str, size: float) -> None:
        self.leave(tp, size)
        self.where[tp] = path
        self.held[path] = self.held.get(path, 0.0) + size

    def leave(self, tp: TopicPartition, size: float) -> None:
        path = self.where.pop(tp, None)
        if path is not None:
            self.held[path] = self.held.get(path, 0.0) - size


def broker_dirs(snapshot: Snapshot, broker: int, sizes: Mapping[TopicPartition, int], limit: float,
                removed: Iterable[str] = ()) -> Dirs | None:
    """`broker`'s dirs filled as the snapshot read them; None where it has one dir (nothing to choose) or which dir
    holds each replica is not known (read through ZooKeeper)."""
    paths = snapshot.broker_dirs(broker)
    if len(paths) < 2 or not snapshot.placement_known(broker):
        return None
    usages = [d for d in snapshot.log_dirs if d.broker == broker]
    cordoned = {p.strip() for p in snapshot.broker_configs.get(str(broker), {}).get(CORDONED, "").split(",")}
    shut = set(removed) | cordoned | {d.path for d in usages if d.error is not None}
    found = volumes(usages)
    dirs = Dirs(broker, tuple(p for p in paths if p not in shut), {p: i for i, v in enumerate(found) for p in v.paths},
                [math.inf if v.total_bytes is None else v.total_bytes * limit for v in found],
                [None if v.total_bytes is None else float(v.total_bytes) for v in found], [0.0] * len(found))
    for row in snapshot.replica_dirs:
        if row.broker == broker and row.path in dirs.volume_of:
            tp = TopicPartition(row.topic, row.partition)
            size = float(sizes.get(tp, 0))
            dirs.held[row.path] = dirs.held.get(row.path, 0.0) + size
            if not row.future:
                dirs.where[tp] = row.path
    for i, v in enumerate(found):
        if v.total_bytes is not None and v.usable_bytes is not None:
            dirs.other[i] = max(0.0, v.total_bytes - v.usable_bytes - dirs.used(i))
    return dirs
