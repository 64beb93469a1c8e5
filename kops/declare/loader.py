"""From files to DesiredState: inventory + playbook + extra vars -> one DesiredState per targeted cluster.

For each play, its `hosts` pattern (narrowed by `--limit`) selects clusters; for each cluster the play's
variables are assembled with Ansible's precedence (inventory < play vars < vars_files < extra vars),
resolved, and the play's topics, broker changes, rebalance and execution settings are rendered and checked.
Several plays may target one cluster: their declarations are merged, and a topic declared twice for one
cluster is an error naming both places.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kops.declare import fields
from kops.declare.capacity import read_capacity
from kops.declare.inventory import Inventory, implicit_inventory, load_inventory
from kops.declare.patterns import PatternError, select_hosts
from kops.declare.problems import Problems
from kops.declare.templating import Renderer, TemplateProblem, resolve_variables
from kops.declare.topics import TopicReader, topic_list
from kops.declare.yamlsource import YamlError, YamlList, YamlMap, load_yaml, location_of, parse_yaml
from kops.errors import UsageError
from kops.model.desired import (
    GOALS,
    BrokerChanges,
    DesiredState,
    Execution,
    Rebalance,
    SourceLocation,
    TopicDeclaration,
)
from kops.model.goals import goal_list
from kops.model.plan import Rolling
from kops.model.servers import parse_servers
from kops.model.snapshot import admin_api_connect
from kops.zk_layout.connect import parse_connect

PLAY_KEYS = (
    "name", "hosts", "vars", "vars_files", "topic_defaults", "topics", "brokers", "rebalance", "execution",
    "allow_delete", "serial",
)
BROKER_KEYS = ("decommission", "add", "remove_log_dirs")
REBALANCE_KEYS = ("goal", "goals", "tolerance", "heal_after")
EXECUTION_KEYS = ("throttle", "batch", "order", "stall_timeout", "mode", "max_moves_per_broker", "max_moves")
MODES = ("batches", "rolling")
BATCH_KEYS = ("max_partitions", "max_bytes", "max_moves_per_broker")
ORDERS = ("size", "topic", "as-declared")


@dataclass
class Declarations:
    desired: dict[str, DesiredState]
    problems: Problems
    inventory: Inventory
    digest: str
    topic_count: int = 0
    sources: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems.errors


def parse_extra_vars(items: list[str], problems: Problems) -> dict[str, Any]:
    """`-e key=value [key=value ...]`, `-e @vars.yml`, or `-e '{"key": "value"}'` (YAML/JSON), as Ansible."""
    result: dict[str, Any] = {}
    for index, item in enumerate(items):
        where = SourceLocation(f"-e #{index + 1}", 1, 1)
        text = item.strip()
        if text.startswith("@"):
            try:
                data = load_yaml(Path(text[1:]))
            except YamlError as exc:
                problems.error(exc.location, exc.what, exc.hint)
                continue
        elif text.startswith("{"):
            try:
                data = parse_yaml(text, where.file)
            except YamlError as exc:
                problems.error(exc.location, exc.what, exc.hint)
                continue
        else:
            data = {}
            for pair in text.split():
                key, sep, value = pair.partition("=")
                if not sep or not key:
                    problems.error(where, f"extra variable {pair!r} is not key=value",
                                   "write -e key=value or -e @file.yml")
                    continue
                data[key] = value
        if not isinstance(data, dict):
            problems.error(where, "extra variables must be a mapping")
            continue
        result.update(data)
    return result


def _digest(paths: list[str], extra: dict[str, Any], base: Path) -> str:
    """SHA-256 over the declaration files' contents, named relative to the playbook's folder (so the same
    files give the same digest in any checkout), and the extra vars."""
    h = hashlib.sha256()
    for path in sorted(set(paths), key=lambda p: os.path.relpath(p, base)):
        h.update(os.path.relpath(path, base).encode())
        try:
            h.update(Path(path).read_bytes())
        except OSError:
            h.update(b"<unreadable>")
    h.update(json.dumps(extra, sort_keys=True, default=str).encode())
    return h.hexdigest()


class _Cluster:
    """Declarations gathered for one cluster across plays."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.topics: dict[str, TopicDeclaration] = {}
        self.decommission: set[int] = set()
        self.add: set[int] = set()
        self.remove_log_dirs: dict[int, set[str]] = {}
        self.brokers_location: SourceLocation | None = None
        self.rebalance: Rebalance | None = None
        self.execution: Execution | None = None
        self.allow_delete = False
        self.plays: list[str] = []
        self.variables: dict[str, Any] = {}
        self.capacity_raw: Any = None  # `capacity` as written (a YamlMap keeps its locations)
        self.serial: str | None = None  # the play's `serial`: clusters of a fleet applied at once


