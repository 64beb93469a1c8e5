"""Tiered storage (KIP-405) in plans: a move of a tiered topic costs its local log, the remote part is shown
beside it and never counted in batches, estimates or disk balance (the golden decommission-tiered scenario)."""

from __future__ import annotations

import json
from pathlib import Path

from kops.cli.main import main
from kops.model import plan_format
from kops.model.partitions import TopicPartition
from tests.golden.scenarios import HERE

FOLDER = HERE / "decommission-tiered"


def plan_with(sizes: Path, tmp_path: Path):
    out = tmp_path / "plan.json"
    assert main(["plan", str(FOLDER / "playbook.yml"), "-i", str(FOLDER / "inventory.yml"), "--snapshot",
                 str(FOLDER / "snapshot.json"), "--sizes", str(sizes), "-o", str(out)]) == 0
    return plan_format.loads(out.read_bytes(), "plan")


def rows() -> list[dict]:
    return [json.loads(line) for line in (FOLDER / "sizes.json").read_text().splitlines()]


def test_tiered_moves_cost_their_local_log_and_show_the_remote_part(tmp_path: Path) -> None:
    plan = plan_format.loads((FOLDER / "expected-plan.json").read_bytes(), "golden")
    sizes = {TopicPartition(r["topic"], r["partition"]): r for r in rows()}
    tiered = [m for m in plan.moves if m.topic == "events"]
    assert tiered and all(m.remote_bytes == sizes[m.tp]["remote_bytes"] for m in tiered)
    assert all(m.bytes == sizes[m.tp]["bytes"] for m in plan.moves)  # the local log, tiered or not
    assert all(m.remote_bytes is None for m in plan.moves if m.topic != "events")
    assert plan.summary.bytes == sum(m.copied_bytes for m in plan.moves)
    assert plan.summary.remote_bytes == sum(m.remote_bytes * len(m.adding) for m in tiered)
    assert all(b.bytes == sum(m.copied_bytes for m in b.moves) for b in plan.batches)
    assert {m.tp: m.remote_bytes for b in plan.rollback.batches for m in b.moves if m.topic == "events"} \
        == {m.tp: m.remote_bytes for m in tiered}


def test_the_remote_part_changes_nothing_but_what_the_plan_shows(tmp_path: Path) -> None:
    bare = tmp_path / "sizes.json"
    bare.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "remote_bytes"}) + "\n" for r in rows()))
    with_remote, without = plan_with(FOLDER / "sizes.json", tmp_path), plan_with(bare, tmp_path)
    assert [(m.tp, m.to_replicas,
             m.bytes) for m in with_remote.moves] == [(m.tp, m.to_replicas, m.bytes) for m in without.moves]
    assert [b.estimate for b in with_remote.batches] == [b.estimate for b in without.batches]
    assert with_remote.summary.bytes_after == without.summary.bytes_after  # disk balance: what is on the disks
    assert without.summary.remote_bytes == 0 and all(m.remote_bytes == 0 for m in without.moves if m.topic == "events")


def test_the_markdown_says_both(capsys) -> None:
    text = (FOLDER / "expected.md").read_text()
    assert "stay in remote storage, not copied" in text and "| not copied (tiered storage) |" in text
    assert "remote, not copied) | decommission broker 3 |" in text
