"""The cluster port over Kafka's Admin API (kafka-python): KRaft clusters, Kafka 4, and any broker 2.4+.

Reassignments are KIP-455 (AlterPartitionReassignments; a null target cancels and returns the partition to its
original replicas), with KIP-860's replication-factor guard where the cluster offers it; throttles and configs
are IncrementalAlterConfigs, each write read back until the cluster shows it; preferred leaders through
ElectLeaders; lag in bytes from DescribeLogDirs. The lock and the records live in `__kops`.

Reads see kops's own writes. Each broker answers DescribeConfigs from its own metadata image (KRaft) or config
cache (ZooKeeper mode), both updated asynchronously, and kafka-python sends a topic's DescribeConfigs to whichever
node is least loaded: a read that follows a write can come from a broker that has not applied it yet. A batch
planned on such a read would take the previous batch's throttle list for "what was there" and restore it at its
end, leaving a throttle behind. So the values kops wrote are remembered, and a config read (alone or in a
snapshot) that does not show them is read again, for up to STALE_READ_SECONDS; one that still differs then is
someone else's change, and is taken as the truth.

kafka-python sends each request to one node and does not fail over when that node is dead or paused: every
call here goes through `_ask`, which tries the next bootstrap server on its own until one answers.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

from kafka import KafkaAdminClient
from kafka import TopicPartition as KafkaTP
from kafka.admin import ConfigResource
from kafka.errors import (
    ElectionNotNeededError,
    KafkaError,
    NoReassignmentInProgressError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)

from kops.cluster.admin import kip860
from kops.cluster.admin.connection import AdminSettings, accepts, connect, servers
from kops.cluster.admin.kops_log import KopsLog, LogRecords
from kops.cluster.admin.lease import Claims, LeaseLock, current_holder
from kops.cluster.admin.log_dirs import (
    alter_replica_dirs,
    describe_dir_copies,
    describe_disks,
    describe_log_dirs,
    describe_replica_dirs,
)
from kops.cluster.admin.reader import Listings, read_snapshot
from kops.cluster.port import Capabilities, Entity
from kops.errors import ConnectionFailed, KopsError, Refused
from kops.model.capacity import LogDirUsage
from kops.model.partitions import TopicPartition
from kops.model.placement import DirCopy, ReplicaDir, dirs_by_broker, jbod_brokers
from kops.model.snapshot import Snapshot

T = TypeVar("T")
RESOURCE = {"topics": "TOPIC", "brokers": "BROKER"}
SOURCES = {"topics": "DYNAMIC_TOPIC_CONFIG", "brokers": "DYNAMIC_BROKER_CONFIG"}
READ_BACK_SECONDS = 15.0
STALE_READ_SECONDS = 5.0  # how long a read that does not show kops's own last write is taken for a lagging broker
LAG_EVERY = 1.0  # seconds between two DescribeLogDirs for progress
KIP455 = Capabilities(cancel_in_flight=True, moves_in_flight=True, cancel_by="KIP-455", dir_moves=True,
                      replica_dirs=True)


class AdminCluster:
    def __init__(self, settings: AdminSettings, lease: float = 10.0) -> None:
        self.settings = settings
        self.where = settings.bootstrap
        self.lease = lease
        self._client: KafkaAdminClient | None = None
        self._servers = servers(settings.bootstrap)
        self.log = KopsLog(settings, lambda: self._connected())
        self.claims = Claims()
        self.log.watchers.append(self.claims.fold)
        self._records = LogRecords(self.log)
        self._guard: bool | None = None  # KIP-860 offered (AlterPartitionReassignments v1)
        self._sizes_read: tuple[float, dict[str, list[int]], dict[TopicPartition, dict[int, int]]] | None = None
        self._written: dict[str, dict[str, str | None]] = {}  # "topics/t" -> what kops last wrote (None: deleted)
        self._listings = Listings()  # the reassignments the last read listed (kops.cluster.admin.reader)

    # -- connection ------------------------------------------------------------------------------------------

    def _connected(self) -> KafkaAdminClient:
        if self._client is None:
            self._client = self._connect(self.settings.bootstrap)
        return self._client

    def _connect(self, servers: str) -> KafkaAdminClient:
        return connect(self.settings, servers)

    def _ask(self, what: str, call: Callable[[KafkaAdminClient], T],
             answers: tuple[type[Exception], ...] = ()) -> T:
        """`call` on the connected client; on a failure, through each bootstrap server alone, for a while.
        `answers`: Kafka's errors that are answers, not failures (a topic that already exists): raised at once."""
        client = self._connected()  # a cluster never reached is one line now, not after a round of retries
        try:
            return call(client)
        except answers:
            raise
        except (KafkaError, OSError, ConnectionFailed, RuntimeError) as exc:  # the reader: Kafka's -> the latter
            first: Exception = _transient(exc)
        deadline = time.monotonic() + max(self.settings.connect_timeout_ms / 1000, 5.0) * 2
        while True:
            self.close_client()
            for server in self._servers:
                if len(self._servers) > 1 and not accepts(server, self.settings.connect_timeout_ms):
                    continue  # a stopped broker: alone, kafka-python would retry it for --connect-timeout
                try:
                    self._client = self._connect(server)
                    return call(self._client)
                except answers:
                    raise
                except (KafkaError, OSError, ConnectionFailed, RuntimeError) as exc:
                    first = _transient(exc)
                    self.close_client()
            if time.monotonic() > deadline:
                reason = first.what if isinstance(first, ConnectionFailed) else f"{type(first).__name__}: {first}"
                raise ConnectionFailed(f"{what} failed: {reason}", where=self.where,
                                       hint="check the brokers (kops status) and --command-config") from None
            time.sleep(0.5)

    def close_client(self) -> None:
        if self._client is not None:
            with contextlib.suppress(KafkaError, OSError):  # closing a broken client
                self._client.close()
            self._client = None

    def close(self) -> None:
        self.log.close()
        self.close_client()

    # -- reading -------------------------------------------------------------------------------------------

    def snapshot(self, only_topics: set[str] | None = None,
                 only_partitions: Collection[TopicPartition] | None = None,
                 progress: Callable[[str], None] | None = None) -> Snapshot:
        topics = only_topics
        if only_partitions is not None:  # DescribeTopics answers whole topics: narrowed after
            topics = (only_topics or set()) | {tp.topic for tp in only_partitions}
        def read(client: KafkaAdminClient) -> Snapshot:
            return read_snapshot(client, self.where, topics, listings=self._listings)

        found = self._fresh(lambda: self._ask("reading the cluster", read), _config_in_snapshot)
        return found if only_partitions is None else found.narrowed(only_partitions)

    def offers(self) -> dict[str, str]:
        """ApiVersions and finalized features: what this cluster lets kops do."""
        def ask(client: KafkaAdminClient) -> dict[str, str]:
            version = client.get_broker_version_data(client.describe_cluster()["brokers"][0]["broker_id"])
            features = client.describe_features()
            found = {"transport": "Admin API", "kafka": ".".join(map(str, version.broker_version)) + "+",
                     "cancel in flight": KIP455.cancel_by, "lag in bytes": "DescribeLogDirs",
                     "replication-factor guard": "KIP-860" if kip860.offered(client) else "no"}
            found.update({name: str(v["finalized"][1]) for name, v in sorted(features.items()) if v.get("finalized")})
            return found
        return self._ask("ApiVersions", ask)

    def records(self) -> LogRecords:
        return self._records

    def lock(self, holder: dict[str, Any], wait_dead: float, sleep: Callable[[float], None],
             monotonic: Callable[[], float]) -> LeaseLock:
        return LeaseLock(self.log, self.claims, holder, self.lease, wait_dead, sleep, monotonic)

    def holder(self) -> dict[str, Any] | None:
        return current_holder(self.log, self.claims, int(time.time() * 1000))

    def read_config(self, entity_type: str, name: str) -> dict[str, str]:
        return self.read_configs([(entity_type, name)])[(entity_type, name)]

    def read_configs(self, entities: Sequence[Entity]) -> dict[Entity, dict[str, str]]:
        asked = {f"{entity_type}/{name}": (entity_type, name) for entity_type, name in entities}
        return self._fresh(lambda: self._describe_configs(list(entities)),
                           lambda found, key: found[asked[key]] if key in asked else None)

    def _fresh(self, read: Callable[[], T], config_of: Callable[[T, str], Mapping[str, str] | None]) -> T:
        """`read()` again while a config in it ("topics/t" -> its config, None if the read has no such entity)
        does not show what kops last wrote there, for up to STALE_READ_SECONDS; then what still differs is
        someone else's change and is no longer waited for."""
        deadline = time.monotonic() + STALE_READ_SECONDS
        while True:
            found = read()
            stale = [key for key in self._written if not self._shows_writes(key, config_of(found, key))]
            if not stale:
                return found
            if time.monotonic() > deadline:
                for key in stale:
                    self._written.pop(key, None)
                return found
            time.sleep(0.1)

    def _shows_writes(self, key: str, config: Mapping[str, str] | None) -> bool:
        return config is None or all(config.get(k) == v for k, v in self._written[key].items())

    def _describe_configs(self, entities: Sequence[Entity]) -> dict[Entity, dict[str, str]]:
        """One DescribeConfigs for every entity (kafka-python asks each broker for its own): the dynamic values."""
        resources = [_resource(entity_type, name) for entity_type, name in entities]
        found = self._ask("DescribeConfigs", lambda c: c.describe_configs(resources))
        out: dict[Entity, dict[str, str]] = {}
        for (entity_type, name), resource in zip(entities, resources, strict=True):
            values: dict[str, dict[str, Any]] = found.get(resource.resource_type.name.lower(), {}).get(name, {})
            out[(entity_type, name)] = {k: str(v["value"]) for k, v in values.items()
                                        if v.get("config_source") == SOURCES[entity_type]
                                        and v.get("value") is not None and not v.get("is_sensitive")}
        return out

    def lags(self, asked: Sequence[tuple[TopicPartition, int]]) -> dict[tuple[TopicPartition, int], int]:
        """Bytes each new replica is behind: the largest other replica's size (the leader's, which holds the
        most) minus the new replica's, from DescribeLogDirs."""
        if not asked:
            return {}
        wanted: dict[str, list[int]] = {}
        for tp, _broker in asked:
            wanted.setdefault(tp.topic, []).append(tp.partition)
        now = time.monotonic()
        if self._sizes_read is not None and now - self._sizes_read[0] < LAG_EVERY and self._sizes_read[1] == wanted:
            sizes = self._sizes_read[2]  # polls come every fraction of a second; log dirs are asked once a second
        else:
            try:
                sizes = self._replica_sizes(wanted)
            except KopsError:
                return {}
            self._sizes_read = (now, wanted, sizes)
        out: dict[tuple[TopicPartition, int], int] = {}
        for tp, broker in asked:
            found = sizes.get(tp, {})
            others = [size for b, size in found.items() if b != broker]
            if others:
                out[(tp, broker)] = max(0, max(others) - found.get(broker, 0))
        return out

    def sizes(self) -> dict[TopicPartition, int]:
        """Each partition's size (its largest replica: the leader's) from DescribeLogDirs, so a plan made
        against a live cluster is size-aware with no other input."""
        return {tp: max(per_broker.values()) for tp, per_broker in self._replica_sizes().items() if per_broker}

    def log_dirs(self) -> tuple[LogDirUsage, ...]:
        """Each broker's log dirs with total and usable bytes (DescribeLogDirs v4 without partitions)."""
        return self._ask("DescribeLogDirs", lambda c: describe_disks(c, self.where))

    def replica_dirs(self, dirs: tuple[LogDirUsage, ...]) -> tuple[ReplicaDir, ...]:
        """Which dir holds each replica, asked only of the brokers `dirs` shows with several log dirs (on one with
        a single dir the placement is implied, and every replica costs a line of the answer): docs/design/jbod.md
        §2. A cluster without JBOD pays nothing."""
        brokers = jbod_brokers(dirs_by_broker((d.broker, d.path) for d in dirs))
        if not brokers:
            return ()
        return self._ask("DescribeLogDirs", lambda c: describe_replica_dirs(c, self.where, brokers))

    def dir_copies(self, replicas: Sequence[tuple[TopicPartition, int]]) -> dict[tuple[TopicPartition, int], DirCopy]:
        """Where each replica is and, for a disk move in flight, how much of it the future replica holds."""
        return self._ask("DescribeLogDirs", lambda c: describe_dir_copies(c, self.where, list(replicas)))

    def alter_replica_dirs(self, wanted: Mapping[tuple[TopicPartition, int], str]
                           ) -> dict[tuple[TopicPartition, int], str | None]:
        """Move (or place, for a replica its broker does not host yet) each replica into a dir of its broker:
        AlterReplicaLogDirs, per replica None or Kafka's error (docs/design/jbod.md §1, §6)."""
        return self._ask("AlterReplicaLogDirs", lambda c: alter_replica_dirs(c, self.where, wanted))

    def _replica_sizes(self, partitions: dict[str, list[int]] | None = None) -> dict[TopicPartition, dict[int, int]]:
        """Bytes of each replica (future replicas of an intra-broker move left out), by partition and broker."""
        report = self._ask("DescribeLogDirs", lambda c: describe_log_dirs(c, self.where, 0, partitions))
        found: dict[TopicPartition, dict[int, int]] = {}
        for broker in report.brokers:
            for log_dir in broker.log_dirs:
                for r in log_dir.replicas:
                    if not r.is_future:
                        found.setdefault(TopicPartition(r.topic, r.partition), {})[broker.broker] = r.size
        return found

    # -- writing -------------------------------------------------------------------------------------------

    def create_topic(self, name: str, assignment: Mapping[int, Sequence[int]], config: Mapping[str, str]) -> bool:
        spec = {name: {"assignments": {p: list(r) for p, r in assignment.items()}, "configs": dict(config)}}
        self._written.pop(f"topics/{name}", None)
        try:
            self._ask("CreateTopics", lambda c: c.create_topics(spec), answers=(TopicAlreadyExistsError,))
        except TopicAlreadyExistsError:
            return False
        return True

    def add_partitions(self, topic: str, assignment: Mapping[int, Sequence[int]]) -> bool:
        count = len(self.snapshot({topic}).topics[topic].partitions)
        new = sorted(p for p in assignment if p >= count)
        if not new:
            return False
        spec = {topic: {"count": max(new) + 1, "assignments": [list(assignment[p]) for p in new]}}
        self._ask("CreatePartitions", lambda c: c.create_partitions(spec))
        return True

    def shrink_partitions(self, topic: str, keep: int) -> None:
        raise KopsError(f"topic {topic}: removing partitions needs KIP-253, which Kafka does not offer",
                        where=self.where, hint="plan without partition removal")

    def delete_topic(self, name: str) -> None:
        self._written.pop(f"topics/{name}", None)
        with contextlib.suppress(UnknownTopicOrPartitionError):  # already gone
            self._ask("DeleteTopics", lambda c: c.delete_topics([name]), answers=(UnknownTopicOrPartitionError,))

    def alter_config(self, entity_type: str, name: str, updates: Mapping[str, str | None]) -> None:
        self.alter_configs({(entity_type, name): updates})

    def alter_configs(self, changes: Mapping[Entity, Mapping[str, str | None]]) -> None:
        """One IncrementalAlterConfigs for every entity, then read back until the cluster shows every change (a
        batch's throttles on a dozen brokers: two round trips, not two dozen)."""
        changes = {entity: updates for entity, updates in changes.items() if updates}
        if not changes:
            return
        resources = {entity: _resource(*entity, {k: ("DELETE", None) if v is None else ("SET", v)
                                                 for k, v in updates.items()})
                     for entity, updates in changes.items()}
        result = self._ask("IncrementalAlterConfigs", lambda c: c.alter_configs(
            list(resources.values()), incremental=True, raise_on_unknown=False))
        for (entity_type, name), resource in resources.items():
            answer = result.get(resource.resource_type.name.lower(), {}).get(name, "OK")
            if answer != "OK":
                raise KopsError(f"Kafka refused the config change of {entity_type}/{name}: {answer}",
                                where=self.where,
                                hint="check the key and value (kafka-configs.sh --describe shows what is allowed)")
        self._read_back(changes)

    def _read_back(self, changes: Mapping[Entity, Mapping[str, str | None]]) -> None:
        """Until every entity shows its changes (a KRaft broker applies them from the metadata log on its own
        time); then they are kops's last writes, which later reads wait for (`_fresh`)."""
        deadline = time.monotonic() + READ_BACK_SECONDS
        while True:
            now = self._describe_configs(list(changes))
            pending = [entity for entity, updates in changes.items()
                       if any(now[entity].get(k) != v for k, v in updates.items())]
            if not pending:
                for (entity_type, name), updates in changes.items():
                    self._written.setdefault(f"{entity_type}/{name}", {}).update(updates)
                return
            if time.monotonic() > deadline:
                entity_type, name = pending[0]
                raise KopsError(f"the config change of {entity_type}/{name} is not visible after "
                                f"{READ_BACK_SECONDS:.0f} s", where=self.where, hint="check the brokers (kops status)")
            time.sleep(0.1)

    def submit(self, targets: Sequence[tuple[TopicPartition, tuple[int, ...]]], snapshot: Snapshot) -> None:
        """AlterPartitionReassignments; moves that keep their replication factor carry KIP-860's guard where
        the cluster offers it, so a concurrent change of the topic's RF cannot turn them into RF changes."""
        same_rf: list[tuple[TopicPartition, tuple[int, ...]]] = []
        other: list[tuple[TopicPartition, tuple[int, ...]]] = []
        for tp, replicas in targets:
            part = snapshot.partition(tp)
            same = part is not None and len(part.original_replicas) == len(replicas)
            (same_rf if same else other).append((tp, replicas))
        for group, guard in ((same_rf, True), (other, False)):
            if group:
                self._reassign({KafkaTP(tp.topic, tp.partition): list(r) for tp, r in group}, guard)

    def _reassign(self, wanted: dict[KafkaTP, list[int] | None], guard: bool) -> None:
        answers = self._ask("AlterPartitionReassignments", lambda c: self._send_reassignments(c, wanted, guard))
        refused = {tp: err for tp, err in answers.items() if err is not None
                   and not (err is NoReassignmentInProgressError and all(v is None for v in wanted.values()))}
        if refused:
            tp, err = sorted(refused.items(), key=lambda kv: (kv[0].topic, kv[0].partition))[0]
            raise Refused(f"Kafka refused {len(refused)} reassignment(s), first {tp.topic}-{tp.partition}: "
                          f"{getattr(err, 'message', err)}", where=self.where,
                          hint=getattr(err, "description", None) or "see the broker's log")

    def _send_reassignments(self, client: KafkaAdminClient, wanted: dict[KafkaTP, list[int] | None],
                            guard: bool) -> dict[KafkaTP, Any]:
        if not guard or self._guard is False:
            return client.alter_partition_reassignments(wanted)
        answers, offered = kip860.guarded_reassignments(client, wanted)
        self._guard = offered
        return answers

    def capabilities(self, snapshot: Snapshot) -> Capabilities:
        """KIP-455 (Kafka 2.4+): AlterPartitionReassignments adds moves while others run, and a null target
        cancels one in flight; KIP-113's AlterReplicaLogDirs moves replicas between a broker's dirs."""
        return KIP455

    def cancel(self, partitions: Sequence[TopicPartition], timeout: float) -> None:
        """KIP-455: a null target for each of `partitions` still moving; wait until Kafka lists none of them."""
        ours = {(tp.topic, tp.partition) for tp in partitions}

        def moving() -> set[tuple[str, int]]:
            listed = self._ask("ListPartitionReassignments", lambda c: c.list_partition_reassignments())
            return {(tp.topic, tp.partition) for tp in listed} & ours

        pending = moving()
        if pending:
            self._reassign({KafkaTP(t, p): None for t, p in sorted(pending)}, guard=False)
        deadline = time.monotonic() + timeout
        while moving():
            if time.monotonic() > deadline:
                raise KopsError("Kafka has not finished cancelling the reassignment", where=self.where,
                                hint="check the controller (kops status)")
            time.sleep(0.2)

    def elect_preferred(self, partitions: Sequence[TopicPartition], timeout: float) -> bool:
        """ElectLeaders (preferred): an election Kafka itself would make; partitions already led by their
        preferred replica need none. True when every partition was elected or needed no election."""
        wanted: dict[str, list[int]] = {}
        for tp in partitions:
            wanted.setdefault(tp.topic, []).append(tp.partition)
        deadline = time.monotonic() + timeout
        while True:
            response = self._ask("ElectLeaders", lambda c: c.elect_leaders(0, wanted, raise_errors=False))
            failed = [p for r in response.replica_election_results for p in r.partition_result
                      if p.error_code not in (0, ElectionNotNeededError.errno)]
            if not failed or time.monotonic() > deadline:
                return not failed
            time.sleep(0.5)