def _limited(limit: str | None, inventory: Inventory, problems: Problems) -> set[str] | None:
    """The hosts `--limit` selects (None: every host); a pattern matching none is a problem of the run."""
    if not limit:
        return None
    try:
        chosen, _unmatched = select_hosts(limit, inventory)
    except PatternError as exc:
        raise UsageError(f"--limit: {exc}") from None
    if not chosen:
        problems.error(None, f"--limit {limit!r} matches no host of the inventory",
                       f"hosts: {', '.join(sorted(inventory.hosts)) or 'none'}")
    return set(chosen)


def load_declarations(
    playbook: Path,
    inventory_path: Path | None = None,
    limit: str | None = None,
    extra_vars: list[str] | None = None,
    zookeeper: str | None = None,
    environ: dict[str, str] | None = None,
) -> Declarations:
    problems = Problems()
    extra = parse_extra_vars(extra_vars or [], problems)
    if inventory_path is not None:
        if not inventory_path.exists():
            raise UsageError("no such inventory file or folder", where=str(inventory_path),
                             hint="pass an Ansible YAML inventory with -i, or a cluster with -z")
        inventory = load_inventory(inventory_path, problems)
    else:
        inventory = implicit_inventory("default", {"zookeeper": zookeeper} if zookeeper else {})
    sources = [str(playbook)] + list(inventory.sources)
    clusters: dict[str, _Cluster] = {}
    topic_count = 0

    limited = _limited(limit, inventory, problems)
    try:
        plays = load_yaml(playbook)
    except YamlError as exc:
        problems.error(exc.location, exc.what, exc.hint)
        plays = None
    top = SourceLocation(str(playbook), 1, 1)
    if plays is not None and not isinstance(plays, list):
        problems.error(location_of(plays, top), "a playbook must be a list of plays",
                       "start each play with '- name: ...' and 'hosts: ...'")
        plays = None
    renderer = Renderer(playbook.parent, environ)
    for index, play in enumerate(plays or []):
        loc = plays.where(index) if isinstance(plays, YamlList) else top
        topic_count += _read_play(play, loc, index, inventory, limited, extra, renderer, clusters, problems, sources)

    desired = {}
    for name, c in sorted(clusters.items()):
        host_location = _host_location(inventory, name, top)
        connect = cluster_address(c.variables, host_location, name, problems)
        desired[name] = DesiredState(
            cluster=name,
            connect=connect,
            topics=dict(sorted(c.topics.items())),
            brokers=BrokerChanges(tuple(sorted(c.decommission)), tuple(sorted(c.add)), c.brokers_location,
                                  {b: tuple(sorted(paths)) for b, paths in sorted(c.remove_log_dirs.items())}),
            rebalance=c.rebalance,
            execution=c.execution or Execution(),
            allow_delete=c.allow_delete,
            plays=tuple(c.plays),
            sources=tuple(sorted(set(sources))),
            host_vars=c.variables, serial=c.serial,
            capacity=read_capacity(c.variables.get("capacity"), c.capacity_raw, host_location, problems,
                                   playbook.parent),
        )
        _warn_name_collisions(desired[name], problems)
    return Declarations(desired, problems, inventory, _digest(sources, extra, playbook.parent), topic_count,
                        sorted(set(sources)))


