"""Replication throttles as a broker applies them (spec §2.1, Kafka's TopicConfigHandler).

Each broker keeps, from a topic's `leader.replication.throttled.replicas` and
`follower.replication.throttled.replicas`, only the entries naming itself (`p:B` with B its id), or `*`.
Leader list: when this broker leads p, what it sends to followers not in the ISR counts against its
`leader.replication.throttled.rate`. Follower list: when it follows p and is not in sync, what it fetches counts
against its `follower.replication.throttled.rate`. Rates come only from `/config/brokers/<id>`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kops.model.throttle_keys import FOLLOWER_RATE, FOLLOWER_REPLICAS, LEADER_RATE, LEADER_REPLICAS

__all__ = ["FOLLOWER_RATE", "LEADER_RATE", "Throttles", "parse_rate", "throttled_partitions"]

ALL = "*"


def throttled_partitions(value: str | None, broker_id: int) -> set[int] | str:
    """The partitions this broker throttles for a topic: a set of ids, or ALL."""
    if value is None:
        return set()
    if value.strip() == ALL:
        return ALL
    out: set[int] = set()
    for element in value.split(","):
        element = element.strip()
        if not element:
            continue
        partition, _, broker = element.partition(":")
        if partition.isdigit() and broker.isdigit() and int(broker) == broker_id:
            out.add(int(partition))
    return out


def parse_rate(value: str | None) -> float | None:
    if value is None or not value.strip().lstrip("-").isdigit():
        return None
    rate = int(value)
    return None if rate < 0 or rate >= 2**63 - 1 else float(rate)


@dataclass
class Throttles:
    broker_id: int
    leader: dict[str, set[int] | str] = field(default_factory=dict)
    follower: dict[str, set[int] | str] = field(default_factory=dict)

    def update_topic(self, topic: str, config: dict[str, str]) -> None:
        self.leader[topic] = throttled_partitions(config.get(LEADER_REPLICAS), self.broker_id)
        self.follower[topic] = throttled_partitions(config.get(FOLLOWER_REPLICAS), self.broker_id)

    @staticmethod
    def _hit(table: dict[str, set[int] | str], topic: str, partition: int) -> bool:
        found = table.get(topic)
        return found == ALL or (isinstance(found, set) and partition in found)

    def leader_throttled(self, topic: str, partition: int) -> bool:
        return self._hit(self.leader, topic, partition)

    def follower_throttled(self, topic: str, partition: int) -> bool:
        return self._hit(self.follower, topic, partition)
