"""kops and Kafka's own kafka-reassign-partitions, side by side on one real Kafka 3.9 cluster.

A plan exported with `kops plan --export-kafka` executes with Kafka's tool (`--execute`, then `--verify` until
done) to exactly the layout kops planned; a proposal from the tool's `--generate` imports with
`kops plan --import-kafka` and applies with `kops apply`. Kafka's Admin API is the judge.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kops.cli.main import main
from kops.model import plan_format
from kops.zk_layout.client import ZkClient, ZkSettings
from tests.engines import EngineLab
from tests.integration.test_executor import judged, layout, throttle_configs
from tests.kafka_reassign_tool import reassign_tool, verify_until_done
from tests.labtools import wait_until

pytestmark = pytest.mark.lab
ORIGINAL = {"orders": {p: ((p % 3) + 1, ((p + 1) % 3) + 1) for p in range(6)}}


@pytest.fixture
def real39(kafka39: EngineLab):
    from tests.engines import reset_real_cluster

    reset_real_cluster(kafka39.lab, kafka39.zk_connect)
    with ZkClient(ZkSettings(kafka39.zk_connect)) as zk:
        kafka39.create_and_fill(zk, ORIGINAL, 1)
        yield kafka39, zk


def test_a_kops_plan_exported_for_kafkas_tool_executes_to_the_planned_layout(real39, tmp_path: Path) -> None:
    cluster, zk = real39
    playbook = tmp_path / "pb.yml"
    playbook.write_text("- hosts: all\n  topics: [{name: orders, replication_factor: 3}]\n"
                        "  brokers: {decommission: [3]}\n  execution: {throttle: 4MiB/s}\n")
    exported, plan_file = tmp_path / "reassign.json", tmp_path / "plan.json"
    assert main(["plan", str(playbook), "-z", cluster.zk_connect, "-o", str(plan_file),
                 "--export-kafka", str(exported), "--format", "json"]) == 0
    plan = plan_format.loads(plan_file.read_bytes(), str(plan_file))
    expected = {"orders": dict(ORIGINAL["orders"])}
    for m in plan.moves:
        expected["orders"][m.partition] = m.to_replicas

    out = reassign_tool(cluster, "--execute", "--reassignment-json-file", str(exported), "--throttle", str(4 << 20))
    assert "Successfully started partition reassignment" in out, out
    verify_until_done(cluster, exported)
    wait_until(lambda: cluster.judge_layout() == expected, timeout=60, what="Kafka's tool to reach kops's plan")
    assert judged(cluster, zk, expected)
    assert throttle_configs(zk) == {}  # --verify removed the throttles the tool set


def test_a_proposal_of_kafkas_tool_imports_and_applies_with_kops(real39, tmp_path: Path) -> None:
    cluster, zk = real39
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": "orders"}]}))
    out = reassign_tool(cluster, "--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "1,2,4")
    proposal_text = out.split("Proposed partition reassignment configuration")[1].strip()
    proposal = tmp_path / "proposal.json"
    proposal.write_text(proposal_text)
    proposed = {p["partition"]: tuple(p["replicas"]) for p in json.loads(proposal_text)["partitions"]}

    plan_file = tmp_path / "imported.json"
    assert main(["plan", "--import-kafka", str(proposal), "-z", cluster.zk_connect, "--throttle", "4MiB/s",
                 "-o", str(plan_file), "--format", "json"]) == 0
    assert main(["apply", str(plan_file), "-z", cluster.zk_connect, "--yes", "--format", "json", "--poll", "0.2"]) == 0
    assert judged(cluster, zk, {"orders": proposed})
    assert throttle_configs(zk) == {}
    assert main(["rollback", str(plan_file), "-z", cluster.zk_connect, "--yes", "--format", "json", "--poll",
                 "0.2"]) == 0
    assert judged(cluster, zk, ORIGINAL) and layout(zk) == ORIGINAL