def cluster_address(variables: dict[str, Any], where: SourceLocation, name: str, problems: Problems) -> str | None:
    """`bootstrap_servers` (the Admin API, written `kafka://SERVERS` as snapshots name it) before `zookeeper`."""
    servers = variables.get("bootstrap_servers")
    if servers is not None:
        try:
            parse_servers(str(servers))
        except UsageError as exc:
            problems.error(where, f"host {name}: bootstrap_servers: {exc.what}", exc.hint)
        return admin_api_connect(str(servers))
    connect = variables.get("zookeeper")
    if connect is None:
        return None
    try:
        parse_connect(str(connect))
    except UsageError as exc:
        problems.error(where, f"host {name}: zookeeper: {exc.what}", exc.hint)
    return str(connect)


def _host_location(inventory: Inventory, host: str, default: SourceLocation) -> SourceLocation:
    h = inventory.hosts.get(host)
    return h.location if h and h.location else default


def _warn_name_collisions(state: DesiredState, problems: Problems) -> None:
    """Kafka warns that metric names of topics differing only by '.' vs '_' collide."""
    seen: dict[str, str] = {}
    for name, topic in state.topics.items():
        key = name.replace(".", "_")
        if key in seen and seen[key] != name:
            problems.warning(topic.location, f"topic {name!r} collides with {seen[key]!r} in metric names",
                             "Kafka's metrics replace '.' with '_'; pick names that differ otherwise")
        seen.setdefault(key, name)


def _read_play(play: Any, loc: SourceLocation, index: int, inventory: Inventory, limited: set[str] | None,
               extra: dict[str, Any], renderer: Renderer, clusters: dict[str, _Cluster], problems: Problems,
               sources: list[str]) -> int:
    """One play: its hosts, its variables (vars, vars_files), its topic defaults, then per host its topics and
    sections rendered with that host's variables. Returns how many topics it declared."""
    if not isinstance(play, dict):
        problems.error(loc, "a play must be a mapping with hosts and topics")
        return 0
    key_where = (lambda k: play.key_locations.get(k, loc)) if isinstance(play, YamlMap) else (lambda _k: loc)
    where = play.where if isinstance(play, YamlMap) else (lambda _k: loc)
    fields.check_keys(play, PLAY_KEYS, "a play", key_where, problems)
    label = str(play.get("name") or f"play {index + 1}")
    hosts = _play_hosts(play, loc, where, label, inventory, limited, problems)
    if hosts is None:
        return 0
    allow_delete = False
    if "allow_delete" in play:
        allow_delete = bool(fields.as_bool(play["allow_delete"], "allow_delete", where("allow_delete"), problems))
    play_vars, var_locations = _play_vars(play, loc, where, label, problems, sources)
    defaults = _topic_defaults(play, loc, where, label, problems)
    serial = _serial(play.get("serial"), where("serial"), label, problems)
    entries = topic_list(play.get("topics"), where("topics"), problems)
    count = 0
    for host in hosts:
        raw = {**inventory.host_variables(host), **play_vars, **extra}

        def fail(name: str, exc: TemplateProblem, host: str = host) -> None:
            problems.error(var_locations.get(name, loc), f"variable {name!r} (cluster {host}): {exc.message}", exc.hint)

        variables = resolve_variables(renderer, raw, fail)
        cluster = clusters.setdefault(host, _Cluster(host))
        cluster.variables = variables
        cluster.capacity_raw = raw.get("capacity")
        cluster.plays.append(label)
        cluster.allow_delete |= allow_delete
        cluster.serial = serial or cluster.serial
        count += _declare_topics(cluster, TopicReader(renderer, variables, problems, allow_delete), entries, defaults,
                                 problems)
        for key, allowed, apply in _SECTIONS:
            section = _rendered_section(play, key, where, variables, renderer, problems, allowed, label)
            if section is not None:
                apply(section, where(key), cluster, problems, label)
    return count


