"""An in-memory Kafka behind the cluster port, for tests: the executor's logic in milliseconds, on a clock the
test drives. It is a second implementation of `kops.cluster.port.Cluster` with the Admin-API adapter's semantics
(as `kops.cluster.admin.adapter.AdminCluster` over KRaft: KIP-455 moves and cancels), not a mock: the contract tests
(tests/integration/test_port_contract.py) run the same functions over it and over real Kafka 4, so it is held
to Kafka's behaviour. It never replaces a real-cluster test, and it is test code: nothing in kops/ imports it.

What it models, as KRaft's controller does (ReplicationControlManager, PartitionReassignmentReplicas/Revert):
- a KIP-455 submission sets replicas = target + removing (removing and adding sorted ascending, as Kafka lists
  them); a leader-only reorder, or a move whose target is already in sync, completes at once. A submission for a
  partition in flight starts from its replicas as they are (target and removing of the earlier one);
- new replicas copy from the leader on the driven clock, at most the broker's bandwidth, shared, and where the
  topic lists the replica as throttled (follower list for the new replica, leader list for the leader) at most
  the broker's throttle rate, shared by the throttled replicas it fetches or serves; a caught-up replica joins
  the ISR; once the whole target is in sync the move completes: replicas = target in target order, ISR minus
  removing, the leader kept if it is in the target's ISR, else the first of the target in sync;
- a KIP-455 cancel (null target) reverts to replicas minus adding, in the order the reassignment had (not the
  original order: [3, 1] moving to [4, 1, 2] comes back as [1, 3], as Kafka 4 does);
- a stopped broker leaves the live set and every ISR (leadership passes to the first replica in sync); a broker
  whose fetchers are stuck (a full disk, a dead ReplicaFetcherThread) stays registered and leading but copies
  nothing, and its followers leave the ISR after REPLICA_LAG_SECONDS;
- configs are per-entity maps (`topics/<name>`, `brokers/<id>`), the throttle keys Kafka knows, deletion by None;
- records and cancel requests as keys of a log; the lock as a lease: every claim heartbeats on each clock tick
  while its kops lives, a claim silent for longer than its lease is dead for good, the first live claim wins.
Failures a test injects: `MemoryCluster.crash_at` (a kill -9 at the Nth write: that port raises `Crash` and is
dead, its lease lapses), `MemoryCluster.freeze` (a paused kops: its lease lapses, `lost` says so),
`MemoryKafka.stop_broker` / `stick_broker`.
- log dirs (JBOD, KIP-113), as ReplicaManager keeps them: each broker's dirs (`MemoryKafka.dirs`, one by
  default), the dir of each replica (a new one in its preferred dir, else the broker's first); AlterReplicaLogDirs
  answers REPLICA_NOT_AVAILABLE for a replica the broker does not host (the dir kept as preferred),
  LOG_DIR_NOT_FOUND for a path not among its dirs, KAFKA_STORAGE_ERROR for an offline one (`MemoryKafka.offline`),
  and otherwise starts a future replica (or drops it, when asked for the dir the replica is in) that copies on
  the driven clock at the broker's bandwidth, at most `replica.alter.log.dirs.io.max.bytes.per.second` shared by
  its futures, then takes the replica's place (a stuck broker's ReplicaAlterLogDirsThread, a fetcher too, copies
  nothing); an offline dir lists no replica and reports its error.
Not modelled: produce traffic during a move (logs grow only when a test appends), KIP-860's guard,
controller failover, a SIGSTOPped broker (KRaft fences it after its session: model it as a stop), ZooKeeper-mode
quirks, configs read back stale (each write is visible at once).
"""

from __future__ import annotations

import itertools
import uuid
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kops.cluster.port import Capabilities, ConfigsOneAtATime
from kops.errors import KopsError, Refused
from kops.holder import Locked, LockLost, describe
from kops.model.brokers import Broker
from kops.model.capacity import LogDirUsage
from kops.model.cordons import CORDONED_LOG_DIRS, METADATA_VERSION, can_cordon
from kops.model.partitions import Partition, PartitionState, TopicPartition
from kops.model.placement import DirCopy, ReplicaDir, dirs_by_broker, jbod_brokers
from kops.model.plan import ALTER_LOG_DIRS_RATE
from kops.model.snapshot import ControllerInfo, RequestedMove, Snapshot, admin_api_connect
from kops.model.throttle_keys import FOLLOWER_RATE, FOLLOWER_REPLICAS, LEADER_RATE, LEADER_REPLICAS, list_entries
from kops.model.topics import Topic

BANDWIDTH = 125_000_000  # bytes/s a broker copies when nothing throttles it (1 Gbit/s, the planner's assumption)
REPLICA_LAG_SECONDS = 30.0  # replica.lag.time.max.ms: a follower not caught up this long leaves the ISR
TICK = 0.1  # the longest step of simulated time: copies, ISR changes and heartbeats happen between steps
LEASE = 10.0  # the Admin-API lock's default lease (AdminCluster's `lease`)
START = 1_767_225_600.0  # the driven clock's wall time at zero (2026-01-01T00:00:00Z)
LOCK_TOPIC = "__kops"
LOG_DIR = "/var/lib/kafka/data"  # every broker's one log dir
KIP455 = Capabilities(cancel_in_flight=True, moves_in_flight=True, cancel_by="KIP-455", dir_moves=True,
                      replica_dirs=True)
