"""The plan file, `kops-plan/2` (declared in kops/formats/plan.py): JSON with sorted keys and no clock, so
identical inputs give identical bytes.

`kops plan -o FILE` writes it, `kops apply FILE` and `kops rollback FILE` read it back, checked whole by the
declaration (the JSON location of the first problem) and against its seal. docs/plan-format.md describes every key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from kops.bulk import collector_paused
from kops.errors import DocumentError
from kops.formats import plan as doc_model
from kops.formats.base import validate
from kops.jsondoc import ShapeError, dumps_document, parse_json
from kops.model.partitions import TopicPartition
from kops.model.plan import (
    Batch,
    ConfigChange,
    Estimate,
    Move,
    PartitionAddition,
    PartitionDeletion,
    Plan,
    Rollback,
    Rolling,
    Summary,
    Throttle,
    TopicCreation,
    TopicDeletion,
)

FORMAT = doc_model.FORMAT


def _move(m: Move) -> dict[str, Any]:
    doc = {"topic": m.topic, "partition": m.partition, "from": list(m.from_replicas), "to": list(m.to_replicas),
           "bytes": m.bytes, "leader": m.leader, "kind": m.kind, "reason": m.reason}
    if m.remote_bytes is not None:
        doc["remote_bytes"] = m.remote_bytes
    return doc


def _assignment(a: dict[int, tuple[int, ...]]) -> dict[str, list[int]]:
    return {str(p): list(r) for p, r in sorted(a.items())}


def _int_map(d: dict[int, int]) -> dict[str, int]:
    return {str(k): v for k, v in sorted(d.items())}


def _batch(b: Batch) -> dict[str, Any]:
    return {
        "index": b.index,
        "moves": [_move(m) for m in b.moves],
        "bytes": b.bytes,
        "throttle": {"rate": b.throttle.rate, "topics": b.throttle.topics,
                     "brokers": {str(k): v for k, v in sorted(b.throttle.brokers.items())}},
        "estimate": {"seconds": b.estimate.seconds, "bytes_in": _int_map(b.estimate.bytes_in),
                     "bytes_out": _int_map(b.estimate.bytes_out)},
    }


def _config(c: ConfigChange) -> dict[str, Any]:
    return {"entity_type": c.entity_type, "entity": c.entity, "set": dict(sorted(c.set.items())),
            "remove": list(c.remove), "before": dict(sorted(c.before.items())), "destructive": c.destructive,
            "reason": c.reason}


def _tps(tps: tuple[TopicPartition, ...]) -> list[dict[str, Any]]:
    return [{"topic": tp.topic, "partition": tp.partition} for tp in tps]


def to_document(plan: Plan) -> dict[str, Any]:
    s = plan.summary
    return {
        "format": FORMAT,
        "kops_version": plan.kops_version,
        "cluster": plan.cluster,
        "cluster_id": plan.cluster_id,
        "connect": plan.connect,
        "playbook_digest": plan.playbook_digest,
        "fingerprint": plan.fingerprint,
        "changes": {
            "topic_creations": [{"topic": c.topic, "assignment": _assignment(c.assignment), "config": c.config}
                                for c in plan.creations],
            "topic_deletions": [{"topic": d.topic, "partitions": d.partitions, "bytes": d.bytes} for d in plan.deletions],
            "partition_additions": [{"topic": a.topic, "assignment": _assignment(a.assignment)}
                                    for a in plan.partition_additions],
            "partition_deletions": [{"topic": d.topic, "current_count": d.current_count,
                                     "undeleted_partition_count": d.undeleted_partition_count}
                                    for d in plan.partition_deletions],
            "configs": [_config(c) for c in plan.configs],
        },
        "batches": [_batch(b) for b in plan.batches],
        "election": _tps(plan.election),
        "rollback": {
            "batches": [_batch(b) for b in plan.rollback.batches],
            "configs": [_config(c) for c in plan.rollback.configs],
            "election": _tps(plan.rollback.election),
            "irreversible": list(plan.rollback.irreversible),
        },
        "summary": {
            "moves": s.moves, "leader_moves": s.leader_moves, "bytes": s.bytes,
            "lower_bound_moves": s.lower_bound_moves, "lower_bound_bytes": s.lower_bound_bytes,
            "estimated_seconds": None if s.estimated_seconds is None else round(s.estimated_seconds, 3),
            "lower_bound_seconds": None if s.lower_bound_seconds is None else round(s.lower_bound_seconds, 3),
            "destructive": list(s.destructive), "batches": len(plan.batches),
            "replicas_before": _int_map(s.replicas_before), "replicas_after": _int_map(s.replicas_after),
            "leaders_before": _int_map(s.leaders_before), "leaders_after": _int_map(s.leaders_after),
            "bytes_before": _int_map(s.bytes_before), "bytes_after": _int_map(s.bytes_after),
            **({} if s.remote_bytes is None else {"remote_bytes": s.remote_bytes}),
        },
        "warnings": list(plan.warnings),
        **({} if plan.stall_timeout is None else {"stall_timeout": plan.stall_timeout}),
        **({} if plan.rolling is None else {"rolling": rolling_document(plan.rolling)}),
    }


def rolling_document(rolling: Rolling) -> dict[str, int]:
    return {"max_moves_per_broker": rolling.max_moves_per_broker,
            **({} if rolling.max_moves is None else {"max_moves": rolling.max_moves})}


SEALED = ("header", "fingerprint", "changes", "batches", "election", "rollback", "summary", "warnings")
HEADER = ("format", "kops_version", "cluster", "cluster_id", "connect", "playbook_digest", "stall_timeout",
          "rolling")
LATER_HEADER = ("rolling",)  # sealed only when present


def seal(doc: dict[str, Any]) -> dict[str, str]:
    """A digest of each section as kops wrote it: an edit by hand is found, and named, on load."""
    header = {k: doc.get(k) for k in HEADER if k in doc or k not in LATER_HEADER}  # seals of older plans hold
    sections = {"header": header, **{k: doc.get(k) for k in SEALED if k != "header"}}
    return {name: hashlib.sha256(json.dumps(sections[name], sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
            for name in SEALED}


@collector_paused()
def dumps(plan: Plan) -> bytes:
    """The file's bytes: validated against the declaration first (a plan kops could not read back is never
    written), then written as built (what the declaration serialises: tests/unit/test_declared_documents.py)."""
    doc = to_document(plan)
    doc_model.PlanDoc.model_validate(doc)
    doc["seal"] = seal(doc)
    return dumps_document(doc)


def edited_sections(doc: Any) -> list[str]:
    """The sections whose content no longer matches the seal kops wrote (all of them: no seal at all)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("seal"), dict):
        return ["seal"]
    found = seal(doc)
    return [name for name in SEALED if doc["seal"].get(name) != found[name]]