def _serial(value: Any, loc: SourceLocation, label: str, problems: Problems) -> str | None:
    """A play's `serial`, as Ansible writes it: a count (`1`) or a percentage of the fleet (`25%`)."""
    if value is None:
        return None
    text = str(value).strip()
    over = text.endswith("%") and text[:-1].isdigit() and int(text[:-1]) > 100
    if isinstance(value, bool) or not re.fullmatch(r"[1-9]\d*%?", text) or over:
        problems.error(loc, f"{label}: serial: {value!r} is not a positive count or percentage",
                       "e.g. serial: 1, or serial: 25%")
        return None
    return text


def _play_hosts(play: dict[str, Any], loc: SourceLocation, where: Any, label: str, inventory: Inventory,
                limited: set[str] | None, problems: Problems) -> list[str] | None:
    """The inventory hosts (clusters) the play's pattern selects, narrowed by --limit; None when it cannot."""
    pattern = play.get("hosts")
    if isinstance(pattern, list):
        pattern = ":".join(str(p) for p in pattern)
    if not isinstance(pattern, str) or not pattern.strip():
        problems.error(where("hosts") if "hosts" in play else loc, f"{label}: hosts is required",
                       "name clusters or groups of the inventory, e.g. hosts: all")
        return None
    try:
        hosts, unmatched = select_hosts(pattern, inventory)
    except PatternError as exc:
        problems.error(where("hosts"), f"{label}: {exc}")
        return None
    for term in unmatched:
        problems.warning(where("hosts"), f"{label}: host pattern {term!r} matches no host or group")
    return hosts if limited is None else [h for h in hosts if h in limited]


def _play_vars(play: dict[str, Any], loc: SourceLocation, where: Any, label: str, problems: Problems,
               sources: list[str]) -> tuple[dict[str, Any], dict[str, SourceLocation]]:
    """`vars`, then `vars_files` in order (later files win), with where each variable was set."""
    play_vars: dict[str, Any] = {}
    var_locations: dict[str, SourceLocation] = {}
    if play.get("vars") is not None:
        if isinstance(play["vars"], dict):
            play_vars.update(play["vars"])
            for k in play["vars"]:
                var_locations[k] = play["vars"].where(k) if isinstance(play["vars"], YamlMap) else where("vars")
        else:
            problems.error(where("vars"), f"{label}: vars must be a mapping")
    files = play.get("vars_files") or []
    if isinstance(files, str):
        files = [files]
    if not isinstance(files, list):
        problems.error(where("vars_files"), f"{label}: vars_files must be a list of files")
        files = []
    for name in files:
        path = Path(str(name)) if Path(str(name)).is_absolute() else Path(loc.file).parent / str(name)
        sources.append(str(path))
        try:
            data = load_yaml(path)
        except YamlError as exc:
            missing = exc.what == "no such file"
            problems.error(where("vars_files") if missing else exc.location,
                           f"vars_files: {path}: {exc.what}" if missing else exc.what, exc.hint)
            continue
        if data is None:
            continue
        if not isinstance(data, dict):
            problems.error(location_of(data, where("vars_files")), "a vars file must hold a mapping of variables")
            continue
        play_vars.update(data)
        for k in data:
            var_locations[k] = data.where(k) if isinstance(data, YamlMap) else where("vars_files")
    return play_vars, var_locations


def _topic_defaults(play: dict[str, Any], loc: SourceLocation, where: Any, label: str,
                    problems: Problems) -> dict[str, Any] | None:
    defaults = play.get("topic_defaults")
    if defaults is None:
        return None
    if not isinstance(defaults, dict):
        problems.error(where("topic_defaults"), f"{label}: topic_defaults must be a mapping")
        return None
    key_where = (lambda k: defaults.key_locations.get(k, loc)) if isinstance(defaults, YamlMap) else (lambda _k: loc)
    fields.check_keys(defaults, ["partitions", "replication_factor", "config", "config_unchecked", "placement",
                                 "state", "fanout"], "topic_defaults", key_where, problems)
    return defaults


