"""Which log dir of its broker holds each replica (JBOD), as DescribeLogDirs lists them.

A broker with several log dirs (`log.dirs`, KIP-112) keeps each replica in one of them; an intra-broker move
(KIP-113, AlterReplicaLogDirs) copies it into a *future* replica in the target dir, and the broker swaps the two
once the copy has caught up. Kept in `Snapshot.replica_dirs` for the brokers with more than one dir: on a broker
with one dir the placement is implied, and reading every replica costs what `kops sizes` costs
(docs/design/jbod.md §2).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class ReplicaDir:
    """One replica of a partition in one log dir of its broker; `future`: the copy an intra-broker move is
    writing there (the replica itself is still in its current dir, listed beside it)."""

    topic: str
    partition: int
    broker: int
    path: str
    future: bool = False


def dirs_by_broker(dirs: Iterable[tuple[int, str]]) -> dict[int, tuple[str, ...]]:
    """Each broker's log dir paths, sorted, from (broker, path) pairs."""
    out: dict[int, list[str]] = {}
    for broker, path in dirs:
        out.setdefault(broker, []).append(path)
    return {b: tuple(sorted(paths)) for b, paths in out.items()}


def jbod_brokers(dirs: Mapping[int, tuple[str, ...]]) -> list[int]:
    """The brokers with more than one log dir: where a replica's dir is a real question."""
    return sorted(b for b, paths in dirs.items() if len(paths) > 1)


def index(rows: Iterable[ReplicaDir]) -> dict[tuple[str, int, int, bool], str]:
    """(topic, partition, broker, future) -> path, for lookups at a million replicas."""
    return {(r.topic, r.partition, r.broker, r.future): r.path for r in rows}


@dataclass(frozen=True)
class DirCopy:
    """A replica on its broker and, while an intra-broker move copies it, its future replica: the move's
    progress is `future_size` of `size` (docs/design/jbod.md §6). `path` is None when the broker holds no
    current replica (the future one alone, for a moment, or neither)."""

    path: str | None
    size: int
    future_path: str | None = None
    future_size: int = 0

    @property
    def moving(self) -> bool:
        return self.future_path is not None
