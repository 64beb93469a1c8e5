"""Replication throttles for a batch, computed purely from its moves and what the cluster already has.

As Kafka's 2.6+ reassignment tool: the leader list of a topic names `partition:broker` for every current
replica of each moving partition, the follower list names the new replicas; both sorted as strings. Rates go
on every broker that sends or receives. Merged with the snapshot's configs: an operator's `*` stays `*`,
other entries are kept and ours added; a rate the operator set lower than ours is kept (kops never raises a
limit someone chose). What was there before is what the executor restores.
"""

from __future__ import annotations

from collections.abc import Iterable

from kops.model.plan import Move, Throttle
from kops.model.snapshot import Snapshot
from kops.model.throttle_keys import BROKER_KEYS, FOLLOWER_REPLICAS, LEADER_REPLICAS, list_entries


def merge_list(existing: str | None, ours: set[str]) -> str:
    if existing is not None and existing.strip() == "*":
        return "*"
    entries = set(ours)
    if existing:
        entries |= list_entries(existing)
    return ",".join(sorted(entries))


def batch_throttle(moves: Iterable[Move], snapshot: Snapshot, rate: int | None) -> Throttle:
    leader: dict[str, set[str]] = {}
    follower: dict[str, set[str]] = {}
    brokers: set[int] = set()
    for m in moves:
        if m.kind != "data":
            continue
        leader.setdefault(m.topic, set()).update(f"{m.partition}:{b}" for b in m.from_replicas)
        follower.setdefault(m.topic, set()).update(f"{m.partition}:{b}" for b in m.adding)
        brokers.update(m.from_replicas)
        brokers.update(m.adding)
    if rate is None:
        return Throttle({}, {}, None)
    topics = {}
    for topic in sorted(set(leader) | set(follower)):
        config = snapshot.topics[topic].config if topic in snapshot.topics else {}
        topics[topic] = {
            LEADER_REPLICAS: merge_list(config.get(LEADER_REPLICAS), leader.get(topic, set())),
            FOLLOWER_REPLICAS: merge_list(config.get(FOLLOWER_REPLICAS), follower.get(topic, set())),
        }
    rates = {}
    for broker in sorted(brokers):
        config = snapshot.broker_configs.get(str(broker), {})
        rates[broker] = {key: str(_keep_lower(config.get(key), rate)) for key in BROKER_KEYS}
    return Throttle(topics, rates, rate)


def _keep_lower(existing: str | None, ours: int) -> int:
    try:
        return min(int(existing), ours) if existing is not None else ours
    except ValueError:
        return ours
