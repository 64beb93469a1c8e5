"""The plan file, `kops-plan/1`: JSON with sorted keys and no clock, so identical inputs give identical bytes.

`kops plan -o FILE` writes it, `kops apply FILE` and `kops rollback FILE` read it back (validated, with the
JSON location of the first problem). docs/plan-format.md describes every key.
"""

from __future__ import annotations

import json
from typing import Any

from kops.errors import DocumentError
from kops.jsondoc import (
    ShapeError,
    as_bool,
    as_int,
    as_int_key,
    as_int_list,
    as_list,
    as_object,
    as_positive_number,
    as_str,
    as_str_map,
    field,
    parse_json,
)
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
    Summary,
    Throttle,
    TopicCreation,
    TopicDeletion,
)

FORMAT = "kops-plan/1"
LONG = (-(2**63), 2**63 - 1)


def _move(m: Move) -> dict[str, Any]:
    return {"topic": m.topic, "partition": m.partition, "from": list(m.from_replicas), "to": list(m.to_replicas),
            "bytes": m.bytes, "leader": m.leader, "kind": m.kind, "reason": m.reason}


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
            "moves": [_move(m) for m in plan.moves if m.kind == "data"],
            "leader_changes": [_move(m) for m in plan.moves if m.kind == "leader"],
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
        },
        "warnings": list(plan.warnings),
        **({} if plan.stall_timeout is None else {"stall_timeout": plan.stall_timeout}),
    }


