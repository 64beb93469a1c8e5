"""The executor's events are typed values whose JSON (`kops apply --format json`, one object a line) keeps the
shape docs/apply.md documents: the field names, `mode: rolling` on a rolling progress, `overall_eta` only once
there is a rate."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest

from kops.cli import console
from kops.cli.execution import Reporter
from kops.cli.options import OutputFormat
from kops.executor import events
from kops.executor.events import BatchProgressed, CapacityUnknown, Event, MoveProgress, OrderRestored, RollingProgressed

ROOT = Path(__file__).resolve().parents[2]
KEYS = {  # each event's JSON keys, besides "event": a change here is a change to the documented format
    "message": {"text"}, "step": {"text"}, "resume": {"execution", "kind"},
    "start": {"execution", "kind", "batches", "mode", "partitions", "bytes"}, "done": {"execution"},
    "stopped": {"execution", "reason"}, "lock_lost": {"execution", "reason"},
    "batch_start": {"batch", "batches", "partitions", "bytes", "estimate_seconds", "reattached"},
    "batch_done": {"batch", "batches", "seconds"}, "stalled": {"batch", "text"},
    "order_restored": {"partitions", "reordered", "elected", "left"}, "capacity_unknown": {"brokers", "reason"},
    "rolling_start": {"moves", "max_moves_per_broker", "max_moves"},
    "move_start": {"topic", "partition", "bytes", "in_flight"}, "move_done": {"topic", "partition", "seconds"},
}
PROGRESS = {"partitions", "done", "bytes_total", "bytes_done", "elapsed", "rate", "eta", "overall_bytes_total",
            "overall_bytes_done"}


def kinds() -> list[type[Event]]:
    return [c for c in vars(events).values() if isinstance(c, type) and issubclass(c, Event) and c is not Event]


def test_every_event_has_its_documented_name_and_fields() -> None:
    documented = set(re.findall(r"`([a-z_]+)`", (ROOT / "docs" / "apply.md").read_text()))
    names = [kind.name for kind in kinds()]
    assert sorted(names) == sorted([*KEYS, "progress", "progress"])  # batches and rolling report progress
    assert set(names) <= documented
    for kind in kinds():
        if kind.name in KEYS:
            assert {f.name for f in fields(kind)} == KEYS[kind.name], kind.__name__


def test_progress_keeps_its_two_shapes() -> None:
    batch = BatchProgressed(1, 3, 4, 2, 100, 50, 1.5, 33.3, 1.5, 300, 150)
    assert batch.to_json() == {"event": "progress", "batch": 1, "batches": 3, "partitions": 4, "done": 2,
                               "bytes_total": 100, "bytes_done": 50, "elapsed": 1.5, "rate": 33.3,
                               "eta": 1.5, "overall_bytes_total": 300, "overall_bytes_done": 150}
    assert BatchProgressed(1, 3, 4, 2, 100, 50, 1.5, 33.3, 1.5, 300, 150, 7.5).to_json()["overall_eta"] == 7.5
    rolling = RollingProgressed(5, 1, (MoveProgress("pay", 0, 10, 20, None),), 100, 50, 2.0, None, None, 100, 50)
    doc = rolling.to_json()
    assert set(doc) == {"event", "mode", "in_flight", *PROGRESS} and doc["mode"] == "rolling"
    assert doc["in_flight"] == [{"topic": "pay", "partition": 0, "bytes_done": 10, "bytes_total": 20, "eta": None}]


def test_what_a_cancellation_restored_is_written_as_lists() -> None:
    assert OrderRestored(2, ("pay-0",), (), ("x",)).to_json() == {
        "event": "order_restored", "partitions": 2, "reordered": ["pay-0"], "elected": [], "left": ["x"]}


def test_brokers_whose_disks_are_not_checked_are_a_list() -> None:
    assert CapacityUnknown((4, 5), "usable bytes not reported").to_json() == {
        "event": "capacity_unknown", "brokers": [4, 5], "reason": "usable bytes not reported"}


def test_the_text_names_the_brokers_whose_disks_are_not_checked(capsys: pytest.CaptureFixture[str]) -> None:
    console.reset()
    Reporter(OutputFormat.text)(CapacityUnknown((4,), "usable bytes not reported"))
    Reporter(OutputFormat.text)(CapacityUnknown((4, 5), "usable bytes not reported"))
    said = " ".join(capsys.readouterr().out.split())  # the terminal's width may wrap a line (80 columns under CI)
    assert said == ("broker 4: usable bytes not reported; its disk is not checked before moves "
                    "brokers 4, 5: usable bytes not reported; their disks are not checked before moves")
