"""`kops lab` on real Apache Kafka through the CLI: up, status, produce, broker kill/start/pause/resume, down.

Each case starts its own small cluster (this module is about the lifecycle itself) and checks through Kafka's
Admin API what the lab says: versions, roles, racks, leadership moving off a killed broker, nothing left
running after `down`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka.admin import NewTopic

from kops.cli.main import main
from kops.lab.kafka_client import admin_client, layout
from kops.lab.kafka_dist import pinned_version
from kops.lab.processes import pid_alive
from tests.engines import require_real
from tests.labtools import wait_until

pytestmark = pytest.mark.lab

SHAPES = {  # dedicated controllers: bench/chaos.py and tests/unit cover their configuration; one Kafka 4 shape here
    "kafka-3.9": [],
    "kafka-4-combined": ["--controllers", "3"],
}


def status(lab_dir: str, capsys) -> dict:
    capsys.readouterr()
    assert main(["lab", "status", "--dir", lab_dir, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_real_lab_lifecycle_through_the_cli(shape: str, tmp_path: Path, zk_connect: str, capsys) -> None:
    engine = "kafka-3.9" if shape == "kafka-3.9" else "kafka-4"
    require_real(engine)
    lab_dir = str(tmp_path / "lab")
    extra = ["--zookeeper", zk_connect] if engine == "kafka-3.9" else SHAPES[shape]
    assert main(["lab", "up", "--dir", lab_dir, "--engine", engine, "--brokers", "3", "--racks", "2", *extra]) == 0
    pids = list(json.loads((tmp_path / "lab" / "lab.json").read_text())["pids"].values())
    try:
        bootstrap = (tmp_path / "lab" / "bootstrap").read_text().strip()
        assert (tmp_path / "lab" / "zookeeper").exists() == (engine == "kafka-3.9")
        doc = status(lab_dir, capsys)
        assert doc["engine"] == engine and doc["version"] == pinned_version(engine)
        brokers = [n for n in doc["nodes"] if "broker" in n["roles"]]
        assert [b["rack"] for b in brokers] == ["rack-1", "rack-2", "rack-1"]
        assert all(n["process"] == "running" for n in doc["nodes"]) and all(b["registered"] for b in brokers)
        if shape == "kafka-4-dedicated":
            assert [n["id"] for n in doc["nodes"] if n["roles"] == ["controller"]] == [1001]

        with admin_client(bootstrap) as client:
            client.create_topics([NewTopic("clicks", 2, 3)])
        wait_until(lambda: "clicks" in layout(bootstrap), what="topic created")
        assert main(["lab", "produce", "clicks", "--bytes", "2MB", "--dir", lab_dir]) == 0
        assert "acknowledged by all in-sync replicas" in capsys.readouterr().out

        assert main(["lab", "broker", "kill", "2", "--dir", lab_dir]) == 0
        wait_until(lambda: all(p["leader"] != 2 for p in layout(bootstrap)["clicks"].values()),
                   timeout=60, what="leadership off the killed broker")
        assert [n["process"] for n in status(lab_dir, capsys)["nodes"] if n["id"] == 2] == ["stopped"]
        assert main(["lab", "broker", "start", "2", "--dir", lab_dir]) == 0
        # broker 2 back in sync before 3 pauses: with three combined voters, pausing one while another is still
        # catching up leaves no quorum, and Kafka rightly answers nothing until one returns
        wait_until(lambda: all(len(p["isr"]) == 3 for p in layout(bootstrap)["clicks"].values()),
                   timeout=90, what="broker 2 back in sync")
        assert main(["lab", "broker", "pause", "3", "--dir", lab_dir]) == 0
        assert [n["process"] for n in status(lab_dir, capsys)["nodes"] if n["id"] == 3] == ["paused"]
        assert main(["lab", "broker", "resume", "3", "--dir", lab_dir]) == 0
        wait_until(lambda: all(len(p["isr"]) == 3 for p in layout(bootstrap)["clicks"].values()),
                   timeout=90, what="every replica back in sync")

        assert main(["lab", "produce", "clicks", "--rate", "200KB/s", "--dir", lab_dir]) == 0
        ingest = json.loads((tmp_path / "lab" / "lab.json").read_text())["ingest"]["clicks"]
        assert pid_alive(ingest)
        pids.append(ingest)
    finally:
        assert main(["lab", "down", "--dir", lab_dir]) == 0
    assert not any(pid_alive(pid) for pid in pids)
    assert not (tmp_path / "lab" / "lab.json").exists()
