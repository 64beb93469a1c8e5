"""Plan and snapshot files as operators damage them: each is refused with one line naming the JSON location,
and a plan edited by hand is refused naming the section, unless accepted explicitly."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from kops.cli.state import write_atomically
from kops.errors import DocumentError
from kops.executor import record as records
from kops.formats.sizes import SizesRowDoc
from kops.model import plan_format, snapshot_format

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
PLAN = (GOLDEN / "decommission" / "expected-plan.json").read_text()
SNAPSHOT = (GOLDEN / "decommission" / "snapshot.json").read_text()


def resealed(doc: dict[str, Any]) -> bytes:
    """A damaged plan whose seal was recomputed: the checks beyond the seal must catch it."""
    doc["seal"] = plan_format.seal(doc)
    return json.dumps(doc).encode()


def refused(data: bytes, loads: Any = plan_format.loads) -> str:
    with pytest.raises(DocumentError) as caught:
        loads(data, "f.json")
    line = caught.value.one_line()
    assert line.startswith("f.json: ") and "\n" not in line
    return line


def test_the_golden_plan_loads_and_round_trips() -> None:
    plan = plan_format.loads(PLAN, "p.json")
    assert plan.edited == () and plan_format.dumps(plan).decode() == PLAN


def test_wrong_types_and_ranges_name_the_field() -> None:
    doc = json.loads(PLAN)
    doc["changes"]["topic_creations"] = [True]
    assert "topic_creations" in refused(resealed(doc)) or "creation" in refused(resealed(doc))
    for rate, words in ((-1, "throttle.rate must be a positive"), (0, "throttle.rate must be a positive")):
        doc = json.loads(PLAN)
        doc["batches"][0]["throttle"]["rate"] = rate
        assert words in refused(resealed(doc))
    doc = json.loads(PLAN)
    doc["batches"][0]["moves"][0]["partition"] = -1
    assert "batches[0].moves[0].partition is out of range" in refused(resealed(doc))
    doc = json.loads(PLAN)
    doc["summary"]["estimated_seconds"] = "soon"
    assert "summary.estimated_seconds must be a JSON number" in refused(resealed(doc))


def test_a_plan_that_says_two_things_is_refused() -> None:
    doc = json.loads(PLAN)
    doc["batches"][1]["moves"].append(doc["batches"][0]["moves"][0])
    doc["batches"][1]["bytes"] += doc["batches"][0]["moves"][0]["bytes"]
    assert "moved by more than one batch" in refused(resealed(doc))
    doc = json.loads(PLAN)
    doc["rollback"]["batches"] = doc["rollback"]["batches"][1:]
    assert "rollback.batches do not undo exactly" in refused(resealed(doc))
    doc = json.loads(PLAN)
    doc["batches"][0]["bytes"] += 1
    assert "batches[0].bytes is" in refused(resealed(doc))
    doc = json.loads(PLAN)
    doc["batches"][0]["moves"][0]["kind"] = "leader"
    assert "batches[0].moves[0].kind is leader, but from and to make it a data move" in refused(resealed(doc))
    doc = json.loads(PLAN)
    move = doc["batches"][0]["moves"][0]
    new = next(i for i, b in enumerate(move["to"]) if b not in move["from"])
    undo = next(m for b in doc["rollback"]["batches"] for m in b["moves"]
                if (m["topic"], m["partition"]) == (move["topic"], move["partition"]))
    move["to"][new] = undo["from"][new] = 999
    assert "which the plan's summary does not know" in refused(resealed(doc))


def test_each_move_is_written_once() -> None:
    doc = json.loads(PLAN)
    assert "moves" not in doc["changes"] and "leader_changes" not in doc["changes"]
    assert sum(len(b["moves"]) for b in doc["batches"]) == len(plan_format.loads(PLAN, "p.json").moves)


def test_an_edited_plan_is_refused_naming_the_section_unless_accepted() -> None:
    doc = json.loads(PLAN)
    doc["batches"][0]["throttle"]["rate"] = 1
    line = refused(json.dumps(doc).encode())
    assert "the plan was edited: batches changed" in line and "--accept-edited-plan" in line
    assert plan_format.loads(json.dumps(doc), "f.json", accept_edited=True).edited == ("batches",)
    del doc["seal"]
    assert "carries no seal" in refused(json.dumps(doc).encode())


def test_format_versions() -> None:
    doc = json.loads(PLAN)
    doc["format"] = "kops-plan/3"
    assert "newer than this kops reads (kops-plan/2): upgrade kops" in refused(resealed(doc))
    doc["format"] = "kops-plan/1"
    assert "kops-plan/1, from an older kops" in refused(resealed(doc))
    doc["format"] = "kops-plan/0"
    assert "which this kops does not read" in refused(resealed(doc))


@pytest.mark.parametrize("replicas, words", [([], "is empty"), ([1, 1, 1], "names a broker twice"),
                                             ([1, -2], "is out of range")])
def test_snapshot_replicas_must_be_a_real_replica_list(replicas: list[int], words: str) -> None:
    doc = json.loads(SNAPSHOT)
    topic = sorted(doc["topics"])[0]
    doc["topics"][topic]["partitions"]["0"]["replicas"] = replicas
    line = refused(json.dumps(doc).encode(), snapshot_format.loads)
    assert f"topics.{topic}.partitions.0.replicas" in line and words in line


def test_snapshot_broker_ids_are_not_negative() -> None:
    doc = json.loads(SNAPSHOT)
    doc["brokers"][0]["id"] = -1
    assert "brokers[0].id is out of range" in refused(json.dumps(doc).encode(), snapshot_format.loads)


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*/expected-plan.json")), ids=lambda p: p.parent.name)
def test_every_plan_round_trips_byte_for_byte(path: Path) -> None:
    data = path.read_bytes()
    assert plan_format.dumps(plan_format.loads(data, str(path))) == data


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*/snapshot.json")), ids=lambda p: p.parent.name)
def test_every_snapshot_round_trips_byte_for_byte(path: Path) -> None:
    data = path.read_bytes()
    assert snapshot_format.dumps(snapshot_format.loads(data, str(path))) == data


def test_records_round_trip_byte_for_byte() -> None:
    from tests.unit.test_file_mutations import RECORDS

    for data in RECORDS:
        assert records.dumps(records.loads(data, "r")) == data


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*/sizes.json")), ids=lambda p: p.parent.name)
def test_sizes_rows_round_trip_through_their_declaration(path: Path) -> None:
    for line in path.read_text().splitlines():
        row = json.loads(line)
        assert SizesRowDoc.model_validate(row).model_dump(mode="json") == row


def test_files_kops_writes_get_the_mode_a_shell_redirect_would(tmp_path: Path) -> None:
    """Snapshots and plans written with --out were 0600 (the temporary file's), `--format json > FILE` 0644."""
    mask = os.umask(0o022)
    try:
        write_atomically(tmp_path / "snap.json", b"{}")
        os.umask(0o002)
        write_atomically(tmp_path / "plan.json", b"{}")
    finally:
        os.umask(mask)
    assert (tmp_path / "snap.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "plan.json").stat().st_mode & 0o777 == 0o664
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
