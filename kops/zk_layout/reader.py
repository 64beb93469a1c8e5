"""The snapshot reader: a whole cluster's layout from ZooKeeper in three rounds of pipelined reads.

Round 1 lists brokers, topics, configs and reads the singleton znodes; round 2 reads every broker, topic and
config znode; round 3 reads every partition state. Each round is a handful of multiRead requests, so the
cost grows with the data, not with round trips (bench/snapshot.py: 100,000 partitions).

A znode Kafka would reject does not stop the read: it becomes a `Problem` with its path, the rest is read,
and the snapshot says it is incomplete.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from kops.bulk import collector_paused
from kops.errors import NotAKafkaCluster, ZnodeFormatError
from kops.model.brokers import Broker
from kops.model.partitions import Partition, TopicPartition
from kops.model.snapshot import ControllerInfo, Problem, RequestedMove, Snapshot
from kops.model.topics import Topic, TopicAssignment
from kops.zk_layout import paths
from kops.zk_layout.client import ZkClient
from kops.zk_layout.codecs.admin_requests import decode_partition_list, decode_reassignment
from kops.zk_layout.codecs.brokers import decode_broker
from kops.zk_layout.codecs.cluster import decode_cluster_id, decode_migration
from kops.zk_layout.codecs.configs import decode_config
from kops.zk_layout.codecs.controller import decode_controller, decode_controller_epoch
from kops.zk_layout.codecs.partition_state import decode_partition_state
from kops.zk_layout.codecs.topics import decode_topic
from kops.zk_layout.multiread import Node

Progress = Callable[[str], None]


def _int_children(names: list[str] | None) -> list[int]:
    return sorted(int(n) for n in (names or []) if re.fullmatch(r"-?[0-9]{1,10}", n))


class _Collector:
    """Decodes znodes, turning format errors into problems."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def decode(self, decoder: Callable[..., Any], node: Node | None, path: str, *args: object) -> Any:
        if node is None:
            return None
        try:
            return decoder(*args, node.data, path)
        except ZnodeFormatError as exc:
            self.problems.append(Problem(path, exc.problem))
            return None


def check_is_kafka(client: ZkClient) -> None:
    """Refuse clearly when the connect string points at no Kafka cluster."""
    where = str(client.connect)
    if client.exists("/") is None:
        raise NotAKafkaCluster(
            f"the chroot {client.connect.chroot} does not exist",
            where=where,
            hint="check the chroot in the connect string (Kafka's zookeeper.connect)",
        )
    if client.exists(paths.BROKER_IDS) is None and client.exists(paths.BROKER_TOPICS) is None:
        raise NotAKafkaCluster(
            "no Kafka cluster at this ZooKeeper path (/brokers is missing)",
            where=where,
            hint="add the cluster's chroot to the connect string, e.g. host:2181/kafka",
        )


SINGLES = (paths.CONTROLLER, paths.CONTROLLER_EPOCH, paths.CLUSTER_ID, paths.MIGRATION, paths.REASSIGN_PARTITIONS,
           paths.PREFERRED_REPLICA_ELECTION)


@dataclass
class _Listing:
    """Round 1: what exists (children of the cluster's folders)."""

    broker_ids: list[int]
    topics: list[str]
    deletions: list[str]
    configured: set[str]  # topics with a config znode
    broker_entities: list[str]  # broker config entities: ids and <default>


@dataclass
class _Entities:
    """Round 2: the brokers, topic assignments and configs the listing named."""

    brokers: list[Broker] = field(default_factory=list)
    assignments: dict[str, TopicAssignment] = field(default_factory=dict)
    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    broker_configs: dict[str, dict[str, str]] = field(default_factory=dict)


@collector_paused()
def read_snapshot(client: ZkClient, progress: Progress | None = None, only_topics: Collection[str] | None = None,
                  only_partitions: Collection[TopicPartition] | None = None) -> Snapshot:
    """The whole cluster; with `only_topics`, a poll's view: the brokers, the controller and reassignment
    znodes and just those topics (their assignments and partition states, no configs), at a cost that grows
    with the topics asked for, not with the cluster (bench/poll.py). Three pipelined rounds: the listing and the
    cluster-wide znodes, then every broker, topic and config, then every partition state. With `only_partitions`,
    the states of just those partitions (Snapshot.narrowed): a poll's cost then grows with the batch."""
    note = progress or (lambda _msg: None)
    if only_partitions is not None:
        only_topics = set(only_topics or ()) | {tp.topic for tp in only_partitions}
    if only_topics is None:
        check_is_kafka(client)
    c = _Collector()
    note("listing brokers, topics and configs")
    singles = dict(zip(SINGLES, client.get_many(list(SINGLES))))
    listing = _list(client, only_topics)
    note(f"reading {len(listing.broker_ids)} brokers and {len(listing.topics)} topics")
    found = _read_entities(client, c, listing)
    wanted = set(only_partitions or ())
    state_keys = [(name, p) for name, a in found.assignments.items() for p in sorted(a.replicas)
                  if only_partitions is None or TopicPartition(name, p) in wanted]
    note(f"reading {len(state_keys)} partition states")
    state_nodes = client.get_many([paths.partition_state(t, p) for t, p in state_keys])
    states = {(name, number): c.decode(decode_partition_state, node, paths.partition_state(name, number))
              for (name, number), node in zip(state_keys, state_nodes)}
    snapshot = _assemble(client, c, singles, listing, found, states)
    return snapshot if only_partitions is None else snapshot.narrowed(only_partitions)