def _config_in_snapshot(snapshot: Snapshot, key: str) -> Mapping[str, str] | None:
    """A topic's config as the snapshot read it (None: not in it). Broker configs are left out: each broker is
    asked for its own, which shows a write to it once it has shown it once, and a snapshot of some topics
    reads none."""
    entity_type, _, name = key.partition("/")
    topic = snapshot.topics.get(name) if entity_type == "topics" else None
    return None if topic is None else topic.config


def _resource(entity_type: str, name: str, configs: dict[str, Any] | None = None) -> ConfigResource:
    if entity_type not in RESOURCE or not name or name == "<default>":
        raise KopsError(f"kops cannot address {entity_type}/{name} through the Admin API",
                        where=f"{entity_type}/{name}",
                        hint="topics/<name> and brokers/<id> are supported; set cluster-wide defaults with "
                             "kafka-configs.sh")
    return ConfigResource(RESOURCE[entity_type], name, configs=configs)


def _transient(exc: Exception) -> Exception:
    """`exc` if a retry may help; raised again otherwise. kafka-python raises a bare RuntimeError when no broker
    names an active controller, as while a ZooKeeper-mode controller is being elected: that one passes in seconds."""
    if isinstance(exc, RuntimeError) and "controller" not in str(exc):
        raise exc
    return exc
