"""A plan: what will change on one cluster, in which batches, with which throttles, and how to undo it.

Pure data, produced by `kops.planner.planner.plan` and serialised by `kops.model.plan_format` as `kops-plan/2` (declared
in kops/formats/plan.py, which names the class each JSON object holds).
A plan carries its preconditions (each move's `from_replicas`, and a fingerprint of every part of the
snapshot it depends on) so `kops apply` can refuse to act on a cluster that has drifted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar, overload

from kops.model.partitions import TopicPartition

# The three kinds of move: "data" (a replica set changes: bytes go over the network), "leader" (only the order
# changes) and "disk" (a replica goes to another log dir of its own broker: KIP-113, AlterReplicaLogDirs).
DISK = "disk"
# the broker config that throttles a disk move's copy (ReplicaAlterLogDirsThread), bytes/s; not a replication throttle
ALTER_LOG_DIRS_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"


def move_kind(from_replicas: tuple[int, ...] | list[int], to_replicas: tuple[int, ...] | list[int]) -> str:
    """"leader" when only the order changes (a new preferred leader, no data moved), else "data"; the plan file
    writes it and refuses a move that says otherwise. A `DiskMove` is always "disk"."""
    return "leader" if set(from_replicas) == set(to_replicas) else "data"


def misplaced_dirs(to_replicas: tuple[int, ...] | list[int], from_replicas: tuple[int, ...] | list[int],
                   to_dirs: tuple[str | None, ...] | list[str | None]) -> str | None:
    """Why a move's `to_dirs` cannot be carried out, or None: one entry per replica of `to_replicas`, an absolute
    path only for a replica the move adds (a replica that stays and changes dir is a `DiskMove`)."""
    if len(to_dirs) != len(to_replicas):
        return f"has {len(to_dirs)} entries for {len(to_replicas)} replicas"
    for broker, path in zip(to_replicas, to_dirs, strict=True):
        if path is None:
            continue
        if not path.startswith("/"):
            return f"names {path!r} for broker {broker}: a log dir is an absolute path"
        if broker in from_replicas:
            return f"names a dir for broker {broker}, which the move does not add (a disk move does that)"
    return None


def bytes_copied(size: int, from_replicas: tuple[int, ...] | list[int],
                 to_replicas: tuple[int, ...] | list[int]) -> int:
    """Bytes a move sends over the network: one copy of the partition per new replica."""
    return size * len(set(to_replicas) - set(from_replicas))


T = TypeVar("T")


class _computed(Generic[T]):
    """functools.cached_property without the lock Python 3.11 takes at every first read (3.12 dropped it): a
    million-partition plan reads each of its half a million moves' `adding`, `kind` and `copied_bytes` once, and
    the lock was a third of that. The value goes into the instance's __dict__, where later reads find it."""

    def __init__(self, func: Callable[[Any], T]) -> None:
        self.func = func
        self.name = func.__name__

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> _computed[T]: ...
    @overload
    def __get__(self, instance: object, owner: type | None = None) -> T: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> T | _computed[T]:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.func(instance)
        return value


@dataclass(frozen=True, order=True)
class Move:
    """One partition's reassignment from its current replica list to its target (first = preferred leader).

    `kind` is "data" when a replica set changes (bytes are copied) and "leader" when only the order changes
    (a new preferred leader, no data moved). `leader` is the broker that serves the copy (the current leader).
    """

    topic: str
    partition: int
    from_replicas: tuple[int, ...]
    to_replicas: tuple[int, ...]
    bytes: int = 0
    leader: int = -1
    reason: str = ""
    remote_bytes: int | None = None  # tiered storage (KIP-405): the partition's bytes in remote storage, not copied
    # the log dir each replica of `to_replicas` is to be born in (None: any dir); None: no placement at all
    to_dirs: tuple[str | None, ...] | None = None
    # bytes/s written to the partition, where the plan knew write rates: what each new replica takes in (network in),
    # so a rolling wave, which mixes batches, holds the destinations' network-in limits as each batch's peak did
    write_rate: float | None = None

    @_computed
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @_computed
    def kind(self) -> str:
        return move_kind(self.from_replicas, self.to_replicas)

    @_computed
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.to_replicas if b not in self.from_replicas)

    @_computed
    def removing(self) -> tuple[int, ...]:
        return tuple(b for b in self.from_replicas if b not in self.to_replicas)

    @_computed
    def copied_bytes(self) -> int:
        return bytes_copied(self.bytes, self.from_replicas, self.to_replicas)

    def inverse(self) -> Move:
        return Move(self.topic, self.partition, self.to_replicas, self.from_replicas, self.bytes,
                    self.to_replicas[0] if self.to_replicas else -1, "rollback")

    @property
    def placed(self) -> list[tuple[int, str]]:
        """(broker, log dir) of each new replica the move places in a dir."""
        return [(b, d) for b, d in zip(self.to_replicas, self.to_dirs or (), strict=False) if d is not None]


