"""DescribeLogDirs from a live cluster: partition sizes, as the kafka-log-dirs document that Kafka's own
`kafka-log-dirs.sh --describe` prints (plus a `timestamp`), so `kops sizes summarize` reads it unchanged; the
dirs' own sizes (`TotalBytes`, `UsableBytes`: v4, KIP-827, Kafka 3.3+), the reported capacity; and which dir
holds each replica of the brokers with several dirs (JBOD, docs/design/jbod.md §2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka import KafkaAdminClient
from kafka.errors import KafkaError, NoError, for_code
from kafka.structs import TopicPartitionReplica

from kops.errors import ConnectionFailed
from kops.model.capacity import LogDirUsage
from kops.model.partitions import TopicPartition
from kops.model.placement import DirCopy, ReplicaDir
from kops.zk_layout.codecs.log_dirs import BrokerLogDirs, LogDir, LogDirsReport, ReplicaSize


def describe_log_dirs(client: KafkaAdminClient, where: str, now_ms: int,
                      partitions: dict[str, list[int]] | None = None) -> LogDirsReport:
    """Every broker's log dirs, or only `partitions` ({topic: [partition, ...]}) in them."""
    answers = _asked(client, where, partitions)
    brokers = tuple(sorted((_broker(a) for a in answers), key=lambda b: b.broker))
    return LogDirsReport(brokers, timestamp_ms=now_ms)


def describe_disks(client: KafkaAdminClient, where: str) -> tuple[LogDirUsage, ...]:
    """Every broker's log dirs with their filesystem's total and usable bytes, and no replica: an empty topic list
    (`{}`, which kafka-python sends as `[]`, not null) describes the dirs alone, where null would describe every
    replica of a million partitions. Kafka before 3.3 answers -1 (None here)."""
    return tuple(sorted(LogDirUsage.of(int(answer["broker"]), d["log_dir"], d.get("total_bytes"),
                                       d.get("usable_bytes"), _error(d.get("error_code", 0)))
                        for answer in _asked(client, where, {}) for d in answer.get("log_dirs", [])))


def describe_replica_dirs(client: KafkaAdminClient, where: str, brokers: list[int]) -> tuple[ReplicaDir, ...]:
    """Which log dir holds each replica of `brokers` (every partition: null topics), future replicas of
    intra-broker moves included, sorted. An offline dir lists none (its replicas are offline), and a broker the
    client does not know yet answers nothing: the snapshot then lacks its rows, and `dir_of` says unknown."""
    if not brokers:
        return ()
    return tuple(sorted(ReplicaDir(t["name"], int(p["partition_index"]), int(answer["broker"]), d["log_dir"],
                                   bool(p.get("is_future_key", False)))
                        for answer in _asked(client, where, None, brokers) for d in answer.get("log_dirs", [])
                        if d.get("error_code", 0) == 0
                        for t in d.get("topics", []) for p in t["partitions"]))


Replica = tuple[TopicPartition, int]  # a partition's replica on a broker


def alter_replica_dirs(client: KafkaAdminClient, where: str,
                       wanted: Mapping[Replica, str]) -> dict[Replica, str | None]:
    """AlterReplicaLogDirs (KIP-113) through kafka-python, each request to the broker named: per replica None
    when accepted, else Kafka's error: ReplicaNotAvailableError where the broker does not host the replica yet
    (it records the dir as preferred, and the replica is born there when a reassignment brings it),
    KafkaStorageError for an offline dir, LogDirNotFoundError for a path that is not one of its dirs."""
    asked = {TopicPartitionReplica(tp.topic, tp.partition, broker): path for (tp, broker), path in wanted.items()}
    try:
        answers = client.alter_replica_log_dirs(asked)
    except KafkaError as exc:
        raise ConnectionFailed(f"AlterReplicaLogDirs failed: {exc}", where=where,
                               hint="the principal needs ALTER on the cluster") from None
    return {(TopicPartition(r.topic, r.partition), r.broker_id): None if error is NoError else error.__name__
            for r, error in answers.items()}


def describe_dir_copies(client: KafkaAdminClient, where: str, replicas: list[Replica]) -> dict[Replica, DirCopy]:
    """Each replica's dir and size and its future replica's, asked of those partitions on those brokers only:
    a disk move's progress. A replica its broker does not list is left out."""
    if not replicas:
        return {}
    topics: dict[str, list[int]] = {}
    for tp, _ in replicas:
        topics.setdefault(tp.topic, []).append(tp.partition)
    brokers = sorted({b for _, b in replicas})
    found: dict[Replica, dict[bool, tuple[str, int]]] = {}
    for answer in _asked(client, where, {t: sorted(set(ps)) for t, ps in topics.items()}, brokers):
        for d in answer.get("log_dirs", []):
            for t in d.get("topics", []):
                for p in t["partitions"]:
                    key = (TopicPartition(t["name"], int(p["partition_index"])), int(answer["broker"]))
                    found.setdefault(key, {})[bool(p.get("is_future_key", False))] = (d["log_dir"],
                                                                                    int(p["partition_size"]))
    wanted = set(replicas)
    return {key: DirCopy(*(kinds.get(False) or (None, 0)), *(kinds.get(True) or (None, 0)))
            for key, kinds in found.items() if key in wanted}


def _asked(client: KafkaAdminClient, where: str, partitions: dict[str, list[int]] | None,
           brokers: list[int] | None = None) -> list[dict[str, Any]]:
    try:
        return client.describe_log_dirs(partitions, brokers)
    except KafkaError as exc:
        raise ConnectionFailed(f"DescribeLogDirs failed: {exc}", where=where,
                               hint="the principal needs DESCRIBE on the cluster") from None


def _error(code: int) -> str | None:
    return None if code == 0 else for_code(code).__name__


def _broker(answer: dict[str, Any]) -> BrokerLogDirs:
    dirs = []
    for d in answer.get("log_dirs", []):
        error = None if d.get("error_code", 0) == 0 else f"error code {d['error_code']}"
        replicas = tuple(ReplicaSize(t["name"], int(p["partition_index"]), int(p["partition_size"]),
                                     int(p.get("offset_lag", 0)), bool(p.get("is_future_key", False)))
                         for t in d.get("topics", []) for p in t["partitions"])
        dirs.append(LogDir(d["log_dir"], error, replicas))
    return BrokerLogDirs(int(answer["broker"]), tuple(dirs))
