"""`kops state` and `kops plan` against real Kafka 3.9, judged by Kafka's Admin API.

What kops reads through ZooKeeper (brokers, racks, topics, replicas in order, leaders, ISR, topic configs) must
be what Kafka itself reports; a plan made live and a plan made offline from the saved snapshot are the same.
"""

from __future__ import annotations

import json
from pathlib import Path

from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

from kops.cli.main import main
from kops.lab.kafka_admin import admin_client, layout
from kops.model import plan_format
from tests.engines import EngineLab, reset_real_cluster
from tests.labtools import wait_until


def test_kops_state_reads_what_kafka_reports(kafka39: EngineLab, tmp_path: Path, capsys) -> None:
    reset_real_cluster(kafka39.lab, kafka39.zk_connect)
    bootstrap = kafka39.bootstrap
    assert bootstrap is not None
    with admin_client(bootstrap) as client:
        client.create_topics([NewTopic("orders", 6, 3, topic_configs={"retention.ms": "3600000"}),
                              NewTopic("audit", 2, 2)])
    wait_until(lambda: {"orders", "audit"} <= set(layout(bootstrap)), what="topics created")
    wait_until(lambda: all(p["leader"] >= 0 for t in layout(bootstrap).values() for p in t.values()),
               what="leaders elected")
    snapshot_file = tmp_path / "snap.json"
    capsys.readouterr()
    assert main(["state", "-z", kafka39.zk_connect, "--format", "json", "--out", str(snapshot_file)]) == 0
    doc = json.loads(snapshot_file.read_text())

    kafka_view = layout(bootstrap)
    with admin_client(bootstrap) as client:
        cluster = client.describe_cluster()
        configs = client.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "orders")])
    assert {b["id"]: b["rack"] for b in doc["brokers"]} == {b["broker_id"]: b["rack"] for b in cluster["brokers"]}
    assert doc["cluster_id"] == cluster["cluster_id"]
    for name in ("orders", "audit"):
        kops_parts = doc["topics"][name]["partitions"]
        for p, row in kafka_view[name].items():
            mine = kops_parts[str(p)]
            assert tuple(mine["replicas"]) == row["replicas"]
            assert mine["leader"] == row["leader"]
            assert tuple(sorted(mine["isr"])) == row["isr"]
    assert doc["topics"]["orders"]["config"] == {"retention.ms": "3600000"}
    assert "3600000" in json.dumps(configs, default=str)

    # a plan made live equals the plan made offline from the snapshot kops saved
    playbook = tmp_path / "pb.yml"
    playbook.write_text("- hosts: all\n  topics: [{name: audit, replication_factor: 3}]\n  brokers: {decommission: [4]}\n")
    live, offline = tmp_path / "live.json", tmp_path / "offline.json"
    assert main(["plan", str(playbook), "-z", kafka39.zk_connect, "-o", str(live), "--format", "json"]) in (0, 2)
    assert main(["plan", str(playbook), "--snapshot", str(snapshot_file), "-o", str(offline), "--format", "json"]) in (0, 2)
    a, b = (plan_format.loads(f.read_bytes(), str(f)) for f in (live, offline))
    assert a.moves == b.moves and a.moves
