"""Partition sizes from a live cluster: DescribeLogDirs, as the kafka-log-dirs document that Kafka's own
`kafka-log-dirs.sh --describe` prints (plus a `timestamp`), so `kops sizes summarize` reads it unchanged."""

from __future__ import annotations

from typing import Any

from kafka import KafkaAdminClient
from kafka.errors import KafkaError

from kops.errors import ConnectionFailed
from kops.zk_layout.codecs.log_dirs import BrokerLogDirs, LogDir, LogDirsReport, ReplicaSize


def describe_log_dirs(client: KafkaAdminClient, where: str, now_ms: int,
                      partitions: dict[str, list[int]] | None = None) -> LogDirsReport:
    """Every broker's log dirs, or only `partitions` ({topic: [partition, ...]}) in them."""
    try:
        answers = client.describe_log_dirs(partitions)
    except KafkaError as exc:
        raise ConnectionFailed(f"DescribeLogDirs failed: {exc}", where=where,
                               hint="the principal needs DESCRIBE on the cluster") from None
    brokers = tuple(sorted((_broker(a) for a in answers), key=lambda b: b.broker))
    return LogDirsReport(brokers, timestamp_ms=now_ms)


def _broker(answer: dict[str, Any]) -> BrokerLogDirs:
    dirs = []
    for d in answer.get("log_dirs", []):
        error = None if d.get("error_code", 0) == 0 else f"error code {d['error_code']}"
        replicas = tuple(ReplicaSize(t["name"], int(p["partition_index"]), int(p["partition_size"]),
                                     int(p.get("offset_lag", 0)), bool(p.get("is_future_key", False)))
                         for t in d.get("topics", []) for p in t["partitions"])
        dirs.append(LogDir(d["log_dir"], error, replicas))
    return BrokerLogDirs(int(answer["broker"]), tuple(dirs))
