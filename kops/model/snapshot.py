"""A snapshot: everything kops knows about one cluster at one moment, as pure data.

Read live by `kops.zk_layout.reader`, or loaded from a `kops-snapshot/1` file (`kops.model.snapshot_format`) for
offline planning. The planner only ever sees this type, never ZooKeeper.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, replace
from functools import cached_property

from kops.errors import NotReady
from kops.model.brokers import Broker
from kops.model.capacity import LogDirUsage
from kops.model.partitions import Partition, TopicPartition
from kops.model.placement import ReplicaDir, dirs_by_broker, index
from kops.model.topics import Topic


@dataclass(frozen=True)
class ControllerInfo:
    id: int | None
    epoch: int | None
    kraft_controller_epoch: int = -1


@dataclass(frozen=True)
class Problem:
    """Something that could not be read as Kafka would read it. The snapshot is then incomplete."""

    path: str
    message: str


@dataclass(frozen=True, order=True)
class RequestedMove:
    """An entry of `/admin/reassign_partitions`: a partition someone asked to move and its target."""

    topic: str
    partition: int
    replicas: tuple[int, ...]


@dataclass(frozen=True)
class InFlight:
    """A partition being reassigned, by any tool: from its topic znode and/or the reassignment znode."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]
    target: tuple[int, ...] | None
    requested: bool  # named in /admin/reassign_partitions


@dataclass(frozen=True, order=True)
class EligibleLeaders:
    """KIP-966's eligible leader replicas of a partition without a live leader, as DescribeTopicPartitions reports
    them (KRaft, Kafka 3.7+, where `eligible.leader.replicas.version` is 1; elsewhere both lists are empty).
    `replicas` (ELR): replicas outside the ISR that hold every committed record, so that with an empty ISR Kafka
    elects the first of them to return, cleanly; `last_known` (LastKnownElr): what Kafka kept for its own
    recovery once none was left (the partition's last leader, or its last eligible replicas)."""

    topic: str
    partition: int
    replicas: tuple[int, ...] = ()
    last_known: tuple[int, ...] = ()


PROPAGATING = "metadata/"  # the path of a problem that is brokers' views still disagreeing (Admin API)
ADMIN_API = "kafka://"  # a snapshot (and a plan) read through the Admin API names its cluster kafka://SERVERS


def admin_api_connect(servers: str) -> str:
    return ADMIN_API + servers