Replica = tuple[TopicPartition, int]
NOT_HOSTED, NOT_FOUND, OFFLINE = "ReplicaNotAvailableError", "LogDirNotFoundError", "KafkaStorageError"


class Crash(BaseException):
    """The kops process died here (kill -9): nothing of it runs on, no `except` in kops catches it."""


class DrivenClock:
    """The executor's clock (now, monotonic, sleep) on simulated time: `sleep` advances it and steps every
    cluster listening, TICK at a time, so a poll loop sees copies progress as it would on Kafka."""

    def __init__(self, start: float = START, tick: float = TICK) -> None:
        self.start = start
        self.tick = tick  # a test of hours of simulated time takes coarser steps
        self.elapsed = 0.0
        self.listeners: list[Callable[[float], None]] = []

    def now(self) -> float:
        return self.start + self.elapsed

    def monotonic(self) -> float:
        return self.elapsed

    def sleep(self, seconds: float) -> None:
        left = max(0.0, seconds)
        while left > 1e-12:
            step = min(self.tick, left)
            self.elapsed += step
            left -= step
            for listener in list(self.listeners):
                listener(step)


@dataclass
class _Part:
    """One partition as the controller and its replicas hold it. `logs`: bytes each replica holds."""

    replicas: list[int]
    isr: list[int]
    leader: int
    epoch: int = 0
    adding: list[int] = field(default_factory=list)
    removing: list[int] = field(default_factory=list)
    end: float = 0.0  # the leader's log end, in bytes
    logs: dict[int, float] = field(default_factory=dict)

    @property
    def target(self) -> list[int]:
        return [r for r in self.replicas if r not in self.removing]


@dataclass
class _Claim:
    """A contender for the lock, as `kops.cluster.admin.lease.Claims` folds it from `__kops`."""

    id: str
    port: MemoryCluster
    holder: dict[str, Any]
    lease: float
    last_beat: float
    dead: bool = False
    released: bool = False

    def live(self, now: float) -> bool:
        return not self.dead and not self.released and now - self.last_beat <= self.lease


