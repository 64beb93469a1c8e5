"""The clone's own latency: how long it takes to complete moves of nothing (controller reaction, the first
fetch, ISR changes reaching the controller). Production has such a latency too, unscaled; a clone second
times F would multiply it, so a rehearsal measures it first and scales only what is beyond it.

It grows with the moves submitted together (the controller handles each partition), so the probe, a topic
of empty single-replica partitions on the clone only, is moved between two brokers one partition at a time
and as many at once as the plan's largest batch; a batch of k moves is given the latency in between. The
probe is deleted afterwards.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from kops.cluster.port import Cluster
from kops.errors import EnvironmentProblem
from kops.model.partitions import TopicPartition

PROBE = "kops-rehearsal-probe"
ROUNDS = 2
MAX_PROBE_PARTITIONS = 100
TIMEOUT = 120.0


@dataclass(frozen=True)
class Latency:
    one: float  # seconds to complete one empty move
    many: float  # ... `count` of them submitted together
    count: int

    def for_moves(self, moves: int) -> float:
        if self.count <= 1 or moves <= 1:
            return self.one
        share = min(1.0, (moves - 1) / (self.count - 1))
        return self.one + max(0.0, self.many - self.one) * share


def measure(cluster: Cluster, brokers: list[int], largest_batch: int) -> Latency:
    """The clone's latency for 1 and for `largest_batch` (at most 100) empty moves; zero below 2 brokers."""
    if len(brokers) < 2:
        return Latency(0.0, 0.0, 1)
    count = max(1, min(largest_batch, MAX_PROBE_PARTITIONS))
    home, away = (brokers[0],), (brokers[1],)
    cluster.create_topic(PROBE, {p: home for p in range(count)}, {})
    _until(cluster, {p: home for p in range(count)})
    one = statistics.median(_round_trip(cluster, [0], home, away) for _ in range(ROUNDS))
    many = one if count == 1 else statistics.median(_round_trip(cluster, list(range(count)), home, away)
                                                    for _ in range(ROUNDS))
    cluster.delete_topic(PROBE)
    return Latency(one, many, count)


def _round_trip(cluster: Cluster, partitions: list[int], home: tuple[int, ...], away: tuple[int, ...]) -> float:
    """Seconds to move `partitions` away (timed), then back home (not timed)."""
    timed = 0.0
    for target in (away, home):
        started = time.monotonic()
        cluster.submit([(TopicPartition(PROBE, p), target) for p in partitions], cluster.snapshot(only_topics={PROBE}))
        _until(cluster, {p: target for p in partitions})
        timed = timed or time.monotonic() - started
    return timed


def _until(cluster: Cluster, wanted: dict[int, tuple[int, ...]]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while True:
        snap = cluster.snapshot(only_topics={PROBE})
        requested = {m.partition for m in snap.requested_moves if m.topic == PROBE}
        topic = snap.topics.get(PROBE)
        if topic is not None and not requested and all(
                (part := topic.partitions.get(p)) is not None and part.replicas == replicas and not part.reassigning
                and part.state is not None and part.leader in replicas for p, replicas in wanted.items()):
            return
        if time.monotonic() > deadline:
            raise EnvironmentProblem(f"the clone did not move its probe partitions within {TIMEOUT:g} s",
                                     hint="see the lab's logs (--dir)")
        time.sleep(0.02)
