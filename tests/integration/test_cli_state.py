"""`kops state` and the CLI's error contract, run in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kops.cli.main import main
from kops.lab.ports import free_port
from kops.lab.sample import sample_snapshot
from kops.lab.snapshot_writer import write_snapshot
from kops.model import snapshot_format
from kops.zk_layout.client import ZkClient


@pytest.fixture
def cluster(zk: ZkClient, zk_connect: str) -> str:
    write_snapshot(zk, sample_snapshot())
    return zk_connect


def test_state_text_shows_brokers_topics_reassignments_throttles(cluster: str, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # piped output is as wide as COLUMNS says; the check must not depend on CI's
    assert main(["state", "-z", cluster]) == 0
    out = capsys.readouterr().out
    for expected in ("Brokers", "rack-a", "Topics", "payments", "Reassignments in flight", "4,5,6,2,3,1",
                     "Throttles", "leader.replication.throttled.replicas", "retired-events (deleting)"):
        assert expected in out


def test_state_json_is_the_snapshot_document(cluster: str, capsys) -> None:
    assert main(["state", "-z", cluster, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "kops-snapshot/1" and doc["summary"]["partitions"] == 24
    assert doc["topics"]["payments"]["partitions"]["1"]["adding"] == [4, 5, 6]


def test_state_out_writes_a_loadable_snapshot(cluster: str, tmp_path: Path, capsys) -> None:
    target = tmp_path / "snaps" / "lab.json"
    assert main(["state", "-z", cluster, "--out", str(target)]) == 0
    assert "wrote snapshot of 24 partitions" in capsys.readouterr().err
    snap = snapshot_format.loads(target.read_bytes(), str(target))
    assert snap.topics["orders"].config["min.insync.replicas"] == "2"
    assert list(tmp_path.joinpath("snaps").iterdir()) == [target]  # no temporary file left


def test_incomplete_snapshot_warns(zk: ZkClient, zk_connect: str, capsys) -> None:
    write_snapshot(zk, sample_snapshot())
    zk.set("/brokers/topics/orders", b"{broken")
    assert main(["state", "-z", zk_connect]) == 0
    err = capsys.readouterr().err
    assert "/brokers/topics/orders: not valid JSON" in err and "snapshot incomplete" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["state"], "no cluster given"),
        (["state", "-z", "bad host"], "invalid ZooKeeper host"),
        (["state", "--format", "xml", "-z", "h:1"], "--format"),
        (["frobnicate"], "No such command"),
    ],
)
def test_usage_errors_are_one_line_exit_1(argv: list[str], message: str, capsys) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and err.startswith("error:")


def test_unreachable_cluster_exit_1_with_connect_string(capsys) -> None:
    dead = f"127.0.0.1:{free_port()}/kafka"
    assert main(["state", "-z", dead, "--connect-timeout", "0.5"]) == 1
    err = capsys.readouterr().err.strip()
    assert dead in err and "cannot reach ZooKeeper within 0.5s" in err and len(err.splitlines()) == 1


def test_not_a_kafka_cluster_says_so(zookeeper_server: str, capsys) -> None:
    assert main(["state", "-z", f"{zookeeper_server}/not/here"]) == 1
    assert "the chroot /not/here does not exist" in capsys.readouterr().err


def test_debug_shows_the_traceback() -> None:
    with pytest.raises(Exception, match="no cluster given"):
        main(["--debug", "state"])


def test_help_and_version(capsys) -> None:
    assert main(["--help"]) == 0
    assert "Exit codes" in capsys.readouterr().out
    assert main(["state", "--help"]) == 0
    assert "Examples" in capsys.readouterr().out
    assert main(["--version"]) == 0
    assert "kops 0.1.0" in capsys.readouterr().out
