"""A whole cluster's layout through Kafka's Admin API: the same `Snapshot` (and kops-snapshot/1 file) the
ZooKeeper reader makes, for clusters kops cannot reach through ZooKeeper (KRaft, Kafka 4).

Metadata gives replicas in order, leaders, leader epochs and ISR, asked of every serving broker and merged
(`kops.cluster.admin.metadata`: a broker answers from its own, possibly lagging, copy); DescribeCluster the brokers
with their racks, which of them are fenced (v2, KIP-1073: registered, not serving; not live), the cluster id and,
in ZooKeeper mode, the controller; DescribeQuorum the KRaft controller (the quorum's leader and epoch);
ListPartitionReassignments (answered by the controller) what is adding and removing; DescribeConfigs the
overrides (dynamic topic configs and dynamic per-broker configs: the same maps ZooKeeper holds, so throttles read
the same; the cluster-wide default, `<default>` in ZooKeeper, is not asked for: kafka-python refuses the empty
broker resource name Kafka uses for it); DescribeTopicPartitions, for partitions without a live leader only, their
eligible leader replicas (KIP-966). What the Admin API does not carry stays empty: ZooKeeper's registration
versions and epochs, the ZooKeeper-mode controller epoch, the KIP-253 counts, the seeds' features.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.errors import KafkaError, UnsupportedVersionError, for_code

from kops.bulk import collector_paused
from kops.cluster.admin.metadata import (
    PartitionView,
    Quorum,
    TopicView,
    ask_each,
    describe_quorum,
    merge,
    offers_quorum,
)
from kops.errors import ConnectionFailed
from kops.model.brokers import Broker
from kops.model.partitions import Partition, PartitionState
from kops.model.snapshot import (
    PROPAGATING,
    ControllerInfo,
    EligibleLeaders,
    Problem,
    RequestedMove,
    Snapshot,
    admin_api_connect,
)
from kops.model.topics import Topic

TOPIC_SOURCES = {"DYNAMIC_TOPIC_CONFIG"}
BROKER_SOURCES = {"DYNAMIC_BROKER_CONFIG"}
SETTLE_SECONDS = 5.0  # how long brokers whose views disagree are asked again before the snapshot says so
SETTLE_EVERY = 0.25


MIGRATING = "zookeeper.metadata.migration.enable"


@dataclass(frozen=True)
class Waiting:
    """How the reader waits for brokers to agree: `settle` seconds, on these clocks (tests pass their own)."""

    settle: float = SETTLE_SECONDS
    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic


@dataclass
class Listings:
    """The reassignments the adapter's last read listed, kept between its reads. A move listed then and not now has
    finished or been cancelled; Kafka then shows its target or its original replicas, never the two together. A
    broker whose view still shows them all (target plus the replicas being removed) has not applied the end yet,
    while the controller's list already says nothing moves: on a loaded KRaft cluster a poll paired the two and
    saw a four-replica partition at rest (stop 33's and stop 34's CI)."""

    last: dict[Any, dict[str, list[int]]] = field(default_factory=dict)

    def unapplied(self, moving: dict[Any, dict[str, list[int]]], topics: dict[str, TopicView]) -> dict[Any, str]:
        """The moves that ended since the last read whose replicas the brokers' view still shows all of."""
        found = {}
        for tp, flight in self.last.items():
            topic = topics.get(tp.topic)
            part = topic.partitions.get(tp.partition) if topic else None
            union = list(flight.get("replicas", ()))
            # only a move that removes replicas ends on fewer than it showed in flight: a pure addition (a larger
            # replication factor) ends on all of them, which is its target, not a view behind the controller's
            removing = flight.get("removing_replicas")
            if tp not in moving and part is not None and removing and sorted(part.replicas) == sorted(union):
                found[tp] = (f"partition {tp.partition}'s reassignment ended (the controller lists it no more) but "
                             f"the brokers still show all of {union}")
        return found

    def remember(self, moving: dict[Any, dict[str, list[int]]], unapplied: dict[Any, str]) -> None:
        """What the next read checks: this listing, and the ended moves the brokers have not shown yet."""
        self.last = {**{tp: self.last[tp] for tp in unapplied}, **moving}


@dataclass(frozen=True)
class _Read:
    topics: dict[str, TopicView]
    moving: dict[Any, dict[str, list[int]]]
    silent: set[int]
    problems: list[Problem]
    quorum: Quorum | None


