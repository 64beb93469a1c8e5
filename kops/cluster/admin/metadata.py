"""Topic metadata asked of every serving broker, and the views merged into one that is at least as new as each.

A broker answers Metadata from its own copy of the cluster's metadata, which lags the controller by a moment
(KRaft: how far it has replayed the metadata log; ZooKeeper mode: the UpdateMetadata requests it has applied).
kafka-python asks whichever broker is least loaded, so two reads in a row can come from two brokers at two
points in time: right after topics are created, one broker lists names another cannot describe yet. So the
reader asks each broker the same question and merges the answers here.

On KRaft, ApiVersions v3+ says how far a broker's image has replayed the metadata log (FinalizedFeaturesEpoch) and
DescribeQuorum how far the log is committed: the reader uses only brokers that have caught up (reader.py). Beyond
that (and in ZooKeeper mode, where no response says how far its broker is), views are ordered by what Kafka never
takes back:
- a partition's leader epoch only rises: the higher one is newer. KRaft raises it when the leader changes and
  when replicas leave the replica set (a reassignment's end or cancel), not when one starts, not when the ISR
  grows, and from metadata version 3.6 not when it shrinks;
- at the same leader epoch, a replica set that strictly contains the other is newer (a reassignment starts by
  adding replicas, without a new epoch);
- a topic's partitions are only ever added: more partitions is newer.
Every broker's view is a prefix of the same history, so one piece of such evidence that broker A is ahead of
broker B says A is ahead of B everywhere. That settles what no partition can: a topic listed by some brokers and
not by others is a creation when a broker that lists it is ahead of every one that does not, a deletion when a
broker that does not is ahead of every one that does (a deleted topic never comes back from a lagging broker);
the same goes for a name whose topic id differs (deleted and re-created). What evidence cannot order (a topic
named by some brokers only and nothing else to tell them apart, an ISR that differs at the same epoch) is a
`Disagreement`; the reader asks again for a few seconds, and names what still disagrees as a problem.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka import KafkaAdminClient
from kafka.errors import KafkaError
from kafka.protocol.admin import DescribeQuorumRequest
from kafka.protocol.api_key import ApiKey
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest

from kops import __version__


@dataclass(frozen=True)
class PartitionView:
    replicas: tuple[int, ...]
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]


@dataclass(frozen=True)
class TopicView:
    topic_id: str | None  # kafka-python's dashed UUID
    partitions: Mapping[int, PartitionView]


View = Mapping[str, TopicView]  # one broker's answer: the topics it can describe, each with its partitions


@dataclass(frozen=True)
class Disagreement:
    topic: str
    message: str


@dataclass(frozen=True)
class Merged:
    topics: dict[str, TopicView]
    disagreements: tuple[Disagreement, ...]


@dataclass(frozen=True)
class Answers:
    """One round of asking: each answering broker's view, the metadata offsets its image was at just before
    and just after it answered (KRaft; None elsewhere), and the brokers that did not answer."""

    views: dict[int, View]
    offsets: dict[int, tuple[int, int]]
    silent: set[int]


def ask_each(client: KafkaAdminClient, brokers: Iterable[int], topics: Iterable[str] | None) -> Answers:
    """Metadata of `topics` (None: all) from each of `brokers` at once, bracketed by ApiVersions: on KRaft its
    FinalizedFeaturesEpoch is the offset of the last metadata record the broker's image holds, so the view lies
    between the two. Sent through kafka-python's own request classes and connections, node by node."""
    names = None if topics is None else sorted(topics)
    asked = sorted(brokers)
    metadata = MetadataRequest(topics=None if names is None else [MetadataRequest.MetadataRequestTopic(name=n)
                                                                   for n in names],
                               allow_auto_topic_creation=False)

    async def each(request: Any) -> list[Any]:
        sent = [_send(client, request, b) for b in asked]
        answers: list[Any] = []
        for future in sent:
            try:
                answers.append(future if isinstance(future, Exception) else await future)
            except (KafkaError, OSError) as exc:
                answers.append(exc)
        return answers

    run = client._manager.run  # noqa: SLF001 - as kafka-python's admin methods run their requests
    # ApiVersions v3+ (KIP-511: with the client's name and version, as kafka-python's describe_features asks)
    versions = ApiVersionsRequest(min_version=3, client_software_name="kops", client_software_version=__version__)
    before, answers, after = run(each, versions), run(each, metadata), run(each, versions)
    found = Answers({}, {}, set())
    for broker, lo, answer, hi in zip(asked, before, answers, after, strict=True):
        if isinstance(answer, Exception):
            found.silent.add(broker)
            continue
        found.views[broker] = view_of(answer.to_dict()["topics"])
        offsets = (_offset(lo), _offset(hi))
        if offsets[0] >= 0 and offsets[1] >= 0:
            found.offsets[broker] = (offsets[0], offsets[1])
    return found


