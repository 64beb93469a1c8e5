"""A whole cluster's layout through Kafka's Admin API: the same `Snapshot` (and kops-snapshot/1 file) the
ZooKeeper reader makes, for clusters kops cannot reach through ZooKeeper (KRaft, Kafka 4).

Metadata (DescribeTopics) gives replicas in order, leaders, leader epochs and ISR; DescribeCluster the brokers
with their racks and the cluster id; ListPartitionReassignments what is adding and removing; DescribeConfigs the
overrides (dynamic topic configs and dynamic per-broker configs: the same maps ZooKeeper holds, so throttles read
the same; the cluster-wide default, `<default>` in ZooKeeper, is not asked for: kafka-python refuses the empty
broker resource name Kafka uses for it). What the Admin API does not carry stays empty: ZooKeeper's registration
versions and epochs, the KIP-253 counts, the seeds' features.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.errors import KafkaError

from kops.bulk import collector_paused
from kops.errors import ConnectionFailed
from kops.model.brokers import Broker
from kops.model.partitions import Partition, PartitionState
from kops.model.snapshot import ControllerInfo, RequestedMove, Snapshot, admin_api_connect
from kops.model.topics import Topic

TOPIC_SOURCES = {"DYNAMIC_TOPIC_CONFIG"}
BROKER_SOURCES = {"DYNAMIC_BROKER_CONFIG"}


MIGRATING = "zookeeper.metadata.migration.enable"


@collector_paused()
def read_snapshot(client: KafkaAdminClient, where: str, only_topics: set[str] | None = None) -> Snapshot:
    """The whole cluster, or (`only_topics`) the brokers plus those topics: what an executor's poll needs."""
    try:
        cluster = client.describe_cluster()
        names = sorted(n for n in client.list_topics() if only_topics is None or n in only_topics)
        described = client.describe_topics(names) if names else []
        moving = client.list_partition_reassignments()
        configs = client.describe_configs([ConfigResource(ConfigResourceType.TOPIC, n) for n in names]) if names else {}
    except KafkaError as exc:
        raise ConnectionFailed(f"the cluster did not answer: {exc}", where=where,
                               hint="check the bootstrap servers, --command-config and the cluster's health") from None
    silent: set[int] = set()
    if only_topics is None:  # broker configs: dynamic ones (throttles) and static ones (a migration)
        configs["broker"], silent = _broker_configs(client, [int(b["broker_id"]) for b in cluster["brokers"]])
    brokers = tuple(sorted((_broker(b) for b in cluster["brokers"] if int(b["broker_id"]) not in silent),
                           key=lambda b: b.id))
    adding = {(tp.topic, tp.partition): r for tp, r in moving.items()}
    topic_configs = configs.get("topic", {})
    topics = {t["name"]: _topic(t, adding, _overrides(topic_configs.get(t["name"], {}), TOPIC_SOURCES))
              for t in described}
    broker_configs = {name: found for name, values in configs.get("broker", {}).items()
                      if (found := _overrides(values, BROKER_SOURCES))}
    migration = any(str(values.get(MIGRATING, {}).get("value")).lower() == "true"
                    for values in configs.get("broker", {}).values())
    requested = tuple(RequestedMove(tp.topic, tp.partition, tuple(r for r in flight.get("replicas", ())
                                                                if r not in flight.get("removing_replicas", ())))
                      for tp, flight in sorted(moving.items(), key=lambda kv: (kv[0].topic, kv[0].partition))
                      if only_topics is None or tp.topic in only_topics)
    return Snapshot(cluster_id=cluster.get("cluster_id"),
                    controller=ControllerInfo(id=cluster.get("controller_id"), epoch=None),
                    brokers=brokers, topics=topics, broker_configs=broker_configs, requested_moves=requested,
                    migration=migration, connect=admin_api_connect(where))


def _broker_configs(client: KafkaAdminClient, ids: list[int]) -> tuple[dict[str, Any], set[int]]:
    """Each broker's configs, asked of that broker. One that does not answer (killed, its fencing not yet seen
    by every broker) counts as gone: the executor's health check stops for it, and no throttle is ever planned
    from configs kops could not read."""
    found: dict[str, Any] = {}
    silent: set[int] = set()
    for broker in ids:
        try:
            answer = client.describe_configs([ConfigResource(ConfigResourceType.BROKER, str(broker))],
                                             config_filter="all")
        except KafkaError:
            silent.add(broker)
            continue
        found.update(answer.get("broker", {}))
    return found, silent


def _overrides(values: dict[str, dict[str, Any]], sources: set[str]) -> dict[str, str]:
    """The values set on this entity itself (not defaults, not static files); sensitive ones are never shown."""
    return {key: str(v["value"]) for key, v in values.items()
            if v.get("config_source") in sources and not v.get("is_sensitive") and v.get("value") is not None}


def _broker(raw: dict[str, Any]) -> Broker:
    host, port = raw["host"], int(raw["port"])
    return Broker(id=int(raw["broker_id"]), host=host, port=port, endpoints=(f"PLAINTEXT://{host}:{port}",),
                  rack=raw.get("rack"))


def _topic(raw: dict[str, Any], moving: dict[tuple[str, int], dict[str, list[int]]], config: dict[str, str]) -> Topic:
    partitions = {}
    for p in raw["partitions"]:
        number = int(p["partition_index"])
        flight = moving.get((raw["name"], number), {})
        state = PartitionState(leader=int(p["leader_id"]), leader_epoch=int(p.get("leader_epoch", 0)),
                               isr=tuple(p["isr_nodes"]), controller_epoch=-1)
        partitions[number] = Partition(replicas=tuple(p["replica_nodes"]),
                                       adding=tuple(flight.get("adding_replicas", ())),
                                       removing=tuple(flight.get("removing_replicas", ())), state=state)
    return Topic(name=raw["name"], partitions=partitions, topic_id=_topic_id(raw.get("topic_id")), config=config)


def _topic_id(raw: object) -> str | None:
    """Kafka's base64 form of the topic's UUID (what ZooKeeper stores), from kafka-python's dashed UUID."""
    if not raw:
        return None
    return base64.urlsafe_b64encode(uuid.UUID(str(raw)).bytes).decode().rstrip("=")
