"""The `kops-snapshot/1` file format: a snapshot as JSON, for offline planning and CI (docs/snapshot-format.md).

Written with sorted keys and two-space indentation so a committed snapshot diffs line by line in review;
the same snapshot always gives the same bytes. Reading validates every field and names the JSON location of
the first problem.
"""

from __future__ import annotations

import json
from typing import Any

from kops.errors import DocumentError
from kops.jsondoc import (
    ShapeError,
    as_bool,
    as_id,
    as_int,
    as_int_key,
    as_int_list,
    as_list,
    as_object,
    as_replicas,
    as_str,
    as_str_list,
    as_str_map,
    check_format,
    field,
    parse_json,
)
from kops.model.brokers import Broker, FeatureRange
from kops.model.partitions import Partition, PartitionState, TopicPartition
from kops.model.snapshot import ControllerInfo, Problem, RequestedMove, Snapshot
from kops.model.topics import Topic

FORMAT = "kops-snapshot/1"


def _opt(value: Any, convert: Any, at: str) -> Any:
    return None if value is None else convert(value, at)


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
        "preferred_election": [{"topic": tp.topic, "partition": tp.partition} for tp in sorted(snapshot.preferred_election)],
        "cluster_features": snapshot.cluster_features(),
        "migration": snapshot.migration,
        "complete": snapshot.complete,
        "problems": [{"path": p.path, "message": p.message} for p in snapshot.problems],
        "summary": {
            "brokers": len(snapshot.brokers),
            "topics": len(snapshot.topics),
            "partitions": snapshot.partition_count,
            "under_replicated": len(snapshot.under_replicated()),
            "offline": len(snapshot.offline()),
        },
    }