def _declare_topics(cluster: _Cluster, reader: TopicReader, entries: list[Any], defaults: dict[str, Any] | None,
                    problems: Problems) -> int:
    count = 0
    for entry, entry_loc in entries:
        for topic in reader.read(entry, entry_loc, defaults):
            count += 1
            previous = cluster.topics.get(topic.name)
            if previous is not None:
                problems.error(topic.location, f"topic {topic.name!r} is declared twice for cluster {cluster.name}",
                               f"first declared at {previous.location}")
                continue
            cluster.topics[topic.name] = topic
    return count


def _rendered_section(play: dict[str, Any], key: str, where: Any, variables: dict[str, Any], renderer: Renderer,
                      problems: Problems, allowed: tuple[str, ...], label: str) -> dict[str, Any] | None:
    if play.get(key) is None:
        return None
    try:
        section = renderer.render_deep(play[key], variables)
    except TemplateProblem as exc:
        problems.error(where(key), exc.message, exc.hint)
        return None
    if not isinstance(section, dict):
        problems.error(where(key), f"{label}: {key} must be a mapping ({', '.join(allowed)})")
        return None
    raw = play[key]
    fields.check_keys(section, allowed, key,
                      (lambda k: raw.key_locations.get(k, where(key))) if isinstance(raw, YamlMap)
                      else (lambda _k: where(key)),
                      problems)
    return section


def _apply_brokers(section: dict[str, Any], loc: SourceLocation, cluster: _Cluster, problems: Problems,
                   label: str) -> None:
    decommission = fields.as_int_list(section.get("decommission") or [], "brokers.decommission", loc, problems) or ()
    add = fields.as_int_list(section.get("add") or [], "brokers.add", loc, problems) or ()
    both = set(decommission) & set(add)
    if both:
        problems.error(loc, f"brokers {sorted(both)} are both decommissioned and added")
    cluster.decommission |= set(decommission)
    cluster.add |= set(add)
    for broker, paths in _log_dirs_to_remove(section.get("remove_log_dirs"), loc, problems).items():
        cluster.remove_log_dirs.setdefault(broker, set()).update(paths)
    cluster.brokers_location = cluster.brokers_location or loc


def _log_dirs_to_remove(value: Any, loc: SourceLocation, problems: Problems) -> dict[int, tuple[str, ...]]:
    """`remove_log_dirs: {3: [/data/d2]}`: broker id -> absolute paths of the log dirs it is to empty (JBOD);
    whether each broker has such a dir is the planner's question (it needs the cluster)."""
    if value is None:
        return {}
    what = "brokers.remove_log_dirs"
    if not isinstance(value, dict):
        problems.error(loc, f"{what} is a mapping of broker id to log dirs, e.g. {{3: [/data/d2]}}")
        return {}
    out: dict[int, tuple[str, ...]] = {}
    for key, paths in value.items():
        broker = fields.as_int(key, f"{what} key", loc, problems, minimum=0)
        listed = paths if isinstance(paths, list) else [paths]
        if broker is None:
            continue
        if not listed or not all(isinstance(p, str) and p.startswith("/") for p in listed):
            problems.error(loc, f"{what}.{broker}: {paths!r} is not a list of log dirs",
                           "name each dir by its absolute path, as the broker's log.dirs does")
            continue
        out[broker] = tuple(str(p).rstrip("/") or "/" for p in listed)
    return out


def _apply_rebalance(section: dict[str, Any], loc: SourceLocation, cluster: _Cluster, problems: Problems,
                     label: str) -> None:
    goal = fields.as_choice(section.get("goal", "replicas"), GOALS, "rebalance.goal", loc, problems) or "replicas"
    goals = _goal_list(section, loc, problems)
    tolerance = 0.1
    if section.get("tolerance") is not None:
        parsed = fields.as_fraction(section["tolerance"], "rebalance.tolerance", loc, problems)
        tolerance = tolerance if parsed is None else parsed
    heal_after = None
    if section.get("heal_after") is not None:
        heal_after = fields.as_duration(section["heal_after"], "rebalance.heal_after", loc, problems)
    rebalance = Rebalance(goal, tolerance, loc, heal_after, goals)
    previous = cluster.rebalance
    if previous is not None and (previous.goal, previous.tolerance, previous.heal_after, previous.goals) != (
            goal, tolerance, heal_after, goals):
        problems.error(loc, f"{label}: a different rebalance is already declared for cluster {cluster.name}",
                       f"at {previous.location}")
        return
    cluster.rebalance = rebalance