@collector_paused()
def read_snapshot(client: KafkaAdminClient, where: str, only_topics: set[str] | None = None,
                  waiting: Waiting = Waiting(), listings: Listings | None = None) -> Snapshot:
    """The whole cluster, or (`only_topics`) the brokers plus those topics: what an executor's poll needs.
    `listings`: what the same reader listed last time (`Listings`), checked and updated."""
    try:
        cluster = client.describe_cluster()
        fenced = {int(b["broker_id"]) for b in cluster["brokers"] if b.get("is_fenced")}
        serving = [int(b["broker_id"]) for b in cluster["brokers"] if int(b["broker_id"]) not in fenced]
        read = _settled(client, serving, only_topics, waiting, listings or Listings())
        names = sorted(read.topics)
        configs, config_problems = _topic_configs(client, names, [b for b in serving if b not in read.silent])
    except KafkaError as exc:
        raise ConnectionFailed(f"the cluster did not answer: {exc}", where=where,
                               hint="check the bootstrap servers, --command-config and the cluster's health") from None
    silent = set(read.silent)
    if only_topics is None:  # broker configs: dynamic ones (throttles) and static ones (a migration)
        configs["broker"], unanswered = _broker_configs(client, [b for b in serving if b not in silent])
        silent |= unanswered
    brokers = tuple(sorted((_broker(b) for b in cluster["brokers"] if int(b["broker_id"]) not in silent | fenced),
                           key=lambda b: b.id))
    adding = {(tp.topic, tp.partition): r for tp, r in read.moving.items()}
    topic_configs = configs.get("topic", {})
    topics = {name: _topic(name, t, adding, _overrides(topic_configs.get(name, {}), TOPIC_SOURCES))
              for name, t in read.topics.items()}
    broker_configs = {name: found for name, values in configs.get("broker", {}).items()
                      if (found := _overrides(values, BROKER_SOURCES))}
    migration = any(str(values.get(MIGRATING, {}).get("value")).lower() == "true"
                    for values in configs.get("broker", {}).values())
    requested = tuple(RequestedMove(tp.topic, tp.partition, tuple(r for r in flight.get("replicas", ())
                                                                if r not in flight.get("removing_replicas", ())))
                      for tp, flight in sorted(read.moving.items(), key=lambda kv: (kv[0].topic, kv[0].partition))
                      if only_topics is None or tp.topic in only_topics)
    return Snapshot(cluster_id=cluster.get("cluster_id"),
                    controller=controller_of(cluster.get("controller_id"), read.quorum, offers_quorum(client)),
                    brokers=brokers, topics=topics, broker_configs=broker_configs, requested_moves=requested,
                    migration=migration, problems=tuple(read.problems + config_problems),
                    connect=admin_api_connect(where), fenced=tuple(sorted(fenced)),
                    metadata_version=_metadata_version(client) if only_topics is None else None,
                    eligible_leaders=_eligible_leaders(client, _offline(topics, brokers)) if only_topics is None
                    else ())


def controller_of(described: int | None, quorum: Quorum | None, kraft: bool) -> ControllerInfo:
    """The active controller: on KRaft the metadata quorum's leader and its epoch, as DescribeQuorum says (a KRaft
    broker answers DescribeCluster with a random live broker as its "controller", KIP-919), or none where the
    quorum is not described to kops (no DESCRIBE on the cluster); in ZooKeeper mode DescribeCluster's, whose epoch
    the Admin API does not carry."""
    if quorum is not None:
        return ControllerInfo(id=quorum.leader, epoch=quorum.epoch if quorum.leader is not None else None)
    return ControllerInfo(id=None if kraft else described, epoch=None)


def _metadata_version(client: KafkaAdminClient) -> int | None:
    """The finalized metadata.version feature level (DescribeFeatures): what the cluster's KRaft metadata allows
    (JBOD from 3.7-IV2), not the brokers' software; None in ZooKeeper mode or where the broker does not say."""
    try:
        found = client.describe_features().get("metadata.version", {}).get("finalized")
    except KafkaError:
        return None
    return int(found[1]) if found else None


def _offline(topics: dict[str, Topic], brokers: tuple[Broker, ...]) -> list[tuple[str, int]]:
    """The partitions without a live leader (Partition.is_offline, inlined: a whole read may hold a million)."""
    live = {b.id for b in brokers}
    return sorted((name, n) for name, t in topics.items() for n, part in t.partitions.items()
                  if part.state is None or part.state.leader not in live)


