"""The cluster port over ZooKeeper: Kafka's znodes written as Kafka's own tools write them (kops.zk_layout), for
clusters in ZooKeeper mode (Kafka 2.4 – 3.9) and the kops engine.

The lock is an ephemeral `/kops/lock` naming the holder, so a crashed holder's lock vanishes with its session;
execution records are `/kops/executions/<id>` written with the znode version (a second writer is detected), and
a cancel request is their `cancel` child. A reassignment is cancelled through KIP-236 where the cluster
advertises it (Kafka 2.4+ ignores a deleted `/admin/reassign_partitions`); lag comes from KIP-179 where advertised.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from kops.cluster.port import Assignment, Capabilities, ConfigsOneAtATime, Replica, Target
from kops.errors import KopsError, Refused
from kops.holder import Locked, LockLost, dead_local, describe
from kops.kip179.client import Kip179Client
from kops.kip179.protocol import ErrorCode
from kops.model.capacity import LogDirUsage
from kops.model.features import KIP179_ADMIN, KIP236_CANCEL, KIP236_QUEUE
from kops.model.partitions import TopicPartition
from kops.model.placement import DirCopy, ReplicaDir
from kops.model.snapshot import Snapshot
from kops.zk_layout import paths, tool_writes
from kops.zk_layout.client import NodeExists, NodeMissing, ZkClient
from kops.zk_layout.codecs.admin_requests import ReassignmentTarget
from kops.zk_layout.reader import read_snapshot

CANCEL = "cancel"
_NO_DIR_MOVES_ZK = ("needs the Admin API (AlterReplicaLogDirs), which ZooKeeper does not offer: reach the cluster "
                    "with -b BOOTSTRAP")
_NO_DIR_MOVES_SEEDS = "is Kafka's (JBOD): the kops engine's brokers have one log dir each"


class ZkCluster(ConfigsOneAtATime):
    def __init__(self, client: ZkClient, where: str = "") -> None:
        self.client = client
        self.where = where
        self._records = ZkRecords(client)
        self._api: Kip179Client | None = None

    def snapshot(self, only_topics: set[str] | None = None,
                 only_partitions: Collection[TopicPartition] | None = None,
                 progress: Callable[[str], None] | None = None) -> Snapshot:
        return read_snapshot(self.client, progress, only_topics=only_topics, only_partitions=only_partitions)

    def offers(self) -> dict[str, str]:
        """What this transport can do here: KIP-236 cancel and KIP-179 lag where the cluster advertises them."""
        here = read_snapshot(self.client, only_topics=set())
        can = self.capabilities(here)
        return {"transport": "ZooKeeper", "cancel in flight": can.cancel_by if can.cancel_in_flight else "no",
                "lag in bytes": "KIP-179" if KIP179_ADMIN in here.cluster_features() else "no (partitions counted)"}

    def capabilities(self, snapshot: Snapshot) -> Capabilities:
        """Kafka 2.4+ ignores a deleted `/admin/reassign_partitions` and its controller takes one reassignment
        znode at a time: a cancel and moves while others run only where the cluster advertises KIP-236's
        cancel and queue (the kops engine)."""
        features = snapshot.cluster_features()
        return Capabilities(cancel_in_flight=KIP236_CANCEL in features, moves_in_flight=KIP236_QUEUE in features,
                            cancel_by="KIP-236", no_cancel="through ZooKeeper (no KIP-236)",
                            no_dir_moves=_NO_DIR_MOVES_SEEDS if features else _NO_DIR_MOVES_ZK)

    # -- log dirs: the Admin API's (docs/design/jbod.md §3, §6) -----------------------------------------------

    def replica_dirs(self, dirs: tuple[LogDirUsage, ...]) -> tuple[ReplicaDir, ...]:
        """No znode says which dir holds a replica: unknown (`dir_of` answers None where a broker has several)."""
        return ()

    def dir_copies(self, replicas: Sequence[Replica]) -> dict[Replica, DirCopy]:
        raise Refused(f"reading log-dir moves {_NO_DIR_MOVES_ZK}", where=self.where)

    def alter_replica_dirs(self, wanted: Mapping[Replica, str]) -> dict[Replica, str | None]:
        raise Refused(f"moving replicas between log dirs {_NO_DIR_MOVES_ZK}", where=self.where)

    def sizes(self) -> dict[TopicPartition, int]:
        """ZooKeeper holds no sizes: plans take them from `kops sizes summarize` (--sizes)."""
        return {}

    def records(self) -> ZkRecords:
        return self._records

    def lock(self, holder: dict[str, Any], wait_dead: float, sleep: Callable[[float], None],
             monotonic: Callable[[], float]) -> ZkLock:
        return ZkLock(self.client, holder, wait_dead, sleep, monotonic)

    def holder(self) -> dict[str, Any] | None:
        return read_holder(self.client)

    # -- topics and configs ----------------------------------------------------------------------------------

    def create_topic(self, name: str, assignment: Assignment, config: Mapping[str, str]) -> bool:
        if self.client.exists(paths.topic(name)) is not None:
            return False
        tool_writes.create_topic(self.client, name, {p: tuple(r) for p, r in assignment.items()}, config)
        return True

    def add_partitions(self, topic: str, assignment: Assignment) -> bool:
        existing = self.client.children(paths.partitions(topic)) or []
        if self.client.get(paths.topic(topic)) is not None and all(str(p) in existing for p in assignment):
            return False
        tool_writes.add_partitions(self.client, topic, {p: tuple(r) for p, r in assignment.items()})
        return True

    def shrink_partitions(self, topic: str, keep: int) -> None:
        tool_writes.mark_partitions_for_deletion(self.client, topic, keep)

    def delete_topic(self, name: str) -> None:
        tool_writes.delete_topic(self.client, name)

    def read_config(self, entity_type: str, name: str) -> dict[str, str]:
        return tool_writes.read_config(self.client, entity_type, name)[0]

    def alter_config(self, entity_type: str, name: str, updates: Mapping[str, str | None]) -> None:
        tool_writes.alter_config(self.client, entity_type, name, dict(updates))

    # -- reassignments and elections -----------------------------------------------------------------------

    def submit(self, targets: Sequence[Target], snapshot: Snapshot) -> None:
        """`/admin/reassign_partitions`; while one is in flight, the KIP-236 queue where the cluster has it."""
        wanted = [ReassignmentTarget(tp.topic, tp.partition, replicas) for tp, replicas in targets]
        try:
            tool_writes.start_reassignment(self.client, wanted)
        except tool_writes.AdminRefused as exc:
            if not self.capabilities(snapshot).moves_in_flight:
                raise Refused(exc.what, where=paths.REASSIGN_PARTITIONS) from None
            if not self._wait_absent(paths.REASSIGN_QUEUE, 30.0):  # the controller takes the last one in first
                raise Refused("the controller has not taken in the last queued moves",
                              where=paths.REASSIGN_QUEUE) from None
            tool_writes.queue_reassignment(self.client, wanted)

    def cancel(self, partitions: Sequence[TopicPartition], timeout: float) -> None:
        """KIP-236: create the cancel znode and wait for the controller to finish (it deletes the znode)."""
        with contextlib.suppress(NodeExists):
            self.client.create(paths.CANCEL_REASSIGNMENT, b"", makepath=True)
        if not self._wait_absent(paths.CANCEL_REASSIGNMENT, timeout):
            raise KopsError("the controller has not finished cancelling", where=paths.CANCEL_REASSIGNMENT,
                            hint="check the controller (kops status); the cancel znode is still there")

    def elect_preferred(self, partitions: Sequence[TopicPartition], timeout: float) -> bool:
        self._wait_absent(paths.PREFERRED_REPLICA_ELECTION, timeout)
        try:
            tool_writes.request_preferred_election(self.client, partitions)
        except tool_writes.AdminRefused:
            self._wait_absent(paths.PREFERRED_REPLICA_ELECTION, timeout)
            tool_writes.request_preferred_election(self.client, partitions)
        return self._wait_absent(paths.PREFERRED_REPLICA_ELECTION, timeout)

    def lags(self, asked: Sequence[tuple[TopicPartition, int]]) -> dict[tuple[TopicPartition, int], int]:
        """KIP-179 lag where the cluster advertises it; nothing elsewhere (progress counts partitions then)."""
        api = self._kip179() if asked else None
        if api is None:
            return {}
        try:
            return {(s.tp, s.broker): s.lag_bytes for s in api.replica_status(asked)
                    if s.error is ErrorCode.NONE and s.lag_bytes >= 0}
        except KopsError:
            return {}

    def log_dirs(self) -> tuple[LogDirUsage, ...]:
        """No znode holds a disk's size: the brokers' own KIP-179 DescribeLogDirs where every broker advertises
        it (the kops engine), nothing elsewhere (capacity is then declared only)."""
        api = self._kip179()
        if api is None:
            return ()
        try:
            answers = api.describe_log_dirs()
        except KopsError:
            return ()
        return tuple(sorted(LogDirUsage.of(d.broker, d.log_dir, d.total_bytes, d.usable_bytes,
                                           None if d.error is ErrorCode.NONE else d.error.name)
                            for dirs in answers.values() for d in dirs))

    def _kip179(self) -> Kip179Client | None:
        """The brokers' admin endpoint, where every live broker advertises KIP-179."""
        if self._api is None:
            if KIP179_ADMIN not in read_snapshot(self.client, only_topics=set()).cluster_features():
                return None
            self._api = Kip179Client(self.client, timeout=5.0)
        return self._api

    def close(self) -> None:
        if self._api is not None:
            self._api.close()
            self._api = None

    def _wait_absent(self, path: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.client.exists(path) is not None:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
        return True


def read_holder(client: ZkClient) -> dict[str, Any] | None:
    node = client.get(paths.KOPS_LOCK)
    if node is None:
        return None
    try:
        return json.loads(node.data or b"{}")
    except ValueError:
        return {"unreadable": True}


class ZkLock:
    """An ephemeral `/kops/lock`; lost when the session that created it is gone."""

    def __init__(self, client: ZkClient, holder: dict[str, Any], wait_dead: float,
                 sleep: Callable[[float], None], monotonic: Callable[[], float]) -> None:
        self.client = client
        self.holder = holder
        self.wait_dead = wait_dead
        self.sleep = sleep
        self.monotonic = monotonic
        self.held = False
        self.session: int | None = None
        self.lost: str | None = None  # why, once the ZooKeeper session that owns the lock is gone
        self._listening = False

    def acquire(self) -> None:
        self.client.ensure_path(paths.KOPS_ROOT)
        deadline = self.monotonic() + self.wait_dead
        while True:
            try:
                self.client.create(paths.KOPS_LOCK, json.dumps(self.holder, sort_keys=True).encode(), ephemeral=True)
                self.held, self.session, self.lost = True, self.client.session_id, None
                if not self._listening:
                    self.client.add_state_listener(self._on_state)
                    self._listening = True
                return
            except NodeExists:
                holder = read_holder(self.client)
                if holder is None:
                    continue
                if dead_local(holder) and self.monotonic() < deadline:
                    self.sleep(0.2)  # a killed kops on this host: its session expires shortly
                    continue
                raise Locked(f"the cluster is locked by {describe(holder)}", where=paths.KOPS_LOCK,
                             hint="wait for it to finish, or stop it with `kops cancel`") from None

    def _on_state(self, state: str) -> None:
        """Called on kazoo's thread: a lost session took the ephemeral lock with it."""
        if state == "lost" and self.held:
            self.lost = "the ZooKeeper session expired: a long pause or a network cut"

    def ensure_held(self) -> None:
        """Before every write: the lock znode still exists and belongs to this client's session."""
        if not self.held:
            return
        if self.lost is None:
            stat = self.client.exists(paths.KOPS_LOCK)
            if stat is None:
                self.lost = "its znode is gone"
            elif stat.ephemeral_owner != self.session:
                self.lost = "another session holds it now"
        if self.lost is not None:
            raise LockLost(self.lost, paths.KOPS_LOCK)

    def update(self, **fields: Any) -> None:
        self.holder.update(fields)
        if self.held:
            self.ensure_held()
            self.client.set(paths.KOPS_LOCK, json.dumps(self.holder, sort_keys=True).encode())

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        try:
            stat = self.client.exists(paths.KOPS_LOCK)
            if stat is not None and stat.ephemeral_owner == self.client.session_id:
                self.client.delete(paths.KOPS_LOCK)
        except NodeMissing:
            pass


class ZkRecords:
    """Execution records as `/kops/executions/<id>` (compare-and-set on the znode version)."""

    max_bytes = 900_000  # ZooKeeper's jute.maxbuffer is 1 MiB by default

    def __init__(self, client: ZkClient) -> None:
        self.client = client
        self._versions: dict[str, int] = {}

    def create(self, execution_id: str, data: bytes) -> None:
        self.client.ensure_path(paths.KOPS_EXECUTIONS)
        self.client.create(paths.execution(execution_id), data)
        self._versions[execution_id] = 0

    def save(self, execution_id: str, data: bytes) -> None:
        stat = self.client.set(paths.execution(execution_id), data, self._versions.get(execution_id, -1))
        self._versions[execution_id] = stat.version

    def load(self, execution_id: str) -> bytes | None:
        node = self.client.get(paths.execution(execution_id))
        if node is None:
            return None
        self._versions[execution_id] = node.stat.version
        return node.data or b""

    def ids(self) -> list[str]:
        return sorted(self.client.children(paths.KOPS_EXECUTIONS) or [])

    def set_cancel(self, execution_id: str, data: bytes) -> None:
        path = f"{paths.execution(execution_id)}/{CANCEL}"
        try:
            self.client.create(path, data)
        except NodeExists:
            self.client.set(path, data)

    def get_cancel(self, execution_id: str) -> bytes | None:
        node = self.client.get(f"{paths.execution(execution_id)}/{CANCEL}")
        return None if node is None else (node.data or b"")

    def clear_cancel(self, execution_id: str) -> None:
        path = f"{paths.execution(execution_id)}/{CANCEL}"
        if self.client.exists(path) is not None:
            self.client.delete(path)

    def note_absent(self, absent: Collection[int]) -> tuple[dict[int, int], int]:
        """`/kops/absent/<id>` per absent broker, its ctime the first sighting; `/kops/absent` touched for the
        time now. Both are the ZooKeeper server's clock, so every host agrees however skewed its own."""
        noted = {int(c) for c in self.client.children(paths.KOPS_ABSENT) or [] if c.isdigit()}
        if not absent and not noted:
            return {}, 0  # a healthy cluster: nothing to write
        self.client.ensure_path(paths.KOPS_ABSENT)
        for broker in sorted(noted - set(absent)):
            with contextlib.suppress(NodeMissing):
                self.client.delete(f"{paths.KOPS_ABSENT}/{broker}")
        for broker in sorted(set(absent) - noted):
            with contextlib.suppress(NodeExists):
                self.client.create(f"{paths.KOPS_ABSENT}/{broker}")
        now = self.client.set(paths.KOPS_ABSENT, b"").mtime
        first = {b: self.client.exists(f"{paths.KOPS_ABSENT}/{b}") for b in sorted(absent)}
        return {b: stat.ctime for b, stat in first.items() if stat is not None}, now
