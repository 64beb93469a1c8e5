"""What a rehearsal's clone holds: every broker of the snapshot, every partition of the topics the plan touches,
and a per-broker sample of the rest.

The plan's topics are kept whole, with their configs, so the plan's fingerprint holds on the clone and
`kops apply` checks the clone exactly as it checks production. Other topics only load the brokers: they are
sampled so each broker keeps its share of leaders (deterministically: partitions are taken in the order of a
hash of their names), and a sampled topic is renumbered 0..k-1, because Kafka numbers partitions densely.
Kafka's internal topics are never cloned (the clone makes its own).
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from dataclasses import dataclass, field, replace

from kops.errors import UsageError
from kops.model.partitions import Partition, TopicPartition
from kops.model.plan import Plan
from kops.model.snapshot import Snapshot
from kops.model.topics import Topic

INTERNAL = ("__consumer_offsets", "__transaction_state", "__cluster_metadata", "__kops")
DEFAULT_MAX_PARTITIONS = 20_000


@dataclass(frozen=True)
class Sample:
    """The clone's layout (a snapshot of what to build) and production bytes per clone partition."""

    snapshot: Snapshot
    sizes: dict[TopicPartition, int]
    total_partitions: int
    whole_topics: tuple[str, ...]
    sampled: dict[str, tuple[int, int]] = field(default_factory=dict)  # topic -> (kept, of)

    @property
    def kept_partitions(self) -> int:
        return self.snapshot.partition_count

    def describe(self) -> str:
        whole = sum(len(self.snapshot.topics[t].partitions) for t in self.whole_topics if t in self.snapshot.topics)
        text = (f"{self.kept_partitions:,} of {self.total_partitions:,} partitions: the plan's "
                f"{len(self.whole_topics)} topics whole ({whole:,} partitions)")
        if self.sampled:
            kept = sum(k for k, _n in self.sampled.values())
            text += f", {kept:,} more sampled per broker from {len(self.sampled)} other topics"
        return text


def plan_topics(plan: Plan) -> set[str]:
    found = plan.fingerprint.get("topics")
    named = set(found) if isinstance(found, dict) else set()
    return named | {m.topic for m in plan.moves}


def sample(snapshot: Snapshot, plan: Plan, sizes: dict[TopicPartition, int],
           max_partitions: int = DEFAULT_MAX_PARTITIONS) -> Sample:
    """The clone: `max_partitions` at most, beyond the plan's own topics, which are always kept whole."""
    if max_partitions < 1:
        raise UsageError("--max-partitions must be at least 1")
    whole = sorted(t for t in plan_topics(plan) if t in snapshot.topics)
    internal = [t for t in whole if t in INTERNAL]
    if internal:
        raise UsageError(f"the plan moves Kafka's internal topic {internal[0]}, which a clone cannot hold",
                         hint="rehearse a plan of the other topics (kops plan --topics)")
    topics = {t: snapshot.topics[t] for t in whole}
    kept_sizes = {tp: b for tp, b in sizes.items() if tp.topic in topics}
    budget = max_partitions - sum(len(t.partitions) for t in topics.values())
    others = [t for name, t in sorted(snapshot.topics.items()) if name not in topics and name not in INTERNAL]
    chosen = _per_broker(others, budget)
    sampled: dict[str, tuple[int, int]] = {}
    for topic in others:
        picked = sorted(chosen.get(topic.name, ()))
        if not picked:
            continue
        topics[topic.name] = _renumbered(topic, picked)
        sampled[topic.name] = (len(picked), len(topic.partitions))
        for new, old in enumerate(picked):
            if TopicPartition(topic.name, old) in sizes:
                kept_sizes[TopicPartition(topic.name, new)] = sizes[TopicPartition(topic.name, old)]
    clone = replace(snapshot, topics=topics, requested_moves=(), pending_deletions=(), preferred_election=(),
                    problems=())
    total = sum(len(t.partitions) for name, t in snapshot.topics.items() if name not in INTERNAL)
    return Sample(clone, kept_sizes, total, tuple(whole), sampled)


def _per_broker(topics: list[Topic], budget: int) -> dict[str, set[int]]:
    """Up to `budget` partitions, each leader broker keeping its share of them."""
    by_leader: dict[int, list[tuple[str, str, int]]] = defaultdict(list)
    for topic in topics:
        for p, part in topic.partitions.items():
            by_leader[_leader(part)].append((_hash(topic.name, p), topic.name, p))
    count = sum(len(v) for v in by_leader.values())
    if budget <= 0 or count == 0:
        return {}
    share = min(1.0, budget / count)
    chosen: dict[str, set[int]] = defaultdict(set)
    for leader in sorted(by_leader):
        members = sorted(by_leader[leader])
        for _h, name, p in members[:math.floor(len(members) * share)]:
            chosen[name].add(p)
    return chosen


def _leader(part: Partition) -> int:
    leader = part.leader
    return leader if leader >= 0 else (part.replicas[0] if part.replicas else -1)


def _hash(topic: str, partition: int) -> str:
    return hashlib.sha1(f"{topic}-{partition}".encode()).hexdigest()


def _renumbered(topic: Topic, picked: list[int]) -> Topic:
    return replace(topic, partitions={new: topic.partitions[old] for new, old in enumerate(picked)},
                   initial_partition_count=None, undeleted_partition_count=None)
