"""The replication-throttle configs Kafka knows (topic lists and broker rates), named once for every layer."""

from __future__ import annotations

LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LOG_DIRS_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
TOPIC_KEYS = (LEADER_REPLICAS, FOLLOWER_REPLICAS)
BROKER_KEYS = (LEADER_RATE, FOLLOWER_RATE)
ALL_KEYS = TOPIC_KEYS + BROKER_KEYS + (LOG_DIRS_RATE,)  # every throttle config Kafka knows


def list_entries(value: str | None) -> set[str]:
    """A throttled-replicas list (`0:1,0:2` or `*`) as its entries: Kafka's comma-separated form, blanks dropped."""
    return {e.strip() for e in (value or "").split(",") if e.strip()}
