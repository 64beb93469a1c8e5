"""Replication throttles for a batch, computed purely from its moves and what the cluster already has.

As Kafka's 2.6+ reassignment tool: the leader list of a topic names `partition:broker` for every current
replica of each moving partition, the follower list names the new replicas; both sorted as strings. Rates go
on every broker that sends or receives. Merged with the snapshot's configs: an operator's `*` stays `*`,
other entries are kept and ours added; a rate the operator set lower than ours is kept (kops never raises a
limit someone chose). What was there before is what the executor restores.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from kops.model.plan import Move, Throttle
from kops.model.snapshot import Snapshot
from kops.model.throttle_keys import BROKER_KEYS, FOLLOWER_RATE, FOLLOWER_REPLICAS, LEADER_REPLICAS, list_entries


def merge_list(existing: str | None, ours: set[str]) -> str:
    if existing is not None and existing.strip() == "*":
        return "*"
    entries = set(ours)
    if existing:
        entries |= list_entries(existing)
    return ",".join(sorted(entries))


ConfigOf = Callable[[str, str], Mapping[str, str]]  # (entity type, name) -> the config to merge with


def batch_throttle(moves: Iterable[Move], snapshot: Snapshot, rate: int | None,
                   config_of: ConfigOf | None = None, caps: Mapping[int, int] | None = None) -> Throttle:
    """`config_of` (default: the snapshot's configs) gives the values to merge with; `caps`: per broker, the most
    its follower rate may be (its network-in room), kept where below `rate`."""
    if rate is None:
        return Throttle({}, {}, None)
    if config_of is None:
        config_of = snapshot_configs(snapshot)
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
    topics = {}
    for topic in sorted(set(leader) | set(follower)):
        config = config_of("topics", topic)
        topics[topic] = {
            LEADER_REPLICAS: merge_list(config.get(LEADER_REPLICAS), leader.get(topic, set())),
            FOLLOWER_REPLICAS: merge_list(config.get(FOLLOWER_REPLICAS), follower.get(topic, set())),
        }
    kept = {b: c for b, c in (caps or {}).items() if b in brokers and c < rate}
    rates = {}
    for broker in sorted(brokers):
        config = config_of("brokers", str(broker))
        rates[broker] = {key: str(_keep_lower(config.get(key), kept.get(broker, rate) if key == FOLLOWER_RATE
                                              else rate)) for key in BROKER_KEYS}
    return Throttle(topics, rates, rate, dict(sorted(kept.items())))


def snapshot_configs(snapshot: Snapshot) -> ConfigOf:
    def config_of(entity_type: str, name: str) -> Mapping[str, str]:
        if entity_type == "topics":
            return snapshot.topics[name].config if name in snapshot.topics else {}
        return snapshot.broker_configs.get(name, {})
    return config_of


def _keep_lower(existing: str | None, ours: int) -> int:
    try:
        return min(int(existing), ours) if existing is not None else ours
    except ValueError:
        return ours
