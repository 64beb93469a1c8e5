"""The snapshot reader: a whole cluster's layout from ZooKeeper in three rounds of pipelined reads.

Round 1 lists brokers, topics, configs and reads the singleton znodes; round 2 reads every broker, topic and
config znode; round 3 reads every partition state. Each round is a handful of multiRead requests, so the
cost grows with the data, not with round trips (bench/snapshot.py: 100,000 partitions).

A znode Kafka would reject does not stop the read: it becomes a `Problem` with its path, the rest is read,
and the snapshot says it is incomplete.
"""

from __future__ import annotations

import re
from typing import Any
from collections.abc import Callable, Collection

from kops.errors import NotAKafkaCluster, ZnodeFormatError
from kops.kafka import paths
from kops.kafka.client import ZkClient
from kops.kafka.codecs.admin_requests import decode_partition_list, decode_reassignment
from kops.kafka.codecs.brokers import decode_broker
from kops.kafka.codecs.cluster import decode_cluster_id, decode_migration
from kops.kafka.codecs.configs import decode_config
from kops.kafka.codecs.controller import decode_controller, decode_controller_epoch
from kops.kafka.codecs.partition_state import decode_partition_state
from kops.kafka.codecs.topics import decode_topic
from kops.kafka.multiread import Node
from kops.model.brokers import Broker
from kops.model.partitions import Partition, TopicPartition
from kops.model.snapshot import ControllerInfo, Problem, RequestedMove, Snapshot
from kops.model.topics import Topic, TopicAssignment

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


def read_snapshot(client: ZkClient, progress: Progress | None = None,
                  only_topics: Collection[str] | None = None) -> Snapshot:
    """The whole cluster; with `only_topics`, a poll's view: the brokers, the controller and reassignment
    znodes and just those topics (their assignments and partition states, no configs), at a cost that grows
    with the topics asked for, not with the cluster (bench/poll.py)."""
    note = progress or (lambda _msg: None)
    if only_topics is None:
        check_is_kafka(client)
    c = _Collector()

    note("listing brokers, topics and configs")
    singles = [
        paths.CONTROLLER,
        paths.CONTROLLER_EPOCH,
        paths.CLUSTER_ID,
        paths.MIGRATION,
        paths.REASSIGN_PARTITIONS,
        paths.PREFERRED_REPLICA_ELECTION,
    ]
    controller_n, epoch_n, cluster_n, migration_n, reassign_n, election_n = client.get_many(singles)
    if only_topics is None:
        broker_ids, topic_names, deletions, topic_configs, broker_config_names = client.children_many(
            [paths.BROKER_IDS, paths.BROKER_TOPICS, paths.DELETE_TOPICS, paths.config_root("topics"),
             paths.config_root("brokers")])
    else:  # the topics asked for are read directly: a missing one reads as gone
        [broker_ids, deletions], topic_names = client.children_many([paths.BROKER_IDS, paths.DELETE_TOPICS]), \
            sorted(only_topics)
        topic_configs, broker_config_names = [], []
    ids = _int_children(broker_ids)
    names = sorted(topic_names or [])
    configured = set(topic_configs or [])
    broker_entities = sorted(broker_config_names or [])

    note(f"reading {len(ids)} brokers and {len(names)} topics")
    round2 = (
        [paths.broker(i) for i in ids]
        + [paths.topic(t) for t in names]
        + [paths.config("topics", t) for t in names if t in configured]
        + [paths.config("brokers", e) for e in broker_entities]
    )
    nodes = iter(client.get_many(round2))
    brokers: list[Broker] = []
    for broker_id in ids:
        node = next(nodes)
        path = paths.broker(broker_id)
        if node is not None:  # a broker that deregistered between the listing and the read
            try:
                brokers.append(decode_broker(broker_id, node.data, path, epoch=node.stat.czxid))
            except ZnodeFormatError as exc:
                c.problems.append(Problem(path, exc.problem))
    assignments: dict[str, TopicAssignment] = {}
    for name in names:
        node = next(nodes)
        if node is None:  # asked for by name and gone (deleted meanwhile)
            continue
        found = c.decode(decode_topic, node, paths.topic(name))
        if isinstance(found, TopicAssignment):
            assignments[name] = found
    configs: dict[str, dict[str, str]] = {}
    for name in names:
        if name in configured:
            found = c.decode(decode_config, next(nodes), paths.config("topics", name))
            configs[name] = found if isinstance(found, dict) else {}
    broker_configs: dict[str, dict[str, str]] = {}
    for entity in broker_entities:
        found = c.decode(decode_config, next(nodes), paths.config("brokers", entity))
        if isinstance(found, dict):
            broker_configs[entity] = found

    state_keys = [(name, p) for name, a in assignments.items() for p in sorted(a.replicas)]
    note(f"reading {len(state_keys)} partition states")
    state_nodes = client.get_many([paths.partition_state(t, p) for t, p in state_keys])
    states = {}
    for (name, number), node in zip(state_keys, state_nodes):
        states[(name, number)] = c.decode(decode_partition_state, node, paths.partition_state(name, number))

    topics: dict[str, Topic] = {}
    for name, a in assignments.items():
        topics[name] = Topic(
            name=name,
            partitions={
                p: Partition(
                    replicas=a.replicas[p],
                    adding=a.adding.get(p, ()),
                    removing=a.removing.get(p, ()),
                    state=states.get((name, p)),
                )
                for p in sorted(a.replicas)
            },
            topic_id=a.topic_id,
            config=configs.get(name, {}),
            initial_partition_count=a.initial_partition_count,
            undeleted_partition_count=a.undeleted_partition_count,
        )

    controller = c.decode(decode_controller, controller_n, paths.CONTROLLER)
    epoch = c.decode(decode_controller_epoch, epoch_n, paths.CONTROLLER_EPOCH)
    kraft_epoch = controller.kraft_controller_epoch if controller else -1
    requested = c.decode(decode_reassignment, reassign_n, paths.REASSIGN_PARTITIONS) or []
    if reassign_n is not None and c.problems and c.problems[-1].path == paths.REASSIGN_PARTITIONS:
        last = c.problems.pop()
        c.problems.append(Problem(last.path, f"Kafka ignores this reassignment znode: {last.message}"))
    election = c.decode(decode_partition_list, election_n, paths.PREFERRED_REPLICA_ELECTION) or []
    migration = c.decode(decode_migration, migration_n, paths.MIGRATION)

    return Snapshot(
        cluster_id=c.decode(decode_cluster_id, cluster_n, paths.CLUSTER_ID),  # type: ignore[arg-type]
        controller=ControllerInfo(
            id=controller.broker_id if controller else None,
            epoch=epoch,  # type: ignore[arg-type]
            kraft_controller_epoch=kraft_epoch,
        ),
        brokers=tuple(sorted(brokers, key=lambda b: b.id)),
        topics=topics,
        broker_configs=broker_configs,
        requested_moves=tuple(sorted(RequestedMove(r.topic, r.partition, r.replicas) for r in requested)),
        pending_deletions=tuple(sorted(deletions or [])),
        preferred_election=tuple(sorted(TopicPartition(tp.topic, tp.partition) for tp in election)),
        migration=migration_n is not None or kraft_epoch > 0 or migration is not None,
        problems=tuple(c.problems),
        connect=str(client.connect),
    )
