"""One interface for everything the executor does to a cluster, so it never knows the transport.

Two adapters implement it: `kops.cluster.zookeeper.ZkCluster` (Kafka's znodes, for 2.x/3.x clusters in
ZooKeeper mode and the kops engine) and `kops.cluster.admin.adapter.AdminCluster` (Kafka's Admin API: KRaft,
Kafka 4, any 2.4+ broker). The executor holds a `Fenced` view while it holds the lock: every write first checks it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Protocol

from kops.errors import Refused
from kops.model.partitions import TopicPartition
from kops.model.snapshot import Snapshot

Assignment = Mapping[int, Sequence[int]]
__all__ = ["Cluster", "Fenced", "Lock", "RecordStore", "Refused", "Target"]

Target = tuple[TopicPartition, tuple[int, ...]]  # a partition and the replicas it is to have, in order


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

    def create(self, execution_id: str, data: bytes) -> None: ...
    def save(self, execution_id: str, data: bytes) -> None: ...
    def load(self, execution_id: str) -> bytes | None: ...
    def ids(self) -> list[str]: ...
    def set_cancel(self, execution_id: str, data: bytes) -> None: ...
    def get_cancel(self, execution_id: str) -> bytes | None: ...
    def clear_cancel(self, execution_id: str) -> None: ...


class Cluster(Protocol):
    transport: str  # "zookeeper" or "admin"
    where: str  # the connect string or bootstrap servers, for messages

    def snapshot(self, only_topics: set[str] | None = None,
                 only_partitions: Collection[TopicPartition] | None = None) -> Snapshot: ...
    def offers(self) -> dict[str, str]: ...
    def sizes(self) -> dict[TopicPartition, int]: ...
    def records(self) -> RecordStore: ...
    def lock(self, holder: dict[str, Any], wait_dead: float, sleep: Callable[[float], None],
             monotonic: Callable[[], float]) -> Lock: ...
    def holder(self) -> dict[str, Any] | None: ...

    def create_topic(self, name: str, assignment: Assignment, config: Mapping[str, str]) -> bool: ...
    def add_partitions(self, topic: str, assignment: Assignment) -> bool: ...
    def shrink_partitions(self, topic: str, keep: int) -> None: ...
    def delete_topic(self, name: str) -> None: ...
    def read_config(self, entity_type: str, name: str) -> dict[str, str]: ...
    def alter_config(self, entity_type: str, name: str, updates: Mapping[str, str | None]) -> None: ...

    def submit(self, targets: Sequence[Target], snapshot: Snapshot) -> None: ...
    def can_cancel(self, snapshot: Snapshot) -> bool: ...
    def accepts_moves_in_flight(self, snapshot: Snapshot) -> bool: ...
    def cancel(self, partitions: Sequence[TopicPartition], timeout: float) -> None: ...
    def elect_preferred(self, partitions: Sequence[TopicPartition], timeout: float) -> bool: ...
    def lags(self, asked: Sequence[tuple[TopicPartition, int]]) -> dict[tuple[TopicPartition, int], int]: ...
    def close(self) -> None: ...


WRITES = frozenset({"create_topic", "add_partitions", "shrink_partitions", "delete_topic", "alter_config", "submit",
                    "cancel", "elect_preferred"})


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
    WRITES = frozenset({"create", "save", "set_cancel", "clear_cancel"})

    def __init__(self, store: RecordStore, lock: Lock) -> None:
        self._store = store
        self._lock = lock

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if name not in self.WRITES:
            return attr

        def fenced(*args: Any, **kwargs: Any) -> Any:
            self._lock.ensure_held()
            return attr(*args, **kwargs)

        return fenced
