"""How a command names its cluster: -b, -z, an inventory host's variables, or the plan's own cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from kops.cli.connection import Address, Connection, from_connect, resolve
from kops.declare.loader import load_declarations
from kops.errors import UsageError


def inventory(tmp_path: Path, host_vars: str) -> Path:
    path = tmp_path / "inv.yml"
    path.write_text(f"all:\n  hosts:\n    prod:\n{host_vars}")
    return path


def test_bootstrap_servers_win_over_zookeeper_and_say_so(tmp_path: Path, capsys) -> None:
    both = Connection(zookeeper="zk:2181/kafka", bootstrap_server="b1:9092,b2:9092")
    assert resolve(both) == Address("admin", "b1:9092,b2:9092")
    assert "using the Admin API" in capsys.readouterr().err
    assert resolve(Connection(zookeeper="zk:2181/kafka")) == Address("zookeeper", "zk:2181/kafka")
    inv = inventory(tmp_path, "      zookeeper: zk:2181/kafka\n      bootstrap_servers: b1:9092\n")
    assert resolve(Connection(), inv, "prod") == Address("admin", "b1:9092")
    assert "prod has bootstrap_servers and zookeeper" in capsys.readouterr().err
    only_zk = inventory(tmp_path, "      zookeeper: zk:2181/kafka\n")
    assert resolve(Connection(), only_zk, "prod") == Address("zookeeper", "zk:2181/kafka")


def test_a_plan_names_its_cluster_on_either_transport() -> None:
    assert from_connect("kafka://b1:9092,b2:9092") == Address("admin", "b1:9092,b2:9092")
    assert from_connect("zk1:2181,zk2:2181/kafka") == Address("zookeeper", "zk1:2181,zk2:2181/kafka")
    assert resolve(Connection(), plan_connect="kafka://b1:9092") == Address("admin", "b1:9092")


def test_no_cluster_or_two_ways_of_naming_it_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no cluster given"):
        resolve(Connection())
    with pytest.raises(UsageError, match="not both"):
        resolve(Connection(bootstrap_server="b1:9092"), inventory(tmp_path, "      zookeeper: zk:2181\n"), "prod")
    with pytest.raises(UsageError, match="neither bootstrap_servers nor zookeeper"):
        resolve(Connection(), inventory(tmp_path, "      other: 1\n"), "prod")


def test_the_inventory_names_an_admin_api_cluster_for_plans(tmp_path: Path) -> None:
    inv = inventory(tmp_path, "      bootstrap_servers: b1:9092,b2:9092\n")
    playbook = tmp_path / "pb.yml"
    playbook.write_text("- hosts: all\n  topics: [{name: t, partitions: 1, replication_factor: 1}]\n")
    found = load_declarations(playbook, inv, None, [], None)
    assert found.desired["prod"].connect == "kafka://b1:9092,b2:9092"
    bad = inventory(tmp_path, "      bootstrap_servers: 'b1'\n")
    problems = load_declarations(playbook, bad, None, [], None).problems
    assert any("bootstrap_servers" in str(p) and "HOST:PORT" in str(p) for p in problems.errors)
