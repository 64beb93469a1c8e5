"""The `kops-snapshot/1` file format (declared once, in kops/formats/snapshot.py, which the conversions both ways
are derived from): a snapshot as JSON, for offline planning and CI (docs/snapshot-format.md).

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
from kops.formats.binding import document_of, value_of
from kops.jsondoc import ShapeError, dumps_document, parse_json
from kops.model.snapshot import Snapshot

FORMAT = doc_model.FORMAT


def to_document(snapshot: Snapshot) -> dict[str, Any]:
    """The snapshot's JSON document, as kops/formats/snapshot.py declares it."""
    return document_of(snapshot, doc_model.SnapshotDoc)


@collector_paused()
def dumps(snapshot: Snapshot) -> bytes:
    """The file's bytes: the document is validated against the declaration before it is written (a snapshot
    kops could not read back is never written), and written as built, which is what the declaration would
    serialise (tests/unit/test_declared_documents.py), without a second copy of a million partitions."""
    doc = to_document(snapshot)
    doc_model.SnapshotDoc.model_validate(doc)
    return dumps_document(doc)


def from_document(raw: Any) -> Snapshot:
    """Build a Snapshot from a parsed document; raises ShapeError naming the first bad field."""
    return value_of(validate(doc_model.SnapshotDoc, raw, FORMAT))  # type: ignore[no-any-return]  # it holds a Snapshot


@collector_paused()
def loads(data: bytes | str, where: str) -> Snapshot:
    """Parse a snapshot file's content; errors name the file and the field."""
    try:
        return from_document(parse_json(data))
    except ShapeError as exc:
        raise DocumentError(
            f"not a usable kops snapshot: {exc}", where=where, hint="write one with `kops state --out FILE`"
        ) from None