def _list(client: ZkClient, only_topics: Collection[str] | None) -> _Listing:
    if only_topics is not None:  # the topics asked for are read directly: a missing one reads as gone
        broker_ids, deletions = client.children_many([paths.BROKER_IDS, paths.DELETE_TOPICS])
        return _Listing(_int_children(broker_ids), sorted(only_topics), sorted(deletions or []), set(), [])
    broker_ids, topic_names, deletions, topic_configs, broker_config_names = client.children_many(
        [paths.BROKER_IDS, paths.BROKER_TOPICS, paths.DELETE_TOPICS, paths.config_root("topics"),
         paths.config_root("brokers")])
    return _Listing(_int_children(broker_ids), sorted(topic_names or []), sorted(deletions or []),
                    set(topic_configs or []), sorted(broker_config_names or []))


def _read_entities(client: ZkClient, c: _Collector, listing: _Listing) -> _Entities:
    names = listing.topics
    nodes = iter(client.get_many(
        [paths.broker(i) for i in listing.broker_ids] + [paths.topic(t) for t in names]
        + [paths.config("topics", t) for t in names if t in listing.configured]
        + [paths.config("brokers", e) for e in listing.broker_entities]))
    out = _Entities()
    for broker_id in listing.broker_ids:
        node = next(nodes)
        if node is not None:  # a broker that deregistered between the listing and the read
            try:
                out.brokers.append(decode_broker(broker_id, node.data, paths.broker(broker_id), epoch=node.stat.czxid))
            except ZnodeFormatError as exc:
                c.problems.append(Problem(paths.broker(broker_id), exc.problem))
    for name in names:
        node = next(nodes)
        if node is not None:  # None: asked for by name and gone (deleted meanwhile)
            assignment = c.decode(decode_topic, node, paths.topic(name))
            if isinstance(assignment, TopicAssignment):
                out.assignments[name] = assignment
    for name in (n for n in names if n in listing.configured):
        config = c.decode(decode_config, next(nodes), paths.config("topics", name))
        out.configs[name] = config if isinstance(config, dict) else {}
    for entity in listing.broker_entities:
        config = c.decode(decode_config, next(nodes), paths.config("brokers", entity))
        if isinstance(config, dict):
            out.broker_configs[entity] = config
    return out


def _topic(name: str, a: TopicAssignment, states: dict[tuple[str, int], Any], config: dict[str, str]) -> Topic:
    partitions = {p: Partition(replicas=a.replicas[p], adding=a.adding.get(p, ()), removing=a.removing.get(p, ()),
                               state=states.get((name, p))) for p in sorted(a.replicas)}
    return Topic(name=name, partitions=partitions, topic_id=a.topic_id, config=config,
                 initial_partition_count=a.initial_partition_count,
                 undeleted_partition_count=a.undeleted_partition_count)


def _assemble(client: ZkClient, c: _Collector, singles: dict[str, Node | None], listing: _Listing,
              found: _Entities, states: dict[tuple[str, int], Any]) -> Snapshot:
    topics = {name: _topic(name, a, states, found.configs.get(name, {})) for name, a in found.assignments.items()}
    controller = c.decode(decode_controller, singles[paths.CONTROLLER], paths.CONTROLLER)
    epoch = c.decode(decode_controller_epoch, singles[paths.CONTROLLER_EPOCH], paths.CONTROLLER_EPOCH)
    kraft_epoch = controller.kraft_controller_epoch if controller else -1
    reassign_n = singles[paths.REASSIGN_PARTITIONS]
    requested = c.decode(decode_reassignment, reassign_n, paths.REASSIGN_PARTITIONS) or []
    if reassign_n is not None and c.problems and c.problems[-1].path == paths.REASSIGN_PARTITIONS:
        last = c.problems.pop()
        c.problems.append(Problem(last.path, f"Kafka ignores this reassignment znode: {last.message}"))
    election = c.decode(decode_partition_list, singles[paths.PREFERRED_REPLICA_ELECTION],
                        paths.PREFERRED_REPLICA_ELECTION) or []
    migration_n = singles[paths.MIGRATION]
    migration = c.decode(decode_migration, migration_n, paths.MIGRATION)
    return Snapshot(
        cluster_id=c.decode(decode_cluster_id, singles[paths.CLUSTER_ID], paths.CLUSTER_ID),
        controller=ControllerInfo(id=controller.broker_id if controller else None, epoch=epoch,
                                  kraft_controller_epoch=kraft_epoch),
        brokers=tuple(sorted(found.brokers, key=lambda b: b.id)),
        topics=topics,
        broker_configs=found.broker_configs,
        requested_moves=tuple(sorted(RequestedMove(r.topic, r.partition, r.replicas) for r in requested)),
        pending_deletions=tuple(listing.deletions),
        preferred_election=tuple(sorted(TopicPartition(tp.topic, tp.partition) for tp in election)),
        migration=migration_n is not None or kraft_epoch > 0 or migration is not None,
        problems=tuple(c.problems),
        connect=str(client.connect),
    )
