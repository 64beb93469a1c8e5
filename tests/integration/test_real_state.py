"""`kops state` and `kops plan` against real Kafka 3.9, judged by Kafka's Admin API.

What kops reads through ZooKeeper (brokers, racks, topics, replicas in order, leaders, ISR, topic configs) must
be what Kafka itself reports; a plan made live and a plan made offline from the saved snapshot are the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

from kops.cli.main import main
from kops.lab.kafka_client import admin_client, layout, produce
from kops.model import plan_format
from kops.zk_layout.codecs.log_dirs import parse_log_dirs
from tests.engines import EngineLab, reset_real_cluster
from tests.labtools import wait_until

pytestmark = pytest.mark.lab  # real processes: one rerun on failure (tests/conftest.py)


def created(view: dict[str, dict[int, Any]], partitions: dict[str, int]) -> dict[str, dict[int, Any]] | None:
    """`view` when it holds every partition of `partitions`' topics, each with a leader; else None."""
    whole = all(len(view.get(name, {})) == n for name, n in partitions.items())
    return view if whole and all(p["leader"] >= 0 for name in partitions for p in view[name].values()) else None


def test_kops_state_reads_what_kafka_reports(kafka39: EngineLab, tmp_path: Path, capsys) -> None:
    reset_real_cluster(kafka39.lab, kafka39.zk_connect)
    bootstrap = kafka39.bootstrap
    assert bootstrap is not None
    with admin_client(bootstrap) as client:
        client.create_topics([NewTopic("orders", 6, 3, topic_configs={"retention.ms": "3600000"}),
                              NewTopic("audit", 2, 2)])
    snapshot_file = tmp_path / "snap.json"

    def read_between() -> tuple[dict[str, dict[int, Any]], dict[str, Any]] | None:
        """Kafka's view as it was both before and after `kops state` read ZooKeeper, with kops's snapshot: each
        metadata request may reach another broker, whose cache can still lack a topic the last answer had (CI saw
        `orders` missing from a second read), and on a loaded machine an ISR may shrink and grow back meanwhile."""
        before = created(layout(bootstrap), {"orders": 6, "audit": 2})
        if before is None:
            return None
        capsys.readouterr()
        assert main(["state", "-z", kafka39.zk_connect, "--format", "json", "--out", str(snapshot_file)]) == 0
        return (before, json.loads(snapshot_file.read_text())) if layout(bootstrap) == before else None

    kafka_view, doc = wait_until(read_between, timeout=60, what="Kafka's view unchanged while kops read the state")

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
    playbook.write_text("- hosts: all\n  topics: [{name: audit, replication_factor: 3}]\n  brokers: {decommission: "
                        "[4]}\n")
    live, offline = tmp_path / "live.json", tmp_path / "offline.json"
    assert main(["plan", str(playbook), "-z", kafka39.zk_connect, "-o", str(live), "--format", "json"]) in (0, 2)
    assert main(["plan", str(playbook), "--snapshot", str(snapshot_file), "-o", str(offline), "--format",
                 "json"]) in (0, 2)
    a, b = (plan_format.loads(f.read_bytes(), str(f)) for f in (live, offline))
    assert a.moves == b.moves and a.moves


def _view(doc: dict) -> dict:
    """What both transports must agree on."""
    return {
        "cluster_id": doc["cluster_id"],
        "brokers": {b["id"]: (b["rack"], b["host"], b["port"]) for b in doc["brokers"]},
        "topics": {name: ({p: (tuple(x["replicas"]), x["leader"], tuple(sorted(x["isr"])), tuple(x.get("adding") or ()),
                               tuple(x.get("removing") or ())) for p, x in t["partitions"].items()},
                          t["config"], t.get("topic_id"))
                   for name, t in doc["topics"].items()},
        "broker_configs": doc["broker_configs"],
    }


