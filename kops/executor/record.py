"""The execution record: everything needed to resume, report and roll back one run of `kops apply`/`rollback`.

Kept as JSON (`kops-execution/1`, declared once in kops/formats/record.py, which the conversions both ways are
derived from) in `/kops/executions/<id>` — every operator and cron host sees it — and as a copy beside the plan.
It is written before each action it describes (throttle values found, batch started), so a `kill -9` at any
point leaves a record from which `--resume` continues and `rollback` undoes: the original replica lists of every
move, in order, and every config value kops replaced. The values themselves are kops/model/execution.py's.
"""

from __future__ import annotations

import json
from typing import Any

from kops.errors import KopsError
from kops.formats import record as doc_model
from kops.formats.base import validate
from kops.formats.binding import document_of, value_of
from kops.jsondoc import ShapeError, parse_json
from kops.model.execution import (
    CANCELLED,
    DONE,
    FAILED,
    PENDING,
    RUNNING,
    STOPPED,
    BatchRecord,
    ConfigRecord,
    ExecutionRecord,
    joined,
)

__all__ = ["CANCELLED", "DONE", "FAILED", "FORMAT", "PENDING", "RUNNING", "STOPPED", "BatchRecord", "ConfigRecord",
           "ExecutionRecord", "RecordError", "dumps", "from_document", "joined", "loads", "to_document"]

FORMAT = doc_model.FORMAT


class RecordError(KopsError):
    """An execution record that cannot be read back."""


def to_document(r: ExecutionRecord) -> dict[str, Any]:
    """The record's JSON document, as kops/formats/record.py declares it."""
    return document_of(r, doc_model.RecordDoc)


def dumps(r: ExecutionRecord) -> bytes:
    """Compact JSON, serialised through the declaration (a record kops could not read back is never written)."""
    doc = doc_model.RecordDoc.model_validate(to_document(r)).model_dump(mode="json")
    return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()


def from_document(raw: Any) -> ExecutionRecord:
    """The record in a parsed document, checked whole; raises ShapeError naming the field."""
    return value_of(validate(doc_model.RecordDoc, raw, FORMAT))  # type: ignore[no-any-return]  # a RecordDoc holds one


def loads(data: bytes, where: str) -> ExecutionRecord:
    try:
        return from_document(parse_json(data))
    except ShapeError as exc:
        raise RecordError(f"unreadable execution record: {exc}", where=where,
                          hint="it was not written by this kops version, or was edited by hand") from None