@dataclass(frozen=True, order=True)
class DiskMove:
    """One replica moved from one log dir of its broker to another (KIP-113): the third kind of move, "disk".

    The broker writes a *future* replica in `to_dir` while the replica keeps serving from `from_dir`, then swaps
    them; `bytes` (the replica's size) are copied between the broker's own disks, not over the network, at the
    rate of `replica.alter.log.dirs.io.max.bytes.per.second`. Its inverse is the move back to `from_dir`.
    """

    topic: str
    partition: int
    broker: int
    from_dir: str
    to_dir: str
    replicas: tuple[int, ...]  # the partition's replicas when it runs: the precondition, and what an export writes
    bytes: int = 0
    reason: str = ""
    kind: ClassVar[str] = DISK

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def inverse(self) -> DiskMove:
        return DiskMove(self.topic, self.partition, self.broker, self.to_dir, self.from_dir, self.replicas, self.bytes,
                        "rollback")


@dataclass(frozen=True, order=True)
class Cordon:
    """Log dirs of one broker a drain empties (KIP-1066): kops apply puts them in the broker's `cordoned.log.dirs`
    before the plan's first batch, so no new replica lands there while it drains, and the rollback restores the
    value found. `("*",)` is every dir of the broker, as Kafka spells it (a decommission)."""

    broker: int
    dirs: tuple[str, ...]


@dataclass(frozen=True)
class Rolling:
    """Rolling execution: moves submitted as others finish, at most `max_moves_per_broker` in flight touching
    any broker (as source or destination) and `max_moves` in all (None: no cap beyond the brokers')."""

    max_moves_per_broker: int = 5  # as Cruise Control's default; bench/batching.py: 2 leaves new brokers idle
    max_moves: int | None = None


@dataclass(frozen=True)
class TopicCreation:
    topic: str
    assignment: dict[int, tuple[int, ...]]
    config: dict[str, str]


@dataclass(frozen=True)
class TopicDeletion:
    topic: str
    partitions: int
    bytes: int = 0


@dataclass(frozen=True)
class PartitionAddition:
    topic: str
    assignment: dict[int, tuple[int, ...]]  # the new partitions only


@dataclass(frozen=True)
class PartitionDeletion:
    """KIP-253 (lab clusters only): mark partitions >= `undeleted_partition_count` for deletion."""

    topic: str
    current_count: int
    undeleted_partition_count: int


@dataclass(frozen=True)
class ConfigChange:
    """A whole-map change of one entity's overrides: `before` is restored by rollback."""

    entity_type: str  # topics | brokers
    entity: str
    set: dict[str, str]
    remove: tuple[str, ...]
    before: dict[str, str]
    destructive: bool = False
    reason: str = ""

    @property
    def after(self) -> dict[str, str]:
        result = {k: v for k, v in self.before.items() if k not in self.remove}
        result.update(self.set)
        return result


@dataclass(frozen=True)
class Throttle:
    """Replication throttles for one batch, already merged with what the cluster had (a `*` kept)."""

    topics: dict[str, dict[str, str]]  # topic -> {leader/follower key: value}
    brokers: dict[int, dict[str, str]]  # broker -> {rate key: value}
    rate: int | None  # bytes/s per broker, None = unthrottled
    # broker -> the most its follower rate may be in this batch, below `rate`: its network-in room at the batch's
    # peak (docs/design/capacity.md §6.6); the executor keeps it under any rate `--throttle` sets
    caps: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Estimate:
    seconds: float | None  # None when sizes and rates are unknown
    lower_bound_seconds: float | None = None  # not in the plan file
    bytes_in: dict[int, int] = field(default_factory=dict)  # per destination broker
    bytes_out: dict[int, int] = field(default_factory=dict)  # per source (leader) broker


@dataclass(frozen=True)
class Batch:
    index: int
    moves: tuple[Move, ...]
    throttle: Throttle
    estimate: Estimate
    disk_moves: tuple[DiskMove, ...] = ()  # intra-broker moves, run with the batch's reassignments

    @property
    def bytes(self) -> int:
        """Bytes copied over the network (a disk move's bytes stay on its broker: `disk_bytes`)."""
        return sum(m.copied_bytes for m in self.moves)

    @property
    def disk_bytes(self) -> int:
        return sum(m.bytes for m in self.disk_moves)


@dataclass(frozen=True)
class Rollback:
    """The inverse: batches to run in this order (already reversed), configs to restore, then an election."""

    batches: tuple[Batch, ...]
    configs: tuple[ConfigChange, ...]
    election: tuple[TopicPartition, ...]
    irreversible: tuple[str, ...]  # what rollback cannot undo (topic creations need deletion, partition adds)


@dataclass(frozen=True)
class Usage:
    """One broker's load of one resource against its capacity: bytes (disk), bytes/s (network) or a count
    (replicas); `peak` is the most it holds at any point of the plan, where it is the peak of batch `peak_batch`
    (a new copy written while the old one is still there), None when the peak is the start or the end."""

    capacity: int
    limit: int  # capacity × the limit's fraction (replicas: the cap itself)
    source: str  # `declared FILE:LINE`, `cruise-control FILE`, `reported (DescribeLogDirs)`
    before: int
    after: int
    peak: int
    peak_batch: int | None = None

    @property
    def cap(self) -> int:
        """The most the broker may hold at any point of the plan: its limit, or where it already was when it
        starts over it (a plan may only lower what is over)."""
        return self.limit if self.before <= self.limit else self.before

    @property
    def headroom(self) -> int:
        """What is left under the limit at the peak (negative: over)."""
        return self.limit - self.peak


