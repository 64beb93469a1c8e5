"""The broker's KIP-179 admin endpoint (seed 001): AlterTopics and ReplicaStatus.

AlterTopics may go to any broker. It validates every entry (`kops.lab.broker.alteration`), then performs the
accepted ones by writing exactly the znodes Kafka's tools write — new partitions into the topic znode,
targets into `/admin/reassign_partitions` — so the controller carries them out on the same paths as any
other request. With a `timeout` it waits until the controller has acted (new partitions have state znodes,
moving partitions list their targets) and answers REQUEST_TIMED_OUT if it has not. ReplicaStatus must go to
the partition's leader, which is the only broker that knows how far each follower has fetched.
DescribeLogDirs goes to each broker: its log dir's capacity, free space and replicas (v4, KIP-827).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kops.errors import ZnodeFormatError
from kops.kip179.protocol import (
    ErrorCode,
    LogDirDescription,
    ReplicaBytes,
    ReplicaStatus,
    TopicResult,
    decode_alter_topics,
    decode_replica_status_request,
    encode_log_dirs_response,
    encode_replica_statuses,
    encode_topic_results,
    lag_messages,
)
from kops.lab.broker import alteration
from kops.lab.broker.replicas import ReplicaManager
from kops.model.partitions import TopicPartition
from kops.model.topics import TopicAssignment
from kops.zk_layout import paths, tool_writes
from kops.zk_layout.client import VersionConflict, ZkClient
from kops.zk_layout.codecs.admin_requests import ReassignmentTarget
from kops.zk_layout.codecs.topics import decode_topic

POLL_SECONDS = 0.05


class Kip179Endpoint:
    def __init__(self, client: ZkClient, replicas: ReplicaManager, wall_ms: Callable[[], int]) -> None:
        self.client = client
        self.replicas = replicas
        self.wall_ms = wall_ms

    # -- AlterTopics -------------------------------------------------------------------------------------

    def alter_topics(self, body: dict[str, Any]) -> dict[str, Any]:
        requests, validate_only, timeout_ms = decode_alter_topics(body)
        names = [r.topic for r in requests]
        registered = self._registered()
        in_progress = self.client.exists(paths.REASSIGN_PARTITIONS) is not None
        topics = self._topics(sorted(set(names)))
        results: dict[str, TopicResult] = {}
        accepted: list[alteration.Alteration] = []
        for request in requests:
            if names.count(request.topic) > 1:
                results[request.topic] = TopicResult(request.topic, ErrorCode.INVALID_REQUEST,
                                                     "the topic appears more than once in the request")
                continue
            decided = alteration.decide(request, topics.get(request.topic), registered, registered, in_progress)
            if isinstance(decided, TopicResult):
                results[request.topic] = decided
            else:
                accepted.append(decided)
                results[request.topic] = TopicResult(request.topic, ErrorCode.NONE)
        if not validate_only:
            self._perform(accepted, results)
            waiting = [a for a in accepted if results[a.topic].ok and not a.empty]
            if timeout_ms > 0 and waiting:
                self._wait_for_controller(waiting, timeout_ms / 1000.0, results)
        return encode_topic_results([results[n] for n in dict.fromkeys(names)])

    def _registered(self) -> set[int]:
        return {int(i) for i in self.client.children(paths.BROKER_IDS) or [] if i.isdigit()}

    def _topics(self, names: list[str]) -> dict[str, TopicAssignment]:
        out = {}
        for name, node in zip(names, self.client.get_many([paths.topic(n) for n in names])):
            if node is not None:
                try:
                    out[name] = decode_topic(node.data, paths.topic(name))
                except ZnodeFormatError:
                    continue  # answered as an unknown topic: nothing can be altered safely
        return out

    def _perform(self, accepted: list[alteration.Alteration], results: dict[str, TopicResult]) -> None:
        for a in accepted:
            if not a.new_partitions:
                continue
            try:
                tool_writes.add_partitions(self.client, a.topic, a.new_partitions)
            except tool_writes.AdminRefused as exc:
                results[a.topic] = TopicResult(a.topic, ErrorCode.INVALID_PARTITIONS, exc.what)
            except VersionConflict:
                results[a.topic] = TopicResult(a.topic, ErrorCode.INVALID_REQUEST,
                                               "the topic changed while the request was handled; retry")
        moving = [a for a in accepted if a.targets and results[a.topic].ok]
        if not moving:
            return
        targets = [ReassignmentTarget(a.topic, p, r) for a in moving for p, r in sorted(a.targets.items())]
        try:
            tool_writes.start_reassignment(self.client, targets)
        except tool_writes.AdminRefused as exc:  # another tool started one between our check and our write
            for a in moving:
                results[a.topic] = TopicResult(a.topic, ErrorCode.PARTITION_REASSIGNMENT_IN_PROGRESS, exc.what)

    def _wait_for_controller(self, accepted: list[alteration.Alteration], timeout: float,
                             results: dict[str, TopicResult]) -> None:
        deadline = time.monotonic() + timeout
        pending = {a.topic: a for a in accepted}
        while pending:
            for name, a in list(pending.items()):
                if self._acted(a):
                    del pending[name]
            if not pending or time.monotonic() >= deadline:
                break
            time.sleep(POLL_SECONDS)
        for name in pending:
            results[name] = TopicResult(name, ErrorCode.REQUEST_TIMED_OUT,
                                        "the change was written but the controller has not acted on it yet")

    def _acted(self, a: alteration.Alteration) -> bool:
        node = self.client.get(paths.topic(a.topic))
        if node is None:
            return False
        current = decode_topic(node.data, paths.topic(a.topic))
        started = all(set(r) <= set(current.replicas.get(p, ())) for p, r in a.targets.items())
        created = all(self.client.exists(paths.partition_state(a.topic, p)) is not None for p in a.new_partitions)
        return started and created

    # -- ReplicaStatus -----------------------------------------------------------------------------------

    def replica_status(self, body: dict[str, Any]) -> dict[str, Any]:
        wanted = decode_replica_status_request(body)
        registered = self._registered()
        topics = self._topics(sorted({tp.topic for tp, _b in wanted}))
        now_ms = self.wall_ms()
        out = []
        for tp, broker in wanted:
            topic = topics.get(tp.topic)
            if topic is None:
                out.append(ReplicaStatus(tp, broker, ErrorCode.INVALID_TOPIC_EXCEPTION))
            elif tp.partition not in topic.replicas:
                out.append(ReplicaStatus(tp, broker, ErrorCode.INVALID_PARTITIONS))
            elif broker not in registered:
                out.append(ReplicaStatus(tp, broker, ErrorCode.UNKNOWN_MEMBER_ID))
            else:
                out.append(self._follower(tp, broker, now_ms))
        return encode_replica_statuses(out)

    def _follower(self, tp: TopicPartition, broker: int, now_ms: int) -> ReplicaStatus:
        found = self.replicas.follower_lag(tp, broker)
        if found == "not_leader":
            return ReplicaStatus(tp, broker, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if isinstance(found, str):  # "not_replica"
            return ReplicaStatus(tp, broker, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        lag_bytes, age_seconds = found
        status_ms = now_ms - int(age_seconds * 1000)
        return ReplicaStatus(tp, broker, ErrorCode.NONE, status_ms, lag_messages(lag_bytes), lag_bytes)

    # -- DescribeLogDirs ---------------------------------------------------------------------------------

    def describe_log_dirs(self, _body: dict[str, Any]) -> dict[str, Any]:
        """This broker's one log dir; an offline dir answers KAFKA_STORAGE_ERROR with nothing else, as Kafka's."""
        disk, held, sizes = self.replicas.log_dir()
        broker = self.replicas.broker_id
        if not disk.online:
            return encode_log_dirs_response([LogDirDescription(broker, disk.path, ErrorCode.KAFKA_STORAGE_ERROR)])
        replicas = tuple(ReplicaBytes(tp, size, lag) for tp, size, lag in sizes)
        return encode_log_dirs_response([LogDirDescription(broker, disk.path, ErrorCode.NONE, disk.total_bytes(),
                                                           disk.usable_bytes(held), replicas)])