class MemoryKafka:
    """The cluster: brokers, topics, partitions, configs, records and lock claims, stepped by a driven clock."""

    def __init__(self, brokers: Mapping[int, str | None] | int = 4, clock: DrivenClock | None = None,
                 bandwidth: float = BANDWIDTH) -> None:
        if isinstance(brokers, int):
            brokers = {b: f"rack-{(b - 1) % 3 + 1}" for b in range(1, brokers + 1)}
        self.racks = dict(brokers)
        self.clock = clock or DrivenClock()
        self.clock.listeners.append(self.step)
        self.bandwidth = bandwidth
        self.cluster_id = "MemoryKafkaCluster000A"
        self.stopped: set[int] = set()
        self.stuck: dict[int, float] = {}  # broker whose fetchers copy nothing -> since when (monotonic)
        self.topics: dict[str, dict[int, _Part]] = {}
        self.topic_ids: dict[str, str] = {}
        self.configs: dict[str, dict[str, str]] = {}
        self.records: dict[str, bytes] = {}  # `execution/<id>` and `cancel/<id>`, as keys of `__kops`
        self.claims: list[_Claim] = []
        self.disks: dict[int, int] = {}  # broker -> each log dir's filesystem, bytes; others answer -1 (Kafka < 3.3)
        self.dirs: dict[int, tuple[str, ...]] = {}  # broker -> its log dirs (absent: LOG_DIR alone)
        self.offline: set[tuple[int, str]] = set()  # (broker, dir) lost: KAFKA_STORAGE_ERROR
        self.placed: dict[Replica, str] = {}  # the dir a replica is in (absent: preferred, else the broker's first)
        self.preferred: dict[Replica, str] = {}  # dirs asked for replicas not hosted yet
        self.futures: dict[Replica, tuple[str, float]] = {}  # intra-broker moves: target dir, bytes copied
        self.metadata_level: int | None = None  # the finalized metadata.version (KRaft); None: none finalized

    # -- brokers ---------------------------------------------------------------------------------------------

    def serving(self, broker: int) -> bool:
        """Registered and running: it leads and serves."""
        return broker in self.racks and broker not in self.stopped

    def fetching(self, broker: int) -> bool:
        return self.serving(broker) and broker not in self.stuck

    def stop_broker(self, broker: int) -> None:
        """A clean stop (or a kill once its session ended): out of the live set and of every ISR."""
        self.stopped.add(broker)
        for part in self._parts():
            if broker in part.isr and len(part.isr) > 1:
                part.isr.remove(broker)
            if part.leader == broker:
                self._elect(part, [r for r in part.replicas if r in part.isr and self.serving(r)])

    def start_broker(self, broker: int) -> None:
        self.stopped.discard(broker)
        for part in self._parts():
            if part.leader == -1 and broker in part.isr:
                self._elect(part, [broker])

    def stick_broker(self, broker: int) -> None:
        """Its fetchers stop copying (a full disk, a dead fetcher thread): registered, answering, leading."""
        self.stuck[broker] = self.clock.monotonic()

    def unstick_broker(self, broker: int) -> None:
        self.stuck.pop(broker, None)

    def _elect(self, part: _Part, candidates: Sequence[int]) -> None:
        part.leader = candidates[0] if candidates else -1
        part.epoch += 1

    # -- topics and data -------------------------------------------------------------------------------------

    def _parts(self) -> list[_Part]:
        return [part for parts in self.topics.values() for part in parts.values()]

    def part(self, tp: TopicPartition) -> _Part | None:
        return self.topics.get(tp.topic, {}).get(tp.partition)

    def create_topic(self, name: str, assignment: Mapping[int, Sequence[int]], config: Mapping[str, str]) -> bool:
        if name in self.topics:
            return False
        self._check_brokers(name, [b for r in assignment.values() for b in r])
        _same_rf(name, assignment.values())
        self.topics[name] = {}
        self.topic_ids[name] = uuid.uuid5(uuid.NAMESPACE_DNS, f"{name}.{len(self.topic_ids)}").hex
        self._add(name, assignment)
        if config:
            self.configs[f"topics/{name}"] = dict(config)
        return True

    def _add(self, name: str, assignment: Mapping[int, Sequence[int]]) -> None:
        for p, replicas in sorted(assignment.items()):
            live = [b for b in replicas if self.serving(b)]
            self.topics[name][p] = _Part(list(replicas), live or [replicas[0]], live[0] if live else -1,
                                         logs=dict.fromkeys(replicas, 0.0))

    def _check_brokers(self, what: str, brokers: Sequence[int]) -> None:
        unknown = sorted(set(brokers) - set(self.racks))
        if unknown:
            raise Refused(f"{what}: brokers {unknown} are not registered", where=LOCK_TOPIC)
        if not brokers:
            raise Refused(f"{what}: an empty replica list", where=LOCK_TOPIC)

    def add_partitions(self, topic: str, assignment: Mapping[int, Sequence[int]]) -> bool:
        new = {p: r for p, r in assignment.items() if p not in self.topics[topic]}
        _same_rf(topic, [*new.values(), self.topics[topic][0].target])
        self._add(topic, new)
        return bool(new)

    def delete_topic(self, name: str) -> None:
        self.topics.pop(name, None)
        self.configs.pop(f"topics/{name}", None)

    def produce(self, topic: str, nbytes: int, partitions: Collection[int] | None = None) -> None:
        """Append `nbytes` to each partition (all of the topic's by default), acknowledged by the ISR."""
        for p, part in self.topics[topic].items():
            if partitions is None or p in partitions:
                part.end += nbytes
                for b in part.isr:
                    part.logs[b] = part.end

    # -- configs ---------------------------------------------------------------------------------------------

    def read_config(self, entity_type: str, name: str) -> dict[str, str]:
        return dict(self.configs.get(_entity(entity_type, name), {}))

    def alter_config(self, entity_type: str, name: str, updates: Mapping[str, str | None]) -> None:
        key = _entity(entity_type, name)
        if entity_type == "topics" and name not in self.topics:
            raise KopsError(f"Kafka refused the config change of {key}: UnknownTopicOrPartitionError", where=key)
        if updates.get(CORDONED_LOG_DIRS) is not None and not can_cordon(self.metadata_level):
            # ConfigurationControlManager: DISABLED_CORDONED_LOG_DIRS_ERROR below metadata.version 4.3-IV0
            raise KopsError(f"Kafka refused the config change of {key}: InvalidConfigurationException", where=key)
        config = self.configs.setdefault(key, {})
        for k, v in updates.items():
            if v is None:
                config.pop(k, None)
            else:
                config[k] = v
        if not config:
            del self.configs[key]

    def _rate(self, broker: int, key: str) -> float | None:
        value = self.configs.get(f"brokers/{broker}", {}).get(key)
        return None if value is None else float(value)

    def _throttled(self, topic: str, key: str, partition: int, broker: int) -> bool:
        entries = list_entries(self.configs.get(f"topics/{topic}", {}).get(key))
        return "*" in entries or f"{partition}:{broker}" in entries

    # -- reassignments (KIP-455) -----------------------------------------------------------------------------

    def reassign(self, tp: TopicPartition, target: Sequence[int]) -> None:
        """AlterPartitionReassignments with a target: replicas = target + removing; done at once if in sync."""
        part = self.part(tp)
        if part is None:
            raise Refused(f"{tp}: UnknownTopicOrPartitionError", where=LOCK_TOPIC)
        if len(set(target)) != len(target):
            raise Refused(f"{tp}: InvalidReplicaAssignmentError (duplicate replicas in {list(target)})",
                          where=LOCK_TOPIC)
        self._check_brokers(str(tp), target)
        current = list(part.replicas)
        part.removing = sorted(set(current) - set(target))
        part.adding = sorted(set(target) - set(current))
        part.replicas = list(target) + part.removing
        for b in part.adding:
            part.logs.setdefault(b, 0.0)
            self.placed.pop((tp, b), None)  # born in its preferred dir (or the first), not where an old copy was
            self.futures.pop((tp, b), None)
        self._maybe_complete(part)

    def cancel(self, tp: TopicPartition) -> bool:
        """A null target: back to replicas minus adding, in the reassignment's order. False: nothing moving."""
        part = self.part(tp)
        if part is None or not (part.adding or part.removing):
            return False
        isr = [r for r in part.isr if r not in part.adding]
        if not isr:
            raise Refused(f"Kafka refused to cancel {tp}: reverting would need an unclean leader election",
                          where=LOCK_TOPIC)
        for b in part.adding:
            part.logs.pop(b, None)
        part.replicas = [r for r in part.replicas if r not in part.adding]
        part.isr, part.adding, part.removing = isr, [], []
        if part.leader not in isr:
            self._elect(part, [r for r in part.replicas if r in isr and self.serving(r)])
        return True

    def _maybe_complete(self, part: _Part) -> None:
        """PartitionReassignmentReplicas.maybeCompleteReassignment, then the leader PartitionChangeBuilder keeps
        or elects (the first of the target in sync and serving)."""
        if not (part.adding or part.removing):
            return
        target = part.target
        isr = [r for r in part.isr if r not in part.removing]
        if not isr or not set(target) <= set(isr):
            return
        for b in part.removing:
            part.logs.pop(b, None)
        part.replicas, part.isr, part.adding, part.removing = target, isr, [], []
        if part.leader not in isr:
            self._elect(part, [r for r in target if r in isr and self.serving(r)])

    def elect_preferred(self, tps: Sequence[TopicPartition]) -> bool:
        """ElectLeaders (preferred): True when each partition is led by its first replica, now or already."""
        ok = True
        for tp in tps:
            part = self.part(tp)
            if part is None or part.leader == part.replicas[0]:
                ok = ok and part is not None
            elif part.replicas[0] in part.isr and self.serving(part.replicas[0]):
                self._elect(part, part.replicas[:1])
            else:
                ok = False
        return ok

    # -- time ------------------------------------------------------------------------------------------------

    def step(self, seconds: float) -> None:
        """`seconds` of the cluster's life: heartbeats, copies, ISR changes, completed moves."""
        now = self.clock.monotonic()
        for claim in self.claims:
            if claim.dead or claim.released or claim.port.crashed or claim.port.frozen:
                continue
            if now - claim.last_beat > claim.lease:
                claim.dead = True  # a gap longer than the lease: dead for good (it survives compaction)
            else:
                claim.last_beat = now
        self._copy(seconds)
        self._copy_dirs(seconds)
        self._lag_out(now)

    def _copy(self, seconds: float) -> None:
        fetches = [(topic, p, part, b) for topic, parts in self.topics.items() for p, part in parts.items()
                   if part.leader >= 0 and self.serving(part.leader)
                   for b in part.replicas if b != part.leader and b not in part.isr and self.fetching(b)]
        for (_topic, _p, part, b), rate in zip(fetches, self._rates(fetches), strict=True):
            if b not in part.replicas or b in part.isr:
                continue  # its move completed (or was reverted) earlier in this step
            part.logs[b] = min(part.end, part.logs.get(b, 0.0) + rate * seconds)
            if part.logs[b] >= part.end:
                part.isr.append(b)
                self._maybe_complete(part)

    def _rates(self, fetches: list[tuple[str, int, _Part, int]]) -> list[float]:
        """Each fetch's bytes/s: the fetching and the serving broker's bandwidth shared by their fetches, and,
        where the topic lists the replica as throttled, the broker's throttle rate shared by its throttled ones."""
        into = Counter(b for _t, _p, _part, b in fetches)
        out_of = Counter(part.leader for _t, _p, part, _b in fetches)
        follows = [self._throttled(t, FOLLOWER_REPLICAS, p, b) and self._rate(b, FOLLOWER_RATE) is not None
                   for t, p, _part, b in fetches]
        leads = [self._throttled(t, LEADER_REPLICAS, p, part.leader) and self._rate(part.leader, LEADER_RATE)
                 is not None for t, p, part, _b in fetches]
        followed = Counter(b for (_t, _p, _part, b), f in zip(fetches, follows, strict=True) if f)
        led = Counter(part.leader for (_t, _p, part, _b), lead in zip(fetches, leads, strict=True) if lead)
        rates = []
        for (_t, _p, part, b), f, lead in zip(fetches, follows, leads, strict=True):
            limits = [self.bandwidth / into[b], self.bandwidth / out_of[part.leader]]
            if f:
                limits.append((self._rate(b, FOLLOWER_RATE) or 0.0) / followed[b])
            if lead:
                limits.append((self._rate(part.leader, LEADER_RATE) or 0.0) / led[part.leader])
            rates.append(min(limits))
        return rates

    def _lag_out(self, now: float) -> None:
        """Followers on a stuck broker leave the ISR after REPLICA_LAG_SECONDS (their leader shrinks it)."""
        gone = {b for b, since in self.stuck.items() if now - since > REPLICA_LAG_SECONDS}
        for part in self._parts():
            if self.serving(part.leader) and part.leader not in gone and gone & set(part.isr):
                part.isr = [r for r in part.isr if r not in gone]

    # -- log dirs (KIP-113) ------------------------------------------------------------------------------------

    def log_dirs_of(self, broker: int) -> tuple[str, ...]:
        return self.dirs.get(broker, (LOG_DIR,))

    def hosts(self, tp: TopicPartition, broker: int) -> bool:
        part = self.part(tp)
        return part is not None and broker in part.logs

    def dir_of(self, tp: TopicPartition, broker: int) -> str:
        """The dir holding the broker's replica: where it was put, else its preferred dir, else the first one
        not cordoned (KIP-1066: `cordoned.log.dirs`, `*` for all; the first when all are)."""
        key = (tp, broker)
        if key not in self.placed:
            cordoned = {d.strip() for d in self.configs.get(f"brokers/{broker}", {}).get(CORDONED_LOG_DIRS, "")
                        .split(",")}
            open_dirs = [d for d in self.log_dirs_of(broker) if d not in cordoned and "*" not in cordoned]
            self.placed[key] = self.preferred.pop(key, (open_dirs or self.log_dirs_of(broker))[0])
        return self.placed[key]

    def alter_dir(self, tp: TopicPartition, broker: int, path: str) -> str | None:
        """ReplicaManager.alterReplicaLogDirs for one replica: None when taken, else the error's name."""
        if path not in self.log_dirs_of(broker):
            return NOT_FOUND
        if (broker, path) in self.offline:
            return OFFLINE
        key = (tp, broker)
        if not self.hosts(tp, broker):
            self.preferred[key] = path
            self.placed.pop(key, None)
            return NOT_HOSTED
        if self.dir_of(tp, broker) == path:
            self.futures.pop(key, None)  # futureReplicaDirChanged: the copy is dropped
        elif self.futures.get(key, ("", 0.0))[0] != path:
            self.futures[key] = (path, 0.0)
        return None

    def _copy_dirs(self, seconds: float) -> None:
        """Future replicas copy at the broker's bandwidth, at most its alter-log-dirs throttle, shared."""
        self._drop_failed_futures()
        copying = [key for key in sorted(self.futures) if self._dir_online(*key)]
        per_broker = Counter(b for _tp, b in copying)
        for key in copying:
            tp, broker = key
            part = self.part(tp)
            if part is None or broker not in part.logs:
                self.futures.pop(key, None)
                continue
            limit = min(self.bandwidth, self._rate(broker, ALTER_LOG_DIRS_RATE) or self.bandwidth)
            path, copied = self.futures[key]
            copied += limit / per_broker[broker] * seconds
            if copied >= part.logs[broker]:
                self.placed[key] = path
                del self.futures[key]
            else:
                self.futures[key] = (path, copied)

    def _drop_failed_futures(self) -> None:
        """A future replica whose dir failed is gone: Kafka drops it with the dir (LogDirFailureChannel)."""
        for key in [k for k, (path, _) in self.futures.items() if (k[1], path) in self.offline]:
            del self.futures[key]

    def _dir_online(self, tp: TopicPartition, broker: int) -> bool:
        target = self.futures.get((tp, broker), ("", 0.0))[0]
        return self.fetching(broker) and not {(broker, self.dir_of(tp, broker)), (broker, target)} & self.offline

    def dir_copy(self, tp: TopicPartition, broker: int) -> DirCopy | None:
        """DescribeLogDirs of one replica: its dir and size, its future replica's; None where not listed."""
        part = self.part(tp)
        if part is None or broker not in part.logs or not self.serving(broker) \
                or (broker, self.dir_of(tp, broker)) in self.offline:
            return None
        self._drop_failed_futures()
        future = self.futures.get((tp, broker))
        return DirCopy(self.dir_of(tp, broker), int(part.logs[broker]), future[0] if future else None,
                       int(future[1]) if future else 0)

    # -- reading ---------------------------------------------------------------------------------------------

    def snapshot(self, where: str, only_topics: set[str] | None = None) -> Snapshot:
        """What the Admin-API reader makes: live brokers, topics, requested moves; broker configs only for the
        whole cluster (as `kops.cluster.admin.reader.read_snapshot`)."""
        names = sorted(n for n in self.topics if only_topics is None or n in only_topics)
        topics = {n: self._topic(n) for n in names}
        brokers = tuple(Broker(id=b, host="127.0.0.1", port=9090 + b, endpoints=(f"PLAINTEXT://127.0.0.1:{9090 + b}",),
                               rack=rack) for b, rack in sorted(self.racks.items()) if b not in self.stopped)
        requested = tuple(RequestedMove(n, p, tuple(part.target)) for n in names
                          for p, part in sorted(self.topics[n].items()) if part.adding or part.removing)
        broker_configs = {} if only_topics is not None else \
            {name: dict(c) for key, c in sorted(self.configs.items()) if key.startswith("brokers/")
             for name in [key.partition("/")[2]] if int(name) not in self.stopped}
        return Snapshot(self.cluster_id, ControllerInfo(id=min(self.racks), epoch=None), brokers, topics,
                        broker_configs=broker_configs, requested_moves=requested, connect=admin_api_connect(where),
                        metadata_version=self.metadata_level if only_topics is None else None)

    def _topic(self, name: str) -> Topic:
        partitions = {p: Partition(tuple(part.replicas), tuple(part.adding), tuple(part.removing),
                                   PartitionState(part.leader, part.epoch, tuple(part.isr), -1))
                      for p, part in sorted(self.topics[name].items())}
        return Topic(name, partitions, topic_id=self.topic_ids[name],
                     config=dict(self.configs.get(f"topics/{name}", {})))

    def replica_sizes(self) -> dict[TopicPartition, dict[int, int]]:
        """DescribeLogDirs: the bytes of each replica on a broker that answers (a stopped one does not)."""
        return {TopicPartition(n, p): {b: int(size) for b, size in part.logs.items() if self.serving(b)}
                for n, parts in self.topics.items() for p, part in parts.items()}

    # -- the lock ---------------------------------------------------------------------------------------------

    def winner(self) -> _Claim | None:
        now = self.clock.monotonic()
        return next((c for c in self.claims if c.live(now)), None)


