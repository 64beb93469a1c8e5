"""One broker's log dirs as a plan fills them (JBOD, docs/design/jbod.md §5): the bytes of replicas in each dir,
and per volume the room left under the disk limit, for kops/planner/log_dirs.py (removed dirs, new replicas' dirs)
and kops/planner/intra_broker.py (the goal `disk_within_broker`).

Capacity per dir is capacity.md §3's: dirs on one filesystem (`volumes`) share its room; a volume's figure is its
reported total × the plan's disk limit, the other files on it (total − usable − the replicas) kept as they are.
A volume whose size is not reported limits nothing. Dirs a replica may not go to: offline ones (an error in
DescribeLogDirs), cordoned ones (`cordoned.log.dirs`, KIP-1066) and the ones being removed.

Two figures per volume, for two questions (jbod.md §5):
- `used`: what its filesystem holds now, the replicas' bytes plus its other files: what fits (`room`, `best`).
  It counts bytes that are about to go, since they still take room until they go;
- `replicas`: the bytes of the replicas that stay in its dirs, where DescribeLogDirs lists them: what the goal
  `disk_within_broker` evens. Its other files are left out on purpose. After a disk move Kafka keeps the old
  copy as `<topic>-<partition>.<uuid>-delete` for `log.segment.delete.delay.ms` (60 s). The source filesystem
  still counts it, while DescribeLogDirs lists the replica only in its new dir. One snapshot cannot tell such a
  copy from a lasting file: DescribeLogDirs lists neither, and both are in total − usable. Evened by filesystem
  use, a plan made right after an apply saw no change and moved as much again (found on Kafka 4.3.1). A
  replica whose disk move is in flight counts in the dir of its future copy, since Kafka drops the current
  copy at the swap. Cruise Control's disk utilization is its replicas' sizes too.
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
    other: list[float]  # per volume: bytes in use that are no listed replica's (old copies pending delete too)
    held: dict[str, float] = field(default_factory=dict)  # per dir: the listed replicas' bytes, future copies too
    where: dict[TopicPartition, str] = field(default_factory=dict)
    swapping: dict[TopicPartition, float] = field(default_factory=dict)  # current copies a future one replaces

    def used(self, volume: int) -> float:
        """The bytes its filesystem holds now (what fits under the limit): the replicas' and its other files'."""
        return self.other[volume] + self._held(volume)

    def replicas(self, volume: int) -> float:
        """The bytes of the replicas that stay in the volume's dirs (what `disk_within_broker` evens): a replica's
        current copy that an intra-broker move in flight replaces is not counted, its future copy is."""
        going = sum(b for tp, b in self.swapping.items() if self.volume_of[self.where[tp]] == volume)
        return self._held(volume) - going

    def _held(self, volume: int) -> float:
        return sum(b for p, b in self.held.items() if self.volume_of[p] == volume)

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
        self.swapping.pop(tp, None)
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
    futures: list[TopicPartition] = []
    for row in snapshot.replica_dirs:
        if row.broker == broker and row.path in dirs.volume_of:
            tp = TopicPartition(row.topic, row.partition)
            size = float(sizes.get(tp, 0))
            dirs.held[row.path] = dirs.held.get(row.path, 0.0) + size
            if row.future:
                futures.append(tp)
            else:
                dirs.where[tp] = row.path
    dirs.swapping = {tp: float(sizes.get(tp, 0)) for tp in futures if tp in dirs.where}
    for i, v in enumerate(found):
        if v.total_bytes is not None and v.usable_bytes is not None:
            dirs.other[i] = max(0.0, v.total_bytes - v.usable_bytes - dirs.used(i))
    return dirs
