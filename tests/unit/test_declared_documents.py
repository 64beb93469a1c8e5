"""kops writes its snapshot and plan documents as built after validating them, not through a model dump (a
second copy of a million partitions): that is only right while the two are the same document."""

from __future__ import annotations

from pathlib import Path

import pytest

from kops.formats import plan as plan_doc
from kops.formats import snapshot as snapshot_doc
from kops.lab.sample import sample_snapshot
from kops.model import plan_format, snapshot_format

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*/expected-plan.json")), ids=lambda p: p.parent.name)
def test_a_plan_document_is_what_its_declaration_serialises(path: Path) -> None:
    doc = plan_format.to_document(plan_format.loads(path.read_bytes(), str(path)))
    assert plan_doc.PlanDoc.model_validate(doc).model_dump(mode="json") == doc


def test_a_snapshot_document_is_what_its_declaration_serialises() -> None:
    snapshots = [snapshot_format.loads(p.read_bytes(), str(p)) for p in sorted(GOLDEN.glob("*/snapshot.json"))]
    snapshots.append(sample_snapshot())
    for snap in snapshots:
        doc = snapshot_format.to_document(snap)
        assert snapshot_doc.SnapshotDoc.model_validate(doc).model_dump(mode="json") == doc


def test_the_written_bytes_read_back_to_the_same_snapshot_and_plan() -> None:
    snap = sample_snapshot()
    assert snapshot_format.loads(snapshot_format.dumps(snap), "s") == snap
    path = GOLDEN / "decommission" / "expected-plan.json"
    assert plan_format.dumps(plan_format.loads(path.read_bytes(), str(path))) == path.read_bytes()
