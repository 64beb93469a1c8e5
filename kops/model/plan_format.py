"""The plan file, `kops-plan/1`: JSON with sorted keys and no clock, so identical inputs give identical bytes.

`kops plan -o FILE` writes it, `kops apply FILE` and `kops rollback FILE` read it back (validated, with the
JSON location of the first problem). docs/plan-format.md describes every key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from kops.errors import DocumentError
from kops.jsondoc import (
    ShapeError,
    as_bool,
    as_id,
    as_int,
    as_int_key,
    as_list,
    as_object,
    as_positive_number,
    as_replicas,
    as_seconds,
    as_size,
    as_str,
    as_str_map,
    check_format,
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


SEALED = ("header", "fingerprint", "changes", "batches", "election", "rollback", "summary", "warnings")
HEADER = ("format", "kops_version", "cluster", "cluster_id", "connect", "playbook_digest", "stall_timeout")


def seal(doc: dict[str, Any]) -> dict[str, str]:
    """A digest of each section as kops wrote it: an edit by hand is found, and named, on load."""
    sections = {"header": {k: doc.get(k) for k in HEADER}, **{k: doc.get(k) for k in SEALED if k != "header"}}
    return {name: hashlib.sha256(json.dumps(sections[name], sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
            for name in SEALED}


def dumps(plan: Plan) -> bytes:
    doc = to_document(plan)
    doc["seal"] = seal(doc)
    return (json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def edited_sections(doc: Any) -> list[str]:
    """The sections whose content no longer matches the seal kops wrote (all of them: no seal at all)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("seal"), dict):
        return ["seal"]
    found = seal(doc)
    return [name for name in SEALED if doc["seal"].get(name) != found[name]]


# -- reading --------------------------------------------------------------------------------------------------

def _read_move(raw: Any, at: str) -> Move:
    d = as_object(raw, at)
    move = Move(
        as_str(field(d, "topic", at), f"{at}.topic"), as_id(field(d, "partition", at), f"{at}.partition"),
        as_replicas(field(d, "from", at), f"{at}.from"), as_replicas(field(d, "to", at), f"{at}.to"),
        as_size(d.get("bytes", 0), f"{at}.bytes"), as_int(d.get("leader", -1), f"{at}.leader"),
        as_str(d.get("reason", ""), f"{at}.reason"),
    )
    if move.leader != -1 and move.leader not in move.from_replicas:
        raise ShapeError(f"{at}.leader {move.leader} is not one of its replicas {list(move.from_replicas)}")
    return move


def _read_int_map(raw: Any, at: str) -> dict[int, int]:
    """Per-broker counts and bytes: broker ids and values from 0."""
    return {_id_key(k, at): as_size(v, f"{at}.{k}") for k, v in as_object(raw or {}, at).items()}


def _id_key(key: str, at: str) -> int:
    number = as_int_key(key, at)
    if number < 0:
        raise ShapeError(f"{at} has key {key!r}: ids are numbered from 0")
    return number


def _read_assignment(raw: Any, at: str) -> dict[int, tuple[int, ...]]:
    assignment = {_id_key(k, at): as_replicas(v, f"{at}.{k}") for k, v in as_object(raw, at).items()}
    if not assignment:
        raise ShapeError(f"{at} is empty")
    return assignment


