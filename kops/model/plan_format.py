"""The plan file, `kops-plan/2` (declared once, in kops/formats/plan.py, which the conversions both ways are
derived from): JSON with sorted keys and no clock, so identical inputs give identical bytes.

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
from kops.formats.binding import document_of, value_of
from kops.jsondoc import ShapeError, dumps_document, parse_json
from kops.model.plan import Plan

FORMAT = doc_model.FORMAT


def to_document(plan: Plan) -> dict[str, Any]:
    """The plan's JSON document, as kops/formats/plan.py declares it (without its seal)."""
    return document_of(plan, doc_model.PlanDoc)


SEALED = ("header", "fingerprint", "changes", "batches", "election", "rollback", "summary", "warnings")
HEADER = ("format", "kops_version", "cluster", "cluster_id", "connect", "playbook_digest", "stall_timeout",
          "rolling")
LATER_HEADER = ("rolling",)  # sealed only when present


def seal(doc: dict[str, Any]) -> dict[str, str]:
    """A digest of each section as kops wrote it: an edit by hand is found, and named, on load."""
    header = {k: doc.get(k) for k in HEADER if k in doc or k not in LATER_HEADER}  # seals of older plans hold
    sections = {"header": header, **{k: doc.get(k) for k in SEALED if k != "header"}}
    def digest(section: Any) -> str:
        return hashlib.sha256(json.dumps(section, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]

    return {name: digest(sections[name]) for name in SEALED}


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


def from_document(raw: Any) -> Plan:
    """The plan in a parsed document, checked whole by the declaration; raises ShapeError naming the field."""
    if isinstance(raw, dict) and raw.get("format") == "kops-plan/1":
        raise ShapeError("format is kops-plan/1, from an older kops that listed each move twice: "
                         "make the plan again with `kops plan`")
    return value_of(validate(doc_model.PlanDoc, raw, FORMAT))  # type: ignore[no-any-return]  # a PlanDoc holds a Plan


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
