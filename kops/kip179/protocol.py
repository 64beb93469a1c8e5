"""AlterTopics and ReplicaStatus as they travel over the lab's broker RPC (seed 001's request/response shapes).

Field names follow the KIP's protocol definitions (`alter_topic_requests`, `num_partitions`,
`partition_assignment`, `validate_only`, `timeout`; `replica_status_requests`, `status_time`, `lag`). Error
codes are Kafka's numbers; PARTITION_REASSIGNMENT_IN_PROGRESS, new in the KIP, takes the code Kafka later
gave REASSIGNMENT_IN_PROGRESS (60). The lab's simulated logs count bytes, so lag in messages assumes the lab's
fixed record size (`RECORD_BYTES`); `lag_bytes` is the exact figure.

DescribeLogDirs is not KIP-179's: it is Kafka's own request (KIP-113, with KIP-827's `total_bytes` and
`usable_bytes` of version 4), answered on the same endpoint so a ZooKeeper-mode lab gives what a Kafka 3.3+
broker gives the Admin API: per log dir its error, capacity, free space and every replica's size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from kops.errors import KopsError
from kops.model.partitions import TopicPartition

ALTER_TOPICS = "alter_topics"
REPLICA_STATUS = "replica_status"
DESCRIBE_LOG_DIRS = "describe_log_dirs"
UNKNOWN_BYTES = -1  # DescribeLogDirs v4: the volume's size is unknown (or the dir is offline)
RECORD_BYTES = 1024  # the lab's records: lag in messages = ceil(lag bytes / RECORD_BYTES)
UNCHANGED = -1


class ErrorCode(IntEnum):
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    INVALID_TOPIC_EXCEPTION = 17
    UNKNOWN_MEMBER_ID = 25
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    KAFKA_STORAGE_ERROR = 56
    INVALID_REQUEST = 42
    PARTITION_REASSIGNMENT_IN_PROGRESS = 60


class ProtocolError(KopsError):
    """A request or response that does not have the KIP's shape."""