def _same_rf(topic: str, assignment: Collection[Sequence[int]]) -> None:
    """CreateTopics and CreatePartitions refuse replica lists of different lengths in one topic."""
    if len({len(r) for r in assignment}) > 1:
        raise KopsError(f"{topic}: InvalidReplicationAssignmentError: partitions with different replica counts",
                        where=topic, hint="give every partition as many replicas")


def _entity(entity_type: str, name: str) -> str:
    if entity_type not in ("topics", "brokers") or not name or name == "<default>":
        raise KopsError(f"kops cannot address {entity_type}/{name} through the Admin API",
                        where=f"{entity_type}/{name}", hint="topics/<name> and brokers/<id> are supported")
    return f"{entity_type}/{name}"


_ports = itertools.count(1)


class MemoryCluster(ConfigsOneAtATime):
    """One kops process's connection to a MemoryKafka: the port. Several may share one cluster (two operators,
    or a kops that crashed and the one that resumes)."""

    def __init__(self, kafka: MemoryKafka, lease: float = LEASE) -> None:
        self.kafka = kafka
        self.lease = lease
        self.where = f"memory-{next(_ports)}:9092"
        self.writes: list[str] = []  # every write this port made, in order (a crash test's N counts these)
        self.crash_at: int | None = None
        self.crashed = False
        self.frozen = False
        self._records = MemoryRecords(self)

    # -- failures a test injects -------------------------------------------------------------------------------

    def write(self, what: str) -> None:
        """Every write (topics, configs, reassignments, elections, records) passes here: the Nth one crashes."""
        self.alive()
        if self.crash_at is not None and len(self.writes) + 1 >= self.crash_at:
            self.crashed = True
            raise Crash(f"kops killed at write {len(self.writes) + 1} ({what})")
        self.writes.append(what)

    def alive(self) -> None:
        if self.crashed:
            raise Crash("this kops process is dead")

    def freeze(self, seconds: float) -> None:
        """This kops stops for `seconds` (SIGSTOP, a long GC pause): the cluster lives on, its heartbeats do not."""
        self.frozen = True
        try:
            self.kafka.clock.sleep(seconds)
        finally:
            self.frozen = False

    # -- the port: reading -------------------------------------------------------------------------------------

    def snapshot(self, only_topics: set[str] | None = None,
                 only_partitions: Collection[TopicPartition] | None = None,
                 progress: Callable[[str], None] | None = None) -> Snapshot:
        self.alive()
        topics = only_topics
        if only_partitions is not None:  # whole topics read, then narrowed (as DescribeTopics answers)
            topics = (only_topics or set()) | {tp.topic for tp in only_partitions}
        found = self.kafka.snapshot(self.where, topics)
        return found if only_partitions is None else found.narrowed(only_partitions)

    def offers(self) -> dict[str, str]:
        """As AdminCluster's: the finalized features (here metadata.version, where one is set) among them."""
        level = self.kafka.metadata_level
        return {"transport": "Admin API (in memory)", "cancel in flight": "KIP-455", "lag in bytes": "DescribeLogDirs",
                "replication-factor guard": "no", **({METADATA_VERSION: str(level)} if level is not None else {})}

    def sizes(self) -> dict[TopicPartition, int]:
        self.alive()
        return {tp: max(per.values()) for tp, per in self.kafka.replica_sizes().items() if per}

    def log_dirs(self) -> tuple[LogDirUsage, ...]:
        """DescribeLogDirs v4 without partitions: each dir of each serving broker, usable = its disk − its
        replicas; an offline dir with its error and no figures."""
        self.alive()
        kafka = self.kafka
        held: dict[tuple[int, str], int] = {}
        for tp, per in kafka.replica_sizes().items():
            for b, size in per.items():
                key = (b, kafka.dir_of(tp, b))
                held[key] = held.get(key, 0) + size
        disks = kafka.disks
        return tuple(LogDirUsage.of(b, d, disks.get(b, -1), disks[b] - held.get((b, d), 0) if b in disks else -1,
                                    OFFLINE if (b, d) in kafka.offline else None)
                     for b in sorted(kafka.racks) if kafka.serving(b) for d in kafka.log_dirs_of(b))

    def replica_dirs(self, dirs: tuple[LogDirUsage, ...]) -> tuple[ReplicaDir, ...]:
        """Which dir holds each replica of the brokers with several dirs (futures included), as AdminCluster."""
        self.alive()
        brokers = set(jbod_brokers(dirs_by_broker((d.broker, d.path) for d in dirs)))
        rows = []
        for (tp, broker), copy in self._copies(brokers).items():
            if copy.path is not None:
                rows.append(ReplicaDir(tp.topic, tp.partition, broker, copy.path))
            if copy.future_path is not None:
                rows.append(ReplicaDir(tp.topic, tp.partition, broker, copy.future_path, future=True))
        return tuple(sorted(rows))

    def _copies(self, brokers: set[int]) -> dict[Replica, DirCopy]:
        kafka = self.kafka
        found = {(TopicPartition(n, p), b): kafka.dir_copy(TopicPartition(n, p), b)
                 for n, parts in kafka.topics.items() for p, part in parts.items() for b in part.logs if b in brokers}
        return {key: copy for key, copy in found.items() if copy is not None}

    def dir_copies(self, replicas: Sequence[Replica]) -> dict[Replica, DirCopy]:
        self.alive()
        found = {key: self.kafka.dir_copy(*key) for key in replicas}
        return {key: copy for key, copy in found.items() if copy is not None}

    def alter_replica_dirs(self, wanted: Mapping[Replica, str]) -> dict[Replica, str | None]:
        self.write(f"alter_replica_dirs {len(wanted)}")
        return {(tp, broker): self.kafka.alter_dir(tp, broker, path) for (tp, broker), path in wanted.items()}

    def lags(self, asked: Sequence[tuple[TopicPartition, int]]) -> dict[tuple[TopicPartition, int], int]:
        """Bytes each replica is behind its leader's log end, where the leader answers (DescribeLogDirs)."""
        self.alive()
        parts = {tp: self.kafka.part(tp) for tp, _b in asked}
        return {(tp, b): int(part.end - part.logs.get(b, 0.0)) for tp, b in asked
                if (part := parts[tp]) is not None and self.kafka.serving(part.leader)}

    def records(self) -> MemoryRecords:
        return self._records

    def lock(self, holder: dict[str, Any], wait_dead: float, sleep: Callable[[float], None],
             monotonic: Callable[[], float]) -> MemoryLock:
        return MemoryLock(self, holder, wait_dead, sleep, monotonic)

    def holder(self) -> dict[str, Any] | None:
        self.alive()
        winner = self.kafka.winner()
        return None if winner is None else dict(winner.holder)

    def read_config(self, entity_type: str, name: str) -> dict[str, str]:
        self.alive()
        return self.kafka.read_config(entity_type, name)

    # -- the port: writing -------------------------------------------------------------------------------------

    def create_topic(self, name: str, assignment: Mapping[int, Sequence[int]], config: Mapping[str, str]) -> bool:
        self.write(f"create_topic {name}")
        return self.kafka.create_topic(name, assignment, config)

    def add_partitions(self, topic: str, assignment: Mapping[int, Sequence[int]]) -> bool:
        self.write(f"add_partitions {topic}")
        return self.kafka.add_partitions(topic, assignment)

    def shrink_partitions(self, topic: str, keep: int) -> None:
        raise KopsError(f"topic {topic}: removing partitions needs KIP-253, which Kafka does not offer",
                        where=self.where, hint="plan without partition removal")

    def delete_topic(self, name: str) -> None:
        self.write(f"delete_topic {name}")
        self.kafka.delete_topic(name)

    def alter_config(self, entity_type: str, name: str, updates: Mapping[str, str | None]) -> None:
        if not updates:
            return
        self.write(f"alter_config {entity_type}/{name}")
        self.kafka.alter_config(entity_type, name, updates)

    def submit(self, targets: Sequence[tuple[TopicPartition, tuple[int, ...]]], snapshot: Snapshot) -> None:
        """AlterPartitionReassignments: Kafka answers each partition on its own (the valid ones start); any
        refusal is raised, as AdminCluster raises it."""
        self.write(f"submit {len(targets)}")
        refused: list[Refused] = []
        for tp, replicas in targets:
            try:
                self.kafka.reassign(tp, replicas)
            except Refused as exc:
                refused.append(exc)
        if refused:
            raise Refused(f"{len(refused)} reassignment(s) refused: {refused[0].what}", where=self.where)

    def capabilities(self, snapshot: Snapshot) -> Capabilities:
        return KIP455

    def cancel(self, partitions: Sequence[TopicPartition], timeout: float) -> None:
        """KIP-455 null targets for those still moving; Kafka reverts them at once."""
        self.write(f"cancel {len(partitions)}")
        for tp in partitions:
            self.kafka.cancel(tp)

    def elect_preferred(self, partitions: Sequence[TopicPartition], timeout: float) -> bool:
        self.write(f"elect_preferred {len(partitions)}")
        return self.kafka.elect_preferred(partitions)

    def close(self) -> None:
        pass


