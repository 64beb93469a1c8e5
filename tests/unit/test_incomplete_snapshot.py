"""`kops plan` refuses an incomplete snapshot (exit 3) unless --allow-incomplete; fenced brokers round-trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from kops.cli.main import main
from kops.model import snapshot_format
from kops.model.brokers import Broker
from kops.model.snapshot import ControllerInfo, Problem, Snapshot


def snapshot(problems: tuple[Problem, ...]) -> Snapshot:
    brokers = tuple(Broker(id=i, host="h", port=9092, endpoints=("PLAINTEXT://h:9092",)) for i in (1, 2, 3))
    return Snapshot(cluster_id="c", controller=ControllerInfo(1, None), brokers=brokers, topics={},
                    problems=problems, connect="kafka://h:9092", fenced=(4,))


def test_plan_refuses_an_incomplete_snapshot_unless_allowed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap = tmp_path / "snap.json"
    snap.write_bytes(snapshot_format.dumps(snapshot((Problem("metadata/orders", "the brokers disagree"),))))
    playbook = tmp_path / "pb.yml"
    playbook.write_text("- hosts: all\n  topics: [{name: orders, partitions: 3, replication_factor: 3}]\n")
    assert main(["plan", str(playbook), "--snapshot", str(snap)]) == 3
    assert "cluster metadata is still propagating" in capsys.readouterr().err
    assert main(["plan", str(playbook), "--snapshot", str(snap), "--allow-incomplete"]) == 0


def test_fenced_brokers_round_trip_and_are_not_live() -> None:
    loaded = snapshot_format.loads(snapshot_format.dumps(snapshot(())), "x")
    assert loaded.fenced == (4,) and 4 not in loaded.live_broker_ids and loaded.complete
