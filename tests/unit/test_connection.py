"""How a command names its cluster: -b, -z, an inventory host's variables, or the plan's own cluster."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kops.cli.connection import Address, Connection, from_connect, resolve
from kops.cli.main import main
from kops.cluster.admin.connection import servers as admin_servers
from kops.declare.loader import load_declarations
from kops.errors import ExitCode, UsageError
from kops.model.servers import server_problem


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


@pytest.mark.parametrize(("servers", "said"), [
    ("localhost:abc", "port 'abc' is not a number"),
    ("b1:9092,b2:99999", "'b2:99999': port 99999 is not in 1-65535"),
    ("b1:0", "port 0 is not in 1-65535"),
    ("b1", "'b1': no port"),
    ("b1:", "'b1:': no port"),
    (":9092", "no host"),
    ("::1:9092", "an IPv6 address goes in brackets"),
    ("[::1]", "no port"),
    (" , ", "no bootstrap server given"),
])
def test_a_bad_bootstrap_server_is_one_line_naming_it(servers: str, said: str) -> None:
    for call in (lambda: resolve(Connection(bootstrap_server=servers)), lambda: from_connect(f"kafka://{servers}"),
                 lambda: admin_servers(servers)):
        with pytest.raises(UsageError, match=re.escape(said)) as raised:
            call()
        assert "HOST:PORT" in raised.value.one_line() and "\n" not in raised.value.one_line()


def test_good_bootstrap_servers_are_kept_as_written() -> None:
    assert admin_servers(" b1:9092, 10.0.0.2:9093 ,[::1]:9094,PLAINTEXT://b4:9092") == [
        "b1:9092", "10.0.0.2:9093", "[::1]:9094", "PLAINTEXT://b4:9092"]
    assert server_problem("[fe80::1%eth0]:9092") is None


def test_the_cli_says_a_bad_port_in_one_line_exit_1(tmp_path: Path, capsys) -> None:
    assert main(["state", "-b", "localhost:abc"]) == ExitCode.ERROR
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and "localhost:abc" in err and "HOST:PORT" in err and "Traceback" not in err
    inv = inventory(tmp_path, "      bootstrap_servers: 'b1:9092,b2:70000'\n")
    assert main(["state", "-i", str(inv), "-l", "prod"]) == ExitCode.ERROR
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and "bootstrap_servers" in err and "port 70000 is not in 1-65535" in err


@pytest.mark.parametrize("connect", ["localhost:abc", "zk1:0/kafka", "zk1:70000", "zk1:2181,:2181/kafka"])
def test_a_bad_zookeeper_port_is_one_line_too(connect: str, capsys) -> None:
    with pytest.raises(UsageError, match="ZooKeeper host|port"):
        resolve(Connection(zookeeper=connect))
    assert main(["state", "-z", connect]) == ExitCode.ERROR
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and err.startswith(f"error: {connect}: ") and "Traceback" not in err
