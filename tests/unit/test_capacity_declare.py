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
    ("capacity: {network_in: 0}", "capacity.network_in must be positive, got 0 (a broker with no capacity"),
    ("capacity: {brokers: {7: {network_out: 0B/s}}}", "capacity.brokers.7.network_out must be positive"),
    ("capacity: {brokers: {7: {disk: 0}}}", "capacity.brokers.7.disk must be positive"),
    ("capacity: {brokers: {7: {max_replicas: 0}}}", "capacity.brokers.7.max_replicas must be at least 1"),
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


ZERO = "is 0: a broker with no capacity can hold nothing; leave the broker out of the file, or give its capacity"


@pytest.mark.parametrize("capacity, message", [
    ('{"NW_IN": "0"}', f"brokerCapacities[1].capacity.NW_IN {ZERO}"),
    ('{"DISK": "100", "NW_OUT": 0}', f"brokerCapacities[1].capacity.NW_OUT {ZERO}"),
    ('{"DISK": "0.0"}', f"brokerCapacities[1].capacity.DISK {ZERO}"),
    ('{"DISK": {"/a": "0", "/b": "0"}}', "brokerCapacities[1].capacity.DISK is 0 over all its log dirs: a broker"),
])
def test_a_zero_capacity_is_refused_at_its_json_location(tmp_path: Path, capacity: str, message: str) -> None:
    """A zero would be planned as a broker holding nothing, its follower throttle 1 B/s."""
    path = tmp_path / "cc.json"
    path.write_text(f'{{"brokerCapacities": [{{"brokerId": "-1", "capacity": {{"DISK": "10"}}}}, '
                    f'{{"brokerId": "3", "capacity": {capacity}}}]}}')
    with pytest.raises(DocumentError) as caught:
        load_cruise_control(path)
    assert message in caught.value.one_line(), caught.value.one_line()


def test_zero_cpu_is_ignored_and_a_jbod_dir_of_zero_beside_others_counts_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cc.json"
    path.write_text('{"brokerCapacities": [{"brokerId": "3", "capacity": {"CPU": "0", "DISK": {"/a": "0", '
                    '"/b": "2"}}}]}')
    assert load_cruise_control(path).brokers[3]["disk"].value == 2 * MIB


@pytest.mark.parametrize("capacity, message", [
    ('{"DISK": "big"}', "brokerCapacities[0].capacity.DISK must be a number or a string holding one, got 'big'"),
    ('{"DISK": {"/data/a": "x"}}', "brokerCapacities[0].capacity.DISK./data/a must be a number or a string holding "
                                   "one, got 'x'"),  # the JBOD map's entry, not DISK as a whole
    ('{"CPU": [1]}', "brokerCapacities[0].capacity.CPU must be a number or a string holding one, got [1]"),
    ('{"NW_IN": true}', "brokerCapacities[0].capacity.NW_IN must be a number or a string holding one, got True"),
])
def test_a_location_is_the_documents_own_path(tmp_path: Path, capacity: str, message: str) -> None:
    """Never pydantic's names for a validator or a union's branch (`function-before[_figure(), float]`)."""
    path = tmp_path / "cc.json"
    path.write_text(f'{{"brokerCapacities": [{{"brokerId": "1", "capacity": {capacity}}}]}}')
    with pytest.raises(DocumentError) as caught:
        load_cruise_control(path)
    line = caught.value.one_line()
    assert f"not a Cruise Control capacity file: {message}" in line and "function-" not in line, line


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
    bad.write_text('{"brokerCapacities": [{"brokerId": "3", "capacity": {"NW_IN": "0"}}]}')
    assert main(["plan", str(playbook), *unreachable, "--capacity", str(bad)]) == 1
    assert "brokerCapacities[0].capacity.NW_IN is 0" in capsys.readouterr().err
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
