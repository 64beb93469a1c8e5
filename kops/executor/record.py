"""The execution record: everything needed to resume, report and roll back one run of `kops apply`/`rollback`.

Kept as JSON (`kops-execution/1`) in `/kops/executions/<id>` — every operator and cron host sees it — and as a
copy beside the plan. It is written before each action it describes (throttle values found, batch started),
so a `kill -9` at any point leaves a record from which `--resume` continues and `rollback` undoes: the
original replica lists of every move, in order, and every config value kops replaced.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kops.errors import KopsError
from kops.formats import record as doc_model
from kops.formats.base import validate
from kops.jsondoc import ShapeError, parse_json
from kops.model.partitions import TopicPartition
from kops.model.plan import Move, Rolling
from kops.model.plan_format import rolling_document

FORMAT = doc_model.FORMAT

PENDING, RUNNING, DONE, CANCELLED = "pending", "running", "done", "cancelled"  # batch states
STOPPED, FAILED = "stopped", "failed"  # execution states besides RUNNING and DONE


class RecordError(KopsError):
    """An execution record that cannot be read back."""


@dataclass
class BatchRecord:
    index: int
    moves: list[Move]
    status: str = PENDING
    estimate_seconds: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    progress_at: float | None = None  # the last time the batch moved (stall detection, kops status)

    @property
    def tps(self) -> set[TopicPartition]:
        return {m.tp for m in self.moves}


@dataclass
class ConfigRecord:
    """A config change kops made (not throttles): the map before and after, for rollback."""

    entity_type: str
    entity: str
    before: dict[str, str]
    after: dict[str, str]


@dataclass
class ExecutionRecord:
    id: str
    kind: str  # apply | rollback
    plan_digest: str
    plan_path: str
    cluster_id: str | None
    started_at: float
    holder: dict[str, Any]
    batches: list[BatchRecord]
    rate: int | None = None  # throttle rate, bytes/s per broker; None = unthrottled
    of: str | None = None  # rollback: the execution it undoes
    status: str = RUNNING
    stop_reason: str | None = None
    updated_at: float = 0.0
    steps_done: list[str] = field(default_factory=list)  # non-move changes done: "create:t", "config:topics/t", ...
    configs: list[ConfigRecord] = field(default_factory=list)
    # throttle keys kops changed: "topics/t" or "brokers/1" -> {key: value found before (None = absent)}
    throttles_before: dict[str, dict[str, str | None]] = field(default_factory=dict)
    throttles_written: dict[str, dict[str, str]] = field(default_factory=dict)  # what kops last wrote there
    election: list[TopicPartition] = field(default_factory=list)
    election_done: bool = False
    irreversible: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)  # plan sections edited by hand, run with --accept-edited-plan
    rolling: Rolling | None = None  # rolling execution: one "batch" per move, several in flight at once

    def batch(self, index: int) -> BatchRecord:
        return next(b for b in self.batches if b.index == index)

    @property
    def current(self) -> BatchRecord | None:
        """The batch in flight (or interrupted in flight), if any; the first of them in a rolling execution."""
        return next((b for b in self.batches if b.status == RUNNING), None)

    @property
    def in_flight(self) -> list[BatchRecord]:
        """Every batch in flight (in a rolling execution each holds one move; otherwise at most one)."""
        return [b for b in self.batches if b.status == RUNNING]

    @property
    def finished(self) -> bool:
        return self.status == DONE


def joined(batches: list[BatchRecord]) -> BatchRecord:
    """Batches as one, for what looks at all their moves at once (a rolling execution's moves in flight)."""
    return BatchRecord(0, [m for b in batches for m in b.moves], RUNNING)


def _move(m: Move) -> list[Any]:
    return [m.topic, m.partition, list(m.from_replicas), list(m.to_replicas), m.bytes]


def to_document(r: ExecutionRecord) -> dict[str, Any]:
    return {
        "format": FORMAT, "id": r.id, "kind": r.kind, "of": r.of, "plan_digest": r.plan_digest,
        "plan_path": r.plan_path, "cluster_id": r.cluster_id, "status": r.status, "stop_reason": r.stop_reason,
        "started_at": r.started_at, "updated_at": r.updated_at, "holder": r.holder, "rate": r.rate,
        "steps_done": r.steps_done,
        "configs": [{"entity_type": c.entity_type, "entity": c.entity, "before": c.before, "after": c.after}
                    for c in r.configs],
        "throttles_before": r.throttles_before, "throttles_written": r.throttles_written,
        "batches": [{"index": b.index, "status": b.status, "estimate_seconds": b.estimate_seconds,
                     "started_at": b.started_at, "finished_at": b.finished_at, "progress_at": b.progress_at,
                     "moves": [_move(m) for m in b.moves]} for b in r.batches],
        "election": [[tp.topic, tp.partition] for tp in r.election], "election_done": r.election_done,
        "irreversible": r.irreversible,
        **({"edited_plan_sections": r.edited} if r.edited else {}),
        **({} if r.rolling is None else {"rolling": rolling_document(r.rolling)}),
    }


def dumps(r: ExecutionRecord) -> bytes:
    """Compact JSON, serialised through the declaration (a record kops could not read back is never written)."""
    doc = doc_model.RecordDoc.model_validate(to_document(r)).model_dump(mode="json")
    return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()


def _batch_of(b: doc_model.BatchRecordDoc) -> BatchRecord:
    return BatchRecord(b.index, [Move(t, p, tuple(f), tuple(to), n) for t, p, f, to, n in b.moves], b.status,
                       b.estimate_seconds, b.started_at, b.finished_at, b.progress_at)


def from_document(raw: Any) -> ExecutionRecord:
    """The record in a parsed document, checked whole; raises ShapeError naming the field."""
    d = validate(doc_model.RecordDoc, raw, FORMAT)
    return ExecutionRecord(
        id=d.id, kind=d.kind, of=d.of, plan_digest=d.plan_digest, plan_path=d.plan_path, cluster_id=d.cluster_id,
        status=d.status, stop_reason=d.stop_reason, started_at=d.started_at, updated_at=d.updated_at,
        holder=dict(d.holder), rate=d.rate, steps_done=list(d.steps_done),
        configs=[ConfigRecord(c.entity_type, c.entity, dict(c.before), dict(c.after)) for c in d.configs],
        throttles_before={k: dict(v) for k, v in d.throttles_before.items()},
        throttles_written={k: dict(v) for k, v in d.throttles_written.items()},
        batches=[_batch_of(b) for b in d.batches],
        election=[TopicPartition(t, p) for t, p in d.election], election_done=d.election_done,
        irreversible=list(d.irreversible), edited=list(d.edited_plan_sections or []),
        rolling=None if d.rolling is None else Rolling(d.rolling.max_moves_per_broker, d.rolling.max_moves),
    )


def loads(data: bytes, where: str) -> ExecutionRecord:
    try:
        return from_document(parse_json(data))
    except ShapeError as exc:
        raise RecordError(f"unreadable execution record: {exc}", where=where,
                          hint="it was not written by this kops version, or was edited by hand") from None