def _offset(answer: Any) -> int:
    return -1 if isinstance(answer, Exception) else int(getattr(answer, "finalized_features_epoch", -1) or -1)


@dataclass(frozen=True)
class Quorum:
    """The KRaft metadata quorum as DescribeQuorum describes it (brokers forward it to the active controller)."""

    leader: int | None  # the active controller's node id; None while one is being elected
    epoch: int  # the quorum's leader epoch, KRaft's controller epoch (kafka-metadata-quorum's LeaderEpoch)
    high_watermark: int  # every metadata record below it is committed


def describe_quorum(client: KafkaAdminClient) -> Quorum | None:
    """The metadata quorum: its leader, and the log's high watermark (a broker whose image holds offset high
    watermark - 1 has seen every change acknowledged before it was asked). None where the cluster does not say
    (ZooKeeper mode, no DESCRIBE on the cluster)."""
    topic = DescribeQuorumRequest.TopicData
    request = DescribeQuorumRequest(topics=[topic(topic_name="__cluster_metadata",
                                                  partitions=[topic.PartitionData(partition_index=0)])])

    async def ask() -> Any:
        return await client._manager.send(request)  # noqa: SLF001 - kafka-python's own routing

    try:
        response = client._manager.run(ask)  # noqa: SLF001 - as kafka-python runs its requests
        [partition] = response.topics[0].partitions
    except (KafkaError, OSError, IndexError, ValueError, AttributeError):
        return None
    if response.error_code or partition.error_code:
        return None
    leader = int(partition.leader_id)
    return Quorum(leader if leader >= 0 else None, int(partition.leader_epoch), int(partition.high_watermark))


def offers_quorum(client: KafkaAdminClient) -> bool:
    """The broker kops is connected to offers DescribeQuorum: a KRaft cluster (KIP-595; ZooKeeper-mode brokers do
    not list it), whether or not kops may ask it."""
    try:
        offered = client._manager.broker_version_data.api_versions  # noqa: SLF001 - its ApiVersions answer
    except (KafkaError, AttributeError):
        return False
    return int(ApiKey.DescribeQuorum) in (offered or {})


def _send(client: KafkaAdminClient, request: Any, broker: int) -> Any:
    """The future of `request` sent to `broker`, or the error that kept it from being sent (a broker kafka-python
    has no address for yet)."""
    try:
        return client._manager.send(request, node_id=broker)  # noqa: SLF001 - kafka-python's own routing
    except (KafkaError, OSError) as exc:
        return exc


def view_of(topics: list[dict[str, Any]]) -> dict[str, TopicView]:
    """The topics a broker can describe. One it answers with a topic-level error (UNKNOWN_TOPIC_OR_PARTITION,
    LEADER_NOT_AVAILABLE while a creation propagates) or with no partitions is one it does not know yet: Kafka
    has no topic without partitions. Partitions with an error of their own (no leader) are kept: they exist."""
    found: dict[str, TopicView] = {}
    for t in topics:
        if t.get("error_code", 0) or not t.get("partitions") or not t.get("name"):
            continue
        parts = {int(p["partition_index"]): PartitionView(tuple(p["replica_nodes"]), int(p["leader_id"]),
                                                          int(p.get("leader_epoch", -1)), tuple(p["isr_nodes"]))
                 for p in t["partitions"]}
        found[t["name"]] = TopicView(_dashed(t.get("topic_id")), parts)
    return found


def _dashed(raw: object) -> str | None:
    if not raw:
        return None
    value = str(uuid.UUID(str(raw)))
    return None if value == str(uuid.UUID(int=0)) else value


def newer(a: PartitionView, b: PartitionView) -> int | None:
    """1 when `a` is newer, -1 when `b` is, 0 when they are the same, None when nothing Kafka exposes says."""
    if a == b:
        return 0
    if a.leader_epoch != b.leader_epoch:
        return 1 if a.leader_epoch > b.leader_epoch else -1
    if set(a.replicas) > set(b.replicas):
        return 1
    if set(b.replicas) > set(a.replicas):
        return -1
    return None


def _topic_order(a: TopicView, b: TopicView) -> set[int]:
    """The directions (1: a ahead, -1: b ahead) the partitions of one topic, same id in both views, show."""
    found: set[int] = set()
    if len(a.partitions) != len(b.partitions):
        found.add(1 if len(a.partitions) > len(b.partitions) else -1)
    for number, pa in a.partitions.items():
        pb = b.partitions.get(number)
        if pb is not None and (order := newer(pa, pb)):
            found.add(order)
    return found