@dataclass(frozen=True)
class AlteredTopic:
    """One topic of an AlterTopics request; -1 means "no change", an empty assignment "broker decides"."""

    topic: str
    num_partitions: int = UNCHANGED
    replication_factor: int = UNCHANGED
    assignment: dict[int, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class TopicResult:
    topic: str
    error: ErrorCode
    message: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is ErrorCode.NONE


@dataclass(frozen=True)
class ReplicaStatus:
    tp: TopicPartition
    broker: int
    error: ErrorCode
    status_time_ms: int = -1
    lag: int = -1  # messages
    lag_bytes: int = -1


def encode_alter_topics(topics: list[AlteredTopic], validate_only: bool = False, timeout_ms: int = 0) -> dict[str, Any]:
    return {
        "alter_topic_requests": [
            {"topic": t.topic, "num_partitions": t.num_partitions, "replication_factor": t.replication_factor,
             "partition_assignment": [{"partition_id": p, "brokers": list(b)} for p, b in sorted(t.assignment.items())]}
            for t in topics
        ],
        "validate_only": validate_only,
        "timeout": timeout_ms,
    }


def _int(doc: dict[str, Any], name: str, at: str) -> int:
    value = doc.get(name)
    if type(value) is not int:
        raise ProtocolError(f"{at}.{name} must be an integer, got {value!r}")
    return value


def _entries(body: dict[str, Any], name: str) -> list[tuple[str, dict[str, Any]]]:
    """The request's list `name` as (where, entry) pairs; each entry an object naming a topic."""
    raw = body.get(name)
    if not isinstance(raw, list):
        raise ProtocolError(f"{name} must be a list")
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or not isinstance(entry.get("topic"), str):
            raise ProtocolError(f"{name}[{i}] must be an object with a topic name")
    return [(f"{name}[{i}]", entry) for i, entry in enumerate(raw)]


def decode_alter_topics(body: dict[str, Any]) -> tuple[list[AlteredTopic], bool, int]:
    topics = []
    for at, t in _entries(body, "alter_topic_requests"):
        assignment: dict[int, tuple[int, ...]] = {}
        for j, entry in enumerate(t.get("partition_assignment") or []):
            where = f"{at}.partition_assignment[{j}]"
            brokers = entry.get("brokers") if isinstance(entry, dict) else None
            if not isinstance(brokers, list) or not all(type(b) is int for b in brokers):
                raise ProtocolError(f"{where}.brokers must be a list of broker ids")
            assignment[_int(entry, "partition_id", where)] = tuple(brokers)
        topics.append(AlteredTopic(t["topic"], _int(t, "num_partitions", at) if "num_partitions" in t else UNCHANGED,
                                   _int(t, "replication_factor", at) if "replication_factor" in t else UNCHANGED,
                                   assignment))
    return topics, bool(body.get("validate_only", False)), int(body.get("timeout", 0) or 0)


def encode_topic_results(results: list[TopicResult]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "topic_errors": [
        {"topic": r.topic, "error_code": int(r.error), "error_message": r.message} for r in results]}


def decode_topic_results(body: dict[str, Any]) -> list[TopicResult]:
    try:
        return [TopicResult(str(e["topic"]), ErrorCode(int(e["error_code"])), e.get("error_message"))
                for e in body["topic_errors"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"malformed AlterTopics response: {exc}") from None


def encode_replica_status_request(replicas: list[tuple[TopicPartition, int]]) -> dict[str, Any]:
    return {"replica_status_requests": [{"topic": tp.topic, "partition_id": tp.partition, "broker": b}
                                        for tp, b in replicas]}


def decode_replica_status_request(body: dict[str, Any]) -> list[tuple[TopicPartition, int]]:
    out = []
    for at, r in _entries(body, "replica_status_requests"):
        out.append((TopicPartition(r["topic"], _int(r, "partition_id", at)), _int(r, "broker", at)))
    return out


def encode_replica_statuses(statuses: list[ReplicaStatus]) -> dict[str, Any]:
    return {"replica_status": [
        {"topic": s.tp.topic, "partition_id": s.tp.partition, "broker": s.broker, "error_code": int(s.error),
         "status_time": s.status_time_ms, "lag": s.lag, "lag_bytes": s.lag_bytes} for s in statuses]}


def decode_replica_statuses(body: dict[str, Any]) -> list[ReplicaStatus]:
    try:
        return [ReplicaStatus(TopicPartition(str(s["topic"]), int(s["partition_id"])), int(s["broker"]),
                              ErrorCode(int(s["error_code"])), int(s["status_time"]), int(s["lag"]),
                              int(s.get("lag_bytes", -1)))
                for s in body["replica_status"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"malformed ReplicaStatus response: {exc}") from None


def lag_messages(lag_bytes: int) -> int:
    return -(-max(0, lag_bytes) // RECORD_BYTES)


@dataclass(frozen=True)
class ReplicaBytes:
    tp: TopicPartition
    size: int
    offset_lag: int = 0


@dataclass(frozen=True)
class LogDirDescription:
    """One log dir of one broker, as DescribeLogDirs v4 describes it."""

    broker: int
    log_dir: str
    error: ErrorCode = ErrorCode.NONE
    total_bytes: int = UNKNOWN_BYTES
    usable_bytes: int = UNKNOWN_BYTES
    replicas: tuple[ReplicaBytes, ...] = ()


def encode_log_dirs_response(dirs: list[LogDirDescription]) -> dict[str, Any]:
    """Kafka's response fields in the KIP's snake case; replicas grouped by topic as Kafka groups them."""
    results = []
    for d in dirs:
        topics: dict[str, list[dict[str, Any]]] = {}
        for r in d.replicas:
            topics.setdefault(r.tp.topic, []).append(
                {"partition_index": r.tp.partition, "partition_size": r.size, "offset_lag": r.offset_lag,
                 "is_future_key": False})
        results.append({"error_code": int(d.error), "log_dir": d.log_dir, "total_bytes": d.total_bytes,
                        "usable_bytes": d.usable_bytes,
                        "topics": [{"name": t, "partitions": ps} for t, ps in sorted(topics.items())]})
    return {"throttle_time_ms": 0, "error_code": 0, "results": results}


def decode_log_dirs_response(broker: int, body: dict[str, Any]) -> list[LogDirDescription]:
    try:
        return [LogDirDescription(
            broker, str(d["log_dir"]), ErrorCode(int(d["error_code"])), int(d["total_bytes"]), int(d["usable_bytes"]),
            tuple(ReplicaBytes(TopicPartition(str(t["name"]), int(p["partition_index"])), int(p["partition_size"]),
                               int(p["offset_lag"])) for t in d["topics"] for p in t["partitions"]))
            for d in body["results"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"malformed DescribeLogDirs response from broker {broker}: {exc}") from None
