"""Which clusters `-i INVENTORY -l LIMIT` selects, each with its address and its own client properties.

A host of an inventory is a cluster; the limit is an Ansible host pattern (a group, a pattern, a list, `all`).
Each member carries its address as a plan names it (`bootstrap_servers` before `zookeeper`) and its
`command_config`: a path to Kafka client properties (TLS, SASL), relative to the inventory's folder, so clusters
with different security settings share one fleet.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kops.declare.inventory import Inventory, load_inventory
from kops.declare.loader import cluster_address
from kops.declare.patterns import PatternError, select_hosts
from kops.declare.problems import Problems
from kops.errors import UsageError
from kops.model.desired import SourceLocation


@dataclass(frozen=True)
class Member:
    """One cluster of the fleet: its inventory name, address (None: none declared) and client properties."""

    name: str
    connect: str | None
    command_config: Path | None = None


def inventory_base(inventory: Path) -> Path:
    """The folder relative paths of an inventory are read from: the folder itself, or the file's folder."""
    return inventory if inventory.is_dir() else inventory.parent


def command_config_of(variables: dict[str, object], base: Path, host: str, where: str) -> Path | None:
    """The host's `command_config` variable as a path (relative to `base`); a non-string is one clear line."""
    value = variables.get("command_config")
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or "{{" in value:
        raise UsageError(f"host {host}: command_config must be a path to Kafka client properties", where=where,
                         hint="e.g. command_config: secrets/prod-eu.properties")
    path = Path(value)
    return path if path.is_absolute() else base / path


def load(inventory: Path) -> Inventory:
    """The inventory, or its first problem as one line."""
    if not inventory.exists():
        raise UsageError("no such inventory file or folder", where=str(inventory))
    problems = Problems()
    loaded = load_inventory(inventory, problems)
    if problems.errors:
        raise UsageError(str(problems.sorted_errors()[0]), where=str(inventory))
    return loaded


def selected_hosts(inv: Inventory, limit: str | None, where: str) -> list[str]:
    """The hosts `limit` selects (all without one), sorted; none is an error naming the pattern."""
    try:
        hosts, _unmatched = select_hosts(limit or "all", inv)
    except PatternError as exc:
        raise UsageError(f"--limit: {exc}") from None
    if not hosts:
        raise UsageError(f"--limit {limit!r} selects no cluster", where=where,
                         hint="name a group, a host, a pattern (prod-*) or a list (a,b)")
    return hosts


def select(inventory: Path, limit: str | None) -> list[Member]:
    """Every cluster `limit` selects in the inventory, in name order, with address and client properties."""
    inv = load(inventory)
    base = inventory_base(inventory)
    members = []
    for host in selected_hosts(inv, limit, str(inventory)):
        variables = inv.host_variables(host)
        problems = Problems()
        connect = cluster_address(variables, inv.hosts[host].location or SourceLocation(str(inventory), 1, 1),
                                  host, problems)
        if problems.errors:
            raise UsageError(str(problems.sorted_errors()[0]))
        members.append(Member(host, connect, command_config_of(variables, base, host, str(inventory))))
    return members