# -- reading --------------------------------------------------------------------------------------------------

def _move_of(m: doc_model.MoveDoc) -> Move:
    return Move(m.topic, m.partition, tuple(m.from_), tuple(m.to), m.bytes, m.leader, m.reason, m.remote_bytes)


def _ids(d: dict[str, Any]) -> dict[int, Any]:
    return {int(k): v for k, v in d.items()}


def _assignment_of(d: dict[str, list[int]]) -> dict[int, tuple[int, ...]]:
    return {int(k): tuple(v) for k, v in sorted(d.items(), key=lambda kv: int(kv[0]))}


def _batch_of(b: doc_model.BatchDoc) -> Batch:
    t, e = b.throttle, b.estimate
    return Batch(b.index, tuple(_move_of(m) for m in b.moves),
                 Throttle({k: dict(v) for k, v in t.topics.items()}, _ids(t.brokers), t.rate),
                 Estimate(e.seconds, None, _ids(e.bytes_in), _ids(e.bytes_out)))


def _config_of(c: doc_model.ConfigDoc) -> ConfigChange:
    return ConfigChange(c.entity_type, c.entity, dict(c.set), tuple(c.remove), dict(c.before), c.destructive, c.reason)


def _tps_of(tps: list[doc_model.TopicPartitionDoc]) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(tp.topic, tp.partition) for tp in tps)


