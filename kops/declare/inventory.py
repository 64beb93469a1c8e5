"""Ansible YAML inventories: a host is a Kafka cluster.

Shape (Ansible's YAML inventory plugin): groups at the top (usually `all`), each with `hosts`, `vars` and
`children`; a host may sit in several groups. `group_vars/` and `host_vars/` folders (a file `NAME.yml` or a
folder `NAME/` of YAML files) are read beside an inventory file or inside an inventory folder. An inventory
folder may hold several inventory files, merged.

Variable precedence, low to high, as Ansible applies it: `all`, then parent groups before their children
(deeper groups win; groups of the same depth in name order, or by `ansible_group_priority`), each group's
inventory vars then its group_vars files; then the host's inventory vars, then its host_vars files. Play
vars and `-e` extra vars come on top (see `kops.declare.loader`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kops.declare.problems import Problems
from kops.declare.yamlsource import YamlError, YamlMap, load_yaml, location_of
from kops.model.desired import SourceLocation

YAML_SUFFIXES = (".yml", ".yaml", ".json")
GROUP_KEYS = ("hosts", "vars", "children")


@dataclass
class Group:
    name: str
    hosts: set[str] = field(default_factory=set)
    children: set[str] = field(default_factory=set)
    parents: set[str] = field(default_factory=set)
    vars: dict[str, Any] = field(default_factory=dict)
    file_vars: dict[str, Any] = field(default_factory=dict)  # from group_vars/
    location: SourceLocation | None = None


@dataclass
class Host:
    name: str
    vars: dict[str, Any] = field(default_factory=dict)
    file_vars: dict[str, Any] = field(default_factory=dict)  # from host_vars/
    location: SourceLocation | None = None
    groups: set[str] = field(default_factory=set)  # direct groups


@dataclass
class Inventory:
    hosts: dict[str, Host]
    groups: dict[str, Group]
    sources: list[str] = field(default_factory=list)

    def group_depths(self) -> dict[str, int]:
        """Distance of each group from `all` (its longest parent chain), for precedence."""
        depths: dict[str, int] = {}

        def depth(name: str, seen: frozenset[str]) -> int:
            if name in depths:
                return depths[name]
            parents = [p for p in self.groups[name].parents if p not in seen]
            value = 0 if name == "all" or not parents else 1 + max(depth(p, seen | {name}) for p in parents)
            depths[name] = value
            return value

        for name in self.groups:
            depth(name, frozenset())
        return depths

    def host_groups(self, host: str) -> set[str]:
        """Every group the host belongs to, directly or through children; always `all`."""
        result = {"all"}
        stack = list(self.hosts[host].groups)
        while stack:
            group = stack.pop()
            if group in result:
                continue
            result.add(group)
            stack.extend(self.groups[group].parents)
        return result

    def group_members(self, group: str) -> set[str]:
        """Hosts of a group and of all its descendants (`all`: every host)."""
        if group == "all":
            return set(self.hosts)
        result: set[str] = set()
        stack, seen = [group], set()
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            result |= self.groups[name].hosts
            stack.extend(self.groups[name].children)
        return result

    def host_variables(self, host: str) -> dict[str, Any]:
        """The host's variables with Ansible's precedence, plus Ansible's magic variables."""
        depths = self.group_depths()
        groups = sorted(
            self.host_groups(host),
            key=lambda g: (depths.get(g, 0), _priority(self.groups[g]), g),
        )
        merged: dict[str, Any] = {}
        for name in groups:
            merged.update(self.groups[name].vars)
            merged.update(self.groups[name].file_vars)
        h = self.hosts[host]
        merged.update(h.vars)
        merged.update(h.file_vars)
        merged["inventory_hostname"] = host
        merged["group_names"] = sorted(g for g in self.host_groups(host) if g not in ("all", "ungrouped"))
        merged["groups"] = {g: sorted(self.group_members(g)) for g in sorted(self.groups)}
        return merged


