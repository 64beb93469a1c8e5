"""The `kops-snapshot/1` file format (declared in kops/formats/snapshot.py): a snapshot as JSON, for offline
planning and CI (docs/snapshot-format.md).

Written with sorted keys and two-space indentation so a committed snapshot diffs line by line in review;
the same snapshot always gives the same bytes. Reading validates every field and names the JSON location of
the first problem.
"""

from __future__ import annotations

from typing import Any

from kops.bulk import collector_paused
from kops.errors import DocumentError
from kops.formats import snapshot as doc_model
from kops.formats.base import validate
from kops.jsondoc import ShapeError, dumps_document, parse_json
from kops.model.brokers import Broker, FeatureRange
from kops.model.capacity import LogDirUsage
from kops.model.partitions import Partition, PartitionState, TopicPartition
from kops.model.snapshot import ControllerInfo, Problem, RequestedMove, Snapshot
from kops.model.topics import Topic

FORMAT = doc_model.FORMAT


def _broker_doc(b: Broker) -> dict[str, Any]:
    return {
        "id": b.id,
        "rack": b.rack,
        "host": b.host,
        "port": b.port,
        "endpoints": list(b.endpoints),
        "features": {n: {"min_version": f.min_version, "max_version": f.max_version} for n, f in b.features.items()},
        "listener_security_protocol_map": b.listener_security_protocol_map,
        "jmx_port": b.jmx_port,
        "timestamp": b.timestamp,
        "version": b.version,
        "epoch": b.epoch,
    }


def _partition_doc(p: Partition) -> dict[str, Any]:
    s = p.state
    doc: dict[str, Any] = {
        "replicas": list(p.replicas),
        "adding": list(p.adding),
        "removing": list(p.removing),
        "leader": s.leader if s else None,
        "leader_epoch": s.leader_epoch if s else None,
        "isr": list(s.isr) if s else None,
        "controller_epoch": s.controller_epoch if s else None,
    }
    if s and s.leader_recovery_state:
        doc["leader_recovery_state"] = s.leader_recovery_state
    if s and s.leader_epoch_after_creation:
        doc["leader_epoch_after_creation"] = {str(k): v for k, v in s.leader_epoch_after_creation.items()}
    if s and s.leader_epoch_before_deletion:
        doc["leader_epoch_before_deletion"] = {str(k): v for k, v in s.leader_epoch_before_deletion.items()}
    return doc


def _topic_doc(t: Topic) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "topic_id": t.topic_id,
        "config": dict(t.config),
        "partitions": {str(n): _partition_doc(p) for n, p in t.partitions.items()},
    }
    if t.initial_partition_count is not None:
        doc["initial_partition_count"] = t.initial_partition_count
    if t.undeleted_partition_count is not None:
        doc["undeleted_partition_count"] = t.undeleted_partition_count
    return doc


def _log_dirs_doc(dirs: tuple[LogDirUsage, ...]) -> dict[str, Any]:
    """`log_dirs`, absent when the cluster's disks were not read (so older files keep their bytes)."""
    if not dirs:
        return {}
    return {"log_dirs": [{"broker": d.broker, "path": d.path, "total_bytes": d.total_bytes,
                          "usable_bytes": d.usable_bytes, "error": d.error} for d in sorted(dirs)]}


def to_document(snapshot: Snapshot) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "connect": snapshot.connect,
        "cluster_id": snapshot.cluster_id,
        "controller": {
            "id": snapshot.controller.id,
            "epoch": snapshot.controller.epoch,
            "kraft_controller_epoch": snapshot.controller.kraft_controller_epoch,
        },
        "brokers": [_broker_doc(b) for b in sorted(snapshot.brokers, key=lambda b: b.id)],
        "fenced_brokers": sorted(snapshot.fenced),
        "topics": {name: _topic_doc(t) for name, t in snapshot.topics.items()},
        "broker_configs": {k: dict(v) for k, v in snapshot.broker_configs.items()},
        "reassigning": [
            {
                "topic": f.topic,
                "partition": f.partition,
                "replicas": list(f.replicas),
                "adding": list(f.adding),
                "removing": list(f.removing),
                "target": None if f.target is None else list(f.target),
                "requested": f.requested,
            }
            for f in snapshot.in_flight()
        ],
        "requested_moves": [
            {"topic": m.topic, "partition": m.partition, "replicas": list(m.replicas)}
            for m in sorted(snapshot.requested_moves)
        ],
        "pending_deletions": sorted(snapshot.pending_deletions),
        "preferred_election": [{"topic": tp.topic,
                                "partition": tp.partition} for tp in sorted(snapshot.preferred_election)],
        "cluster_features": snapshot.cluster_features(),
        "migration": snapshot.migration,
        "complete": snapshot.complete,
        "problems": [{"path": p.path, "message": p.message} for p in snapshot.problems],
        **_log_dirs_doc(snapshot.log_dirs),
        "summary": {
            "brokers": len(snapshot.brokers),
            "topics": len(snapshot.topics),
            "partitions": snapshot.partition_count,
            "under_replicated": len(snapshot.under_replicated()),
            "offline": len(snapshot.offline()),
        },
    }