class MemoryRecords:
    """The port's record store: keys of `__kops`, latest value wins."""

    max_bytes = 900_000

    def __init__(self, port: MemoryCluster) -> None:
        self.port = port
        self.log = port.kafka.records

    def _append(self, what: str, key: str, data: bytes) -> None:
        self.port.write(f"{what} {key}")
        self.log[key] = data

    def create(self, execution_id: str, data: bytes) -> None:
        self._append("record create", f"execution/{execution_id}", data)

    def save(self, execution_id: str, data: bytes) -> None:
        self._append("record save", f"execution/{execution_id}", data)

    def load(self, execution_id: str) -> bytes | None:
        self.port.alive()
        return self.log.get(f"execution/{execution_id}")

    def ids(self) -> list[str]:
        self.port.alive()
        return sorted(k.partition("/")[2] for k in self.log if k.startswith("execution/"))

    def set_cancel(self, execution_id: str, data: bytes) -> None:
        self._append("cancel request", f"cancel/{execution_id}", data)

    def get_cancel(self, execution_id: str) -> bytes | None:
        self.port.alive()
        return self.log.get(f"cancel/{execution_id}")

    def clear_cancel(self, execution_id: str) -> None:
        if self.get_cancel(execution_id) is not None:
            self.port.write(f"cancel cleared {execution_id}")
            del self.log[f"cancel/{execution_id}"]

    def note_absent(self, absent: Collection[int]) -> tuple[dict[int, int], int]:
        """As `__kops` keeps them: `absent/<id>` written once, at the store's time (the driven clock's)."""
        now = int(self.port.kafka.clock.now() * 1000)
        noted = {int(k.partition("/")[2]) for k in self.log if k.startswith("absent/")}
        if not absent and not noted:
            return {}, 0
        for broker in sorted(noted - set(absent)):
            self.port.write(f"absence cleared {broker}")
            del self.log[f"absent/{broker}"]
        for broker in sorted(set(absent) - noted):
            self._append("absence noted", f"absent/{broker}", str(now).encode())
        return {b: int(self.log[f"absent/{b}"]) for b in sorted(absent)}, now


