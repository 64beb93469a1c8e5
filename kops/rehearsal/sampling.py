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
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace

from kops.errors import UsageError
from kops.model.partitions import Partition, TopicPartition
from kops.model.plan import Batch, Plan
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
    whole = sorted(t for t in plan_topics(plan) if t in snapshot.topics and t not in INTERNAL)
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


def without_internal(plan: Plan) -> tuple[Plan, list[str]]:
    """The plan without its moves of Kafka's internal topics (a clone makes its own `__kops` and
    `__consumer_offsets`), renumbered; what was left out, one phrase per topic."""
    skipped = Counter(m.topic for m in plan.moves if m.topic in INTERNAL)
    if not skipped:
        return plan, []

    def kept(batches: tuple[Batch, ...]) -> tuple[Batch, ...]:
        out = [replace(b, moves=tuple(m for m in b.moves if m.topic not in INTERNAL)) for b in batches]
        return tuple(replace(b, index=i) for i, b in enumerate((b for b in out if b.moves), start=1))

    topics = plan.fingerprint.get("topics")
    fingerprint = {**plan.fingerprint, "topics": {t: d for t, d in topics.items() if t not in INTERNAL}} \
        if isinstance(topics, dict) else plan.fingerprint
    trimmed = replace(plan, batches=kept(plan.batches), fingerprint=fingerprint,
                      election=tuple(tp for tp in plan.election if tp.topic not in INTERNAL),
                      rollback=replace(plan.rollback, batches=kept(plan.rollback.batches),
                                       election=tuple(tp for tp in plan.rollback.election if tp.topic not in INTERNAL)))
    return trimmed, [f"the moves of Kafka's internal topic {t} ({n}) are not rehearsed: a clone has its own"
                     for t, n in sorted(skipped.items())]


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
    exact = {leader: len(members) * share for leader, members in by_leader.items()}
    quota = {leader: math.floor(x) for leader, x in exact.items()}
    spare = min(budget, count) - sum(quota.values())  # largest remainders first, so the budget is used whole
    for leader in sorted(exact, key=lambda b: (quota[b] - exact[b], b))[:spare]:
        quota[leader] += 1
    chosen: dict[str, set[int]] = defaultdict(set)
    for leader in sorted(by_leader):
        for _h, name, p in sorted(by_leader[leader])[:quota[leader]]:
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