def _summary_of(s: doc_model.SummaryDoc) -> Summary:
    return Summary(
        moves=s.moves, leader_moves=s.leader_moves, bytes=s.bytes, lower_bound_moves=s.lower_bound_moves,
        lower_bound_bytes=s.lower_bound_bytes, estimated_seconds=s.estimated_seconds,
        lower_bound_seconds=s.lower_bound_seconds, destructive=tuple(s.destructive),
        replicas_before=_ids(s.replicas_before), replicas_after=_ids(s.replicas_after),
        leaders_before=_ids(s.leaders_before), leaders_after=_ids(s.leaders_after),
        bytes_before=_ids(s.bytes_before), bytes_after=_ids(s.bytes_after), remote_bytes=s.remote_bytes,
    )


def _changes_of(ch: doc_model.ChangesDoc) -> dict[str, Any]:
    """The non-move changes, as Plan's keyword arguments."""
    return dict(
        creations=tuple(TopicCreation(c.topic, _assignment_of(c.assignment), dict(c.config))
                        for c in ch.topic_creations),
        deletions=tuple(TopicDeletion(d.topic, d.partitions, d.bytes) for d in ch.topic_deletions),
        partition_additions=tuple(PartitionAddition(a.topic, _assignment_of(a.assignment))
                                  for a in ch.partition_additions),
        partition_deletions=tuple(PartitionDeletion(d.topic, d.current_count, d.undeleted_partition_count)
                                  for d in ch.partition_deletions),
        configs=tuple(_config_of(c) for c in ch.configs),
    )


def from_document(raw: Any) -> Plan:
    """The plan in a parsed document, checked whole by the declaration; raises ShapeError naming the field."""
    if isinstance(raw, dict) and raw.get("format") == "kops-plan/1":
        raise ShapeError("format is kops-plan/1, from an older kops that listed each move twice: "
                         "make the plan again with `kops plan`")
    d = validate(doc_model.PlanDoc, raw, FORMAT)
    rb = d.rollback
    return Plan(
        cluster=d.cluster, cluster_id=d.cluster_id, connect=d.connect, playbook_digest=d.playbook_digest,
        fingerprint=d.fingerprint.model_dump(mode="json"),
        **_changes_of(d.changes),
        batches=tuple(_batch_of(b) for b in d.batches),
        election=_tps_of(d.election),
        rollback=Rollback(tuple(_batch_of(b) for b in rb.batches), tuple(_config_of(c) for c in rb.configs),
                          _tps_of(rb.election), tuple(rb.irreversible)),
        summary=_summary_of(d.summary),
        warnings=tuple(d.warnings),
        kops_version=d.kops_version,
        stall_timeout=d.stall_timeout,
        rolling=None if d.rolling is None else Rolling(d.rolling.max_moves_per_broker, d.rolling.max_moves),
    )


class EditedPlan(DocumentError):
    """The plan file was changed after kops wrote it."""


@collector_paused()
def loads(data: bytes | str, where: str, accept_edited: bool = False) -> Plan:
    """The plan, checked whole: shapes, ranges, cross-references and the seal (an edited plan is refused,
    naming what changed, unless `accept_edited`; the plan then says which sections were edited)."""
    try:
        doc = parse_json(data)
        plan = from_document(doc)
    except ShapeError as exc:
        raise DocumentError(f"not a usable kops plan: {exc}", where=where,
                            hint="write one with `kops plan -o FILE`") from None
    edited = edited_sections(doc)
    if edited and not accept_edited:
        what = "it carries no seal (an older kops, or edited)" if edited == ["seal"] else \
            f"{', '.join(edited)} changed after kops wrote it"
        raise EditedPlan(f"the plan was edited: {what}", where=where,
                         hint="make a new plan with `kops plan`, or pass --accept-edited-plan to run it as edited "
                              "(the execution record notes it)")
    return dataclasses.replace(plan, edited=tuple(edited))
