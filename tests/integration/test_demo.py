"""The newcomer's demo runs end to end on a real ZooKeeper and leaves nothing running."""

from __future__ import annotations

from pathlib import Path

from kops.cli.main import main
from kops.lab.zookeeper import ZooKeeperServer
from kops.model import plan_format, snapshot_format


def test_demo_runs_and_cleans_up(tmp_path: Path, capsys) -> None:
    lab = tmp_path / "demo"
    assert main(["lab", "demo", "--dir", str(lab)]) == 0
    out = capsys.readouterr().out
    for step in ("1. Start a real ZooKeeper", "3. Read the whole cluster back", "5. Plan a change", "6. Stop ZooKeeper"):
        assert step in out
    assert "DESTRUCTIVE" in out and "Reassignments in flight" in out
    snap = snapshot_format.loads((lab / "snapshot.json").read_bytes(), "snapshot.json")
    plan = plan_format.loads((lab / "plan.json").read_bytes(), "plan.json")
    assert snap.partition_count == 24 and [c.topic for c in plan.creations] == ["shop.audit"]
    assert all(6 not in m.to_replicas for m in plan.moves)
    assert ZooKeeperServer.attach(lab / "zk") is None