def _eligible_leaders(client: KafkaAdminClient, offline: list[tuple[str, int]],
                      attempts: int = 3) -> tuple[EligibleLeaders, ...]:
    """KIP-966's eligible leader replicas of the partitions without a live leader (`offline`, topic and number),
    through DescribeTopicPartitions (kafka-python's own request; KRaft brokers 3.7+), page by page. Metadata
    does not carry them, and an empty ISR does not mean no clean leader is left where Kafka keeps them. Where the
    cluster cannot say (ZooKeeper mode, Kafka before 3.7) or does not answer after `attempts`, none: a reader of
    the snapshot then knows they were not read, never that there are none."""
    if not offline:
        return ()
    wanted = set(offline)
    found: dict[tuple[str, int], EligibleLeaders] = {}
    cursor: dict[str, Any] | None = None
    for _ in range(attempts):
        try:
            while True:
                page = client.describe_topic_partitions(sorted({t for t, _n in offline}), cursor=cursor)
                for topic in page["topics"]:
                    for p in topic["partitions"] if not topic["error_code"] else ():
                        key = (topic["name"], p["partition_index"])
                        if key in wanted and not p["error_code"]:
                            found[key] = EligibleLeaders(*key, tuple(p["eligible_leader_replicas"] or ()),
                                                         tuple(p["last_known_elr"] or ()))
                cursor = page["next_cursor"]
                if cursor is None:
                    return tuple(found[k] for k in sorted(found))
        except UnsupportedVersionError:
            return ()  # IncompatibleBrokerVersion too: the broker has no DescribeTopicPartitions
        except KafkaError:
            continue  # asked again from the page it failed on (kafka-python picks another node if this one died)
    return tuple(found[k] for k in sorted(found))


def _settled(client: KafkaAdminClient, serving: list[int], only_topics: set[str] | None, waiting: Waiting,
             listings: Listings) -> _Read:
    """Every serving broker's Metadata, merged, with the reassignments the controller lists; asked again while
    the brokers disagree in a way no evidence orders, the merged replicas do not match the controller's list,
    or the list changed while the brokers answered (it is read before and after them), for up to `waiting.settle`
    seconds. What still differs then is named as a problem. A poll (`only_topics`: the executor's progress reads,
    every half second) does not wait: its next poll asks again."""
    deadline = waiting.monotonic() + (waiting.settle if only_topics is None else 0.0)
    while True:
        listed = client.list_partition_reassignments()
        quorum = describe_quorum(client)
        committed = quorum.high_watermark if quorum is not None else None
        answers = ask_each(client, serving, only_topics)
        if not answers.views:
            raise ConnectionFailed(f"no broker answered Metadata (asked {', '.join(map(str, serving)) or 'none'})",
                                   where="Metadata", hint="check the brokers")
        views, lagging = _caught_up(answers.views, answers.offsets, committed)
        merged = merge(views, answers.offsets)
        moving = client.list_partition_reassignments()
        problems = [Problem(f"{PROPAGATING}{d.topic}", d.message) for d in merged.disagreements] + lagging
        problems += _listing_problems(merged.topics, moving) + _listing_changed(listed, moving)
        unapplied = listings.unapplied(moving, merged.topics)
        problems += [Problem(f"{PROPAGATING}{tp.topic}", message) for tp, message in sorted(
            unapplied.items(), key=lambda kv: (kv[0].topic, kv[0].partition))]
        if not problems or waiting.monotonic() >= deadline:
            listings.remember(moving, unapplied)
            if problems:
                problems.append(Problem(PROPAGATING.rstrip("/"), f"brokers {', '.join(map(str, sorted(views)))} "
                                        f"still disagreed after {waiting.settle:g} s"))
            return _Read(merged.topics, moving, answers.silent, problems, quorum)
        waiting.sleep(SETTLE_EVERY)


def _caught_up(views: dict[int, Any], offsets: dict[int, tuple[int, int]],
               committed: int | None) -> tuple[dict[int, Any], list[Problem]]:
    """The views of brokers whose image held every record committed before the read began (KRaft: the metadata
    log's high watermark from DescribeQuorum); all of them where the cluster does not say. None caught up: the
    views are used, and that is a problem."""
    if committed is None or len(offsets) < len(views):
        return views, []
    fresh = {b: v for b, v in views.items() if offsets[b][0] >= committed - 1}
    if fresh:
        return fresh, []
    at = ", ".join(f"{b} at {offsets[b][1]}" for b in sorted(offsets))
    return views, [Problem(PROPAGATING.rstrip("/"), f"no broker has applied the metadata log up to offset "
                                                    f"{committed - 1}, which the controller committed ({at})")]