class MemoryLock:
    """The lease of `kops.cluster.admin.lease.LeaseLock`: a claim that heartbeats while its kops lives; the first live
    claim holds the lock. A contender waits for a claim whose kops crashed (its lease runs out), as LeaseLock
    waits for a killed kops on its own host, and is refused by a live one."""

    def __init__(self, port: MemoryCluster, holder: dict[str, Any], wait_dead: float,
                 sleep: Callable[[float], None], monotonic: Callable[[], float]) -> None:
        self.port = port
        self.kafka = port.kafka
        self.holder = holder
        self.wait_dead = max(wait_dead, port.lease + 5)
        self.sleep = sleep
        self.monotonic = monotonic
        self.held = False
        self.claim: _Claim | None = None

    @property
    def lost(self) -> str | None:
        """Why the lock is no longer ours (None while it is): a heartbeat gap longer than the lease."""
        claim = self.claim
        if not self.held or claim is None:
            return None
        silent = self.kafka.clock.monotonic() - claim.last_beat
        if claim.dead or silent > claim.lease * 0.9:
            return (f"no heartbeat reached the cluster for {silent:.0f} s (the lease is {claim.lease:.0f} s): "
                    f"a long pause or a network cut")
        return None

    def acquire(self) -> None:
        self.port.alive()
        deadline = self.monotonic() + self.wait_dead
        self.claim = _Claim(uuid.uuid4().hex[:16], self.port, dict(self.holder), self.port.lease,
                            self.kafka.clock.monotonic())
        self.kafka.claims.append(self.claim)
        while True:
            winner = self.kafka.winner()
            if winner is self.claim:
                self.held = True
                return
            if winner is not None and winner.port.crashed and self.monotonic() < deadline:
                self.sleep(0.5)  # a killed kops: its lease runs out shortly
                continue
            self.claim.released = True
            raise Locked(f"the cluster is locked by {describe(winner.holder if winner else {})}", where=LOCK_TOPIC,
                         hint="wait for it to finish, or stop it with `kops cancel`")

    def ensure_held(self) -> None:
        self.port.alive()
        why = self.lost
        if why is not None:
            raise LockLost(why, LOCK_TOPIC)

    def update(self, **fields: Any) -> None:
        self.holder.update(fields)
        if self.held and self.claim is not None:
            self.ensure_held()
            self.claim.holder = dict(self.holder)

    def release(self) -> None:
        if not self.held or self.claim is None:
            return
        self.held = False
        if not self.port.crashed and self.lost is None:  # a dead kops writes no tombstone: its lease lapses
            self.claim.released = True
