"""The controller-to-broker request batch as it travels over the lab RPC (one per broker per event).

Kafka sends LeaderAndIsr, StopReplica and UpdateMetadata as separate requests, each stamped with the
controller id and epoch; the lab sends them together, in that order, in one `controller_batch` call, which
the broker refuses whole when the epoch is older than one it has already seen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kops.lab.controller.effects import BrokerRequests, LeaderAndIsrEntry
from kops.model.partitions import TopicPartition

METHOD = "controller_batch"


@dataclass(frozen=True)
class BrokerAddress:
    id: int
    host: str
    port: int
    rack: str | None = None


@dataclass
class ControllerBatch:
    controller_id: int
    controller_epoch: int
    leader_and_isr: list[LeaderAndIsrEntry] = field(default_factory=list)
    stop_replica: list[tuple[TopicPartition, bool]] = field(default_factory=list)
    brokers: dict[int, BrokerAddress] | None = None  # UpdateMetadata: the live brokers, when sent
    # KIP-253 (seed 003): LeaderAndIsr carries each topic's (initial, undeleted) partition counts
    topic_counts: dict[str, tuple[int, int]] = field(default_factory=dict)


def encode_batch(controller_id: int, epoch: int, requests: BrokerRequests, brokers: dict[int, BrokerAddress],
                 counts: Mapping[str, tuple[int, int]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"controller_id": controller_id, "controller_epoch": epoch}
    if requests.leader_and_isr:
        body["leader_and_isr"] = [
            [e.tp.topic, e.tp.partition, e.leader, e.leader_epoch, list(e.isr), list(e.replicas), e.zk_version,
             e.is_new]
            for e in requests.leader_and_isr
        ]
        if counts:
            topics = sorted({e.tp.topic for e in requests.leader_and_isr} & set(counts))
            body["topic_counts"] = [[t, counts[t][0], counts[t][1]] for t in topics]
        requests_brokers = True
    else:
        requests_brokers = False
    if requests.stop_replica:
        body["stop_replica"] = [[tp.topic, tp.partition, delete] for tp, delete in requests.stop_replica]
    if requests.update_metadata or requests_brokers:  # followers need their leaders' addresses
        body["brokers"] = [[b.id, b.host, b.port, b.rack] for b in sorted(brokers.values(), key=lambda b: b.id)]
    return body


def decode_batch(body: dict[str, Any]) -> ControllerBatch:
    batch = ControllerBatch(int(body["controller_id"]), int(body["controller_epoch"]))
    for topic, p, leader, epoch, isr, replicas, zk_version, is_new in body.get("leader_and_isr", []):
        batch.leader_and_isr.append(LeaderAndIsrEntry(
            TopicPartition(str(topic), int(p)), int(leader), int(epoch), tuple(isr), tuple(replicas),
            int(zk_version), bool(is_new)))
    batch.topic_counts = {str(t): (int(n), int(u)) for t, n, u in body.get("topic_counts", [])}
    batch.stop_replica = [(TopicPartition(str(t), int(p)), bool(d)) for t, p, d in body.get("stop_replica", [])]
    if "brokers" in body:
        batch.brokers = {int(i): BrokerAddress(int(i), str(h), int(port), r) for i, h, port, r in body["brokers"]}
    return batch