@dataclass(frozen=True)
class Snapshot:
    cluster_id: str | None
    controller: ControllerInfo
    brokers: tuple[Broker, ...]
    topics: dict[str, Topic]
    broker_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    requested_moves: tuple[RequestedMove, ...] = ()
    pending_deletions: tuple[str, ...] = ()
    preferred_election: tuple[TopicPartition, ...] = ()
    migration: bool = False
    problems: tuple[Problem, ...] = ()
    connect: str | None = None
    fenced: tuple[int, ...] = ()  # registered but fenced (KRaft, DescribeCluster v2): not serving, not in `brokers`
    log_dirs: tuple[LogDirUsage, ...] = ()  # what the cluster reported of its disks; empty when not read
    # which dir holds each replica of the brokers with several log dirs (JBOD), and the future replicas of
    # intra-broker moves in flight; read through the Admin API only (`replica_dirs_read`), ZooKeeper has no
    # znode for it (docs/design/jbod.md §2)
    replica_dirs: tuple[ReplicaDir, ...] = ()
    replica_dirs_read: bool = False
    # the finalized metadata.version's feature level (KRaft, DescribeFeatures); None: not read, or ZooKeeper mode
    metadata_version: int | None = None
    # each partition without a live leader whose eligible leader replicas were read (Admin API, whole reads: a
    # partition missing here was not asked, or the cluster cannot say); ZooKeeper mode has none
    eligible_leaders: tuple[EligibleLeaders, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.problems

    @property
    def propagating(self) -> bool:
        """Some problem is brokers still disagreeing about the cluster's metadata (asking later may settle it)."""
        return any(p.path.startswith(PROPAGATING.rstrip("/")) for p in self.problems)

    @property
    def incompleteness(self) -> str | None:
        """Why the snapshot may miss topics or partitions, in a few words; None when it is complete."""
        if self.complete:
            return None
        count = len(self.problems)
        if self.propagating:
            return f"cluster metadata is still propagating ({count} problem(s): the brokers' views disagree)"
        return f"{count} znode(s) could not be read as Kafka reads them"

    def refuse_incomplete(self) -> None:
        """An incomplete snapshot may miss topics or partitions: a plan made or applied from it would leave them
        out (a decommission would leave their replicas behind). Refused: exit 3, try again in a moment."""
        if self.incompleteness is None:
            return
        first = self.problems[0]
        raise NotReady(f"the snapshot is incomplete: {self.incompleteness}, first {first.path}: {first.message}",
                       where=self.connect, hint="try again in a moment (kops state names every problem), or pass "
                                                "--allow-incomplete to go on with what could be read")

    @cached_property
    def live_broker_ids(self) -> frozenset[int]:
        return frozenset(b.id for b in self.brokers)

    def broker(self, broker_id: int) -> Broker | None:
        return next((b for b in self.brokers if b.id == broker_id), None)

    def narrowed(self, partitions: Collection[TopicPartition]) -> Snapshot:
        """A poll's view: only `partitions`, in their topics (brokers, configs and requests as read). What a batch
        in flight needs, at a cost that grows with the batch, not with its topics."""
        wanted: dict[str, set[int]] = {}
        for tp in partitions:
            wanted.setdefault(tp.topic, set()).add(tp.partition)
        topics = {name: replace(t, partitions={p: part for p, part in t.partitions.items() if p in wanted[name]})
                  for name, t in self.topics.items() if name in wanted}
        return replace(self, topics=topics)

    @cached_property
    def _dirs(self) -> dict[int, tuple[str, ...]]:
        return dirs_by_broker((d.broker, d.path) for d in self.log_dirs)

    @cached_property
    def _replica_dir_index(self) -> dict[tuple[str, int, int, bool], str]:
        return index(self.replica_dirs)

    def broker_dirs(self, broker: int) -> tuple[str, ...]:
        """The broker's log dirs as it reported them, sorted; () when not read."""
        return self._dirs.get(broker, ())

    def placement_known(self, broker: int) -> bool:
        """Whether kops knows which dir holds each replica of `broker`: its only dir, or read (Admin API)."""
        return len(self.broker_dirs(broker)) == 1 or (self.replica_dirs_read and broker in self._dirs)

    def dir_of(self, tp: TopicPartition, broker: int) -> str | None:
        """The log dir holding `broker`'s replica of `tp`; None where unknown (through ZooKeeper, or the replica
        came after the read) or where the broker holds none."""
        dirs = self.broker_dirs(broker)
        if len(dirs) == 1:
            return dirs[0]
        return self._replica_dir_index.get((tp.topic, tp.partition, broker, False))

    def future_dir_of(self, tp: TopicPartition, broker: int) -> str | None:
        """Where an intra-broker move in flight is copying `broker`'s replica of `tp`; None when none is known."""
        return self._replica_dir_index.get((tp.topic, tp.partition, broker, True))

    def dir_moves(self) -> list[ReplicaDir]:
        """The future replicas: intra-broker moves in flight, by any tool."""
        return [r for r in self.replica_dirs if r.future]

    def eligible(self, tp: TopicPartition) -> EligibleLeaders | None:
        """`tp`'s eligible leader replicas as read; None where they were not read."""
        return self._eligible_by_partition.get((tp.topic, tp.partition))

    @cached_property
    def _eligible_by_partition(self) -> dict[tuple[str, int], EligibleLeaders]:
        """Indexed once: kops status asks it of every offline partition (a dead broker's thousands)."""
        return {(e.topic, e.partition): e for e in self.eligible_leaders}

    def partition(self, tp: TopicPartition) -> Partition | None:
        topic = self.topics.get(tp.topic)
        return None if topic is None else topic.partitions.get(tp.partition)

    def cluster_features(self) -> dict[str, int]:
        """Features every live broker advertises, with the highest version all support (lab-only capabilities)."""
        if not self.brokers:
            return {}
        common = set(self.brokers[0].features)
        for b in self.brokers[1:]:
            common &= set(b.features)
        return {name: min(b.features[name].max_version for b in self.brokers) for name in sorted(common)}

    def in_flight(self) -> list[InFlight]:
        """Reassignments in flight: topic znodes with adding/removing, plus entries of the reassignment znode."""
        requested = {(m.topic, m.partition): m for m in self.requested_moves}
        result: dict[tuple[str, int], InFlight] = {}
        for name, topic in self.topics.items():
            for number, part in topic.partitions.items():
                if part.reassigning or (name, number) in requested:
                    move = requested.get((name, number))
                    result[(name, number)] = InFlight(
                        name,
                        number,
                        part.replicas,
                        part.adding,
                        part.removing,
                        move.replicas if move else part.target_replicas,
                        move is not None,
                    )
        for key, move in requested.items():
            if key not in result:  # names a partition that does not exist: Kafka drops such entries
                result[key] = InFlight(move.topic, move.partition, (), (), (), move.replicas, True)
        return [result[k] for k in sorted(result)]

    def under_replicated(self) -> list[TopicPartition]:
        return [
            TopicPartition(name, number)
            for name, topic in sorted(self.topics.items())
            for number, part in sorted(topic.partitions.items())
            if part.is_under_replicated()
        ]

    def offline(self) -> list[TopicPartition]:
        live = self.live_broker_ids
        return [
            TopicPartition(name, number)
            for name, topic in sorted(self.topics.items())
            for number, part in sorted(topic.partitions.items())
            if part.is_offline(live)
        ]

    @property
    def partition_count(self) -> int:
        return sum(len(t.partitions) for t in self.topics.values())
