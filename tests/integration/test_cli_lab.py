"""`kops lab up/status/produce/broker/down` through the CLI, with detached broker processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kops.cli.main import main
from kops.lab.processes import pid_alive
from kops.model.partitioner import key_shares
from kops.zk_layout import tool_writes
from kops.zk_layout.client import ZkClient, ZkSettings
from tests.labtools import replica, state, wait_until

pytestmark = pytest.mark.lab


def test_lab_lifecycle_through_the_cli(tmp_path: Path, zk_connect: str, capsys) -> None:
    lab_dir = str(tmp_path / "lab")
    assert main(["lab", "up", "--dir", lab_dir, "--brokers", "3", "--racks", "2", "--zookeeper", zk_connect,
                 "--time-scale", "10"]) == 0
    pids = json.loads((tmp_path / "lab" / "lab.json").read_text())["pids"].values()
    try:
        assert (tmp_path / "lab" / "zookeeper").read_text().strip() == zk_connect
        with ZkClient(ZkSettings(zk_connect)) as zk:
            tool_writes.create_topic(zk, "clicks", {0: (1, 2), 1: (2, 3)})
            wait_until(lambda: state(zk, "clicks", 1), what="partitions created")
            capsys.readouterr()
            assert main(["lab", "produce", "clicks", "--bytes", "10MB", "--dir", lab_dir]) == 0
            assert "appended 9.5 MiB to 2 partitions" in capsys.readouterr().out
            share = round(10_000_000 * key_shares(2, 2)[0])  # keyed: partition 0's share of the key space
            wait_until(lambda: (r := replica(zk, 2, "clicks", 0)) and abs(r["end"] - share) <= 1, what="replicated")
            assert main(["lab", "produce", "clicks", "--rate", "1MB/s", "--dir", lab_dir]) == 0
            assert main(["lab", "broker", "kill", "2", "--dir", lab_dir]) == 0
            wait_until(lambda: state(zk, "clicks", 1).leader == 3, what="leadership moves to broker 3")
            capsys.readouterr()
            assert main(["lab", "status", "--dir", lab_dir, "--format", "json"]) == 0
            doc = json.loads(capsys.readouterr().out)
            assert [b["process"] for b in doc["brokers"]] == [True, False, True]
            assert [b["rack"] for b in doc["brokers"]] == ["rack-1", "rack-2", "rack-1"]
            assert doc["partitions"] == 2 and doc["offline"] == []
            assert main(["lab", "broker", "start", "2", "--dir", lab_dir]) == 0
            assert main(["lab", "status", "--dir", lab_dir]) == 0
            assert "controller: broker" in capsys.readouterr().out
    finally:
        assert main(["lab", "down", "--dir", lab_dir]) == 0
    assert not any(pid_alive(pid) for pid in pids)
    assert not (tmp_path / "lab" / "lab.json").exists()


def test_lab_commands_without_a_lab_say_so(tmp_path: Path, capsys) -> None:
    assert main(["lab", "status", "--dir", str(tmp_path / "none")]) == 1
    err = capsys.readouterr().err
    assert "no lab here" in err and "kops lab up" in err and len(err.strip().splitlines()) == 1
    assert main(["lab", "produce", "t", "--dir", str(tmp_path)]) == 1
    assert "say how much" in capsys.readouterr().err
    assert main(["lab", "up", "--dir", str(tmp_path / "x"), "--bandwidth", "fast"]) == 1
    assert "--bandwidth" in capsys.readouterr().err
