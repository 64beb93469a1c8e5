"""Naming and opening a cluster, the same way on every command that talks to one.

Every such command takes the same connection options (added by `@connection_options`): `-z` ZooKeeper (with
its TLS files and session timeout) or `-b` bootstrap servers with `--command-config` (Kafka's Admin API), and
`--connect-timeout`. Without them the cluster comes from the inventory host `-l` names (`bootstrap_servers`
and/or `zookeeper`), or from the plan itself. Both transports named: the Admin API is used, and said so.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kops.cli import console
from kops.cli.options import (
    BootstrapServer,
    CommandConfig,
    ConnectTimeout,
    SessionTimeout,
    TlsCa,
    TlsCert,
    TlsKey,
    Zookeeper,
    zk_settings,
)
from kops.cluster.port import Cluster
from kops.cluster.zookeeper import ZkCluster
from kops.declare.capacity import read_capacity
from kops.declare.inventory import Inventory as InventoryModel
from kops.declare.loader import cluster_address
from kops.declare.patterns import PatternError, select_hosts
from kops.declare.problems import Problems
from kops.errors import UsageError
from kops.fleet.selection import command_config_of, inventory_base
from kops.fleet.selection import load as load_fleet_inventory
from kops.model.capacity import CapacityDeclaration
from kops.model.desired import SourceLocation
from kops.model.goals import goal_list
from kops.model.servers import parse_servers
from kops.model.snapshot import ADMIN_API
from kops.zk_layout.client import ZkClient
from kops.zk_layout.connect import parse_connect

if TYPE_CHECKING:
    from kops.cluster.admin.connection import AdminSettings

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Connection:
    zookeeper: str | None = None
    bootstrap_server: str | None = None
    command_config: Path | None = None
    connect_timeout: float = 10.0
    session_timeout: float = 10.0
    zk_tls_ca: Path | None = None
    zk_tls_cert: Path | None = None
    zk_tls_key: Path | None = None

    @property
    def given(self) -> bool:
        return bool(self.zookeeper or self.bootstrap_server)


@dataclass(frozen=True)
class Address:
    transport: str  # "zookeeper" or "admin"
    where: str
    command_config: Path | None = None  # the inventory host's client properties (--command-config wins)


OPTIONS: list[tuple[str, Any, Any]] = [
    ("zookeeper", Zookeeper, None), ("bootstrap_server", BootstrapServer, None),
    ("command_config", CommandConfig, None),
    ("connect_timeout", ConnectTimeout, 10.0), ("session_timeout", SessionTimeout, 10.0),
    ("zk_tls_ca", TlsCa, None), ("zk_tls_cert", TlsCert, None), ("zk_tls_key", TlsKey, None),
]


def connection_options(command: F) -> F:
    """Give `command` (which takes `connection: Connection`) the connection options, for typer to show."""
    signature = inspect.signature(command, eval_str=True)
    kept = [p for p in signature.parameters.values() if p.name != "connection"]
    added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
             for name, annotation, default in OPTIONS]

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        connection = Connection(**{name: kwargs.pop(name, default) for name, _a, default in OPTIONS})
        return command(*args, connection=connection, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=kept + added)  # type: ignore[attr-defined]  # read by typer
    wrapper.__annotations__ = {p.name: p.annotation for p in kept + added}
    return wrapper  # type: ignore[return-value]  # same call, other parameters: what typer is shown


def resolve(connection: Connection, inventory: Path | None = None, limit: str | None = None,
            plan_connect: str | None = None) -> Address:
    """-b, -z, the inventory host's variables, or the plan's own cluster, in that order."""
    if (connection.zookeeper or connection.bootstrap_server) and inventory is not None:
        raise UsageError("give either -i/--inventory or -z/-b, not both")
    if connection.bootstrap_server:
        if connection.zookeeper:
            console.info("both -z and -b given: using the Admin API")
        parse_servers(connection.bootstrap_server)
        return Address("admin", connection.bootstrap_server)
    if connection.zookeeper:
        parse_connect(connection.zookeeper)
        return Address("zookeeper", connection.zookeeper)
    if inventory is not None:
        return _from_inventory(inventory, limit)
    if plan_connect:
        console.info(f"cluster: {plan_connect} (from the plan)")
        return from_connect(plan_connect)
    raise UsageError("no cluster given", hint="pass -b HOST:PORT, -z HOST:PORT[/chroot], or -i INVENTORY -l CLUSTER")


def from_connect(connect: str) -> Address:
    """A snapshot's or plan's `connect`: `kafka://SERVERS` through the Admin API, else a ZooKeeper string."""
    if connect.startswith(ADMIN_API):
        parse_servers(connect[len(ADMIN_API):])
        return Address("admin", connect[len(ADMIN_API):])
    parse_connect(connect)
    return Address("zookeeper", connect)


def _inventory_host(inventory: Path, limit: str | None) -> tuple[InventoryModel, str]:
    """The inventory and the one host (cluster) `limit` names in it."""
    inv = load_fleet_inventory(inventory)
    try:
        hosts, _unmatched = select_hosts(limit or "all", inv)
    except PatternError as exc:
        raise UsageError(f"--limit: {exc}") from None
    if len(hosts) != 1:
        raise UsageError(f"{'--limit ' + repr(limit) if limit else 'the inventory'} names {len(hosts)} clusters"
                         f"{' (' + ', '.join(sorted(hosts)) + ')' if hosts else ''}", where=str(inventory),
                         hint="name exactly one with -l CLUSTER")
    return inv, hosts[0]


def inventory_capacity(inventory: Path | None, limit: str | None) -> CapacityDeclaration | None:
    """The cluster's `capacity` variable, for commands without a playbook (`kops rebalance`); one line per
    mistake, the first raised."""
    if inventory is None:
        return None
    inv, host = _inventory_host(inventory, limit)
    value = inv.host_variables(host).get("capacity")
    problems = Problems()
    declared = read_capacity(value, value, inv.hosts[host].location or SourceLocation(str(inventory), 1, 1),
                             problems)
    if problems.errors:
        raise UsageError(str(problems.sorted_errors()[0]))
    return declared


def inventory_goals(inventory: Path | None, limit: str | None) -> tuple[str, ...]:
    """The cluster's `rebalance_goals` variable (a list, or one comma-separated string), read through the one
    goal-list parser; empty when there is none."""
    if inventory is None:
        return ()
    inv, host = _inventory_host(inventory, limit)
    value = inv.host_variables(host).get("rebalance_goals")
    if value is None:
        return ()
    try:
        return goal_list(value, f"host {host}: rebalance_goals")
    except ValueError as exc:
        raise UsageError(str(exc), where=str(inventory), hint="e.g. rebalance_goals: [disk, network_in, replicas, "
                                                              "leaders]") from exc


def _from_inventory(inventory: Path, limit: str | None) -> Address:
    inv, host = _inventory_host(inventory, limit)
    problems = Problems()
    variables = inv.host_variables(host)
    for name in ("bootstrap_servers", "zookeeper"):
        value = variables.get(name)
        if value is not None and (not isinstance(value, str) or "{{" in value):
            raise UsageError(f"host {host}: {name} must be a plain string", where=str(inventory))
    connect = cluster_address(variables, inv.hosts[host].location or SourceLocation(str(inventory), 1, 1),
                              host, problems)  # the same rule as plans: bootstrap_servers first
    if problems.errors:
        raise UsageError(str(problems.sorted_errors()[0]))
    if connect is None:
        raise UsageError(f"host {host} has neither bootstrap_servers nor zookeeper", where=str(inventory),
                         hint="set bootstrap_servers: HOST:PORT (or zookeeper: HOST:PORT/chroot), or pass -b / -z")
    if variables.get("bootstrap_servers") and variables.get("zookeeper"):
        console.info(f"{host} has bootstrap_servers and zookeeper: using the Admin API")
    return replace(from_connect(connect),
                   command_config=command_config_of(variables, inventory_base(inventory), host, str(inventory)))


def admin_settings(connection: Connection, servers: str) -> AdminSettings:
    from kops.cluster.admin.connection import AdminSettings, read_properties  # kafka-python: its transport only

    properties = read_properties(connection.command_config) if connection.command_config else {}
    return AdminSettings(servers, properties, connect_timeout_ms=int(max(connection.connect_timeout, 1.0) * 1000))


@contextmanager
def open_cluster(connection: Connection, address: Address) -> Iterator[Cluster]:
    """The cluster port over the address's transport; closed on the way out."""
    if address.transport == "admin":
        if connection.command_config is None and address.command_config is not None:
            connection = replace(connection, command_config=address.command_config)
        from kops.cluster.admin.adapter import AdminCluster  # kafka-python loads for the Admin API alone

        cluster = AdminCluster(admin_settings(connection, address.where), lease=connection.session_timeout)
        try:
            cluster.snapshot(only_topics=set())  # one clear line now if it cannot be reached
            yield cluster
        finally:
            cluster.close()
        return
    settings = zk_settings(address.where, connection.connect_timeout, connection.session_timeout,
                           connection.zk_tls_ca, connection.zk_tls_cert, connection.zk_tls_key)
    with ZkClient(settings) as client:
        cluster_zk = ZkCluster(client, address.where)
        try:
            yield cluster_zk
        finally:
            cluster_zk.close()