def test_the_admin_api_reads_the_same_snapshot_as_zookeeper(kafka39: EngineLab, tmp_path: Path, capsys) -> None:
    reset_real_cluster(kafka39.lab, kafka39.zk_connect)
    bootstrap = kafka39.bootstrap
    assert bootstrap is not None
    with admin_client(bootstrap) as client:
        client.create_topics([NewTopic("orders", 4, 3, topic_configs={"retention.ms": "3600000"})])
    wait_until(lambda: all(p["leader"] >= 0 for p in layout(bootstrap).get("orders", {}).values())
               and len(layout(bootstrap).get("orders", {})) == 4, what="topic ready")
    def both() -> tuple[dict, dict]:
        assert main(["state", "-z", kafka39.zk_connect, "--out", str(tmp_path / "zk.json")]) == 0
        assert main(["state", "-b", bootstrap, "--out", str(tmp_path / "admin.json")]) == 0
        zk_doc, admin_doc = (json.loads((tmp_path / f).read_text()) for f in ("zk.json", "admin.json"))
        return _view(zk_doc), _view(admin_doc)

    # the brokers' metadata follows ZooKeeper a moment behind (this worker's shared cluster has just been
    # reset: topics of earlier tests deleted, internal topics' leaders settling): equal once it has caught up
    wait_until(lambda: (lambda views: views[0] == views[1])(both()), timeout=30, what="both views to agree")
    zk_view, admin_view = both()
    assert admin_view == zk_view
    assert main(["state", "-b", bootstrap, "-z", kafka39.zk_connect, "--format", "json"]) == 0
    assert "using the Admin API" in capsys.readouterr().err


def test_state_through_the_admin_api_on_kafka_4_plans_offline(tmp_path: Path, capsys) -> None:
    from kops.lab.kafka_lab import KafkaLab
    from tests.engines import require_real

    require_real("kafka-4")
    lab = KafkaLab(tmp_path / "lab", detached=False)
    state_ = lab.up("kafka-4", brokers=4, racks=2, controllers=1)
    try:
        with admin_client(state_.bootstrap) as client:
            client.create_topics([NewTopic("events", 6, 2)])
        wait_until(lambda: len(layout(state_.bootstrap).get("events", {})) == 6, what="topic ready")
        snap = tmp_path / "snap.json"
        assert main(["state", "-b", state_.bootstrap, "--out", str(snap)]) == 0
        doc = json.loads(snap.read_text())
        assert {b["id"]: b["rack"] for b in doc["brokers"]} == {1: "rack-1", 2: "rack-2", 3: "rack-1", 4: "rack-2"}
        assert len(doc["topics"]["events"]["partitions"]) == 6
        playbook = tmp_path / "pb.yml"
        playbook.write_text("- hosts: all\n  topics: [{name: events, replication_factor: 3}]\n")
        plan_file = tmp_path / "plan.json"
        assert main(["plan", str(playbook), "--snapshot", str(snap), "-o", str(plan_file), "--format",
                     "json"]) in (0, 2)
        plan = plan_format.loads(plan_file.read_bytes(), str(plan_file))
        assert len(plan.moves) == 6 and all(len(m.to_replicas) == 3 for m in plan.moves)
        # sizes from the live cluster, in kafka-log-dirs documents the Spark job reads unchanged
        produce(state_.bootstrap, "events", 3 * 1024 * 1024, partition=0)
        raw, summary = tmp_path / "raw", tmp_path / "summary"
        assert main(["sizes", "collect", "-b", state_.bootstrap, "--out", str(raw), "--every", "1s", "--for",
                     "2.5s"]) == 0
        files = sorted(raw.glob("log-dirs-*.json"))
        assert len(files) >= 2
        report = parse_log_dirs(files[-1].read_text(), str(files[-1]))
        sizes = {(r.topic, r.partition,
                  b.broker): r.size for b in report.brokers for d in b.log_dirs for r in d.replicas}
        leader_of_0 = layout(state_.bootstrap)["events"][0]["replicas"]
        assert all(sizes[("events", 0, b)] >= 3 * 1024 * 1024 for b in leader_of_0)  # type: ignore[union-attr]  # set just above
        assert main(["sizes", "summarize", str(raw), "--out", str(summary)]) == 0
        capsys.readouterr()
        assert main(["sizes", "show", str(summary), "--format", "json"]) == 0  # JSON: every row, unasked
        rows = json.loads(capsys.readouterr().out)
        assert {(r["topic"], r["partition"]) for r in rows} == {(t, p) for t, p, _b in sizes}
        biggest = max(rows, key=lambda r: r["bytes"])
        assert (biggest["topic"], biggest["partition"]) == ("events", 0) and biggest["bytes"] >= 3 * 1024 * 1024

        capsys.readouterr()
        assert main(["state", "-b", "127.0.0.1:1", "--connect-timeout", "1"]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "no broker answered" in err[0]
    finally:
        lab.down()
