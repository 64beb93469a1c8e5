"""Write a whole cluster's state into ZooKeeper in Kafka's formats, as its brokers and controller would.

The inverse of the snapshot reader (`kops.zk_layout.reader`). It makes a static cluster without broker
processes: `kops lab sample`, the reader's integration tests (write, read back, compare), and the
100,000-partition benchmarks. The lab's, not the toolkit's: kops itself writes only what Kafka's own tools write
(`kops.zk_layout.tool_writes`). Writes go in multi-ops of a few hundred znodes, so large layouts are written in
seconds.
"""

from __future__ import annotations

from kops.model.snapshot import Snapshot
from kops.model.topics import Topic, TopicAssignment
from kops.zk_layout import paths
from kops.zk_layout.client import Txn, ZkClient
from kops.zk_layout.codecs.admin_requests import ReassignmentTarget, encode_partition_list, encode_reassignment
from kops.zk_layout.codecs.brokers import encode_broker
from kops.zk_layout.codecs.cluster import MigrationState, encode_cluster_id, encode_migration
from kops.zk_layout.codecs.configs import encode_config
from kops.zk_layout.codecs.controller import ControllerRegistration, encode_controller, encode_controller_epoch
from kops.zk_layout.codecs.partition_state import encode_partition_state
from kops.zk_layout.codecs.topics import encode_topic

MAX_OPS = 400
MAX_BYTES = 512 * 1024  # well under ZooKeeper's 1 MB jute.maxbuffer


class _BatchWriter:
    """Collects creates into multi-ops and commits them when a batch is full."""

    def __init__(self, client: ZkClient) -> None:
        self.client = client
        self.txn: Txn = client.transaction()
        self.size = 0
        self.count = 0

    def create(self, path: str, data: bytes | None = None, ephemeral: bool = False) -> None:
        self.txn.create(path, data, ephemeral=ephemeral)
        self.size += len(path) + len(data or b"") + 16
        self.count += 1
        if len(self.txn) >= MAX_OPS or self.size >= MAX_BYTES:
            self.flush()

    def flush(self) -> None:
        if len(self.txn):
            self.txn.commit()
        self.txn = self.client.transaction()
        self.size = 0


def write_snapshot(client: ZkClient, snapshot: Snapshot, *, ephemeral_brokers: bool = False) -> int:
    """Create every znode the snapshot implies; the cluster's znodes must not exist yet. Returns znodes written."""
    for path in paths.PERSISTENT_PATHS + ("/admin", "/cluster"):
        client.ensure_path(path)
    w = _BatchWriter(client)
    _write_cluster(w, snapshot, ephemeral_brokers)
    for name, topic in sorted(snapshot.topics.items()):
        _write_topic(w, name, topic)
    for entity, config in sorted(snapshot.broker_configs.items()):
        w.create(paths.config("brokers", entity), encode_config(config))
    _write_requests(w, snapshot)
    w.flush()
    return w.count


def _write_cluster(w: _BatchWriter, snapshot: Snapshot, ephemeral_brokers: bool) -> None:
    """Cluster id, controller epoch and registration, broker registrations."""
    if snapshot.cluster_id:
        w.create(paths.CLUSTER_ID, encode_cluster_id(snapshot.cluster_id))
    ctl = snapshot.controller
    if ctl.epoch is not None:
        w.create(paths.CONTROLLER_EPOCH, encode_controller_epoch(ctl.epoch))
    if ctl.id is not None:
        version = 2 if ctl.kraft_controller_epoch != -1 else 1
        registration = ControllerRegistration(ctl.id, "0", version, ctl.kraft_controller_epoch)
        w.create(paths.CONTROLLER, encode_controller(registration), ephemeral=ephemeral_brokers)
    for broker in snapshot.brokers:
        w.create(paths.broker(broker.id), encode_broker(broker), ephemeral=ephemeral_brokers)


def _write_topic(w: _BatchWriter, name: str, topic: Topic) -> None:
    """Config first, then the topic znode, its partitions and their states (as Kafka's admin tools order them)."""
    w.create(paths.config("topics", name), encode_config(topic.config))
    assignment = TopicAssignment(
        replicas={p: part.replicas for p, part in topic.partitions.items()},
        adding={p: part.adding for p, part in topic.partitions.items() if part.adding},
        removing={p: part.removing for p, part in topic.partitions.items() if part.removing},
        topic_id=topic.topic_id,
        initial_partition_count=topic.initial_partition_count,
        undeleted_partition_count=topic.undeleted_partition_count,
    )
    w.create(paths.topic(name), encode_topic(assignment))
    w.create(paths.partitions(name))
    for number, part in sorted(topic.partitions.items()):
        w.create(paths.partition(name, number))
        if part.state is not None:
            w.create(paths.partition_state(name, number), encode_partition_state(part.state))


def _write_requests(w: _BatchWriter, snapshot: Snapshot) -> None:
    """Pending deletions, a reassignment, a preferred election, a migration marker."""
    for name in snapshot.pending_deletions:
        w.create(paths.delete_topic(name))
    if snapshot.requested_moves:
        w.create(
            paths.REASSIGN_PARTITIONS,
            encode_reassignment(ReassignmentTarget(m.topic, m.partition, m.replicas) for m in snapshot.requested_moves),
        )
    if snapshot.preferred_election:
        w.create(paths.PREFERRED_REPLICA_ELECTION, encode_partition_list(snapshot.preferred_election))
    if snapshot.migration:
        epoch = max(snapshot.controller.kraft_controller_epoch, 1)
        w.create(paths.MIGRATION, encode_migration(MigrationState(3000, epoch, 0, 1)))
