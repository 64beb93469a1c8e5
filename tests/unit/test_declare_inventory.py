"""Ansible inventories: nested groups, group_vars/host_vars, precedence, host patterns."""

from __future__ import annotations

from pathlib import Path

import pytest

from kops.declare.inventory import implicit_inventory, load_inventory
from kops.declare.patterns import PatternError, select_hosts
from kops.declare.problems import Problems

INVENTORY = """
all:
  vars:
    level: all
    only_all: 1
  hosts:
    lonely:
  children:
    kafka:
      vars:
        level: kafka
      children:
        nonprod:
          vars:
            level: nonprod
          hosts:
            dev: {zookeeper: "zk-dev:2181/kafka", level: host}
            staging:
        prod:
          hosts:
            prod-eu:
              zookeeper: zk-eu:2181
              ansible_host: ignored-but-fine
            prod-us:
    eu:
      vars:
        region: eu
      hosts:
        prod-eu:
"""


@pytest.fixture
def inventory_dir(tmp_path: Path) -> Path:
    (tmp_path / "hosts.yml").write_text(INVENTORY)
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "prod.yml").write_text("level: prod-file\nretention: 7\n")
    (tmp_path / "group_vars" / "nonprod").mkdir()
    (tmp_path / "group_vars" / "nonprod" / "a.yml").write_text("from_folder: a\n")
    (tmp_path / "group_vars" / "nonprod" / "b.yaml").write_text("from_folder: b\n")
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "host_vars" / "staging.yml").write_text("level: staging-file\n")
    (tmp_path / "host_vars" / "dev.yml").write_text("level: dev-file\n")
    return tmp_path


def test_nested_groups_and_membership(inventory_dir: Path) -> None:
    problems = Problems()
    inv = load_inventory(inventory_dir, problems)
    assert not problems.items
    assert sorted(inv.hosts) == ["dev", "lonely", "prod-eu", "prod-us", "staging"]
    assert inv.host_groups("prod-eu") == {"all", "kafka", "prod", "eu"}
    assert inv.group_members("kafka") == {"dev", "staging", "prod-eu", "prod-us"}
    assert inv.host_groups("lonely") == {"all", "ungrouped"}


def test_precedence_all_parent_child_host(inventory_dir: Path) -> None:
    inv = load_inventory(inventory_dir, Problems())
    assert inv.host_variables("lonely")["level"] == "all"
    assert inv.host_variables("prod-us")["level"] == "prod-file"  # group_vars file beats inventory group vars
    assert inv.host_variables("prod-us")["only_all"] == 1
    assert inv.host_variables("staging")["level"] == "staging-file"  # host_vars beats groups
    assert inv.host_variables("dev")["level"] == "dev-file"  # host_vars file beats inventory host vars
    assert inv.host_variables("dev")["from_folder"] == "b"  # files of a folder in name order
    eu = inv.host_variables("prod-eu")
    assert eu["region"] == "eu" and eu["retention"] == 7 and eu["ansible_host"] == "ignored-but-fine"
    assert eu["inventory_hostname"] == "prod-eu" and eu["group_names"] == ["eu", "kafka", "prod"]


def test_child_group_beats_parent(tmp_path: Path) -> None:
    (tmp_path / "inv.yml").write_text(
        "all:\n  children:\n    a:\n      vars: {x: a}\n      children:\n        b:\n          vars: {x: b}\n"
        "          hosts: {h: }\n"
    )
    inv = load_inventory(tmp_path / "inv.yml", Problems())
    assert inv.host_variables("h")["x"] == "b"


def test_inventory_problems_have_locations(tmp_path: Path) -> None:
    (tmp_path / "inv.yml").write_text("all:\n  hostz:\n    a:\n  children: [x]\n")
    problems = Problems()
    load_inventory(tmp_path / "inv.yml", problems)
    messages = [str(p) for p in problems.items]
    assert any("inv.yml:2:3: unknown key 'hostz'" in m for m in messages)
    assert any("inv.yml:4:13: children of group 'all' must be a mapping" in m for m in messages)
    assert any("names no hosts" in m for m in messages)


def test_implicit_inventory() -> None:
    inv = implicit_inventory("default", {"zookeeper": "zk:2181"})
    assert select_hosts("all", inv)[0] == ["default"]
    assert inv.host_variables("default")["zookeeper"] == "zk:2181"


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("all", ["dev", "lonely", "prod-eu", "prod-us", "staging"]),
        ("*", ["dev", "lonely", "prod-eu", "prod-us", "staging"]),
        ("prod", ["prod-eu", "prod-us"]),
        ("dev:staging", ["dev", "staging"]),
        ("dev,prod-us", ["dev", "prod-us"]),
        ("kafka:!prod", ["dev", "staging"]),
        ("kafka:&eu", ["prod-eu"]),
        ("!prod:kafka", ["dev", "staging"]),  # exclusions apply last, wherever written
        ("prod-*", ["prod-eu", "prod-us"]),
        ("~prod-(eu|us)", ["prod-eu", "prod-us"]),
        ("kafka:&prod:!eu", ["prod-us"]),
        ("nonprod", ["dev", "staging"]),
    ],
)
def test_patterns(inventory_dir: Path, pattern: str, expected: list[str]) -> None:
    inv = load_inventory(inventory_dir, Problems())
    assert select_hosts(pattern, inv)[0] == expected


def test_pattern_reports_unmatched_terms_and_bad_regex(inventory_dir: Path) -> None:
    inv = load_inventory(inventory_dir, Problems())
    assert select_hosts("prod:ghost", inv) == (["prod-eu", "prod-us"], ["ghost"])
    with pytest.raises(PatternError):
        select_hosts("~(", inv)
    with pytest.raises(PatternError):
        select_hosts("  ", inv)