@dataclass(frozen=True)
class CapacityReport:
    """What a plan does to each broker's known capacities (docs/design/capacity.md §5): resources no broker has
    a capacity for are left out, and so is the whole report when none is known."""

    limits: dict[str, float]
    brokers: dict[int, dict[str, Usage]]
    over_before: tuple[int, ...] = ()  # brokers already over a limit before the plan
    unknown: tuple[str, ...] = ()  # resources with no capacity for any broker: not checked



def counted(moves: Iterable[Move]) -> tuple[int, int, int]:
    """Replicas added, leader-only changes and bytes copied, as a plan's summary counts them (and the metrics
    file, for the moves a run finished)."""
    replicas = leaders = copied = 0
    for move in moves:
        if move.kind == "data":
            replicas += len(move.adding)
            copied += move.copied_bytes
        else:
            leaders += 1
    return replicas, leaders, copied


@dataclass(frozen=True)
class GoalOutcome:
    """One row of a goal list's table (docs/design/goals.md §3): the goal's figure before and after the plan, the
    best figure racks and whole partitions allow (its lower bound), and the optimizer's steps spent on it
    (replica moves, leadership changes). `skipped` says why a goal was not worked on (no sizes, no write rates);
    its figures are then 0 unless it was measured."""

    name: str
    unit: str  # "% of capacity", "% of mean", "% of replicas", "% of partitions"; "" for a goal with no figure
    before: float
    after: float
    lower_bound: float
    moves: int
    leader_moves: int
    # the share of the load above the fair share, as --min-improvement reads it: the run's (its JSON summary line
    # carries both), not in the plan file
    imbalance_before: float = 0.0
    imbalance_after: float = 0.0
    skipped: str | None = None


@dataclass(frozen=True)
class Summary:
    moves: int
    leader_moves: int
    bytes: int
    lower_bound_moves: int
    lower_bound_bytes: int
    estimated_seconds: float | None
    lower_bound_seconds: float | None
    destructive: tuple[str, ...]
    replicas_before: dict[int, int]
    replicas_after: dict[int, int]
    leaders_before: dict[int, int]
    leaders_after: dict[int, int]
    bytes_before: dict[int, int]
    bytes_after: dict[int, int]
    remote_bytes: int | None = None  # tiered topics' bytes in remote storage the moves leave there (per new replica)
    capacity: CapacityReport | None = None  # each broker's capacity, usage and headroom, where any is known
    goals: tuple[GoalOutcome, ...] = ()  # a goal list's table, in priority order; empty without a list
    disk_moves: int = 0  # intra-broker moves (kind "disk")
    disk_bytes: int = 0  # what they copy between a broker's own dirs


@dataclass(frozen=True)
class Plan:
    cluster: str
    cluster_id: str | None
    connect: str | None
    playbook_digest: str
    fingerprint: dict[str, object]
    creations: tuple[TopicCreation, ...]
    deletions: tuple[TopicDeletion, ...]
    partition_additions: tuple[PartitionAddition, ...]
    partition_deletions: tuple[PartitionDeletion, ...]
    configs: tuple[ConfigChange, ...]
    batches: tuple[Batch, ...]
    election: tuple[TopicPartition, ...]  # preferred-leader election after the batches
    rollback: Rollback
    summary: Summary
    warnings: tuple[str, ...] = ()
    kops_version: str = ""
    stall_timeout: float | None = None  # the playbook's execution.stall_timeout; kops apply --stall-timeout wins
    rolling: Rolling | None = None  # the playbook's `execution.mode: rolling`; kops apply --rolling sets it too
    edited: tuple[str, ...] = ()  # sections changed after kops wrote the file, accepted with --accept-edited-plan
    serial: str | None = None  # the playbook's `serial` (`1`, `25%`): kops apply DIR's clusters at once
    cordons: tuple[Cordon, ...] = ()  # dirs the plan drains, cordoned before batch 1 (metadata.version 4.3-IV0+)

    @property
    def moves(self) -> list[Move]:
        return [m for b in self.batches for m in b.moves]

    @property
    def disk_moves(self) -> list[DiskMove]:
        return [m for b in self.batches for m in b.disk_moves]

    @property
    def throttle_rate(self) -> int | None:
        """The replication throttle the plan runs at: its batches' lowest rate; None when unthrottled."""
        rates = [b.throttle.rate for b in self.batches if b.throttle.rate is not None]
        return min(rates) if rates else None

    @property
    def has_changes(self) -> bool:
        return bool(self.creations or self.deletions or self.partition_additions or self.partition_deletions
                    or self.configs or self.batches or self.election)