def _listing_changed(before: dict[Any, dict[str, list[int]]],
                     after: dict[Any, dict[str, list[int]]]) -> list[Problem]:
    """The reassignments listed before and after the brokers were asked differ: a move started or finished
    while they answered, and their views may pair the other side's replicas with this listing (a finished
    move's target plus the replica it removed, listed as moving nothing). Asked again, or named."""
    changed = sorted({tp for tp in {*before, *after} if before.get(tp) != after.get(tp)},
                     key=lambda tp: (tp.topic, tp.partition))
    return [Problem(f"{PROPAGATING}{tp.topic}", f"partition {tp.partition}'s reassignment "
                    f"{'started' if tp not in before else 'finished' if tp not in after else 'changed'} "
                    "while the brokers were asked") for tp in changed]


def _listing_problems(topics: dict[str, TopicView], moving: dict[Any, dict[str, list[int]]]) -> list[Problem]:
    """Reassignments the controller lists whose replicas the brokers' merged view does not show yet."""
    found = []
    for tp, flight in sorted(moving.items(), key=lambda kv: (kv[0].topic, kv[0].partition)):
        topic = topics.get(tp.topic)
        part = topic.partitions.get(tp.partition) if topic else None
        if part is not None and tuple(part.replicas) != tuple(flight.get("replicas", part.replicas)):
            found.append(Problem(f"{PROPAGATING}{tp.topic}", f"partition {tp.partition} is being reassigned to "
                                 f"{list(flight['replicas'])} (the controller) but the brokers show "
                                 f"{list(part.replicas)}"))
    return found


def _topic_configs(client: KafkaAdminClient, names: list[str],
                   brokers: list[int]) -> tuple[dict[str, Any], list[Problem]]:
    """The topics' configs, asked of each broker in turn until one describes every topic: a broker that does
    not know a topic yet answers an error for it, which kafka-python would hand back as an empty config (no
    overrides), so errors are read from the response itself."""
    if not names:
        return {}, []
    request = client._describe_configs_request([ConfigResource(ConfigResourceType.TOPIC, n) for n in names])  # noqa: SLF001 - kafka-python's own request
    errors: dict[str, int] = {}
    asked: list[int | None] = [*brokers] or [None]
    for broker in asked:
        async def send(node: int | None = broker) -> Any:
            return await client._manager.send(request, node_id=node)  # noqa: SLF001 - kafka-python's own routing
        try:
            response = client._manager.run(send)  # noqa: SLF001 - as kafka-python runs its requests
        except KafkaError:
            continue
        errors = {r.resource_name: r.error_code for r in response.results if r.error_code}
        if not errors:
            return client._describe_configs_process_responses([response]), []  # noqa: SLF001 - kafka-python's own parsing
    if not errors:
        raise ConnectionFailed("no broker answered DescribeConfigs", where="DescribeConfigs", hint="check the brokers")
    configs = client._describe_configs_process_responses([response])  # noqa: SLF001 - kafka-python's own parsing
    return configs, [Problem(f"{PROPAGATING}{name}/config", f"no broker described its config "
                                                             f"({for_code(code).__name__} from the last)")
                     for name, code in sorted(errors.items())]


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


def _topic(name: str, view: TopicView, moving: dict[tuple[str, int], dict[str, list[int]]],
           config: dict[str, str]) -> Topic:
    partitions = {}
    for number, p in sorted(view.partitions.items()):
        flight = moving.get((name, number), {})
        replicas = _replicas(p, flight)
        state = PartitionState(leader=p.leader, leader_epoch=max(p.leader_epoch, 0), isr=p.isr, controller_epoch=-1)
        partitions[number] = Partition(replicas=replicas,
                                       adding=tuple(r for r in flight.get("adding_replicas", ()) if r in replicas),
                                       removing=tuple(r for r in flight.get("removing_replicas", ()) if r in replicas),
                                       state=state)
    return Topic(name=name, partitions=partitions, topic_id=_topic_id(view.topic_id), config=config)


def _replicas(p: PartitionView, flight: dict[str, list[int]]) -> tuple[int, ...]:
    """The brokers' replicas, or the controller's while a reassignment the brokers do not show yet is listed
    (the controller's list is newer than any broker's copy; a problem names the difference)."""
    return tuple(flight.get("replicas", ())) or p.replicas


def _topic_id(raw: object) -> str | None:
    """Kafka's base64 form of the topic's UUID (what ZooKeeper stores), from kafka-python's dashed UUID."""
    if not raw:
        return None
    return base64.urlsafe_b64encode(uuid.UUID(str(raw)).bytes).decode().rstrip("=")
