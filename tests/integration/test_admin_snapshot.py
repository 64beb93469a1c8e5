"""The Admin-API snapshot on real Kafka 4 (KRaft): honest right after a burst of topic creations (every broker
asked, views merged, what still disagrees named), fenced brokers (DescribeCluster v2) not counted as live, and an
offline partition's eligible leader replicas (KIP-966, DescribeTopicPartitions) as Kafka's own tool shows them.

One Kafka 4 cluster for the module, emptied between tests.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kops.cli.main import main
from kops.cluster.admin.adapter import AdminCluster
from kops.cluster.admin.connection import AdminSettings
from kops.lab.kafka_client import admin_client, create_topics, first_answer, layout
from kops.model.partitions import TopicPartition
from kops.model.snapshot import PROPAGATING, Snapshot
from tests.engines import EngineLab, kafka4_cluster, reset_admin_cluster
from tests.labtools import wait_until

pytestmark = pytest.mark.lab
TOPICS, PARTITIONS, CHUNK = 60, 100, 20  # 18,000 replicas on 4 brokers: enough to make their metadata lag here


@pytest.fixture(scope="module")
def kafka4(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineLab]:
    with kafka4_cluster(tmp_path_factory.mktemp("kafka4")) as cluster:
        yield cluster


@pytest.fixture
def bootstrap(kafka4: EngineLab) -> str:
    assert kafka4.bootstrap is not None
    reset_admin_cluster(kafka4.lab, kafka4.bootstrap)
    return kafka4.bootstrap


def honest(snapshot: Snapshot, wanted: dict[str, int], said: str) -> None:
    """Complete means every created topic with every partition; never a topic without partitions; incomplete
    names why."""
    empty = sorted(n for n, t in snapshot.topics.items() if not t.partitions)
    assert not empty, f"{said}: topics with no partitions: {empty[:5]}"
    if snapshot.complete:
        seen = {n: len(snapshot.topics[n].partitions) for n in wanted if n in snapshot.topics}
        assert seen == wanted, f"{said}: complete, but {len(wanted) - len(seen)} created topics are missing"
    else:
        assert snapshot.problems and snapshot.propagating, f"{said}: incomplete without a propagation problem"


def fenced_ids(bootstrap: str) -> set[int]:
    def ask(client: Any) -> set[int]:
        return {int(b["broker_id"]) for b in client.describe_cluster()["brokers"] if b.get("is_fenced")}
    return first_answer(bootstrap, ask)


def test_a_stopped_broker_is_fenced_not_live_and_never_a_target(kafka4: EngineLab, bootstrap: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    create_topics(bootstrap, {"orders": {"num_partitions": 6, "replication_factor": 3}})
    kafka4.lab.stop_broker(4)
    try:
        wait_until(lambda: 4 in fenced_ids(kafka4.lab.live_bootstrap()), timeout=60, what="broker 4 fenced")
        live = kafka4.lab.live_bootstrap()
        cluster = AdminCluster(AdminSettings(live))
        try:
            whole, poll = cluster.snapshot(), cluster.snapshot(only_topics={"orders"})
        finally:
            cluster.close()
        for snap in (whole, poll):
            assert snap.fenced == (4,) and 4 not in snap.live_broker_ids
        out = tmp_path / "snap.json"
        capsys.readouterr()
        assert main(["state", "-b", live, "--out", str(out)]) == 0
        assert json.loads(out.read_text())["fenced_brokers"] == [4]
        assert main(["state", "-b", live]) == 0
        assert "Fenced brokers" in capsys.readouterr().out
        playbook = tmp_path / "pb.yml"
        playbook.write_text("- hosts: all\n  topics: [{name: audit, partitions: 12, replication_factor: 3}]\n")
        plan = tmp_path / "plan.json"
        assert main(["plan", str(playbook), "--snapshot", str(out), "-o", str(plan)]) == 0
        [creation] = json.loads(plan.read_text())["changes"]["topic_creations"]
        assert all(4 not in replicas for replicas in creation["assignment"].values())
    finally:
        kafka4.lab.start_broker(4)


TOPIC_TOOL = "org.apache.kafka.tools.TopicCommand"


def test_an_offline_partition_names_the_eligible_leader_replica_kafka_keeps(
        kafka4: EngineLab, bootstrap: str, capsys: pytest.CaptureFixture[str]) -> None:
    """KIP-966 on Kafka 4 (eligible.leader.replicas.version=1, the lab's default): clicks-0 on brokers 2 and 3
    loses 3, then 2 is killed; its ISR is empty and broker 2 an eligible leader replica, as Kafka's own
    `kafka-topics --describe --unavailable-partitions` says. kops status says it waits for broker 2."""
    lab = kafka4.lab
    with admin_client(bootstrap) as client:
        client.create_topics({"clicks": {"assignments": {0: [2, 3]}, "configs": {"min.insync.replicas": "1"}}})
    wait_until(lambda: leader_and_isr(lab.live_bootstrap()) == (2, (2, 3)), timeout=60, what="clicks-0 in sync")
    try:
        lab.stop_broker(3)
        wait_until(lambda: leader_and_isr(lab.live_bootstrap()) == (2, (2,)), timeout=60, what="ISR shrunk to 2")
        lab.kill_broker(2)
        wait_until(lambda: 2 in fenced_ids(lab.live_bootstrap()), timeout=60, what="broker 2 fenced")
        live = lab.live_bootstrap()
        described = lab.run_tool(lab.distribution(), TOPIC_TOOL, "--bootstrap-server", live, "--describe",
                                 "--unavailable-partitions", "--topic", "clicks")
        assert re.search(r"Leader: none\s+Replicas: 2,3\s+Isr:\s*\S*\s+Elr: 2\b", described), described
        cluster = AdminCluster(AdminSettings(live))
        try:
            read = cluster.snapshot().eligible(TopicPartition("clicks", 0))
        finally:
            cluster.close()
        assert read is not None and read.replicas == (2,), read
        capsys.readouterr()
        assert main(["status", "-b", live, "--format", "json"]) == 0
        [offline] = [r for r in json.loads(capsys.readouterr().out)["offline"] if r["topic"] == "clicks"]
        assert offline["isr"] == [] and offline["eligible_leaders"] == [2]
        assert main(["status", "-b", live]) == 0
        shown = capsys.readouterr().out
        assert "clicks-0 has no live leader; it waits for broker 2 (an eligible leader replica) to return" in shown
        assert "none recorded" not in shown
    finally:
        for broker in (2, 3):
            if not lab.running(broker):
                lab.start_broker(broker)
        wait_until(lambda: leader_and_isr(lab.live_bootstrap())[0] in (2, 3), timeout=90, what="clicks-0 led again")


def leader_and_isr(servers: str) -> tuple[object, object]:
    part = layout(servers).get("clicks", {}).get(0, {})
    return part.get("leader"), part.get("isr")


def test_problem_paths_of_propagation_are_recognised() -> None:
    assert PROPAGATING == "metadata/"


# Last in the module: the burst leaves 6,000 partitions the cluster is slow to delete (the next test's reset).
def test_a_snapshot_read_right_after_a_burst_of_creations_is_honest(bootstrap: str, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    wanted = {f"burst-{i:03}": PARTITIONS for i in range(TOPICS)}
    with admin_client(bootstrap, timeout_ms=120000) as client:
        for start in range(0, TOPICS, CHUNK):  # Kafka takes at most 10,000 partitions a request
            client.create_topics({name: {"num_partitions": PARTITIONS, "replication_factor": 3}
                                  for name in sorted(wanted)[start:start + CHUNK]})
    cluster = AdminCluster(AdminSettings(bootstrap))
    try:
        for attempt in range(3):
            honest(cluster.snapshot(), wanted, f"read {attempt}")
    finally:
        cluster.close()
    out = tmp_path / "snap.json"
    code = main(["state", "-b", bootstrap, "--out", str(out)])
    doc = json.loads(out.read_text())
    assert code == 0 and all(t["partitions"] for t in doc["topics"].values())
    assert doc["complete"] == (not doc["problems"])
    playbook = tmp_path / "pb.yml"
    playbook.write_text(f"- hosts: all\n  topics: [{{name: burst-000, partitions: {PARTITIONS}, replication_factor: "
                        f"3}}]\n")
    capsys.readouterr()
    code = main(["plan", str(playbook), "--snapshot", str(out)])
    if doc["complete"]:
        assert code == 0
    else:
        assert code == 3 and "cluster metadata is still propagating" in capsys.readouterr().err
        assert main(["plan", str(playbook), "--snapshot", str(out), "--allow-incomplete"]) == 0
