"""Declared capacity (issue 35): the inventory's `capacity` variable and Cruise Control's capacity file, their
units, where each figure came from, and every mistake at FILE:LINE or a JSON location, exit 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from kops.cli.main import main
from kops.declare.capacity import declared_capacity, load_cruise_control
from kops.declare.loader import load_declarations
from kops.errors import DocumentError, UsageError
from kops.model.capacity import DEFAULT_LIMITS, Figure

FIXTURES = Path(__file__).resolve().parents[1] / "cruise_control"  # Cruise Control's own files (LICENSE there)
MIB, KIB, TIB = 2**20, 2**10, 2**40
PLAYBOOK = "- hosts: all\n  topics:\n    - {name: t, partitions: 1, replication_factor: 1}\n"
INVENTORY = """\
all:
  children:
    kafka:
      vars:
        capacity:
          disk: 2TiB
          network_in: 125MiB/s
          network_out: 250MB/s
          max_replicas: 4000
          brokers:
            7: {disk: 4TiB}
          limits: {disk: 0.7, network_in: 90%}
      hosts:
        prod: {zookeeper: "zk:2181/kafka"}
"""


def files(tmp_path: Path, inventory: str) -> tuple[Path, Path]:
    (tmp_path / "inv.yml").write_text(inventory)
    (tmp_path / "pb.yml").write_text(PLAYBOOK)
    return tmp_path / "pb.yml", tmp_path / "inv.yml"


def test_the_inventory_variable_with_units_sources_and_limits(tmp_path: Path) -> None:
    playbook, inventory = files(tmp_path, INVENTORY)
    declarations = load_declarations(playbook, inventory)
    assert declarations.ok, declarations.problems.items
    capacity = declarations.desired["prod"].capacity
    assert capacity is not None
    source = "declared inv.yml:"  # relative to the playbook's folder
    assert capacity.default == {"disk": Figure(2 * TIB, source + "6"), "network_in": Figure(125 * MIB, source + "7"),
                                "network_out": Figure(250_000_000, source + "8"),
                                "replicas": Figure(4000, source + "9")}
    assert capacity.brokers == {7: {"disk": Figure(4 * TIB, source + "11")}}
    assert capacity.limits == {"disk": 0.7, "network_in": 0.9, "network_out": 0.8}
    assert capacity.origin == f"{inventory}:6"


def test_no_variable_no_declaration(tmp_path: Path) -> None:
    playbook, inventory = files(tmp_path, "all:\n  hosts:\n    prod: {zookeeper: 'zk:2181'}\n")
    assert load_declarations(playbook, inventory).desired["prod"].capacity is None


@pytest.mark.parametrize("body, message", [
    ("capacity: {disk: lots}", "capacity.disk: 'lots' is not a size"),
    ("capacity: {disk: 0}", "capacity.disk must be positive"),
    ("capacity: {dsk: 1TiB}", "unknown key 'dsk' in capacity"),
    ("capacity: {network_in: fast}", "capacity.network_in: 'fast' is not a rate"),
    ("capacity: {max_replicas: 0}", "capacity.max_replicas must be at least 1"),
    ("capacity: {brokers: {seven: {disk: 1TiB}}}", "capacity.brokers key (a broker id) must be an integer"),
    ("capacity: {brokers: {7: {disk: 1TiB, limits: 1}}}", "unknown key 'limits' in capacity.brokers.7"),
    ("capacity: {limits: {disk: 1.5}}", "capacity.limits.disk must be between 0 and 1"),
    ("capacity: {limits: {disk: 0}}", "capacity.limits.disk must be more than 0"),
    ("capacity: {limits: {max_replicas: 0.5}}", "unknown key 'max_replicas' in capacity.limits"),
    ("capacity: 2TiB", "capacity must be a mapping"),
])
def test_every_mistake_is_one_line_at_its_place(tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str,
                                                message: str) -> None:
    playbook, inventory = files(tmp_path, f"all:\n  hosts:\n    prod:\n      {body}\n      zookeeper: zk:2181\n")
    assert main(["validate", str(playbook), "-i", str(inventory)]) == 1
    err = capsys.readouterr().err
    line = 3 if body == "capacity: 2TiB" else 4  # a scalar keeps no place of its own: its host's
    assert f"{inventory}:{line}:" in err and message in err, err


def test_cruise_controls_own_files_in_mib_and_kib_per_second() -> None:
    default = load_cruise_control(FIXTURES / "DefaultCapacityConfig.json")
    source = f"cruise-control {FIXTURES / 'DefaultCapacityConfig.json'}"
    assert default.default == {"disk": Figure(300_000 * MIB, source), "network_in": Figure(300_000 * KIB, source),
                               "network_out": Figure(200_000 * KIB, source)}
    assert default.brokers[1]["disk"].value == 150_000 * MIB and default.limits == DEFAULT_LIMITS
    jbod = load_cruise_control(FIXTURES / "testCapacityConfigJBOD.json")
    assert jbod.default["disk"].value == 2_200_000 * MIB  # the dirs summed
    assert jbod.brokers[2]["disk"].value == 2_600_000 * MIB and jbod.brokers[0]["network_in"].value == 200_000 * KIB
    cores = load_cruise_control(FIXTURES / "testCapacityConfigCores.json")  # CPU as num.cores: read, ignored
    assert sorted(cores.brokers) == [0, 1, 2] and "cpu" not in cores.brokers[2]


def test_the_file_replaces_the_inventory_but_keeps_its_limits(tmp_path: Path) -> None:
    playbook, inventory = files(tmp_path, INVENTORY)
    declared = load_declarations(playbook, inventory).desired["prod"].capacity
    chosen = declared_capacity(FIXTURES / "DefaultCapacityConfig.json", declared)
    assert chosen is not None and declared is not None
    assert chosen.limits == declared.limits and chosen.brokers.keys() == {1}
    assert chosen.default["disk"].source.startswith("cruise-control ")
    assert declared_capacity(None, declared) is declared


@pytest.mark.parametrize("text, message", [
    ('{"brokerCapacities": [{"brokerId": "-1", "capacity": {"DISK": "big"}}]}',
     "brokerCapacities[0].capacity.DISK"),
    ('{"brokerCapacities": [{"brokerId": "x", "capacity": {}}]}', "brokerCapacities[0].brokerId"),
    ('{"brokerCapacities": [{"brokerId": "1", "capacity": {"NW_IN": "-5"}}]}', "brokerCapacities[0].capacity.NW_IN"),
    ('{"brokerCapacities": [{"brokerId": "1", "capacity": {}}, {"brokerId": "1", "capacity": {}}]}',
     "lists a broker id twice"),
    ('{"brokerCapacities": [{"brokerId": "1", "capacity": {"DISK": "1", "RAM": "2"}}]}', "RAM"),
    ('{"brokerCapacities": []}', "brokerCapacities"),
    ("{not json", "not valid JSON"),
])
def test_a_bad_file_is_one_line_with_its_json_location(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "cc.json"
    path.write_text(text)
    with pytest.raises(DocumentError, match="not a Cruise Control capacity file") as caught:
        load_cruise_control(path)
    assert message in caught.value.one_line() and str(path) in caught.value.one_line()


def test_plan_and_rebalance_refuse_a_bad_file_before_reading_the_cluster(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UsageError, match="cannot read"):
        load_cruise_control(tmp_path / "missing.json")
    bad = tmp_path / "cc.json"
    bad.write_text('{"brokerCapacities": "all of them"}')
    playbook, inventory = files(tmp_path, INVENTORY)
    unreachable = ["-b", "127.0.0.1:1", "--connect-timeout", "0.1"]
    assert main(["plan", str(playbook), *unreachable, "--capacity", str(bad)]) == 1
    assert main(["rebalance", *unreachable, "--capacity", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.count("not a Cruise Control capacity file") == 2, err
    assert main(["validate", str(playbook), "-i", str(inventory)]) == 0


def test_fanout_per_topic_defaults_to_one_and_may_come_from_topic_defaults(tmp_path: Path) -> None:
    (tmp_path / "pb.yml").write_text("""\
- hosts: all
  topic_defaults: {replication_factor: 3, fanout: 2}
  topics:
    - {name: clicks, partitions: 64, fanout: 4}
    - {name: changelog, partitions: 8, fanout: 0}
    - {name: orders, partitions: 8}
- hosts: all
  topics:
    - {name: plain, partitions: 1, replication_factor: 1}
""")
    declarations = load_declarations(tmp_path / "pb.yml", zookeeper="zk:2181")
    assert declarations.ok, declarations.problems.items
    topics = declarations.desired["default"].topics
    assert {name: t.fanout for name, t in topics.items()} == {"changelog": 0, "clicks": 4, "orders": 2, "plain": 1}


@pytest.mark.parametrize("value, message", [("-1", "fanout must be at least 0"),
                                            ("many", "fanout must be an integer")])
def test_a_bad_fanout_is_one_line_at_its_place(tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str,
                                               message: str) -> None:
    (tmp_path / "pb.yml").write_text(f"- hosts: all\n  topics:\n    - name: t\n      fanout: {value}\n")
    assert main(["validate", str(tmp_path / "pb.yml"), "-z", "zk:2181"]) == 1
    err = capsys.readouterr().err
    assert "pb.yml:4:" in err and message in err, err
