"""One interface for everything the executor does to a cluster, so it never knows the transport.

Two adapters implement it: `kops.cluster.zookeeper.ZkCluster` (Kafka's znodes, for 2.x/3.x clusters in
ZooKeeper mode and the kops engine) and `kops.cluster.admin.adapter.AdminCluster` (Kafka's Admin API: KRaft,
Kafka 4, any 2.4+ broker). The port says what a cluster lets kops do (`Capabilities`, asked of a snapshot), so
no caller decides by transport, and which of its calls write (`@writes`: `WRITES`, `RECORD_WRITES`). The
executor holds a `Fenced` view while it holds the lock: every write first checks it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from kops.errors import Refused
from kops.model.capacity import LogDirUsage
from kops.model.partitions import TopicPartition
from kops.model.placement import DirCopy, ReplicaDir
from kops.model.snapshot import Snapshot

Assignment = Mapping[int, Sequence[int]]
__all__ = ["RECORD_WRITES", "WRITES", "Capabilities", "Cluster", "ConfigsOneAtATime", "Entity", "Fenced", "Lock",
           "RecordStore", "Refused", "Replica", "Target"]

Target = tuple[TopicPartition, tuple[int, ...]]  # a partition and the replicas it is to have, in order
Replica = tuple[TopicPartition, int]  # a partition's replica on one broker
Entity = tuple[str, str]  # a config entity: ("topics", name) or ("brokers", id)
_Call = TypeVar("_Call", bound=Callable[..., Any])


def writes(call: _Call) -> _Call:
    """Marks a port call that changes the cluster: the lock's fence checks the lock before each."""
    call.__kops_writes__ = True  # type: ignore[attr-defined]  # a mark on the function object, read by writes_of
    return call


def writes_of(protocol: type) -> frozenset[str]:
    """The calls of `protocol` marked `@writes`."""
    return frozenset(name for name, call in vars(protocol).items() if getattr(call, "__kops_writes__", False))


@dataclass(frozen=True)
class Capabilities:
    """What a cluster lets kops do, as its adapter finds it (through ZooKeeper: the features its brokers
    advertise), in the words messages use."""

    cancel_in_flight: bool  # a reassignment in flight can be cancelled, its partitions back on their original replicas
    moves_in_flight: bool  # new moves are taken while others run
    cancel_by: str  # how it cancels ("KIP-455", "KIP-236"), where it can
    no_cancel: str = ""  # where it cannot: why, then what would ("...; reach it through the Admin API")
    dir_moves: bool = False  # replicas moved between a broker's log dirs (KIP-113 AlterReplicaLogDirs)
    replica_dirs: bool = False  # which log dir holds each replica can be read (`replica_dirs`; no znode says)
    no_dir_moves: str = ""  # where they cannot be: why, and what would ("...: pass -b BOOTSTRAP")


class Lock(Protocol):
    """One execution at a time per cluster; `lost` says why once another may hold it."""

    lost: str | None

    def acquire(self) -> None: ...
    def ensure_held(self) -> None: ...
    def update(self, **fields: Any) -> None: ...
    def release(self) -> None: ...


class RecordStore(Protocol):
    """Where execution records and cancel requests live on the cluster (bytes in, bytes out)."""

    max_bytes: int

    @writes
    def create(self, execution_id: str, data: bytes) -> None: ...
    @writes
    def save(self, execution_id: str, data: bytes) -> None: ...
    def load(self, execution_id: str) -> bytes | None: ...
    def ids(self) -> list[str]: ...
    @writes
    def set_cancel(self, execution_id: str, data: bytes) -> None: ...
    def get_cancel(self, execution_id: str) -> bytes | None: ...
    @writes
    def clear_cancel(self, execution_id: str) -> None: ...
    @writes
    def note_absent(self, absent: Collection[int]) -> tuple[dict[int, int], int]:
        """Note the brokers absent now (one not noted before is first seen now, one noted and not named is
        forgotten); each noted broker's first sighting and the time now, in ms by the store's clock
        (docs/design/healing.md §1). Nothing absent and nothing noted: nothing written, ({}, 0)."""