def _priority(group: Group) -> int:
    value = group.vars.get("ansible_group_priority", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def implicit_inventory(host: str = "default", variables: dict[str, Any] | None = None) -> Inventory:
    """No inventory file (`-z` on the command line): one host named `default` in `all`."""
    inventory = Inventory(hosts={}, groups={"all": Group("all"), "ungrouped": Group("ungrouped")})
    inventory.groups["all"].children.add("ungrouped")
    inventory.groups["ungrouped"].parents.add("all")
    inventory.hosts[host] = Host(host, vars=dict(variables or {}), groups={"ungrouped"})
    inventory.groups["ungrouped"].hosts.add(host)
    return inventory


class _Builder:
    def __init__(self, problems: Problems) -> None:
        self.problems = problems
        self.inventory = implicit_inventory()
        del self.inventory.hosts["default"]
        self.inventory.groups["ungrouped"].hosts.clear()

    def group(self, name: str, location: SourceLocation | None) -> Group:
        if name not in self.inventory.groups:
            self.inventory.groups[name] = Group(name, location=location)
            if name != "all":
                self.inventory.groups[name].parents.add("all")
                self.inventory.groups["all"].children.add(name)
        return self.inventory.groups[name]

    def add_group(self, name: str, body: Any, where: SourceLocation, parent: str | None) -> None:
        group = self.group(name, where)
        if parent is not None and parent != name:
            group.parents.add(parent)
            self.inventory.groups[parent].children.add(name)
            if parent != "all":
                group.parents.discard("all")
                self.inventory.groups["all"].children.discard(name)
        if body is None:
            return
        if not isinstance(body, dict):
            self.problems.error(where, f"group {name!r} must be a mapping of hosts, vars and children")
            return
        for key in body:
            if key not in GROUP_KEYS:
                loc = body.key_locations.get(key, where) if isinstance(body, YamlMap) else where
                self.problems.error(loc, f"unknown key {key!r} in group {name!r}",
                                    hint="a group has hosts, vars and children")
        for host_name, host_vars, hloc in self._entries(body, "hosts", name, where):
            self.add_host(host_name, host_vars, hloc, name)
        variables = body.get("vars")
        if variables is not None and not isinstance(variables, dict):
            self.problems.error(location_of(variables, where), f"vars of group {name!r} must be a mapping")
        elif variables is not None:
            group.vars.update(variables)
        for child, child_body, cloc in self._entries(body, "children", name, where):
            self.add_group(child, child_body, cloc, name)

    def _entries(self, body: dict[str, Any], key: str, group: str,
                 where: SourceLocation) -> list[tuple[str, Any, SourceLocation]]:
        """A group's `hosts` or `children`: (name, value, where) each; a non-mapping is one problem."""
        found = body.get(key)
        if found is None:
            return []
        if not isinstance(found, dict):
            self.problems.error(location_of(found, where), f"{key} of group {group!r} must be a mapping")
            return []
        return [(str(k), v, found.key_locations.get(k, where) if isinstance(found, YamlMap) else where)
                for k, v in found.items()]

    def add_host(self, name: str, host_vars: Any, where: SourceLocation, group: str) -> None:
        host = self.inventory.hosts.get(name)
        if host is None:
            host = self.inventory.hosts[name] = Host(name, location=where)
        if group == "all":
            group = "ungrouped"
        host.groups.add(group)
        self.inventory.groups[group].hosts.add(name)
        if host_vars is None:
            return
        if not isinstance(host_vars, dict):
            self.problems.error(location_of(host_vars, where), f"variables of host {name!r} must be a mapping")
            return
        host.vars.update(host_vars)


def _vars_files(folder: Path, name: str) -> list[Path]:
    """`group_vars/NAME.yml`, `NAME.yaml`, `NAME` (no suffix), or every YAML file under a folder `NAME/`."""
    found = []
    for suffix in ("",) + YAML_SUFFIXES:
        candidate = folder / f"{name}{suffix}"
        if candidate.is_file():
            found.append(candidate)
    directory = folder / name
    if directory.is_dir():
        found.extend(sorted(p for p in directory.rglob("*") if p.is_file() and p.suffix in YAML_SUFFIXES))
    return found


def _read_vars(path: Path, problems: Problems, shown: str) -> dict[str, Any]:
    try:
        data = load_yaml(path, shown)
    except YamlError as exc:
        problems.error(exc.location, exc.what, exc.hint)
        return {}
    if data is None:
        return {}
    if not isinstance(data, dict):
        problems.error(location_of(data, SourceLocation(shown, 1, 1)), "a vars file must hold a mapping of variables")
        return {}
    return data


def load_inventory(path: Path, problems: Problems) -> Inventory:
    """Load an inventory file or folder; problems are collected, the inventory is as complete as it can be."""
    builder = _Builder(problems)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in YAML_SUFFIXES)
        base = path
        if not files:
            problems.error(SourceLocation(str(path), 1, 1), "no inventory file (*.yml) in this folder")
    else:
        files = [path]
        base = path.parent
    for file in files:
        _read_inventory_file(builder, file, problems)
    inventory = builder.inventory
    for group in inventory.groups.values():
        for file in _vars_files(base / "group_vars", group.name):
            inventory.sources.append(str(file))
            group.file_vars.update(_read_vars(file, problems, str(file)))
    for host in inventory.hosts.values():
        for file in _vars_files(base / "host_vars", host.name):
            inventory.sources.append(str(file))
            host.file_vars.update(_read_vars(file, problems, str(file)))
    if not inventory.hosts:
        problems.error(SourceLocation(str(path), 1, 1), "the inventory names no hosts",
                       hint="a host is a Kafka cluster")
    return inventory


def _read_inventory_file(builder: _Builder, file: Path, problems: Problems) -> None:
    shown = str(file)
    builder.inventory.sources.append(shown)
    try:
        data = load_yaml(file, shown)
    except YamlError as exc:
        problems.error(exc.location, exc.what, exc.hint)
        return
    if data is None:
        return
    if not isinstance(data, dict):
        problems.error(location_of(data, SourceLocation(shown, 1, 1)),
                       "an inventory must be a mapping of groups (all: {hosts: ..., children: ...})",
                       hint="kops reads Ansible's YAML inventory format")
        return
    for group_name, body in data.items():
        loc = data.key_locations.get(group_name) if isinstance(data, YamlMap) else None
        builder.add_group(str(group_name), body, loc or SourceLocation(shown, 1, 1), None)
