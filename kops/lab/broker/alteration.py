"""What one AlterTopics entry asks for, decided purely (seed 001), or the error the KIP says to answer.

Rules, in the order they are checked:
1. the topic must exist (INVALID_TOPIC_EXCEPTION);
2. an explicit assignment cannot come with a partition count or replication factor change, and kops (where
   the KIP is silent) takes one of the latter two at a time (INVALID_REQUEST);
3. partition count: never below 1 or the current count (INVALID_PARTITIONS; KIP-253 clusters shrink through
   `undeleted_partition_count` instead), not while partitions are marked for deletion (INVALID_PARTITIONS);
   new partitions get the topic's replication factor, placed round-robin over the live brokers
   (INVALID_REPLICATION_FACTOR when there are too few);
4. replication factor: 1..live brokers (INVALID_REPLICATION_FACTOR); lowering keeps each partition's first
   replicas (the preferred leader stays), raising adds the live brokers holding the fewest of this topic's
   replicas, ties to the lowest id;
5. assignment: every partition must exist and every list be non-empty without duplicates
   (INVALID_REPLICA_ASSIGNMENT), every broker registered (UNKNOWN_MEMBER_ID);
6. any reassignment (4 or 5) is refused while one is in flight on the cluster or on this topic
   (PARTITION_REASSIGNMENT_IN_PROGRESS), as only one may run at a time.
Entries that change nothing are dropped; an empty result is a success that writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kops.kip179.protocol import UNCHANGED, AlteredTopic, ErrorCode, TopicResult
from kops.model.topics import TopicAssignment


@dataclass(frozen=True)
class Alteration:
    """What an accepted entry writes: new partitions (topic znode) and reassignment targets."""

    topic: str
    new_partitions: dict[int, tuple[int, ...]] = field(default_factory=dict)
    targets: dict[int, tuple[int, ...]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.new_partitions or self.targets)


def decide(request: AlteredTopic, current: TopicAssignment | None, live: set[int], registered: set[int],
           reassignment_in_progress: bool) -> Alteration | TopicResult:
    name = request.topic

    def error(code: ErrorCode, message: str) -> TopicResult:
        return TopicResult(name, code, message)

    if current is None:
        return error(ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic {name!r} does not exist")
    if request.assignment and (request.num_partitions != UNCHANGED or request.replication_factor != UNCHANGED):
        return error(ErrorCode.INVALID_REQUEST, "an explicit partition_assignment cannot be combined with "
                                                "num_partitions or replication_factor")
    if request.num_partitions != UNCHANGED and request.replication_factor != UNCHANGED:
        return error(ErrorCode.INVALID_REQUEST, "change num_partitions and replication_factor in separate requests")
    if request.num_partitions != UNCHANGED:
        return _partitions(request, current, live)
    busy = reassignment_in_progress or bool(current.adding or current.removing)
    if request.replication_factor != UNCHANGED:
        return _replication_factor(request, current, live, busy)
    return _assignment(request, current, registered, busy)


def _partitions(request: AlteredTopic, current: TopicAssignment, live: set[int]) -> Alteration | TopicResult:
    name, wanted, count = request.topic, request.num_partitions, len(current.replicas)
    if wanted < 1 or wanted < count:
        return TopicResult(name, ErrorCode.INVALID_PARTITIONS,
                           f"num_partitions {wanted} is below the current {count}: partitions cannot be removed "
                           f"(on a cluster with kip253.partition.deletion, lower undeleted_partition_count)")
    undeleted = current.undeleted_partition_count
    if undeleted is not None and undeleted < count:
        return TopicResult(name, ErrorCode.INVALID_PARTITIONS,
                           f"partitions {undeleted}..{count - 1} are marked for deletion; expand once they are removed")
    if wanted == count:
        return Alteration(name)
    rf = len(current.replicas[min(current.replicas)])
    brokers = sorted(live)
    if rf > len(brokers):
        return TopicResult(name, ErrorCode.INVALID_REPLICATION_FACTOR,
                           f"replication factor {rf} is larger than the {len(brokers)} live brokers")
    new = {p: tuple(brokers[(p + i) % len(brokers)] for i in range(rf)) for p in range(count, wanted)}
    return Alteration(name, new_partitions=new)


def _replication_factor(request: AlteredTopic, current: TopicAssignment, live: set[int],
                        busy: bool) -> Alteration | TopicResult:
    name, rf = request.topic, request.replication_factor
    if rf < 1 or rf > len(live):
        return TopicResult(name, ErrorCode.INVALID_REPLICATION_FACTOR,
                           f"replication_factor {rf} must be between 1 and the {len(live)} live brokers")
    if busy:
        return _in_progress(name)
    load = {b: 0 for b in live}
    for replicas in current.replicas.values():
        for b in replicas:
            load[b] = load.get(b, 0) + 1
    targets = {}
    for p, replicas in sorted(current.replicas.items()):
        if len(replicas) > rf:
            targets[p] = replicas[:rf]
            for b in replicas[rf:]:
                load[b] -= 1
        elif len(replicas) < rf:
            added = []
            for _ in range(rf - len(replicas)):
                choice = min((b for b in live if b not in replicas and b not in added), key=lambda b: (load[b], b))
                added.append(choice)
                load[choice] += 1
            targets[p] = tuple(replicas) + tuple(added)
    return Alteration(name, targets=targets)


def _assignment(request: AlteredTopic, current: TopicAssignment, registered: set[int],
                busy: bool) -> Alteration | TopicResult:
    name = request.topic
    for p, brokers in sorted(request.assignment.items()):
        if p not in current.replicas:
            return TopicResult(name, ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"partition {p} does not exist")
        if not brokers or len(set(brokers)) != len(brokers):
            return TopicResult(name, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"partition {p}: replicas {list(brokers)} are empty or repeat a broker")
        unknown = sorted(set(brokers) - registered)
        if unknown:
            return TopicResult(name, ErrorCode.UNKNOWN_MEMBER_ID,
                               f"partition {p}: brokers {unknown} are not registered")
    targets = {p: tuple(b) for p, b in request.assignment.items() if tuple(b) != current.replicas[p]}
    if targets and busy:
        return _in_progress(name)
    return Alteration(name, targets=targets)


def _in_progress(name: str) -> TopicResult:
    return TopicResult(name, ErrorCode.PARTITION_REASSIGNMENT_IN_PROGRESS,
                       "a partition reassignment is in progress; only one may run at a time")
