"""kops's client for the KIP-179 admin endpoint (seed 001), used where a cluster advertises `kip179.admin`.

AlterTopics goes to any broker (the lowest id that answers); ReplicaStatus goes to each partition's leader,
found in its state znode, and is retried once at the new leader when leadership moved in between;
DescribeLogDirs goes to every broker asked about (each knows only its own dirs).
"""

from __future__ import annotations

from collections.abc import Iterable
from types import TracebackType

from kops.errors import KopsError, ZnodeFormatError
from kops.kip179.protocol import (
    ALTER_TOPICS,
    DESCRIBE_LOG_DIRS,
    REPLICA_STATUS,
    AlteredTopic,
    ErrorCode,
    LogDirDescription,
    ReplicaStatus,
    TopicResult,
    decode_log_dirs_response,
    decode_replica_statuses,
    decode_topic_results,
    encode_alter_topics,
    encode_replica_status_request,
)
from kops.model.brokers import Broker
from kops.model.features import KIP179_ADMIN
from kops.model.partitions import TopicPartition
from kops.rpc import RpcClient, RpcError, RpcUnavailable
from kops.zk_layout import paths
from kops.zk_layout.client import ZkClient
from kops.zk_layout.codecs.brokers import decode_broker
from kops.zk_layout.codecs.partition_state import decode_partition_state


class Kip179Unsupported(KopsError):
    """The cluster does not advertise the KIP-179 admin endpoint (a real Kafka never does)."""


class Kip179Client:
    def __init__(self, zk: ZkClient, timeout: float = 30.0) -> None:
        self.zk = zk
        self.timeout = timeout
        self._rpc: dict[int, RpcClient] = {}

    def __enter__(self) -> Kip179Client:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        for rpc in self._rpc.values():
            rpc.close()
        self._rpc.clear()

    def brokers(self) -> dict[int, Broker]:
        """Registered brokers that advertise the admin endpoint."""
        ids = sorted(int(i) for i in self.zk.children(paths.BROKER_IDS) or [] if i.isdigit())
        out = {}
        for broker_id, node in zip(ids, self.zk.get_many([paths.broker(i) for i in ids])):
            if node is None:
                continue
            try:
                broker = decode_broker(broker_id, node.data, paths.broker(broker_id))
            except ZnodeFormatError:
                continue
            if KIP179_ADMIN in broker.features and broker.host is not None:
                out[broker_id] = broker
        return out

    def supported(self) -> bool:
        ids = self.zk.children(paths.BROKER_IDS) or []
        return bool(ids) and len(self.brokers()) == len([i for i in ids if i.isdigit()])

    def _call(self, broker: Broker, method: str, body: dict) -> dict:
        rpc = self._rpc.get(broker.id)
        if rpc is None:
            assert broker.host is not None
            rpc = self._rpc[broker.id] = RpcClient(broker.host, broker.port, self.timeout)
        return rpc.call(method, body, self.timeout)

    def alter_topics(self, topics: list[AlteredTopic], validate_only: bool = False,
                     timeout_ms: int = 0) -> list[TopicResult]:
        brokers = self.brokers()
        if not brokers:
            raise Kip179Unsupported("no registered broker advertises kip179.admin",
                                      hint="this is a lab-only extension; use the ZooKeeper path on a real Kafka")
        body = encode_alter_topics(topics, validate_only, timeout_ms)
        last: KopsError | None = None
        for broker in sorted(brokers.values(), key=lambda b: b.id):
            try:
                return decode_topic_results(self._call(broker, ALTER_TOPICS, body))
            except RpcUnavailable as exc:
                last = exc
                self._rpc.pop(broker.id, None)
            except RpcError as exc:
                raise KopsError(f"broker {broker.id} refused AlterTopics: {exc.what}") from None
        raise RpcUnavailable(f"no broker answered AlterTopics ({last.what if last else 'none tried'})",
                             hint="check the brokers are running (kops lab status)")

    def replica_status(self, replicas: Iterable[tuple[TopicPartition, int]]) -> list[ReplicaStatus]:
        """Lag of each (partition, broker), asked of the partition's leader; in the order given."""
        wanted = list(replicas)
        results = self._ask_leaders(wanted)
        moved = [key for key, s in results.items() if s.error is ErrorCode.NOT_LEADER_OR_FOLLOWER]
        if moved:
            results.update(self._ask_leaders(moved))
        return [results[key] for key in wanted]

    def _ask_leaders(self, wanted: list[tuple[TopicPartition, int]]) -> dict[tuple[TopicPartition, int], ReplicaStatus]:
        brokers = self.brokers()
        tps = sorted({tp for tp, _b in wanted})
        nodes = self.zk.get_many([paths.partition_state(tp.topic, tp.partition) for tp in tps])
        leaders = {}
        for tp, node in zip(tps, nodes):
            if node is not None:
                try:
                    state_path = paths.partition_state(tp.topic, tp.partition)
                    leaders[tp] = decode_partition_state(node.data, state_path).leader
                except ZnodeFormatError:
                    continue
        out: dict[tuple[TopicPartition, int], ReplicaStatus] = {}
        by_leader: dict[int, list[tuple[TopicPartition, int]]] = {}
        for tp, broker in wanted:
            leader = leaders.get(tp)
            if leader is None:  # no state znode: the partition may not exist; any broker can say so
                leader = min(brokers) if brokers else -1
            if leader not in brokers:
                out[(tp, broker)] = ReplicaStatus(tp, broker, ErrorCode.NOT_LEADER_OR_FOLLOWER)
                continue
            by_leader.setdefault(leader, []).append((tp, broker))
        for leader, asked in sorted(by_leader.items()):
            try:
                reply = self._call(brokers[leader], REPLICA_STATUS, encode_replica_status_request(asked))
            except (RpcUnavailable, RpcError):
                self._rpc.pop(leader, None)
                out.update({key: ReplicaStatus(key[0], key[1], ErrorCode.NOT_LEADER_OR_FOLLOWER) for key in asked})
                continue
            out.update({(s.tp, s.broker): s for s in decode_replica_statuses(reply)})
        return out

    def describe_log_dirs(self, brokers: Iterable[int] | None = None) -> dict[int, list[LogDirDescription]]:
        """Each broker's log dirs (every registered one by default): capacity (`total_bytes`), free space
        (`usable_bytes`) and replica sizes. A broker that is not registered or does not answer is left out, as
        the Admin API's describeLogDirs fails that broker's part alone."""
        known = self.brokers()
        wanted = sorted(known if brokers is None else set(brokers) & set(known))
        out: dict[int, list[LogDirDescription]] = {}
        for broker_id in wanted:
            try:
                answer = self._call(known[broker_id], DESCRIBE_LOG_DIRS, {})
                out[broker_id] = decode_log_dirs_response(broker_id, answer)
            except (RpcUnavailable, RpcError):
                self._rpc.pop(broker_id, None)
        return out