def _goal_list(section: dict[str, Any], loc: SourceLocation, problems: Problems) -> tuple[str, ...]:
    """`rebalance.goals` through the one goal-list parser (kops/model/goals.py); not beside `goal`, which it
    replaces."""
    if section.get("goals") is None:
        return ()
    if section.get("goal") is not None:
        problems.error(loc, "rebalance: goal and goals together", "name the goal in the goals list")
        return ()
    try:
        return goal_list(section["goals"], "rebalance.goals")
    except ValueError as exc:
        problems.error(loc, str(exc), "e.g. goals: [disk, network_in, replicas, leaders]")
        return ()


def _apply_execution(section: dict[str, Any], loc: SourceLocation, cluster: _Cluster, problems: Problems,
                     label: str) -> None:
    throttle = None
    if section.get("throttle") is not None:
        throttle = fields.as_rate(section["throttle"], "execution.throttle", loc, problems)
    batch = section.get("batch") or {}
    if not isinstance(batch, dict):
        problems.error(loc, "execution.batch must be a mapping (max_partitions, max_bytes, max_moves_per_broker)")
        batch = {}
    fields.check_keys(batch, BATCH_KEYS, "execution.batch", lambda _k: loc, problems)
    execution = Execution(
        throttle=throttle,
        max_partitions=fields.as_int(batch["max_partitions"], "max_partitions", loc, problems, minimum=1)
        if batch.get("max_partitions") is not None else None,
        max_bytes=fields.as_size(batch["max_bytes"], "max_bytes", loc,
                                 problems) if batch.get("max_bytes") is not None else None,
        max_moves_per_broker=fields.as_int(batch["max_moves_per_broker"], "max_moves_per_broker", loc, problems,
                                           minimum=1)
        if batch.get("max_moves_per_broker") is not None else None,
        order=fields.as_choice(section.get("order", "size"), ORDERS, "execution.order", loc, problems) or "size",
        stall_timeout=fields.as_duration(section["stall_timeout"], "execution.stall_timeout", loc, problems)
        if section.get("stall_timeout") is not None else None,
        rolling=_rolling(section, loc, problems),
        location=loc,
    )
    previous = cluster.execution
    if previous is not None and _settings(previous) != _settings(execution):
        problems.error(loc, f"{label}: different execution settings are already declared for cluster {cluster.name}",
                       f"at {previous.location}")
        return
    cluster.execution = execution


def _rolling(section: dict[str, Any], loc: SourceLocation, problems: Problems) -> Rolling | None:
    """`mode: rolling` with its caps; the caps without rolling mean nothing, and are refused."""
    mode = fields.as_choice(section.get("mode", "batches"), MODES, "execution.mode", loc, problems)
    caps = {key: fields.as_int(section[key], f"execution.{key}", loc, problems, minimum=1)
            for key in ("max_moves_per_broker", "max_moves") if section.get(key) is not None}
    if mode != "rolling":
        if caps:
            problems.error(loc, f"execution.{next(iter(caps))} applies to rolling execution only",
                           "add `mode: rolling`, or use execution.batch.max_moves_per_broker for batches")
        return None
    defaults = Rolling()
    return Rolling(caps.get("max_moves_per_broker") or defaults.max_moves_per_broker, caps.get("max_moves"))


_SECTIONS = (
    ("brokers", BROKER_KEYS, _apply_brokers),
    ("rebalance", REBALANCE_KEYS, _apply_rebalance),
    ("execution", EXECUTION_KEYS, _apply_execution),
)


def _settings(e: Execution) -> tuple[Any, ...]:
    return (e.throttle, e.max_partitions, e.max_bytes, e.max_moves_per_broker, e.order, e.stall_timeout, e.rolling)
