"""`kops-snapshot/1`: a cluster's state as `kops state --out FILE` writes it and `kops plan --snapshot` reads it.

Derived keys (`reassigning`, `cluster_features`, `complete`, `summary`) are written for readers and recomputed
from the rest on load. Beyond shapes: replica lists are non-empty with no broker twice, `adding` and `removing`
name replicas of the partition, partitions and broker ids are numbered from 0, no broker is listed twice.
Each object names the class of kops/model/ it holds (`domain`): the conversions both ways are derived from this
declaration (kops/formats/binding.py), lists kept sorted, a partition's state written flat beside its replicas.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from kops.formats.base import Doc, Flag, Id, IdKey, Int, IntKey, Long, Replicas, Size, Text, fail
from kops.model.brokers import Broker, FeatureRange
from kops.model.capacity import LogDirUsage
from kops.model.partitions import Partition, TopicPartition
from kops.model.snapshot import ControllerInfo, EligibleLeaders, InFlight, Problem, RequestedMove, Snapshot
from kops.model.topics import Topic

FORMAT = "kops-snapshot/1"
ConfigMap = dict[Text, Text]
ReplicaDirRow = tuple[Text, Id, Id, Text, Flag]  # topic, partition, broker, path, future


class FeatureDoc(Doc):
    domain = FeatureRange

    min_version: Int
    max_version: Int


class BrokerDoc(Doc):
    """A registered broker (`/brokers/ids/N`, or DescribeCluster over the Admin API)."""

    domain = Broker

    id: Id
    rack: Text | None
    host: Text | None
    port: Int = Field(description="-1 when the broker has no plaintext endpoint")
    endpoints: list[Text] = Field(description="`LISTENER://host:port`")
    features: dict[Text, FeatureDoc] = Field(description="the feature versions it advertises")
    listener_security_protocol_map: ConfigMap | None
    jmx_port: Int
    timestamp: Text | None = Field(description="registration time, milliseconds as a string (Kafka's format)")
    version: Int = Field(description="the registration znode's version (5)")
    epoch: Long | None = Field(description="the broker epoch: the registration znode's czxid")


class PartitionDoc(Doc):
    """During a reassignment `replicas` is target + original, with `adding` and `removing`."""

    domain = Partition
    flat: ClassVar[dict[str, str]] = {"state": "leader"}  # leader, ISR and epochs: null together without a state

    replicas: Replicas = Field(description="the full replica set, first = preferred leader")
    adding: list[Id]
    removing: list[Id]
    leader: Int | None = Field(description="null when the partition has no state (not yet elected)")
    leader_epoch: Int | None
    isr: list[Int] | None
    controller_epoch: Int | None
    leader_recovery_state: Int | None = Field(default=None, exclude_if=lambda v: not v,
                                              description="present only when 1 (KIP-704)")
    leader_epoch_after_creation: dict[IntKey, Int] | None = Field(default=None, exclude_if=lambda v: not v,
                                                                  description="KIP-253 clusters only")
    leader_epoch_before_deletion: dict[IntKey, Int] | None = Field(default=None, exclude_if=lambda v: not v,
                                                                   description="KIP-253 clusters only")

    @model_validator(mode="after")
    def _consistent(self) -> PartitionDoc:
        """Runs once per partition (a million in a large snapshot): the common case, nothing moving and a full
        state, costs two truth tests."""
        if self.adding or self.removing:
            for name, values in (("adding", self.adding), ("removing", self.removing)):
                stray = [r for r in values if r not in self.replicas]
                if stray:
                    raise fail("names replicas {stray} that are not in replicas", name, stray=stray)
        if self.leader is not None and (self.leader_epoch is None or self.isr is None):
            raise fail("has a leader but no leader_epoch and isr", None)
        return self


class TopicDoc(Doc):
    domain = Topic
    map_key = "name"

    topic_id: Text | None
    config: ConfigMap = Field(description="the topic's overrides, values as strings")
    partitions: dict[IdKey, PartitionDoc] = Field(description="partition number -> state")
    initial_partition_count: Int | None = Field(default=None, exclude_if=lambda v: v is None)
    undeleted_partition_count: Int | None = Field(default=None, exclude_if=lambda v: v is None)


class ControllerDoc(Doc):
    domain = ControllerInfo

    id: Int | None = Field(description="the active controller: its broker id in ZooKeeper mode, the KRaft metadata "
                                       "quorum's leader (a controller node) on KRaft; null when not known")
    epoch: Int | None = Field(description="/controller_epoch, or the KRaft quorum's leader epoch; null when not "
                                          "known (ZooKeeper mode through the Admin API)")
    kraft_controller_epoch: Int = Field(description="> 0 during a KRaft migration")


class InFlightDoc(Doc):
    """Derived: a partition being reassigned, by any tool."""

    domain = InFlight

    topic: Text
    partition: Id
    replicas: list[Id]
    adding: list[Id]
    removing: list[Id]
    target: list[Id] | None
    requested: Flag = Field(description="named in `/admin/reassign_partitions` (or by the Admin API)")


class RequestedMoveDoc(Doc):
    domain = RequestedMove

    topic: Text
    partition: Id
    replicas: Replicas


class TopicPartitionDoc(Doc):
    domain = TopicPartition

    topic: Text
    partition: Id


class ProblemDoc(Doc):
    domain = Problem

    path: Text = Field(description="the znode that could not be read as Kafka reads it, or `metadata/TOPIC...` "
                                   "where the brokers' views of it still disagreed (Admin API)")
    message: Text


class LogDirDoc(Doc):
    """One log dir of one broker, as DescribeLogDirs v4 (KIP-827, Kafka 3.3+) reports it."""

    domain = LogDirUsage

    broker: Id
    path: Text = Field(description="the log dir's path on the broker")
    total_bytes: Size | None = Field(description="the size of the dir's filesystem; null where Kafka answers -1 "
                                                 "(before 3.3, or the dir is offline)")
    usable_bytes: Size | None = Field(description="what is free on it for Kafka; null as for total_bytes")
    error: Text | None = Field(description="why the dir could not be described (an offline dir), else null")


class EligibleLeadersDoc(Doc):
    """A partition without a live leader and its eligible leader replicas (KIP-966), as DescribeTopicPartitions
    reports them."""

    domain = EligibleLeaders

    topic: Text
    partition: Id
    replicas: list[Id] = Field(description="ELR: replicas outside the ISR that hold every committed record; with an "
                                           "empty ISR Kafka elects the first of them to return, cleanly")
    last_known: list[Id] = Field(description="LastKnownElr: what Kafka kept for its own recovery once none was left "
                                             "(the last leader, or the last eligible replicas)")


class SummaryDoc(Doc):
    """Derived counts, for humans and dashboards."""

    domain = dict

    brokers: Size
    topics: Size
    partitions: Size
    under_replicated: Size
    offline: Size


def _summary(snapshot: Snapshot) -> dict[str, int]:
    return {"brokers": len(snapshot.brokers), "topics": len(snapshot.topics), "partitions": snapshot.partition_count,
            "under_replicated": len(snapshot.under_replicated()), "offline": len(snapshot.offline())}


class SnapshotDoc(Doc):
    """The snapshot file: sorted keys, two-space indentation, no clock."""

    domain = Snapshot
    names: ClassVar[dict[str, str]] = {"fenced_brokers": "fenced"}
    derived: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "reassigning": Snapshot.in_flight, "cluster_features": Snapshot.cluster_features, "summary": _summary}
    ordered: ClassVar[dict[str, str | None]] = {"brokers": "id", "fenced_brokers": None, "requested_moves": None,
                                                "pending_deletions": None, "preferred_election": None,
                                                "log_dirs": None, "replica_dirs": None, "eligible_leaders": None}
    rows: ClassVar[dict[str, tuple[str, ...]]] = {"replica_dirs": ("topic", "partition", "broker", "path", "future")}

    format: Literal["kops-snapshot/1"]
    connect: Text | None = Field(description="where it was read from (no credentials)")
    cluster_id: Text | None
    controller: ControllerDoc
    brokers: list[BrokerDoc] = Field(description="live brokers (registered, and not fenced), sorted by id")
    fenced_brokers: list[Id] = Field(default_factory=list,
                                     description="registered but fenced (KRaft, DescribeCluster v2): not serving, "
                                                 "not live, never a plan's target; sorted")
    topics: dict[Text, TopicDoc]
    broker_configs: dict[Text, ConfigMap] = Field(description="overrides per broker id, and `<default>`")
    reassigning: list[InFlightDoc] = Field(default_factory=list)
    requested_moves: list[RequestedMoveDoc] = Field(description="the reassignments requested and not yet done")
    pending_deletions: list[Text] = Field(description="topics marked for deletion")
    preferred_election: list[TopicPartitionDoc] = Field(description="a preferred-leader election requested")
    cluster_features: dict[Text, Int] = Field(default_factory=dict,
                                              description="derived: features every broker advertises")
    migration: Flag = Field(description="a ZooKeeper-to-KRaft migration is on: kops must not write")
    complete: Flag = Field(default=True, description="derived: false when some part could not be read as Kafka reads "
                                                     "it, or the brokers' views still disagreed (see problems)")
    problems: list[ProblemDoc]
    log_dirs: list[LogDirDoc] = Field(default_factory=list, exclude_if=lambda v: not v,
                                      description="each broker's log dirs with their filesystem's total and usable "
                                                  "bytes, sorted by broker and path; absent when not read")
    replica_dirs_read: Flag = Field(default=False, exclude_if=lambda v: not v,
                                    description="true when `replica_dirs` was read (through the Admin API); absent "
                                                "through ZooKeeper, where no znode says which dir holds a replica")
    replica_dirs: list[ReplicaDirRow] = Field(
        default_factory=list, exclude_if=lambda v: not v,
        description="`[topic, partition, broker, path, future]`: the log dir holding each replica of every broker "
                    "with more than one log dir (JBOD; a broker with one holds every replica there), and with "
                    "`future` true the copy an intra-broker move in flight is writing; sorted")
    metadata_version: Int | None = Field(default=None, exclude_if=lambda v: v is None,
                                         description="the finalized `metadata.version` feature level (KRaft, read "
                                                     "with DescribeFeatures; 17 is 3.7-IV2, the first with JBOD); "
                                                     "absent when not read or in ZooKeeper mode")
    eligible_leaders: list[EligibleLeadersDoc] = Field(
        default_factory=list, exclude_if=lambda v: not v,
        description="each partition without a live leader whose eligible leader replicas were read (through the "
                    "Admin API, from a cluster that answers DescribeTopicPartitions: KRaft, Kafka 3.7+), sorted; "
                    "absent when none was read")
    summary: SummaryDoc | None = None

    @model_validator(mode="after")
    def _brokers_once(self) -> SnapshotDoc:
        ids = [b.id for b in self.brokers]
        if len(set(ids)) != len(ids):
            raise fail("lists a broker id twice", "brokers")
        if set(ids) & set(self.fenced_brokers) or len(set(self.fenced_brokers)) != len(self.fenced_brokers):
            raise fail("lists a broker both live and fenced, or fenced twice", "fenced_brokers")
        return self

    @model_validator(mode="after")
    def _replicas_in_known_dirs(self) -> SnapshotDoc:
        """Each row names a dir its broker reported, once per replica and kind (current or future)."""
        if self.replica_dirs and not self.replica_dirs_read:
            raise fail("lists replicas but replica_dirs_read is not true", "replica_dirs")
        dirs = {(d.broker, d.path) for d in self.log_dirs}
        seen: set[tuple[str, int, int, bool]] = set()
        for i, (topic, partition, broker, path, future) in enumerate(self.replica_dirs):
            if (broker, path) not in dirs:
                raise fail("names log dir {path} on broker {broker}, which is not one of its log_dirs",
                           f"replica_dirs[{i}]", path=path, broker=broker)
            if (topic, partition, broker, future) in seen:
                raise fail("lists {topic}-{partition} on broker {broker} twice", f"replica_dirs[{i}]",
                           topic=topic, partition=partition, broker=broker)
            seen.add((topic, partition, broker, future))
        return self