@collector_paused()
def dumps(snapshot: Snapshot) -> bytes:
    """The file's bytes: the document is validated against the declaration before it is written (a snapshot
    kops could not read back is never written), and written as built, which is what the declaration would
    serialise (tests/unit/test_declared_documents.py), without a second copy of a million partitions."""
    doc = to_document(snapshot)
    doc_model.SnapshotDoc.model_validate(doc)
    return dumps_document(doc)


def _broker_of(b: doc_model.BrokerDoc) -> Broker:
    return Broker(
        id=b.id, host=b.host, port=b.port, endpoints=tuple(b.endpoints), rack=b.rack,
        features={n: FeatureRange(f.min_version, f.max_version) for n, f in b.features.items()},
        listener_security_protocol_map=b.listener_security_protocol_map, jmx_port=b.jmx_port,
        timestamp=b.timestamp, version=b.version, epoch=b.epoch,
    )


def _epochs(d: dict[str, int] | None) -> dict[int, int]:
    return {int(k): v for k, v in d.items()} if d else {}  # once per partition: no comprehension for none


def _partition_of(p: doc_model.PartitionDoc) -> Partition:
    state = None
    if p.leader is not None:
        assert p.leader_epoch is not None and p.isr is not None  # the declaration requires them with a leader
        state = PartitionState(
            leader=p.leader, leader_epoch=p.leader_epoch, isr=tuple(p.isr), controller_epoch=p.controller_epoch or 0,
            leader_recovery_state=p.leader_recovery_state or 0,
            leader_epoch_after_creation=_epochs(p.leader_epoch_after_creation),
            leader_epoch_before_deletion=_epochs(p.leader_epoch_before_deletion),
        )
    return Partition(tuple(p.replicas), tuple(p.adding), tuple(p.removing), state)


def _topic_of(name: str, t: doc_model.TopicDoc) -> Topic:
    return Topic(
        name=name,
        partitions={int(k): _partition_of(p) for k, p in sorted(t.partitions.items(), key=lambda kv: int(kv[0]))},
        topic_id=t.topic_id, config=dict(t.config), initial_partition_count=t.initial_partition_count,
        undeleted_partition_count=t.undeleted_partition_count,
    )


def from_document(raw: Any) -> Snapshot:
    """Build a Snapshot from a parsed document; raises ShapeError naming the first bad field."""
    d = validate(doc_model.SnapshotDoc, raw, FORMAT)
    return Snapshot(
        cluster_id=d.cluster_id,
        controller=ControllerInfo(d.controller.id, d.controller.epoch, d.controller.kraft_controller_epoch),
        brokers=tuple(sorted((_broker_of(b) for b in d.brokers), key=lambda b: b.id)),
        topics={name: _topic_of(name, t) for name, t in sorted(d.topics.items())},
        broker_configs={k: dict(v) for k, v in sorted(d.broker_configs.items())},
        requested_moves=tuple(sorted(RequestedMove(m.topic, m.partition,
                                                   tuple(m.replicas)) for m in d.requested_moves)),
        pending_deletions=tuple(d.pending_deletions),
        preferred_election=tuple(sorted(TopicPartition(e.topic, e.partition) for e in d.preferred_election)),
        migration=d.migration,
        problems=tuple(Problem(p.path, p.message) for p in d.problems),
        connect=d.connect,
        fenced=tuple(sorted(d.fenced_brokers)),
        log_dirs=tuple(sorted(LogDirUsage(x.broker, x.path, x.total_bytes, x.usable_bytes, x.error)
                              for x in d.log_dirs)),
    )


@collector_paused()
def loads(data: bytes | str, where: str) -> Snapshot:
    """Parse a snapshot file's content; errors name the file and the field."""
    try:
        return from_document(parse_json(data))
    except ShapeError as exc:
        raise DocumentError(
            f"not a usable kops snapshot: {exc}", where=where, hint="write one with `kops state --out FILE`"
        ) from None
