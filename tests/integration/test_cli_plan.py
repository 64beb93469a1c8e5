"""`kops plan` end to end: live from a real ZooKeeper, offline from a snapshot, Kafka's JSON in and out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kops.cli.main import main
from kops.lab.sample import sample_snapshot
from kops.lab.snapshot_writer import write_snapshot
from kops.model import plan_format
from kops.zk_layout.client import ZkClient
from kops.zk_layout.codecs.reassign_tool import read_reassignment_json

PLAYBOOK = """- name: lab
  hosts: all
  topics:
    - name: audit
      partitions: 3
      replication_factor: 3
    - name: clicks
      replication_factor: 3
  execution: {throttle: 10MiB/s, batch: {max_partitions: 4}}
"""


@pytest.fixture
def cluster(zk: ZkClient, zk_connect: str) -> str:
    write_snapshot(zk, sample_snapshot())
    return zk_connect


def test_live_plan_writes_plan_and_kafka_json(cluster: str, tmp_path: Path, capsys) -> None:
    pb = tmp_path / "pb.yml"
    pb.write_text(PLAYBOOK)
    out, kafka = tmp_path / "plan.json", tmp_path / "kafka.json"
    assert main(["plan", str(pb), "-z", cluster, "-o", str(out), "--export-kafka", str(kafka),
                 "--detailed-exitcode"]) == 2
    plan = plan_format.loads(out.read_bytes(), str(out))
    assert [c.topic for c in plan.creations] == ["audit"] and plan.connect == cluster
    assert all(len(b.moves) <= 4 for b in plan.batches) and plan.summary.moves == 12
    exported = read_reassignment_json(kafka.read_bytes(), str(kafka))
    assert len(exported) == len(plan.moves) and all(e.log_dirs is None or set(e.log_dirs) == {"any"} for e in exported)
    assert json.loads(kafka.read_bytes())["partitions"][0]["log_dirs"][0] == "any"
    assert "Batches" in capsys.readouterr().out


def test_offline_from_snapshot_and_no_changes(cluster: str, tmp_path: Path, capsys) -> None:
    snap = tmp_path / "snap.json"
    assert main(["state", "-z", cluster, "--out", str(snap)]) == 0
    pb = tmp_path / "pb.yml"
    pb.write_text("- hosts: all\n  topics: [{name: orders, partitions: 6, replication_factor: 3}]\n")
    assert main(["plan", str(pb), "--snapshot", str(snap), "--detailed-exitcode"]) == 0
    assert "No changes" in capsys.readouterr().out
    assert main(["plan", str(pb), "--snapshot", str(snap), "--format", "markdown"]) == 0
    assert "**No changes.**" in capsys.readouterr().out


def test_import_kafka_json(cluster: str, tmp_path: Path, capsys) -> None:
    moves = tmp_path / "moves.json"
    moves.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "orders", "partition": 0, "replicas": [4, 5, 6], "log_dirs": ["any", "any", "any"]}]}))
    out = tmp_path / "plan.json"
    assert main(["plan", "--import-kafka", str(moves), "-z", cluster, "--throttle", "5MiB/s", "-o", str(out)]) == 0
    plan = plan_format.loads(out.read_bytes(), str(out))
    [move] = plan.moves
    assert move.from_replicas == (1, 2, 3) and move.to_replicas == (4, 5, 6)
    assert plan.batches[0].throttle.topics["orders"] == {
        "leader.replication.throttled.replicas": "0:1,0:2,0:3",
        "follower.replication.throttled.replicas": "0:4,0:5,0:6"}
    assert plan.rollback.batches[0].moves[0].to_replicas == (1, 2, 3)
    inventory = tmp_path / "hosts.yml"  # the inventory's cluster, as every other command reads it
    inventory.write_text(f"all:\n  hosts:\n    lab:\n      zookeeper: '{cluster}'\n")
    assert main(["plan", "--import-kafka", str(moves), "-i", str(inventory), "-l", "lab", "-o", str(out)]) == 0
    assert plan_format.loads(out.read_bytes(), str(out)).moves == plan.moves
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"version": 1, "partitions": [{"topic": "nope", "partition": 0, "replicas": [1]}]}))
    capsys.readouterr()
    assert main(["plan", "--import-kafka", str(bad), "-z", cluster]) == 1
    assert "non-existent partitions: nope-0" in capsys.readouterr().err


@pytest.mark.parametrize(
    "playbook, message",
    [
        ("- hosts: all\n  topics: [{name: orders, partitions: 2}]\n", "Kafka cannot decrease the partition count"),
        ("- hosts: all\n  topics: [{name: orders, replication_factor: 9}]\n", "replication_factor 9 needs 9 brokers"),
        ("- hosts: all\n  brokers: {decommission: [4]}\n", "payments-1 is being reassigned right now"),
        ("- hosts: all\n  topics: [{name: 'bad name'}]\n", "illegal character"),
    ],
)
def test_plan_errors_are_one_line_with_location(cluster: str, tmp_path: Path, playbook: str, message: str,
                                                capsys) -> None:
    pb = tmp_path / "pb.yml"
    pb.write_text(playbook)
    assert main(["plan", str(pb), "-z", cluster]) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and err.startswith("error:") and len(err.splitlines()) == 1
    assert str(pb) in err


def test_plan_needs_one_cluster(tmp_path: Path, capsys) -> None:
    root = Path(__file__).resolve().parents[2]
    assert main(["plan", str(root / "playbooks/platform.yml"), "-i", str(root / "inventories/example")]) == 1
    assert "targets 4 clusters" in capsys.readouterr().err


def test_an_unwritable_output_is_one_line(tmp_path: Path, capsys) -> None:
    golden = Path(__file__).resolve().parents[1] / "golden" / "create"
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    assert main(["plan", str(golden / "playbook.yml"), "-i", str(golden / "inventory.yml"),
                 "--snapshot", str(golden / "snapshot.json"), "-o", str(blocked / "plan.json")]) == 1
    err = capsys.readouterr().err
    assert f"{blocked / 'plan.json'}: cannot write" in err and "Traceback" not in err and len(err.splitlines()) == 1