def dumps(plan: Plan) -> bytes:
    return (json.dumps(to_document(plan), sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


# -- reading --------------------------------------------------------------------------------------------------

def _read_move(raw: Any, at: str) -> Move:
    d = as_object(raw, at)
    return Move(
        as_str(field(d, "topic", at), f"{at}.topic"), as_int(field(d, "partition", at), f"{at}.partition"),
        as_int_list(field(d, "from", at), f"{at}.from"), as_int_list(field(d, "to", at), f"{at}.to"),
        as_int(d.get("bytes", 0), f"{at}.bytes", LONG), as_int(d.get("leader", -1), f"{at}.leader"),
        as_str(d.get("reason", ""), f"{at}.reason"),
    )


def _read_int_map(raw: Any, at: str) -> dict[int, int]:
    return {as_int_key(k, at): as_int(v, f"{at}.{k}", LONG) for k, v in as_object(raw or {}, at).items()}


def _read_assignment(raw: Any, at: str) -> dict[int, tuple[int, ...]]:
    return {as_int_key(k, at): as_int_list(v, f"{at}.{k}") for k, v in as_object(raw, at).items()}


def _read_batch(raw: Any, at: str) -> Batch:
    d = as_object(raw, at)
    t = as_object(field(d, "throttle", at), f"{at}.throttle")
    e = as_object(d.get("estimate") or {}, f"{at}.estimate")
    rate = t.get("rate")
    seconds = e.get("seconds")
    if seconds is not None and not isinstance(seconds, (int, float)):
        raise ShapeError(f"{at}.estimate.seconds must be a number")
    return Batch(
        as_int(field(d, "index", at), f"{at}.index"),
        tuple(_read_move(m, f"{at}.moves[{i}]") for i, m in enumerate(as_list(field(d, "moves", at), f"{at}.moves"))),
        Throttle(
            {k: as_str_map(v, f"{at}.throttle.topics.{k}") for k, v in as_object(t.get("topics") or {}, f"{at}.throttle.topics").items()},
            {as_int_key(k, f"{at}.throttle.brokers"): as_str_map(v, f"{at}.throttle.brokers.{k}")
             for k, v in as_object(t.get("brokers") or {}, f"{at}.throttle.brokers").items()},
            None if rate is None else as_int(rate, f"{at}.throttle.rate", LONG),
        ),
        Estimate(None if seconds is None else float(seconds), None, _read_int_map(e.get("bytes_in"), f"{at}.estimate.bytes_in"),
                 _read_int_map(e.get("bytes_out"), f"{at}.estimate.bytes_out")),
    )


def _read_config(raw: Any, at: str) -> ConfigChange:
    d = as_object(raw, at)
    return ConfigChange(
        as_str(field(d, "entity_type", at), f"{at}.entity_type"), as_str(field(d, "entity", at), f"{at}.entity"),
        as_str_map(d.get("set") or {}, f"{at}.set"),
        tuple(as_str(x, f"{at}.remove[{i}]") for i, x in enumerate(as_list(d.get("remove") or [], f"{at}.remove"))),
        as_str_map(d.get("before") or {}, f"{at}.before"), as_bool(d.get("destructive", False), f"{at}.destructive"),
        as_str(d.get("reason", ""), f"{at}.reason"),
    )


def _read_tps(raw: Any, at: str) -> tuple[TopicPartition, ...]:
    return tuple(
        TopicPartition(as_str(field(as_object(x, f"{at}[{i}]"), "topic", f"{at}[{i}]"), f"{at}[{i}].topic"),
                       as_int(field(x, "partition", f"{at}[{i}]"), f"{at}[{i}].partition"))
        for i, x in enumerate(as_list(raw or [], at))
    )


def from_document(doc: Any) -> Plan:
    d = as_object(doc, "document")
    if d.get("format") != FORMAT:
        raise ShapeError(f"format is {d.get('format')!r}, expected {FORMAT!r}")
    ch = as_object(field(d, "changes", ""), "changes")
    rb = as_object(field(d, "rollback", ""), "rollback")
    s = as_object(field(d, "summary", ""), "summary")
    batches = tuple(_read_batch(b, f"batches[{i}]") for i, b in enumerate(as_list(field(d, "batches", ""), "batches")))
    fp = as_object(field(d, "fingerprint", ""), "fingerprint")
    as_object(fp.get("topics") or {}, "fingerprint.topics")
    return Plan(
        cluster=as_str(field(d, "cluster", ""), "cluster"),
        cluster_id=None if d.get("cluster_id") is None else as_str(d["cluster_id"], "cluster_id"),
        connect=None if d.get("connect") is None else as_str(d["connect"], "connect"),
        playbook_digest=as_str(d.get("playbook_digest", ""), "playbook_digest"),
        fingerprint=fp,
        **_read_changes(ch),
        batches=batches,
        election=_read_tps(d.get("election"), "election"),
        rollback=Rollback(
            tuple(_read_batch(b, f"rollback.batches[{i}]") for i, b in enumerate(as_list(rb.get("batches") or [], "rollback.batches"))),
            tuple(_read_config(c, f"rollback.configs[{i}]") for i, c in enumerate(as_list(rb.get("configs") or [], "rollback.configs"))),
            _read_tps(rb.get("election"), "rollback.election"),
            tuple(as_str(x, "rollback.irreversible") for x in as_list(rb.get("irreversible") or [], "rollback.irreversible")),
        ),
        summary=_read_summary(s),
        warnings=tuple(as_str(x, "warnings") for x in as_list(d.get("warnings") or [], "warnings")),
        kops_version=as_str(d.get("kops_version", ""), "kops_version"),
        stall_timeout=None if d.get("stall_timeout") is None else as_positive_number(d["stall_timeout"], "stall_timeout"),
    )


def _read_summary(s: dict[str, Any]) -> Summary:
    def seconds(key: str) -> float | None:
        value = s.get(key)
        return None if value is None else float(value)

    return Summary(
        moves=as_int(s.get("moves", 0), "summary.moves"), leader_moves=as_int(s.get("leader_moves", 0), "summary.leader_moves"),
        bytes=as_int(s.get("bytes", 0), "summary.bytes", LONG),
        lower_bound_moves=as_int(s.get("lower_bound_moves", 0), "summary.lower_bound_moves"),
        lower_bound_bytes=as_int(s.get("lower_bound_bytes", 0), "summary.lower_bound_bytes", LONG),
        estimated_seconds=seconds("estimated_seconds"), lower_bound_seconds=seconds("lower_bound_seconds"),
        destructive=tuple(as_str(x, "summary.destructive") for x in as_list(s.get("destructive") or [], "summary.destructive")),
        replicas_before=_read_int_map(s.get("replicas_before"), "summary.replicas_before"),
        replicas_after=_read_int_map(s.get("replicas_after"), "summary.replicas_after"),
        leaders_before=_read_int_map(s.get("leaders_before"), "summary.leaders_before"),
        leaders_after=_read_int_map(s.get("leaders_after"), "summary.leaders_after"),
        bytes_before=_read_int_map(s.get("bytes_before"), "summary.bytes_before"),
        bytes_after=_read_int_map(s.get("bytes_after"), "summary.bytes_after"),
    )


def _read_changes(ch: dict[str, Any]) -> dict[str, Any]:
    """The non-move changes, as Plan's keyword arguments."""
    return dict(
        creations=tuple(TopicCreation(as_str(field(c, "topic", "creation"), "creation.topic"),
                                      _read_assignment(field(c, "assignment", "creation"), "creation.assignment"),
                                      as_str_map(c.get("config") or {}, "creation.config"))
                        for c in as_list(ch.get("topic_creations") or [], "changes.topic_creations")),
        deletions=tuple(TopicDeletion(as_str(field(x, "topic", "deletion"), "deletion.topic"),
                                      as_int(x.get("partitions", 0), "deletion.partitions"),
                                      as_int(x.get("bytes", 0), "deletion.bytes", LONG))
                        for x in as_list(ch.get("topic_deletions") or [], "changes.topic_deletions")),
        partition_additions=tuple(PartitionAddition(as_str(field(x, "topic", "addition"), "addition.topic"),
                                                    _read_assignment(field(x, "assignment", "addition"), "addition.assignment"))
                                  for x in as_list(ch.get("partition_additions") or [], "changes.partition_additions")),
        partition_deletions=tuple(PartitionDeletion(as_str(field(x, "topic", "pd"), "pd.topic"),
                                                    as_int(field(x, "current_count", "pd"), "pd.current_count"),
                                                    as_int(field(x, "undeleted_partition_count", "pd"), "pd.undeleted_partition_count"))
                                  for x in as_list(ch.get("partition_deletions") or [], "changes.partition_deletions")),
        configs=tuple(_read_config(c, f"changes.configs[{i}]") for i, c in enumerate(as_list(ch.get("configs") or [], "changes.configs"))),
    )


def loads(data: bytes | str, where: str) -> Plan:
    try:
        return from_document(parse_json(data))
    except ShapeError as exc:
        raise DocumentError(f"not a usable kops plan: {exc}", where=where,
                            hint="write one with `kops plan -o FILE`") from None
