"""The newcomer's demo runs end to end on a lab of real broker processes and leaves nothing running."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kops.cli.demo import TOPICS
from kops.cli.main import main
from kops.lab.zookeeper import ZooKeeperServer
from kops.model import plan_format
from tests.engines import require_real

pytestmark = pytest.mark.lab


@pytest.mark.parametrize("engine", ["kafka-4", "kops"])
def test_demo_runs_every_step_rolls_back_exactly_and_cleans_up(engine: str, tmp_path: Path, capsys) -> None:
    """On real Kafka 4 (the newcomer's default) through the Admin API; on the kops engine through ZooKeeper."""
    if engine == "kafka-4":
        require_real("kafka-4")
    lab = tmp_path / "demo"
    code = main(["lab", "demo", "--dir", str(lab), "--engine", engine])
    captured = capsys.readouterr()
    out = captured.out
    # On failure, the end of the tour first: CI reports show the head of a failure, and the tour is long.
    assert code == 0, "\n".join((out + captured.err).splitlines()[-40:])
    flag = "-b" if engine == "kafka-4" else "-z"
    for step in ("1. Start a lab", "3. Read the whole cluster", "4. S", "5. Plan playbooks/lab-demo.yml",
                 "6. Apply it", "7. What ran", "8. Roll it back", "9. Stop the lab"):
        assert step in out
    for command in ("$ kops lab up", f"$ kops state {flag}", "$ kops sizes summarize", "$ kops plan", "$ kops apply",
                    f"$ kops status {flag}", "$ kops rollback", "$ kops lab down"):
        assert command in out
    if engine == "kafka-4":
        assert "Apache Kafka 4" in out and ("$ kops sizes collect "
                                            "-b") in out and "--store" in out and "--incremental" in out
    plan = plan_format.loads((lab / "plan.json").read_bytes(), "plan.json")
    assert [c.topic for c in plan.creations] == ["shop.audit"]
    assert all(6 not in m.to_replicas for m in plan.moves) and len(plan.batches) >= 2
    assert all(m.bytes > 0 for m in plan.moves)  # sized by the Spark summary
    records = {json.loads(p.read_text())["kind"]: json.loads(p.read_text())
               for p in lab.glob("plan.*.execution.json")}
    assert records["apply"]["status"] == "done" and records["rollback"]["status"] == "done"
    # The rollback put every moved partition back on its original replicas, in order.
    originals = {(t, p): list(replicas) for t, parts in TOPICS.items() for p, (replicas, _) in parts.items()}
    for batch in records["rollback"]["batches"]:
        for topic, partition, _now, back, *_ in batch["moves"]:
            assert back == originals[(topic, partition)]
    assert not (lab / "lab.json").exists() and ZooKeeperServer.attach(lab / "zk") is None
    assert processes_mentioning(str(lab)) == []


def processes_mentioning(text: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if text.encode() in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                continue
    return found