def dumps(snapshot: Snapshot) -> bytes:
    return (json.dumps(to_document(snapshot), sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _broker(raw: Any, at: str) -> Broker:
    d = as_object(raw, at)
    features = {
        name: FeatureRange(
            as_int(field(as_object(f, f"{at}.features.{name}"), "min_version", f"{at}.features.{name}"), at),
            as_int(field(f, "max_version", f"{at}.features.{name}"), at),
        )
        for name, f in as_object(d.get("features") or {}, f"{at}.features").items()
    }
    return Broker(
        id=as_id(field(d, "id", at), f"{at}.id"),
        host=_opt(d.get("host"), as_str, f"{at}.host"),
        port=as_int(d.get("port", -1), f"{at}.port"),
        endpoints=as_str_list(d.get("endpoints") or [], f"{at}.endpoints"),
        rack=_opt(d.get("rack"), as_str, f"{at}.rack"),
        features=features,
        listener_security_protocol_map=_opt(
            d.get("listener_security_protocol_map"), as_str_map, f"{at}.listener_security_protocol_map"
        ),
        jmx_port=as_int(d.get("jmx_port", -1), f"{at}.jmx_port"),
        timestamp=_opt(d.get("timestamp"), as_str, f"{at}.timestamp"),
        version=as_int(d.get("version", 5), f"{at}.version"),
        epoch=_opt(d.get("epoch"), lambda v, a: as_int(v, a, (0, 2**63 - 1)), f"{at}.epoch"),
    )


def _epoch_map(raw: Any, at: str) -> dict[int, int]:
    return {as_int_key(k, at): as_int(v, f"{at}.{k}") for k, v in as_object(raw or {}, at).items()}


def _partition(raw: Any, at: str) -> Partition:
    d = as_object(raw, at)
    state = None
    if d.get("leader") is not None:
        state = PartitionState(
            leader=as_int(d["leader"], f"{at}.leader"),
            leader_epoch=as_int(field(d, "leader_epoch", at), f"{at}.leader_epoch"),
            isr=as_int_list(field(d, "isr", at), f"{at}.isr"),
            controller_epoch=as_int(d.get("controller_epoch", 0), f"{at}.controller_epoch"),
            leader_recovery_state=as_int(d.get("leader_recovery_state", 0), f"{at}.leader_recovery_state"),
            leader_epoch_after_creation=_epoch_map(d.get("leader_epoch_after_creation"), f"{at}.leader_epoch_after_creation"),
            leader_epoch_before_deletion=_epoch_map(d.get("leader_epoch_before_deletion"), f"{at}.leader_epoch_before_deletion"),
        )
    replicas = as_replicas(field(d, "replicas", at), f"{at}.replicas")
    adding = as_int_list(d.get("adding") or [], f"{at}.adding")
    removing = as_int_list(d.get("removing") or [], f"{at}.removing")
    for name, values in (("adding", adding), ("removing", removing)):
        stray = [r for r in values if r not in replicas]
        if stray:
            raise ShapeError(f"{at}.{name} names replicas {stray} that are not in replicas")
    return Partition(replicas, adding, removing, state)


def _topic(name: str, raw: Any, at: str) -> Topic:
    d = as_object(raw, at)
    parts_raw = as_object(field(d, "partitions", at), f"{at}.partitions")
    partitions = {
        as_int_key(k, f"{at}.partitions"): _partition(v, f"{at}.partitions.{k}") for k, v in parts_raw.items()
    }
    negative = sorted(p for p in partitions if p < 0)
    if negative:
        raise ShapeError(f"{at}.partitions has partition {negative[0]}: partitions are numbered from 0")
    initial, undeleted = d.get("initial_partition_count"), d.get("undeleted_partition_count")
    return Topic(
        name=name,
        partitions=dict(sorted(partitions.items())),
        topic_id=_opt(d.get("topic_id"), as_str, f"{at}.topic_id"),
        config=as_str_map(d.get("config") or {}, f"{at}.config"),
        initial_partition_count=_opt(initial, as_int, f"{at}.initial_partition_count"),
        undeleted_partition_count=_opt(undeleted, as_int, f"{at}.undeleted_partition_count"),
    )


def from_document(doc: Any) -> Snapshot:
    """Build a Snapshot from a parsed document; raises ShapeError naming the first bad field."""
    d = as_object(doc, "document")
    check_format(d.get("format"), FORMAT)
    ctl = as_object(d.get("controller") or {}, "controller")
    brokers = tuple(sorted((_broker(b, f"brokers[{i}]") for i, b in enumerate(as_list(field(d, "brokers", ""), "brokers"))), key=lambda b: b.id))
    ids = [b.id for b in brokers]
    if len(set(ids)) != len(ids):
        raise ShapeError("brokers lists a broker id twice")
    topics_raw = as_object(field(d, "topics", ""), "topics")
    topics = {name: _topic(name, raw, f"topics.{name}") for name, raw in sorted(topics_raw.items())}
    broker_configs = {
        k: as_str_map(v, f"broker_configs.{k}") for k, v in sorted(as_object(d.get("broker_configs") or {}, "broker_configs").items())
    }
    moves = []
    for i, raw in enumerate(as_list(d.get("requested_moves") or [], "requested_moves")):
        m = as_object(raw, f"requested_moves[{i}]")
        moves.append(
            RequestedMove(
                as_str(field(m, "topic", f"requested_moves[{i}]"), f"requested_moves[{i}].topic"),
                as_id(field(m, "partition", f"requested_moves[{i}]"), f"requested_moves[{i}].partition"),
                as_replicas(field(m, "replicas", f"requested_moves[{i}]"), f"requested_moves[{i}].replicas"),
            )
        )
    election = [
        TopicPartition(
            as_str(field(as_object(e, f"preferred_election[{i}]"), "topic", f"preferred_election[{i}]"), f"preferred_election[{i}].topic"),
            as_int(field(e, "partition", f"preferred_election[{i}]"), f"preferred_election[{i}].partition"),
        )
        for i, e in enumerate(as_list(d.get("preferred_election") or [], "preferred_election"))
    ]
    problems = [
        Problem(
            as_str(field(as_object(p, f"problems[{i}]"), "path", f"problems[{i}]"), f"problems[{i}].path"),
            as_str(field(p, "message", f"problems[{i}]"), f"problems[{i}].message"),
        )
        for i, p in enumerate(as_list(d.get("problems") or [], "problems"))
    ]
    return Snapshot(
        cluster_id=_opt(d.get("cluster_id"), as_str, "cluster_id"),
        controller=ControllerInfo(
            id=_opt(ctl.get("id"), as_int, "controller.id"),
            epoch=_opt(ctl.get("epoch"), as_int, "controller.epoch"),
            kraft_controller_epoch=as_int(ctl.get("kraft_controller_epoch", -1), "controller.kraft_controller_epoch"),
        ),
        brokers=brokers,
        topics=topics,
        broker_configs=broker_configs,
        requested_moves=tuple(sorted(moves)),
        pending_deletions=as_str_list(d.get("pending_deletions") or [], "pending_deletions"),
        preferred_election=tuple(sorted(election)),
        migration=as_bool(d.get("migration", False), "migration"),
        problems=tuple(problems),
        connect=_opt(d.get("connect"), as_str, "connect"),
    )


def loads(data: bytes | str, where: str) -> Snapshot:
    """Parse a snapshot file's content; errors name the file and the field."""
    try:
        return from_document(parse_json(data))
    except ShapeError as exc:
        raise DocumentError(
            f"not a usable kops snapshot: {exc}", where=where, hint="write one with `kops state --out FILE`"
        ) from None