def ahead(views: Mapping[int, View], offsets: Mapping[int, tuple[int, int]] | None = None) -> set[tuple[int, int]]:
    """Pairs (x, y): broker x's view is provably newer than broker y's (its image was past y's when asked, or a
    partition says so), closed transitively. A pair with evidence both ways counts as neither."""
    pairs: set[tuple[int, int]] = set()
    brokers = sorted(views)
    offsets = offsets or {}
    for i, x in enumerate(brokers):
        for y in brokers[i + 1:]:
            found: set[int] = set()
            if x in offsets and y in offsets:
                found |= _offset_order(offsets[x], offsets[y])
            for name, tx in views[x].items():
                ty = views[y].get(name)
                if ty is not None and tx.topic_id == ty.topic_id:
                    found |= _topic_order(tx, ty)
            if found == {1}:
                pairs.add((x, y))
            elif found == {-1}:
                pairs.add((y, x))
    while True:
        more = {(x, z) for x, y in pairs for y2, z in pairs if y == y2 and x != z} - pairs
        if not more:
            return pairs
        pairs |= more


def _offset_order(x: tuple[int, int], y: tuple[int, int]) -> set[int]:
    """1 when x's image was past y's whatever the moment each answered, -1 the other way."""
    return {1} if x[0] > y[1] else {-1} if y[0] > x[1] else set()


def merge(views: Mapping[int, View], offsets: Mapping[int, tuple[int, int]] | None = None) -> Merged:
    """One view at least as new as every broker's, and what the evidence could not order."""
    order = ahead(views, offsets)
    topics: dict[str, TopicView] = {}
    disagreements: list[Disagreement] = []
    for name in sorted({n for v in views.values() for n in v}):
        holders = {b: v[name] for b, v in views.items() if name in v}
        chosen, problem = _choose_topic(name, holders, set(views) - set(holders), order)
        if problem is not None:
            disagreements.append(Disagreement(name, problem))
        if chosen:
            topic, partition_problem = _merge_partitions(chosen)
            topics[name] = topic
            if partition_problem is not None:
                disagreements.append(Disagreement(name, partition_problem))
    return Merged(topics, tuple(disagreements))


def _newest(group: set[int], others: set[int], order: set[tuple[int, int]]) -> bool:
    """Some broker of `group` is ahead of every broker of `others`."""
    return any(all((g, o) in order for o in others) for g in group)


def _choose_topic(name: str, holders: dict[int, TopicView], lacking: set[int],
                  order: set[tuple[int, int]]) -> tuple[dict[int, TopicView], str | None]:
    """The brokers' descriptions of topic `name` to merge (those naming its newest id; none when it is gone or
    undecided), and why it is undecided."""
    by_id: dict[str | None, set[int]] = {}
    for broker, topic in holders.items():
        by_id.setdefault(topic.topic_id, set()).add(broker)
    sides = [*by_id.values(), *([lacking] if lacking else [])]
    if len(sides) == 1:
        return holders, None
    for side in sides:
        if _newest(side, (set(holders) | lacking) - side, order):
            return ({b: holders[b] for b in side if b in holders}, None)
    said = "; ".join(f"broker{'s' if len(ids) > 1 else ''} {_ids(ids)} describe it (id {topic_id})"
                     for topic_id, ids in sorted(by_id.items(), key=lambda kv: min(kv[1])))
    if lacking:
        said += f"; broker{'s' if len(lacking) > 1 else ''} {_ids(lacking)} do{'es' if len(lacking) == 1 else ''} not"
    return {}, f"the brokers disagree and nothing orders their views ({said}): left out"


def _merge_partitions(holders: dict[int, TopicView]) -> tuple[TopicView, str | None]:
    """Each partition from the newest description of it; partitions only some brokers know are new ones. Where
    descriptions at the same leader epoch differ unordered (an ISR change propagating), the ISR is what all of
    them list (the smaller: a health check sees the shrink) and it is a disagreement."""
    first = holders[min(holders)]
    partitions: dict[int, PartitionView] = {}
    unordered: list[int] = []
    for number in sorted({p for t in holders.values() for p in t.partitions}):
        candidates = [t.partitions[number] for _, t in sorted(holders.items()) if number in t.partitions]
        best = next((c for c in candidates if all(newer(c, o) in (0, 1) for o in candidates)), None)
        if best is None:
            unordered.append(number)
            top = max(candidates, key=lambda c: (c.leader_epoch, len(c.replicas)))
            tied = [c for c in candidates if newer(c, top) is None or c == top]
            best = PartitionView(top.replicas, top.leader, top.leader_epoch,
                                 tuple(r for r in top.isr if all(r in c.isr for c in tied)))
        partitions[number] = best
    problem = None
    if unordered:
        problem = (f"the brokers describe partition(s) {_ids(unordered[:5])}{' ...' if len(unordered) > 5 else ''} "
                   "differently at the same leader epoch")
    return TopicView(first.topic_id, partitions), problem


def _ids(values: Iterable[int]) -> str:
    return ", ".join(map(str, sorted(values)))