class Cluster(Protocol):
    where: str  # the connect string or bootstrap servers, for messages

    def snapshot(self, only_topics: set[str] | None = None,
                 only_partitions: Collection[TopicPartition] | None = None,
                 progress: Callable[[str], None] | None = None) -> Snapshot:
        """The cluster as it is (`only_*`: a poll's narrower view); `progress` hears what the read waits for."""
    def offers(self) -> dict[str, str]: ...
    def sizes(self) -> dict[TopicPartition, int]: ...
    def log_dirs(self) -> tuple[LogDirUsage, ...]: ...  # each live broker's dirs, total and usable bytes; () unread
    def records(self) -> RecordStore: ...
    def lock(self, holder: dict[str, Any], wait_dead: float, sleep: Callable[[float], None],
             monotonic: Callable[[], float]) -> Lock: ...
    def holder(self) -> dict[str, Any] | None: ...

    def capabilities(self, snapshot: Snapshot) -> Capabilities: ...

    @writes
    def create_topic(self, name: str, assignment: Assignment, config: Mapping[str, str]) -> bool: ...
    @writes
    def add_partitions(self, topic: str, assignment: Assignment) -> bool: ...
    @writes
    def shrink_partitions(self, topic: str, keep: int) -> None: ...
    @writes
    def delete_topic(self, name: str) -> None: ...
    def read_config(self, entity_type: str, name: str) -> dict[str, str]: ...
    @writes
    def alter_config(self, entity_type: str, name: str, updates: Mapping[str, str | None]) -> None: ...
    def read_configs(self, entities: Sequence[Entity]) -> dict[Entity, dict[str, str]]:
        """Several entities' configs at once (a batch's throttles: one request where the transport allows)."""
    @writes
    def alter_configs(self, changes: Mapping[Entity, Mapping[str, str | None]]) -> None:
        """Several entities' changes at once, each entity's whole or not at all; on a failure some entities may
        be changed and others not (the caller repeats them one at a time to learn which)."""

    @writes
    def submit(self, targets: Sequence[Target], snapshot: Snapshot) -> None: ...
    @writes
    def cancel(self, partitions: Sequence[TopicPartition], timeout: float) -> None: ...
    @writes
    def elect_preferred(self, partitions: Sequence[TopicPartition], timeout: float) -> bool: ...
    def lags(self, asked: Sequence[tuple[TopicPartition, int]]) -> dict[tuple[TopicPartition, int], int]: ...

    # log dirs (JBOD, KIP-113; docs/design/jbod.md §3), where `capabilities().dir_moves`
    def replica_dirs(self, dirs: tuple[LogDirUsage, ...]) -> tuple[ReplicaDir, ...]:
        """Which dir holds each replica of the brokers `dirs` shows with several dirs; () where not known."""
    def dir_copies(self, replicas: Sequence[Replica]) -> dict[Replica, DirCopy]:
        """Each replica's dir and size and, while a disk move copies it, its future replica's."""
    @writes
    def alter_replica_dirs(self, wanted: Mapping[Replica, str]) -> dict[Replica, str | None]:
        """AlterReplicaLogDirs: per replica None (accepted) or Kafka's error name (ReplicaNotAvailableError for
        a replica its broker does not host yet, which is then born in that dir)."""
    def close(self) -> None: ...


class ConfigsOneAtATime:
    """`read_configs` and `alter_configs` for a transport without a batch of them (ZooKeeper: a znode per entity,
    each written with its change notification): one entity after another, stopping at the first failure."""

    def read_config(self, entity_type: str, name: str) -> dict[str, str]:
        raise NotImplementedError

    def alter_config(self, entity_type: str, name: str, updates: Mapping[str, str | None]) -> None:
        raise NotImplementedError

    def read_configs(self, entities: Sequence[Entity]) -> dict[Entity, dict[str, str]]:
        return {entity: self.read_config(*entity) for entity in entities}

    def alter_configs(self, changes: Mapping[Entity, Mapping[str, str | None]]) -> None:
        for (entity_type, name), updates in changes.items():
            self.alter_config(entity_type, name, updates)


WRITES = writes_of(Cluster)  # the calls the fence checks the lock before
RECORD_WRITES = writes_of(RecordStore)


class Fenced:
    """The executor's cluster while it holds the lock: every write (and every record saved) first checks that
    the lock is still held (a fencing check; the window between the check and the write is one round trip)."""

    def __init__(self, cluster: Cluster, lock: Lock) -> None:
        self._cluster = cluster
        self._lock = lock

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._cluster, name)
        if name == "records":
            return lambda: _FencedRecords(self._cluster.records(), self._lock)
        if name not in WRITES:
            return attr

        def fenced(*args: Any, **kwargs: Any) -> Any:
            self._lock.ensure_held()
            return attr(*args, **kwargs)

        return fenced


class _FencedRecords:
    def __init__(self, store: RecordStore, lock: Lock) -> None:
        self._store = store
        self._lock = lock

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if name not in RECORD_WRITES:
            return attr

        def fenced(*args: Any, **kwargs: Any) -> Any:
            self._lock.ensure_held()
            return attr(*args, **kwargs)

        return fenced