def _read_batch(raw: Any, at: str) -> Batch:
    d = as_object(raw, at)
    t = as_object(field(d, "throttle", at), f"{at}.throttle")
    e = as_object(d.get("estimate") or {}, f"{at}.estimate")
    rate = t.get("rate")  # null: the plan was made without a throttle
    seconds = e.get("seconds")
    if rate is not None and as_int(rate, f"{at}.throttle.rate", LONG) <= 0:
        raise ShapeError(f"{at}.throttle.rate must be a positive number of bytes per second, or null, got {rate}")
    return Batch(
        as_int(field(d, "index", at), f"{at}.index", (1, 2**31 - 1)),
        tuple(_read_move(m, f"{at}.moves[{i}]") for i, m in enumerate(as_list(field(d, "moves", at), f"{at}.moves"))),
        Throttle(
            {k: as_str_map(v, f"{at}.throttle.topics.{k}") for k, v in as_object(t.get("topics") or {}, f"{at}.throttle.topics").items()},
            {_id_key(k, f"{at}.throttle.brokers"): as_str_map(v, f"{at}.throttle.brokers.{k}")
             for k, v in as_object(t.get("brokers") or {}, f"{at}.throttle.brokers").items()},
            None if rate is None else as_int(rate, f"{at}.throttle.rate", LONG),
        ),
        Estimate(None if seconds is None else as_seconds(seconds, f"{at}.estimate.seconds"), None, _read_int_map(e.get("bytes_in"), f"{at}.estimate.bytes_in"),
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
    check_format(d.get("format"), FORMAT)
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
        return None if value is None else as_seconds(value, f"summary.{key}")

    return Summary(
        moves=as_size(s.get("moves", 0), "summary.moves"), leader_moves=as_size(s.get("leader_moves", 0), "summary.leader_moves"),
        bytes=as_size(s.get("bytes", 0), "summary.bytes"),
        lower_bound_moves=as_size(s.get("lower_bound_moves", 0), "summary.lower_bound_moves"),
        lower_bound_bytes=as_size(s.get("lower_bound_bytes", 0), "summary.lower_bound_bytes"),
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
    def entries(key: str) -> list[tuple[dict[str, Any], str]]:
        return [(as_object(x, f"changes.{key}[{i}]"), f"changes.{key}[{i}]")
                for i, x in enumerate(as_list(ch.get(key) or [], f"changes.{key}"))]

    return dict(
        creations=tuple(TopicCreation(as_str(field(c, "topic", at), f"{at}.topic"),
                                      _read_assignment(field(c, "assignment", at), f"{at}.assignment"),
                                      as_str_map(c.get("config") or {}, f"{at}.config"))
                        for c, at in entries("topic_creations")),
        deletions=tuple(TopicDeletion(as_str(field(x, "topic", at), f"{at}.topic"),
                                      as_size(x.get("partitions", 0), f"{at}.partitions"),
                                      as_size(x.get("bytes", 0), f"{at}.bytes"))
                        for x, at in entries("topic_deletions")),
        partition_additions=tuple(PartitionAddition(as_str(field(x, "topic", at), f"{at}.topic"),
                                                    _read_assignment(field(x, "assignment", at), f"{at}.assignment"))
                                  for x, at in entries("partition_additions")),
        partition_deletions=tuple(PartitionDeletion(as_str(field(x, "topic", at), f"{at}.topic"),
                                                    as_size(field(x, "current_count", at), f"{at}.current_count"),
                                                    as_size(field(x, "undeleted_partition_count", at),
                                                            f"{at}.undeleted_partition_count"))
                                  for x, at in entries("partition_deletions")),
        configs=tuple(_read_config(c, at) for c, at in entries("configs")),
    )


class EditedPlan(DocumentError):
    """The plan file was changed after kops wrote it."""


def loads(data: bytes | str, where: str, accept_edited: bool = False) -> Plan:
    """The plan, checked whole: shapes, ranges, cross-references and the seal (an edited plan is refused,
    naming what changed, unless `accept_edited`; the plan then says which sections were edited)."""
    try:
        doc = parse_json(data)
        plan = from_document(doc)
        cross_check(plan, doc)
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


def cross_check(plan: Plan, doc: dict[str, Any]) -> None:
    """What a reviewer reads is what runs: the moves listed under changes are exactly the batches' moves, each
    partition in one batch; the rollback undoes exactly those moves; the brokers moves name are the plan's."""
    listed = [_read_move(m, f"changes.moves[{i}]") for i, m in enumerate(as_list(
        as_object(doc["changes"], "changes").get("moves") or [], "changes.moves"))]
    listed += [_read_move(m, f"changes.leader_changes[{i}]") for i, m in enumerate(as_list(
        doc["changes"].get("leader_changes") or [], "changes.leader_changes"))]
    def key(m: Move) -> tuple[str, int, tuple[int, ...], tuple[int, ...]]:
        return m.topic, m.partition, m.from_replicas, m.to_replicas

    batched = [key(m) for m in plan.moves]
    if sorted(map(key, listed)) != sorted(batched):
        differ = sorted(set(map(key, listed)) ^ set(batched))
        raise ShapeError(f"changes.moves and batches[].moves differ (first: {differ[0][0]}-{differ[0][1]})"
                         if differ else "changes.moves and batches[].moves differ in how often a move appears")
    seen: set[tuple[str, int]] = set()
    for b in plan.batches:
        for m in b.moves:
            if (m.topic, m.partition) in seen:
                raise ShapeError(f"batches: {m.topic}-{m.partition} is moved by more than one batch")
            seen.add((m.topic, m.partition))
    undo = sorted((m.topic, m.partition, m.to_replicas, m.from_replicas) for b in plan.rollback.batches for m in b.moves)
    expected = sorted((m.topic, m.partition, m.from_replicas, m.to_replicas) for m in plan.moves)
    if undo != expected:
        raise ShapeError("rollback.batches do not undo exactly the plan's moves")
    known = set(plan.summary.replicas_before) | set(plan.summary.replicas_after)
    strangers = sorted({b for m in plan.moves for b in m.from_replicas + m.to_replicas} - known) if known else []
    if strangers:
        raise ShapeError(f"moves name broker(s) {strangers}, which the plan's summary does not know")
